//! Several gateways on one Iggy server act as one Kafka cluster: each lists every live
//! gateway as a broker, they agree on partition leaders and group coordinators, and
//! when one dies (SIGKILL) or leaves (SIGTERM) the clients carry on through the others
//! with no acknowledged record lost.
//!
//! Needs an `iggy-server` (IGGY_SERVER_BIN); without one each test prints the SKIPPED
//! line and returns.

use crate::support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::MetadataResponse;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::producer::{DeliveryResult, ProducerContext};
use rdkafka::{ClientContext, TopicPartitionList};

use support::groups::{coordinator_of, create_topic};
use support::iggy::IggyServer;
use support::{call, Gateway, RawClient};

const TOPIC: &str = "spread";
const PARTITIONS: i32 = 6;

/// `n` gateways on `server`, quick to notice each other, snapshotting their logs often
/// (several at once, while commits go on: takeovers must still see every commit).
/// Processes: each test SIGKILLs or SIGTERMs one.
fn gateways(server: &IggyServer, n: usize, timeout_ms: &str) -> Vec<Gateway> {
    let mut settings = server.gateway_settings();
    settings.extend([
        ("node_heartbeat_ms", "200".to_string()),
        ("node_timeout_ms", timeout_ms.to_string()),
        ("group_initial_rebalance_delay_ms", "0".to_string()),
        ("iggy_snapshot_records", "20".to_string()),
    ]);
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (0..n).map(|_| Gateway::process_with(&settings)).collect()
}

fn metadata(gw: &Gateway) -> MetadataResponse {
    let mut c = RawClient::connect(gw.addr);
    call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    )
}

/// Metadata for one topic, as clients ask for the topics they use.
fn metadata_of(gw: &Gateway, topic: &str) -> MetadataResponse {
    let mut c = RawClient::connect(gw.addr);
    let wanted = MetadataRequestTopic::default().with_name(Some(support::topic_name(topic)));
    call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(Some(vec![wanted]))
    )
}

fn broker_ids(gw: &Gateway) -> BTreeSet<i32> {
    metadata(gw).brokers.iter().map(|b| b.node_id.0).collect()
}

/// Waits until every gateway lists exactly `want` brokers.
fn await_brokers(gws: &[&Gateway], want: usize, within: Duration) -> BTreeSet<i32> {
    let deadline = Instant::now() + within;
    loop {
        let seen: Vec<BTreeSet<i32>> = gws.iter().map(|g| broker_ids(g)).collect();
        if seen.iter().all(|s| s.len() == want && *s == seen[0]) {
            return seen[0].clone();
        }
        assert!(Instant::now() < deadline, "brokers listed: {seen:?}");
        thread::sleep(Duration::from_millis(100));
    }
}

/// Delivery outcomes: the values acknowledged and every error seen.
#[derive(Clone, Default)]
struct Acks {
    acked: Arc<Mutex<BTreeSet<u64>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(m) => {
                let v = std::str::from_utf8(m.payload().unwrap()).unwrap();
                self.acked.lock().unwrap().insert(v.parse().unwrap());
            }
            Err((e, _)) => self.errors.lock().unwrap().push(e.to_string()),
        }
    }
}

/// Produces numbered records from `from` until told to stop; returns the next number.
fn produce_until(bootstrap: String, acks: Acks, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let producer: ThreadedProducer<Acks> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("linger.ms", "5")
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("message.timeout.ms", "60000")
            .set("reconnect.backoff.max.ms", "500")
            .create_with_context(acks)
            .expect("producer");
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let value = n.to_string();
            if producer
                .send(BaseRecord::<(), _>::to(TOPIC).payload(&value))
                .is_ok()
            {
                n += 1;
            }
            thread::sleep(Duration::from_micros(500));
        }
        producer.flush(Duration::from_secs(60)).expect("flush");
        // Retriable errors are the client's to handle; a fatal one would stop a producer.
        assert!(
            producer.client().fatal_error().is_none(),
            "{:?}",
            producer.client().fatal_error()
        );
        n
    })
}

