//! The Java consumer (kafka-clients 3.9 and 4.x) fetches through incremental
//! sessions by default: `tests/clients/SessionsJava.java` consumes 50 partitions and
//! checks every record arrives once, one batch a fetch; the gateway's /metrics show
//! that nearly all its fetches were incremental ones served within a session, none refused (the consumer
//! closes its session when it closes). Needs
//! `.ci/client-deps.sh` to have fetched the jars.

use crate::support;

use support::admin::Scrape;
use support::{Gateway, Store};

fn java_consumers_fetch_through_incremental_sessions(store: Store) {
    for jars in support::client_checks::java_jars() {
        let Some(gw) = Gateway::start_on(store, &[]) else {
            return;
        };
        let said = support::client_checks::java(&jars, "SessionsJava", &gw.bootstrap());
        assert!(said.contains("PASS java-sessions"), "{said}");
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
