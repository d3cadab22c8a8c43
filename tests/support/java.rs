//! The Java client checks of `tests/clients` (`java_check.sh CLASS BOOTSTRAP`), run
//! from a test against the kafka-clients jars `.ci/client-deps.sh` unpacks into
//! `.venv/kafka-java` (3.9) and `.venv/kafka-java-4` (4.x).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Each of those jar folders that holds a kafka-clients jar; one SKIPPED line for each
/// that does not.
pub fn jars() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let all = ["kafka-java", "kafka-java-4"].map(|dir| root.join(".venv").join(dir));
    all.into_iter()
        .filter(|jars| {
            let there = jars.join("kafka-clients.jar").is_file();
            if !there {
                eprintln!("SKIPPED {}: run .ci/client-deps.sh", jars.display());
            }
            there
        })
        .collect()
}

/// Runs `class` against `bootstrap` with the jars in `jars`, and fails the test unless
/// it printed `PASS`; what it printed otherwise.
pub fn check(jars: &Path, class: &str, bootstrap: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("tests/clients/java_check.sh"))
        .args([class, bootstrap])
        .env("KAFKA_JAVA_LIBS", jars)
        .output()
        .expect("run java_check.sh");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("PASS "),
        "{class} with {}: {said}",
        jars.display()
    );
    said
}
