//! The transaction admin APIs' refusals, as Kafka answers them: on both stores, a
//! principal without ACLs gets nothing listed, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//! (53) from DescribeTransactions, TOPIC_AUTHORIZATION_FAILED (29) from
//! DescribeProducers and CLUSTER_AUTHORIZATION_FAILED (31) from WriteTxnMarkers, then
//! DESCRIBE on the id, READ on the topic, CLUSTER_ACTION or ALTER on the cluster let
//! each through. On one Iggy shared by two gateways, each lists only the ids it
//! coordinates, and DescribeTransactions at the other answers NOT_COORDINATOR (16).

use std::thread;
use std::time::{Duration, Instant};

use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::ListTransactionsRequest;

use crate::support::acls::*;
use crate::support::configs::s;
use crate::support::iggy::IggyServer;
use crate::support::sasl::plain_login;
use crate::support::transactions::*;
use crate::support::{call, on_every_store, Gateway, RawClient, Store};

on_every_store!(admin_apis_need_kafkas_acls);

const TXN_TOPIC: &str = "txn-admin-acls";
const NOT_COORDINATOR: i16 = 16;

/// The admin (the PLAINTEXT listener's anonymous super user) grants `user` `operation`.
fn grant(admin: &mut RawClient, user: &str, (resource_type, name): (i8, &str), operation: i8) {
    let who = format!("User:{user}");
    let binding = acl(
        (resource_type, name, LITERAL),
        (&who, "*"),
        operation,
        ALLOW,
    );
    assert_eq!(create_acls(admin, vec![binding]), [0]);
}

