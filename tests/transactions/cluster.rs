//! Several gateways on one Iggy: a transactional id has one coordinator among them;
//! when it is SIGKILLed mid-transaction, the producer carries on through another, whose
//! coordinator takes the id over from the stored state and commits what was open, and
//! a read-committed consumer on any gateway reads each record once. Transactions v2
//! across gateways: batches and offsets reaching a gateway that does not coordinate
//! their id join the transaction there (`remote_adds.rs`), its coordinator ends or
//! times it out with markers in every such partition, and a straggler of an ended
//! epoch stays unread, and adds left behind are swept. Kafka's Java transactional producer, consumer and admin
//! client (3.9 and 4.x) do the same through both gateways.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iggy_kafka_actors::store::{Meta, TopicPartition};
use iggy_kafka_actors::transactions::remote_adds::{self, Added};

use kafka_protocol::messages::*;
use rdkafka::producer::Producer;

use super::{read, send, txn_producer, values};
use crate::ports::iggy_backend;
use crate::support::admin::{eventually, Scrape};
use crate::support::client_checks;
use crate::support::configs::{self, s};
use crate::support::iggy::IggyServer;
use crate::support::kafka::{committed, create_topic, produce, Expected};
use crate::support::transactions::{
    add, commit_offset, describe_transactions, end, end_as, init, latest, produce as produce_txn,
    produce_as, write_markers, Producer as RawProducer,
};
use crate::support::{call, topic_name, Gateway, RawClient};

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

use crate::support::groups::{coordinator_port as coordinator, GROUP_KEY, TRANSACTION_KEY};

