//! The real-client checks of `tests/clients`, run from a test: a program that prints
//! `PASS …`, and the Java ones (`java_check.sh CLASS BOOTSTRAP`) against the
//! kafka-clients jars `.ci/client-deps.sh` unpacks into `.venv/kafka-java` (3.9) and
//! `.venv/kafka-java-4` (4.x).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each of those jar folders that holds a kafka-clients jar; one SKIPPED line for each
/// that does not.
pub fn java_jars() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let all = ["kafka-java", "kafka-java-4"].map(|dir| root.join(".venv").join(dir));
    all.into_iter()
        .filter(|jars| {
            let there = jars.join("kafka-clients.jar").is_file();
            if !there {
                super::skipped(&format!("{}: run .ci/client-deps.sh", jars.display()));
            }
            there
        })
        .collect()
}

/// Runs `class` against `bootstrap` with the jars in `jars` (`run`).
pub fn java(jars: &Path, class: &str, bootstrap: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("tests/clients/java_check.sh");
    let args = [script.as_os_str(), class.as_ref(), bootstrap.as_ref()];
    run(Command::new("bash").args(args).env("KAFKA_JAVA_LIBS", jars))
}

/// Runs a check and fails the test unless it succeeded and printed `PASS `; what it
/// printed.
pub fn run(check: &mut Command) -> String {
    let out = check.output().expect("run the check");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let args: Vec<&OsStr> = check.get_args().collect();
    assert!(
        out.status.success() && said.contains("PASS "),
        "{args:?}: {said}"
    );
    said
}