fn admin_apis_need_kafkas_acls(store: Store) {
    let settings = [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("authorizer", "standard"),
        ("super_users", "User:ANONYMOUS"),
        ("sasl_enabled_mechanisms", "PLAIN"),
        ("sasl_scram_users", "alice:alice-secret,bob:bob-secret"),
    ];
    let Some(gw) = Gateway::start_on(store, &settings) else {
        return;
    };
    let mut admin = RawClient::connect(gw.listener("PLAINTEXT"));
    assert_eq!(create_topic_code(&mut admin, TXN_TOPIC), 0);
    let p = init(&mut admin, "acl-open");
    init(&mut admin, "acl-hidden");
    assert_eq!(add(&mut admin, &p, TXN_TOPIC, 0), 0);
    let first = produce(&mut admin, &p, (TXN_TOPIC, 0), 0, 2, 1_700_000_000_000);
    let login = |user: &str| {
        let mut c = RawClient::connect(gw.listener("SASL_PLAINTEXT"));
        let answer = plain_login(&mut c, user, &format!("{user}-secret"));
        assert_eq!(answer.error_code, 0, "{answer:?}");
        c
    };
    let (mut alice, mut bob) = (login("alice"), login("bob"));
    let listed = |c: &mut RawClient| {
        let (code, _, listed) = list_transactions(c, 2, ListTransactionsRequest::default());
        assert_eq!(code, 0);
        listed
    };
    let abort = [(TXN_TOPIC, &[0][..])];
    let markers = [(p.pid, p.epoch, false, &abort[..])];

    // Nothing allowed: ids left out, each API refused where Kafka refuses.
    assert_eq!(listed(&mut alice), []);
    let described = &describe_transactions(&mut alice, &["acl-open"])[0];
    assert_eq!(described.error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    let producers = &describe_producers(&mut alice, &[(TXN_TOPIC, &[0])])[0];
    assert_eq!(
        producers.error_code, TOPIC_AUTHORIZATION_FAILED,
        "{producers:?}"
    );
    let refused = vec![vec![(
        TXN_TOPIC.to_string(),
        0,
        CLUSTER_AUTHORIZATION_FAILED,
    )]];
    assert_eq!(write_markers(&mut alice, &markers), refused);
    assert_eq!(
        latest(&mut admin, TXN_TOPIC, 0, 1),
        first,
        "no marker written"
    );

    grant(
        &mut admin,
        "alice",
        (TRANSACTIONAL_ID, "acl-open"),
        DESCRIBE,
    );
    let ongoing = ("acl-open".to_string(), p.pid, "Ongoing".to_string());
    assert_eq!(listed(&mut alice), [ongoing], "acl-hidden stays out");
    let described = &describe_transactions(&mut alice, &["acl-open"])[0];
    assert_eq!(
        (described.error_code, described.transaction_state.as_str()),
        (0, "Ongoing")
    );
    grant(&mut admin, "alice", (TOPIC, TXN_TOPIC), READ);
    let producers = &describe_producers(&mut alice, &[(TXN_TOPIC, &[0])])[0];
    assert_eq!(producers.error_code, 0, "{producers:?}");
    let starts: Vec<_> = (producers.active_producers.iter())
        .map(|s| (s.producer_id.0, s.current_txn_start_offset))
        .collect();
    assert_eq!(starts, [(p.pid, first)]);

    // CLUSTER_ACTION (brokers) or ALTER (admins, KIP-664) on the cluster.
    grant(&mut admin, "bob", (CLUSTER, KAFKA_CLUSTER), ALTER);
    grant(
        &mut admin,
        "alice",
        (CLUSTER, KAFKA_CLUSTER),
        CLUSTER_ACTION,
    );
    let written = vec![vec![(TXN_TOPIC.to_string(), 0, 0)]];
    assert_eq!(write_markers(&mut bob, &markers), written);
    assert_eq!(write_markers(&mut alice, &markers), written);
    let high = latest(&mut admin, TXN_TOPIC, 0, 0);
    assert_eq!(latest(&mut admin, TXN_TOPIC, 0, 1), high, "aborted");
}

/// The node a FindCoordinator v3 for transactional id `id` names.
fn coordinator(c: &mut RawClient, id: &str) -> i32 {
    let request = FindCoordinatorRequest::default()
        .with_key(s(id))
        .with_key_type(1);
    let r = call!(c, FindCoordinator, 3, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.node_id.0
}

/// This gateway's node id, as its Metadata names it (the broker on its port).
fn node_id(gw: &Gateway) -> i32 {
    let mut c = RawClient::connect(gw.addr);
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    let me = r
        .brokers
        .iter()
        .find(|b| b.port == i32::from(gw.addr.port()));
    me.unwrap_or_else(|| panic!("{:?} not among {:?}", gw.addr, r.brokers))
        .node_id
        .0
}

#[test]
fn each_gateway_lists_the_ids_it_coordinates() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let quick = [("node_heartbeat_ms", "200"), ("node_timeout_ms", "5000")];
    let gws = [server.gateway_with(&quick), server.gateway_with(&quick)];
    let deadline = Instant::now() + Duration::from_secs(20);
    let ids = loop {
        let ids: Vec<i32> = gws.iter().map(node_id).collect();
        let mut c = RawClient::connect(gws[0].addr);
        let r = call!(
            c,
            Metadata,
            12,
            MetadataRequest::default().with_topics(None)
        );
        if r.brokers.len() == 2 && ids[0] != ids[1] {
            break ids;
        }
        assert!(Instant::now() < deadline, "brokers: {:?}", r.brokers);
        thread::sleep(Duration::from_millis(100));
    };
    let mut clients: Vec<RawClient> = gws.iter().map(|g| RawClient::connect(g.addr)).collect();
    // Ids spread over both gateways, each initialized at its coordinator.
    let mut mine: [Vec<String>; 2] = Default::default();
    for i in 0..40 {
        let id = format!("spread-{i}");
        let node = coordinator(&mut clients[0], &id);
        let at = ids.iter().position(|&n| n == node).expect("a live gateway");
        init(&mut clients[at], &id);
        mine[at].push(id);
    }
    assert!(mine.iter().all(|m| !m.is_empty()), "{mine:?}");
    for (at, expected) in mine.iter().enumerate() {
        let request =
            ListTransactionsRequest::default().with_transactional_id_pattern(Some(s("spread-.*")));
        let (code, _, listed) = list_transactions(&mut clients[at], 2, request);
        let mut listed: Vec<String> = listed.into_iter().map(|(id, ..)| id).collect();
        let mut expected = expected.clone();
        listed.sort();
        expected.sort();
        assert_eq!((code, listed), (0, expected), "gateway {at}");
        let elsewhere = &mine[1 - at][0];
        let answer = &describe_transactions(&mut clients[at], &[elsewhere.as_str()])[0];
        assert_eq!(answer.error_code, NOT_COORDINATOR, "{answer:?}");
    }
}
