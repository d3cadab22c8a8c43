//! iggy-server SIGKILLed and started again on its data while a gateway holds
//! idempotent producers' state, a group's coordinator and open transactions: nothing
//! acknowledged is lost, nothing is read twice or out of order, and every client goes
//! on once Iggy is back, without a restart of the gateway.

use std::time::{Duration, Instant};

use super::workload::{Workload, PARTITIONS};
use crate::support::iggy::{rerun_after_recovery_failure, IggyServer};
use crate::support::kafka::create_topic;

const TOPIC: &str = "faults-iggy-restart";

/// Rerun once if the server fails its own crash recovery
/// (`support::iggy::rerun_after_recovery_failure`).
#[test]
fn iggy_killed_and_restarted_under_load() {
    rerun_after_recovery_failure(iggy_killed_and_restarted_under_load_once);
}

async fn iggy_killed_and_restarted_under_load_once() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway_with(&[("iggy_request_timeout_ms", "3000")]);
    create_topic(&gw.bootstrap(), TOPIC, PARTITIONS, &[]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&gw.bootstrap(), TOPIC, dir.path());
    workload.wait_for_acks(2_000, Duration::from_secs(60));

    server.stop();
    std::thread::sleep(Duration::from_secs(1));
    let back = Instant::now();
    server.start_again();
    let listening = back.elapsed();
    let recovered = workload.wait_for_acks(500, Duration::from_secs(120));
    println!(
        "iggy-server listened again after {listening:?}; 500 more records acknowledged \
         {recovered:?} later"
    );
    std::thread::sleep(Duration::from_secs(3));
    workload.finish().assert_valid();
}
