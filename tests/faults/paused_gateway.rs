//! The gateway coordinating the consumer group and the transactional id SIGSTOPped,
//! one of three on one Iggy, for longer than the node timeout and the members' session
//! timeout, then SIGCONTed, under the checked workload: the others take its groups and
//! transactional ids over while it is away, and once it is back every gateway names
//! the same coordinators again and the history stays clean (no committed offset moves
//! backwards, nothing acknowledged lost, no aborted read). And a lone gateway, on each
//! store, paused past the members' session timeout and resumed: its clients wait, then
//! carry on, and the history stays clean.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::workload::{make_topic, Workload, GROUP};
use crate::support::groups::{coordinator_port, GROUP_KEY, TRANSACTION_KEY};
use crate::support::iggy::IggyServer;
use crate::support::{on_every_store, Gateway, Store};

const TOPIC: &str = "faults-paused";
const NODE_TIMEOUT_MS: &str = "2000";
/// Past the node timeout and the workload members' 10 s session timeout.
const PAUSE: Duration = Duration::from_secs(12);

#[test]
fn a_paused_coordinator_resumed_does_not_answer_for_what_moved() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut settings = server.gateway_settings();
    settings.extend([
        ("node_heartbeat_ms", "200".to_string()),
        ("node_timeout_ms", NODE_TIMEOUT_MS.to_string()),
        ("group_initial_rebalance_delay_ms", "0".to_string()),
        ("iggy_request_timeout_ms", "3000".to_string()),
    ]);
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut gws: Vec<Gateway> = (0..3).map(|_| Gateway::process_with(&settings)).collect();
    let bootstrap = Gateway::bootstrap_all(&gws);
    make_topic(&bootstrap, TOPIC);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&bootstrap, TOPIC, dir.path());
    workload.wait_for_acks(1_000, Duration::from_secs(60));

    let txn_id = format!("{TOPIC}-tx0");
    let paused: BTreeSet<i32> = [coordinator_port(&gws[0], GROUP_KEY, GROUP)]
        .into_iter()
        .chain([coordinator_port(&gws[0], TRANSACTION_KEY, &txn_id)])
        .collect();
    let victims: Vec<&Gateway> = gws
        .iter()
        .filter(|g| paused.contains(&(g.addr.port() as i32)))
        .collect();
    println!("pausing the coordinators at {paused:?}");
    victims.iter().for_each(|g| g.signal("STOP"));
    let stopped = Instant::now();
    let others: Vec<&Gateway> = gws
        .iter()
        .filter(|g| !paused.contains(&(g.addr.port() as i32)))
        .collect();
    // The others take over: they name another coordinator, and the clients go on.
    let moved = eventually(|| {
        !paused.contains(&coordinator_port(others[0], GROUP_KEY, GROUP))
            && !paused.contains(&coordinator_port(others[0], TRANSACTION_KEY, &txn_id))
    });
    let carried_on = workload.wait_for_acks(500, Duration::from_secs(60));
    println!(
        "coordinators moved {moved:?} after the pause; 500 records acknowledged {carried_on:?} \
         later"
    );
    std::thread::sleep(PAUSE.saturating_sub(stopped.elapsed()));

    victims.iter().for_each(|g| g.signal("CONT"));
    // Every gateway, the resumed ones too, names one coordinator for each key again.
    let agreed = eventually(|| {
        for g in gws.iter_mut() {
            if let Some(status) = g.exited() {
                panic!(
                    "the gateway at {} ended after the SIGCONT: {status}",
                    g.addr
                );
            }
        }
        [(GROUP_KEY, GROUP), (TRANSACTION_KEY, txn_id.as_str())]
            .iter()
            .all(|(kind, key)| {
                let named: BTreeSet<i32> = gws
                    .iter()
                    .map(|g| coordinator_port(g, *kind, key))
                    .collect();
                named.len() == 1
            })
    });
    let recovered = workload.wait_for_acks(500, Duration::from_secs(60));
    println!(
        "after SIGCONT the gateways agreed on the coordinators in {agreed:?}; 500 records \
         acknowledged {recovered:?} after it resumed",
    );
    std::thread::sleep(Duration::from_secs(3));
    workload.finish().assert_valid();
}

on_every_store!(a_paused_lone_gateway_resumed_carries_on);

fn a_paused_lone_gateway_resumed_carries_on(store: Store) {
    let topic = match store {
        Store::Embedded => "faults-paused-lone-embedded",
        Store::Iggy => "faults-paused-lone-iggy",
    };
    let settings = [
        ("node_heartbeat_ms", "200"),
        ("node_timeout_ms", NODE_TIMEOUT_MS),
        ("group_initial_rebalance_delay_ms", "0"),
        ("iggy_request_timeout_ms", "3000"),
    ];
    let Some(mut gw) = Gateway::process_on(store, &settings) else {
        return;
    };
    make_topic(&gw.bootstrap(), topic);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&gw.bootstrap(), topic, dir.path());
    workload.wait_for_acks(1_000, Duration::from_secs(60));
    gw.signal("STOP");
    std::thread::sleep(PAUSE);
    gw.signal("CONT");
    let recovered = workload.wait_for_acks(500, Duration::from_secs(60));
    assert!(gw.exited().is_none(), "the gateway ended after the SIGCONT");
    println!("after a {PAUSE:?} pause, 500 records acknowledged {recovered:?} after the SIGCONT");
    std::thread::sleep(Duration::from_secs(3));
    workload.finish().assert_valid();
}

/// Waits (up to a minute) until `done` holds; how long it took.
fn eventually(mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "never happened");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}
