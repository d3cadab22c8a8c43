//! Quotas on one Iggy server: shared by the gateways on it, and restored from their snapshot.

use crate::support;

use std::time::Duration;

use support::acls::create_topic_code;
use support::admin::eventually;
use support::iggy::{snapshot_upto, IggyServer};
use support::RawClient;

use super::{describe, described, produce, set, Described, RAW_CLIENT};

#[test]
fn gateways_on_one_iggy_share_their_quotas() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let refresh = [("topic_refresh_ms", "200")];
    let (first, second) = (server.gateway_with(&refresh), server.gateway_with(&refresh));
    let (mut c1, mut c2) = (
        RawClient::connect(first.addr),
        RawClient::connect(second.addr),
    );
    assert_eq!(create_topic_code(&mut c1, "shared"), 0);
    set(&mut c1, RAW_CLIENT, "producer_byte_rate", 1500.0);
    // Described through the other gateway at once: it reads the store.
    let raw = vec![described(RAW_CLIENT, &[("producer_byte_rate", 1500.0)])];
    assert_eq!(describe(&mut c2, 1, &[], false), (0, Some(raw)));
    // And enforced there once it has re-read the quotas.
    assert!(
        eventually(Duration::from_secs(10), || {
            produce(&mut c2, "shared", 11_000).throttle_time_ms > 0
        }),
        "the other gateway never throttled the client"
    );
}

#[test]
fn quotas_on_iggy_come_back_from_their_snapshot() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A process: started again after a SIGKILL, from what it stored.
    let mut gw = server.process_gateway_with(&[("iggy_snapshot_records", "5")]);
    let mut c = RawClient::connect(gw.addr);
    // Twelve changes to four client ids; the last of each wins.
    for n in 1..=12 {
        let client = format!("c{}", n % 4);
        let entity = [("client-id", Some(client.as_str()))];
        set(&mut c, &entity, "producer_byte_rate", 1000.0 * n as f64);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sdk = runtime.block_on(server.sdk());
    let snapshotted = || runtime.block_on(snapshot_upto(&sdk, "meta.quota")) >= Some(10);
    assert!(
        eventually(Duration::from_secs(20), snapshotted),
        "no snapshot of the quota table's log"
    );
    // Started again from the snapshot, then the records after it: the same quotas.
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let want: Vec<Described> = [
        ("c0", 12_000.0),
        ("c1", 9_000.0),
        ("c2", 10_000.0),
        ("c3", 11_000.0),
    ]
    .iter()
    .map(|(client, rate)| {
        described(
            &[("client-id", Some(client))],
            &[("producer_byte_rate", *rate)],
        )
    })
    .collect();
    assert_eq!(describe(&mut c, 1, &[], false), (0, Some(want)));
}
