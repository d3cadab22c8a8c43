//! Several gateways on one Iggy: a transactional id has one coordinator among them;
//! when it is SIGKILLed mid-transaction, the producer carries on through another, whose
//! coordinator takes the id over from the stored state and commits what was open, and
//! a read-committed consumer on any gateway reads each record once.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::messages::*;
use rdkafka::producer::Producer;

use super::{read, send, txn_producer, values};
use crate::support::configs::s;
use crate::support::iggy::IggyServer;
use crate::support::kafka::create_topic;
use crate::support::{call, Gateway, RawClient};

fn gateways(server: &IggyServer, n: usize) -> Vec<Gateway> {
    let mut settings = server.gateway_settings();
    settings.extend([
        ("node_heartbeat_ms", "200".to_string()),
        ("node_timeout_ms", "1500".to_string()),
    ]);
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (0..n).map(|_| Gateway::process_with(&settings)).collect()
}

fn brokers(gw: &Gateway) -> BTreeSet<i32> {
    let mut c = RawClient::connect(gw.addr);
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    r.brokers.iter().map(|b| b.node_id.0).collect()
}

fn await_brokers(gws: &[&Gateway], want: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while gws.iter().any(|g| brokers(g).len() != want) {
        assert!(
            Instant::now() < deadline,
            "the gateways never saw {want} brokers"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The port of the gateway coordinating `id`, as `gw` answers FindCoordinator.
fn coordinator(gw: &Gateway, id: &str) -> i32 {
    let mut c = RawClient::connect(gw.addr);
    let request = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_key(s(id));
    let r = call!(c, FindCoordinator, 3, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.port
}

#[tokio::test(flavor = "multi_thread")]
async fn the_coordinator_killed_mid_transaction_another_commits_it() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gws = gateways(&server, 3);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 3);
    let all: Vec<String> = gws.iter().map(Gateway::bootstrap).collect();
    let bootstrap = all.join(",");
    create_topic(&gws[0].bootstrap(), "txn-cluster", 3, &[]).await;
    let id = "txn-cluster-producer";
    let port = coordinator(&gws[0], id);
    let at = gws
        .iter()
        .position(|g| g.addr.port() as i32 == port)
        .expect("the coordinator is one of the gateways");
    for other in &gws {
        assert_eq!(
            coordinator(other, id),
            port,
            "every gateway names one coordinator"
        );
    }

    let producer = txn_producer(&bootstrap, id, 60_000);
    producer.begin_transaction().unwrap();
    send(&producer, "txn-cluster", 3, &values("a-", 30));
    gws[at].kill();
    let dead = gws.remove(at);
    drop(dead);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2);
    producer
        .commit_transaction(Duration::from_secs(60))
        .expect("the commit, through the coordinator that took the id over");
    let port_now = coordinator(&gws[0], id);
    assert_ne!(port_now, port);
    producer.begin_transaction().unwrap();
    send(&producer, "txn-cluster", 3, &values("b-", 9));
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();

    for gw in &gws {
        let got = read(&gw.bootstrap(), "txn-cluster", 3, "read_committed", 39);
        let mut seen: Vec<&String> = got.values().flatten().collect();
        seen.sort();
        let mut want: Vec<String> = values("a-", 30);
        want.extend(values("b-", 9));
        want.sort();
        assert_eq!(
            seen,
            want.iter().collect::<Vec<_>>(),
            "on {}",
            gw.bootstrap()
        );
    }
}