#[tokio::test(flavor = "multi_thread")]
async fn the_coordinator_killed_mid_transaction_another_commits_it() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gws = gateways(&server, 3);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 3);
    let bootstrap = Gateway::bootstrap_all(&gws);
    create_topic(&gws[0].bootstrap(), "txn-cluster", 3, &[]).await;
    let id = "txn-cluster-producer";
    let port = coordinator(&gws[0], TRANSACTION_KEY, id);
    let at = gws
        .iter()
        .position(|g| g.addr.port() as i32 == port)
        .expect("the coordinator is one of the gateways");
    for other in &gws {
        assert_eq!(
            coordinator(other, TRANSACTION_KEY, id),
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
    let port_now = coordinator(&gws[0], TRANSACTION_KEY, id);
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

const V2_TOPIC: &str = "txn-v2-cluster";
const TS: i64 = 1_700_000_000_000;

/// `id`-`n`: a key whose coordinator is `want` (a port), as `gw` answers.
fn key_at(gw: &Gateway, key_type: i8, id: &str, want: i32) -> String {
    (0..)
        .map(|n| format!("{id}-{n}"))
        .find(|k| coordinator(gw, key_type, k) == want)
        .expect("some key maps to every gateway")
}

/// Produce v12 of `n` records at `sequence` to `partition`: its error code.
fn send_v2(c: &mut RawClient, p: &RawProducer, partition: i32, (sequence, n): (i32, usize)) -> i16 {
    produce_as(c, 12, p, (V2_TOPIC, partition), (sequence, n), TS).error_code
}

/// Waits until the gateway behind `c` knows `topic` with its `partitions`.
fn await_topic(c: &mut RawClient, topic: &str, partitions: usize) {
    until("the other gateway knows the topic", || {
        let wanted =
            metadata_request::MetadataRequestTopic::default().with_name(Some(topic_name(topic)));
        let request = MetadataRequest::default().with_topics(Some(vec![wanted]));
        let r = call!(c, Metadata, 12, request);
        (r.topics.first()).is_some_and(|t| t.error_code == 0 && t.partitions.len() == partitions)
    });
}

/// `done` holds within 20 s, else the test fails naming `what`.
fn until(what: &str, done: impl FnMut() -> bool) {
    assert!(eventually(Duration::from_secs(20), done), "{what}");
}

/// Two gateways on `server` that both know `topic` (one partition), a raw client to
/// each, and a producer whose transactional id the first coordinates, partition 0 added
/// to its transaction.
async fn in_a_transaction(
    server: &IggyServer,
    topic: &str,
) -> (Vec<Gateway>, RawClient, RawClient, RawProducer) {
    let gws = gateways(server, 2);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2);
    create_topic(&gws[0].bootstrap(), topic, 1, &[]).await;
    let (home, away) = (&gws[0], &gws[1]);
    let id = key_at(home, TRANSACTION_KEY, topic, home.addr.port() as i32);
    let (mut at_home, mut at_away) = (RawClient::connect(home.addr), RawClient::connect(away.addr));
    await_topic(&mut at_away, topic, 1);
    let p = init(&mut at_home, &id);
    assert_eq!(add(&mut at_home, &p, topic, 0), 0);
    (gws, at_home, at_away, p)
}

/// A gateway whose producer state predates the fencing marker another gateway wrote
/// appends a straggler of the ended epoch after it, as a batch checked just before
/// its coordinator aborted can land. Read-committed readers on either gateway neither
/// wait at it nor get it (`txn_index.rs`).
#[tokio::test(flavor = "multi_thread")]
async fn a_straggler_after_its_fencing_marker_holds_back_no_reader() {
    const TOPIC: &str = "txn-fenced-cluster";
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (gws, mut at_home, mut at_away, p) = in_a_transaction(&server, TOPIC).await;
    let (home, away) = (&gws[0], &gws[1]);
    assert_eq!(produce_txn(&mut at_away, &p, (TOPIC, 0), 0, 2, TS), 0);
    let abort = [(p.pid, p.epoch + 1, false, &[(TOPIC, &[0][..])][..])];
    assert_eq!(
        write_markers(&mut at_home, &abort),
        [[(TOPIC.to_string(), 0, 0)]]
    );
    let straggler = produce_as(&mut at_away, 9, &p, (TOPIC, 0), (2, 1), TS);
    assert_eq!(
        straggler.error_code, 0,
        "appended where the marker is unknown"
    );
    let plain = Expected {
        key: None,
        value: Some(b"after".to_vec()),
        headers: Vec::new(),
        timestamp: TS,
    };
    produce(&home.bootstrap(), TOPIC, "none", &[(0, plain)]);
    for (gw, c) in [(home, &mut at_home), (away, &mut at_away)] {
        let high = latest(c, TOPIC, 0, 0);
        assert_eq!(latest(c, TOPIC, 0, 1), high, "the last stable offset");
        let got = read(&gw.bootstrap(), TOPIC, 1, "read_committed", 1);
        assert_eq!(
            got.get(&0).map(Vec::as_slice),
            Some(&["after".to_string()][..])
        );
        let all = read(&gw.bootstrap(), TOPIC, 1, "read_uncommitted", 4);
        assert_eq!(all.get(&0).map_or(0, Vec::len), 4, "{all:?}");
    }
}

/// A topic deleted and made again through another gateway: a gateway that indexed the
/// old topic's transactions forgets them once it sees the new topic (its id changed),
/// as after a DeleteTopics of its own. Kept, a transaction left open in the old topic
/// held the new one's last stable offset at 0 for good.
#[tokio::test(flavor = "multi_thread")]
async fn a_topic_made_again_elsewhere_keeps_nothing_of_the_old_ones_transactions() {
    const TOPIC: &str = "txn-remade";
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (gws, mut at_home, mut at_away, p) = in_a_transaction(&server, TOPIC).await;
    let home = &gws[0];
    assert_eq!(produce_txn(&mut at_home, &p, (TOPIC, 0), 0, 2, TS), 0);
    assert_eq!(
        latest(&mut at_home, TOPIC, 0, 1),
        0,
        "held by the open transaction"
    );

    assert_eq!(configs::delete(&mut at_away, TOPIC), 0);
    let made = configs::create_with(&mut at_away, 7, TOPIC, 1, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
    let topic_id = |c: &mut RawClient| {
        let wanted =
            metadata_request::MetadataRequestTopic::default().with_name(Some(topic_name(TOPIC)));
        let r = call!(
            c,
            Metadata,
            12,
            MetadataRequest::default().with_topics(Some(vec![wanted]))
        );
        r.topics[0].topic_id
    };
    let new_id = topic_id(&mut at_away);
    until("the first gateway sees the topic made again", || {
        topic_id(&mut at_home) == new_id
    });
    let plain = |v: &str| Expected {
        key: None,
        value: Some(v.as_bytes().to_vec()),
        headers: Vec::new(),
        timestamp: TS,
    };
    let records = [(0, plain("a")), (0, plain("b")), (0, plain("c"))];
    produce(&home.bootstrap(), TOPIC, "none", &records);
    let high = latest(&mut at_home, TOPIC, 0, 0);
    assert_eq!(high, 3);
    until("the last stable offset is the high watermark", || {
        latest(&mut at_home, TOPIC, 0, 1) == high
    });
}

/// A decision stored by a coordinator lost before it completed it, its markers maybe
/// still on their way: the gateway taking the id over completes it and fences the
/// producer (its next request is refused; initialized again, it writes at a later
/// epoch), so a late marker of the old epoch, landing among the batches of the
/// producer's next transaction, ends nothing (`transactions/slot.rs`, `complete`;
/// `txn_index.rs`). Without either, that transaction's commit served none of it.
#[tokio::test(flavor = "multi_thread")]
async fn a_decision_taken_over_fences_its_producer_so_late_markers_end_nothing() {
    use iggy_kafka_actors::protocol::markers::{self, Marker};
    use iggy_kafka_actors::protocol::records::BatchHeader;
    use iggy_kafka_actors::store::{AppendBatch, Logs};
    use iggy_kafka_actors::transactions::state::{Phase, TxnState};
    const TOPIC: &str = "txn-taken-over";
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gws = gateways(&server, 2);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2);
    create_topic(&gws[0].bootstrap(), TOPIC, 1, &[]).await;
    let id = key_at(&gws[0], TRANSACTION_KEY, TOPIC, gws[0].addr.port() as i32);
    await_topic(&mut RawClient::connect(gws[1].addr), TOPIC, 1);
    let mut at_home = RawClient::connect(gws[0].addr);
    let p = init(&mut at_home, &id);
    assert_eq!(add(&mut at_home, &p, TOPIC, 0), 0);
    produce_txn(&mut at_home, &p, (TOPIC, 0), 0, 1, TS);

    // The commit its coordinator stored before it was lost.
    let backend = Arc::new(iggy_backend(&server, |_| {}).await);
    let meta = Meta::new(backend.clone());
    let scan = meta.scan("transactions", &id).await.unwrap();
    let (_, stored) = (scan.entries.iter())
        .find(|(k, _)| *k == id)
        .expect("stored");
    let mut decided = TxnState::decode(stored).unwrap();
    decided.phase = Phase::PrepareCommit;
    let put = iggy_kafka_actors::store::meta::Change::Put {
        key: id.clone(),
        value: decided.encode(),
    };
    meta.write("transactions", vec![put]).await.unwrap();
    gws[0].kill();
    drop(gws.remove(0));
    let away = &gws[0];
    let mut at_away = RawClient::connect(away.addr);
    until("the commit taken over is completed", || {
        let state = &describe_transactions(&mut at_away, &[&id])[0];
        state.transaction_state.as_str() == "CompleteCommit"
    });
    let state = &describe_transactions(&mut at_away, &[&id])[0];
    assert_eq!(state.producer_epoch, p.epoch + 1, "the producer fenced");
    assert_ne!(
        add(&mut at_away, &p, TOPIC, 0),
        0,
        "a fenced producer added"
    );

    let next = init(&mut at_away, &id);
    assert_eq!(add(&mut at_away, &next, TOPIC, 0), 0);
    let open = produce_txn(&mut at_away, &next, (TOPIC, 0), 0, 1, TS);
    // The lost coordinator's commit marker, of the old epoch, lands now.
    let bytes = markers::batch(Marker::Abort, p.pid, p.epoch, 0, TS);
    let late = AppendBatch {
        header: BatchHeader::parse(&bytes),
        bytes,
        records: bytes::Bytes::new(),
        whole: false,
    };
    let logs = Logs::new(backend);
    let tp = TopicPartition {
        topic: TOPIC.into(),
        partition: 0,
    };
    logs.append(tp, late).await.unwrap();
    assert_eq!(latest(&mut at_away, TOPIC, 0, 1), open, "still open");
    assert_eq!(end(&mut at_away, &next, true), 0);
    let got = read(&away.bootstrap(), TOPIC, 1, "read_committed", 2);
    assert_eq!(got.get(&0).map_or(0, Vec::len), 2, "{got:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn transactions_v2_add_on_any_gateway_and_end_at_the_coordinator() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gws = gateways(&server, 2);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2);
    create_topic(&gws[0].bootstrap(), V2_TOPIC, 3, &[]).await;
    let (home, away) = (&gws[0], &gws[1]);
    let here = home.addr.port() as i32;
    let id = key_at(home, TRANSACTION_KEY, "txn-v2-cluster", here);
    let group = key_at(
        home,
        GROUP_KEY,
        "txn-v2-cluster-group",
        away.addr.port() as i32,
    );
    let (mut at_home, mut at_away) = (RawClient::connect(home.addr), RawClient::connect(away.addr));

    let versions = call!(
        at_away,
        ApiVersions,
        3,
        ApiVersionsRequest::default()
            .with_client_software_name(s("v2-cluster"))
            .with_client_software_version(s("1"))
    );
    let level = (versions.finalized_features.iter())
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level);
    assert_eq!(level, Some(2), "{versions:?}");

    await_topic(&mut at_away, V2_TOPIC, 3);

    // Partitions 1 and 2 join on the gateway that does not coordinate the id, 0 on
    // the coordinator; the offsets on the group's coordinator, the other gateway.
    let p = init(&mut at_home, &id);
    assert_eq!(send_v2(&mut at_home, &p, 0, (0, 2)), 0);
    assert_eq!(send_v2(&mut at_away, &p, 1, (0, 3)), 0);
    assert_eq!(send_v2(&mut at_away, &p, 2, (0, 1)), 0);
    assert_eq!(
        send_v2(&mut at_away, &p, 1, (3, 1)),
        0,
        "a second batch there"
    );
    assert_eq!(commit_offset(&mut at_away, &p, (&group, V2_TOPIC), 2), 0);
    until("the coordinator lists every partition", || {
        let t = &describe_transactions(&mut at_home, &[&id])[0];
        let n: usize = t.topics.iter().map(|t| t.partitions.len()).sum();
        t.transaction_state.as_str() == "Ongoing" && n == 3
    });
    let r = end_as(&mut at_home, 5, &p, true);
    assert_eq!((r.error_code, r.producer_epoch), (0, p.epoch + 1), "{r:?}");
    let next = RawProducer {
        epoch: r.producer_epoch,
        ..p.clone()
    };
    assert_eq!(committed(&home.bootstrap(), &group, V2_TOPIC, 1), [2]);

    // A straggler of the ended epoch, and an aborted transaction, reach no reader.
    let straggler = send_v2(&mut at_away, &p, 2, (1, 1));
    assert!(
        [0, 47].contains(&straggler),
        "straggler answered {straggler}"
    );
    assert_eq!(send_v2(&mut at_away, &next, 2, (0, 2)), 0);
    let r = end_as(&mut at_home, 5, &next, false);
    assert_eq!(r.error_code, 0, "{r:?}");
    let committed_values = |gw: &Gateway| {
        let got = read(&gw.bootstrap(), V2_TOPIC, 3, "read_committed", 7);
        let mut all: Vec<String> = got.into_values().flatten().collect();
        all.sort();
        all
    };
    let mut want: Vec<String> = [(0, 2), (1, 4), (2, 1)]
        .iter()
        .flat_map(|&(_, n)| (0..n).map(|i| format!("{id}-{i}")))
        .collect();
    want.sort();
    for gw in [home, away] {
        assert_eq!(committed_values(gw), want, "on {}", gw.bootstrap());
    }

    // A transaction only the other gateway saw, left open, times out at the
    // coordinator, which aborts it in that partition too.
    let short = key_at(home, TRANSACTION_KEY, "txn-v2-cluster-timeout", here);
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s(&short))))
        .with_transaction_timeout_ms(1_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let r = call!(at_home, InitProducerId, 4, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    let idle = RawProducer {
        id: short.clone(),
        pid: r.producer_id.0,
        epoch: r.producer_epoch,
    };
    assert_eq!(send_v2(&mut at_away, &idle, 0, (0, 1)), 0);
    assert!(latest(&mut at_away, V2_TOPIC, 0, 1) < latest(&mut at_away, V2_TOPIC, 0, 0));
    until("the timed-out transaction is aborted", || {
        latest(&mut at_away, V2_TOPIC, 0, 1) == latest(&mut at_away, V2_TOPIC, 0, 0)
    });
    // The markers are written before the coordinator records CompleteAbort, as
    // Kafka's coordinator does; the state follows them.
    until("the coordinator records the abort", || {
        describe_transactions(&mut at_home, &[&short])[0]
            .transaction_state
            .as_str()
            == "CompleteAbort"
    });

    // Adds a gateway died before withdrawing: to the epoch that timed out, and to an
    // id with no state (expired). The coordinator sweeps them on a rescan.
    let meta = Meta::new(Arc::new(iggy_backend(&server, |_| {}).await));
    let gone = key_at(home, TRANSACTION_KEY, "txn-v2-cluster-gone", here);
    let stale = [(short.as_str(), (idle.pid, idle.epoch)), (&gone, (99, 0))];
    let added = Added::Partition(TopicPartition {
        topic: V2_TOPIC.into(),
        partition: 1,
    });
    for (id, producer) in stale {
        remote_adds::write(&meta, id, producer, &added)
            .await
            .unwrap();
    }
    let left = || async {
        let all = remote_adds::all(&meta).await.unwrap();
        let ids = all.iter().map(|(id, at, _)| (id.as_str(), *at));
        ids.filter(|at| stale.contains(at)).count()
    };
    assert_eq!(left().await, 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while left().await > 0 {
        assert!(Instant::now() < deadline, "stale adds never swept");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Kafka's Java clients across two gateways: `TransactionsJava` and `TxnAdminJava`
/// (`tests/clients`) with both gateways as bootstrap, kafka-clients 3.9 speaking
/// transactions v1 and 4.x v2. Their topics' partitions are led by both gateways, so
/// batches reach a gateway that does not coordinate their transactional id.
#[test]
fn java_transactions_across_two_gateways() {
    let jars = client_checks::java_jars();
    if jars.is_empty() {
        return;
    }
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gws = gateways(&server, 2);
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2);
    let bootstrap = (gws.iter().map(Gateway::bootstrap)).collect::<Vec<_>>();
    for jars in &jars {
        for class in ["TransactionsJava", "TxnAdminJava"] {
            client_checks::java(jars, class, &bootstrap.join(","));
        }
    }
    for gw in &gws {
        let produced =
            Scrape::take(gw.admin).sum("iggy_kafka_gateway_requests_total", &[("api", "Produce")]);
        assert!(
            produced > 0.0,
            "{} led no partition written",
            gw.bootstrap()
        );
    }
}
