//! The Java consumer (kafka-clients 3.9 and 4.x) fetches through incremental
//! sessions by default: `tests/clients/SessionsJava.java` consumes 50 partitions and
//! checks every record arrives once, one batch a fetch; the gateway's /metrics show
//! that nearly all its fetches were incremental ones served within a session, none refused (the consumer
//! closes its session when it closes). Needs
//! `.ci/client-deps.sh` to have fetched the jars.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::admin::Scrape;
use support::{Gateway, Store};

fn java_consumers_fetch_through_incremental_sessions(store: Store) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for jars in ["kafka-java", "kafka-java-4"] {
        let jars = root.join(".venv").join(jars);
        if !jars.join("kafka-clients.jar").is_file() {
            eprintln!("SKIPPED {}: run .ci/client-deps.sh", jars.display());
            continue;
        }
        let Some(gw) = Gateway::start_on(store, &[]) else {
            return;
        };
        let out = Command::new("bash")
            .arg(root.join("tests/clients/java_check.sh"))
            .args(["SessionsJava", &gw.bootstrap()])
            .env("KAFKA_JAVA_LIBS", &jars)
            .output()
            .expect("run java_check.sh");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.contains("PASS java-sessions"),
            "{}: {said}",
            jars.display()
        );
        let scrape = Scrape::take(gw.admin);
        let fetches = scrape.sum("iggy_kafka_gateway_requests_total", &[("api", "Fetch")]);
        let incremental = scrape.sum("iggy_kafka_gateway_incremental_fetches_total", &[]);
        // Besides them: the full fetch that opened the session, the one that closed it
        // (epoch -1 at close()) and one still waiting then, answered after the close.
        assert!(
            incremental >= 50.0 && fetches - incremental <= 3.0,
            "{}: {incremental} of {fetches} fetches incremental",
            jars.display()
        );
        for refusal in ["FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH"] {
            let labels = [("api", "Fetch"), ("error", refusal)];
            let refused = scrape.sum("iggy_kafka_gateway_errors_total", &labels);
            assert_eq!(refused, 0.0, "{}: {refusal}", jars.display());
        }
    }
}

support::on_every_store!(java_consumers_fetch_through_incremental_sessions);