/// A group member bootstrapped through `bootstrap`, committing as it goes.
fn member(bootstrap: &str, group: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "200")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("reconnect.backoff.max.ms", "500")
        .create()
        .expect("consumer");
    c.subscribe(&[TOPIC]).unwrap();
    c
}

/// Polls every member until the values they received cover `want` (or time runs out).
fn consume_until(members: &[&BaseConsumer], got: &mut BTreeSet<u64>, want: &BTreeSet<u64>) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !want.is_subset(got) {
        for m in members {
            let fatal = m.client().fatal_error();
            assert!(fatal.is_none(), "a member failed for good: {fatal:?}");
        }
        assert!(
            Instant::now() < deadline,
            "{} acknowledged records never consumed (first {:?})",
            want.difference(got).count(),
            want.difference(got).next()
        );
        for m in members {
            // Transport errors while a gateway goes away are retried by the client.
            if let Some(Ok(msg)) = m.poll(Duration::from_millis(20)) {
                let v = std::str::from_utf8(msg.payload().unwrap()).unwrap();
                got.insert(v.parse().unwrap());
            }
        }
    }
}

/// Waits until at least `more` records beyond `past` are acknowledged; returns them all.
fn acked_past(acks: &Acks, past: usize, more: usize) -> BTreeSet<u64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let acked = acks.acked.lock().unwrap().clone();
        if acked.len() >= past + more {
            return acked;
        }
        let errors = acks.errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "delivery failures: {errors:?}");
        assert!(
            Instant::now() < deadline,
            "{} of {more} records acknowledged",
            acked.len().saturating_sub(past)
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// Every member that owns partitions commits where it got to, and each partition's
/// offset, read back through `gw`, is its high watermark: the group consumed
/// everything and its coordinator, wherever it is now, stored the commits.
fn commits_reach_the_end(members: &[&BaseConsumer], gw: &Gateway, group: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", gw.bootstrap())
        .set("group.id", group)
        .create()
        .expect("offset reader");
    let mut want = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        want.add_partition(TOPIC, p);
    }
    loop {
        for m in members {
            if m.assignment().is_ok_and(|a| a.count() > 0) {
                // A rebalance may refuse this one; the loop commits again.
                if let Err(e) = m.commit_consumer_state(CommitMode::Sync) {
                    eprintln!("commit refused, retried: {e}");
                }
            }
        }
        let committed = reader
            .committed_offsets(want.clone(), Duration::from_secs(10))
            .expect("OffsetFetch");
        let short: Vec<(i32, i64, i64)> = (0..PARTITIONS)
            .filter_map(|p| {
                let (_, high) = reader
                    .fetch_watermarks(TOPIC, p, Duration::from_secs(10))
                    .expect("watermarks");
                let at = committed
                    .find_partition(TOPIC, p)
                    .and_then(|e| e.offset().to_raw())
                    .unwrap_or(-1);
                (at != high).then_some((p, at, high))
            })
            .collect();
        if short.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "committed offsets short of the end (partition, committed, high): {short:?}"
        );
        for m in members {
            let _ = m.poll(Duration::from_millis(50));
        }
    }
}

#[test]
fn three_gateways_act_as_one_cluster_and_survive_a_killed_one() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gws = gateways(&server, 3, "1500");
    let ids = await_brokers(&gws.iter().collect::<Vec<_>>(), 3, Duration::from_secs(15));

    // Every gateway names the same coordinator for a group, and leaders spread.
    for g in ["a", "b", "c", "orders-app"] {
        let answers: BTreeSet<i32> = gws.iter().map(|gw| coordinator_of(gw, g)).collect();
        assert_eq!(answers.len(), 1, "group {g}: coordinators {answers:?}");
    }
    create_topic(&gws[0].bootstrap(), TOPIC, PARTITIONS);
    let leaders: BTreeSet<i32> = metadata_of(&gws[1], TOPIC)
        .topics
        .iter()
        .filter(|t| t.name.as_ref().is_some_and(|n| n.as_str() == TOPIC))
        .flat_map(|t| t.partitions.iter().map(|p| p.leader_id.0))
        .collect();
    assert_eq!(leaders, ids, "leaders spread over every gateway");

    // A producer and a three-member group, each bootstrapped through a different gateway.
    let (acks, stop) = (Acks::default(), Arc::new(AtomicBool::new(false)));
    let producer = produce_until(gws[0].bootstrap(), acks.clone(), stop.clone());
    let members: Vec<BaseConsumer> = gws.iter().map(|gw| member(&gw.bootstrap(), "g")).collect();
    let refs: Vec<&BaseConsumer> = members.iter().collect();
    let mut got = BTreeSet::new();
    let before = acked_past(&acks, 0, 200);
    consume_until(&refs, &mut got, &before);

    // SIGKILL one gateway: the others drop it and take over its partitions and groups.
    let port = gws[1].addr.port() as i32;
    let killed = metadata(&gws[1])
        .brokers
        .iter()
        .find(|b| b.port == port)
        .expect("the gateway lists itself")
        .node_id
        .0;
    gws[1].kill();
    let live = [&gws[0], &gws[2]];
    await_brokers(&live, 2, Duration::from_secs(15));
    // Producing goes on through the survivors.
    let survived = acks.acked.lock().unwrap().len();
    acked_past(&acks, survived, 200);
    stop.store(true, Ordering::Relaxed);
    let sent = producer.join().unwrap();
    let acked = acks.acked.lock().unwrap().clone();
    assert!(
        acks.errors.lock().unwrap().is_empty(),
        "delivery failures: {:?}",
        acks.errors.lock().unwrap()
    );
    assert_eq!(
        acked.len() as u64,
        sent,
        "every record sent was acknowledged"
    );
    consume_until(&refs, &mut got, &acked);

    // The group re-formed on a live gateway and committed where it got to.
    commits_reach_the_end(&refs, &gws[0], "g");
    let owner = coordinator_of(&gws[0], "g");
    assert!(
        owner != killed && ids.contains(&owner),
        "coordinator {owner}"
    );
}

#[test]
fn a_gateway_stopped_with_sigterm_hands_over_without_losing_records() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A long timeout: only the leave announcement can drop the stopped gateway quickly.
    let mut gws = gateways(&server, 2, "60000");
    await_brokers(&gws.iter().collect::<Vec<_>>(), 2, Duration::from_secs(15));
    create_topic(&gws[0].bootstrap(), TOPIC, PARTITIONS);
    let (acks, stop) = (Acks::default(), Arc::new(AtomicBool::new(false)));
    let producer = produce_until(gws[0].bootstrap(), acks.clone(), stop.clone());
    let members = [
        member(&gws[0].bootstrap(), "h"),
        member(&gws[1].bootstrap(), "h"),
    ];
    let refs: Vec<&BaseConsumer> = members.iter().collect();
    let mut got = BTreeSet::new();
    let before = acked_past(&acks, 0, 200);
    consume_until(&refs, &mut got, &before);

    let status = gws[1].terminate();
    assert!(status.success(), "gateway exit: {status}");
    await_brokers(&[&gws[0]], 1, Duration::from_secs(10));
    let survived = acks.acked.lock().unwrap().len();
    acked_past(&acks, survived, 200);
    stop.store(true, Ordering::Relaxed);
    let sent = producer.join().unwrap();
    assert!(
        acks.errors.lock().unwrap().is_empty(),
        "delivery failures: {:?}",
        acks.errors.lock().unwrap()
    );
    let acked = acks.acked.lock().unwrap().clone();
    assert_eq!(acked.len() as u64, sent);
    consume_until(&refs, &mut got, &acked);
    commits_reach_the_end(&refs, &gws[0], "h");
    assert_eq!(
        coordinator_of(&gws[0], "h"),
        broker_ids(&gws[0]).into_iter().next().unwrap()
    );
}
