//! CreatePartitions through real clients, on both stores: librdkafka's AdminClient
//! grows a topic, its idempotent producer writes to a new partition and a consumer
//! reads it back; a consumer group subscribed to the topic rebalances onto the new
//! partitions (classic members notice the count change in Metadata); after a gateway
//! restart the topic keeps its count and every partition's records; and a second
//! gateway on the same Iggy server lists the new count at its next refresh.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminOptions, NewPartitions};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::types::RDKafkaErrorCode;

use crate::support;
use support::iggy::IggyServer;
use support::kafka::{admin, consume, create_topic, produce, Expected};
use support::partitions::{count, grow};
use support::{Gateway, RawClient, Store};

support::on_every_store!(
    librdkafka_grows_a_topic_and_writes_and_reads_a_new_partition,
    a_group_rebalances_onto_new_partitions,
    a_grown_topic_keeps_its_count_and_records_across_a_restart,
);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// librdkafka's AdminClient growing `topic` to `to` partitions: each topic's result.
fn create_partitions(bootstrap: &str, topic: &str, to: usize) -> Result<String, RDKafkaErrorCode> {
    let asked = NewPartitions::new(topic, to);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = runtime()
        .block_on(admin(bootstrap).create_partitions([&asked], &options))
        .expect("CreatePartitions answered");
    assert_eq!(results.len(), 1, "{results:?}");
    results
        .into_iter()
        .next()
        .unwrap()
        .map_err(|(_, code)| code)
}

fn record(value: &str) -> Expected {
    Expected {
        key: Some(b"k".to_vec()),
        value: Some(value.as_bytes().to_vec()),
        headers: Vec::new(),
        timestamp: 1_700_000_000_000,
    }
}

fn values(got: &HashMap<i32, Vec<(i64, Expected, rdkafka::Timestamp)>>, p: i32) -> Vec<String> {
    got[&p]
        .iter()
        .map(|(_, e, _)| String::from_utf8(e.value.clone().unwrap()).unwrap())
        .collect()
}

fn librdkafka_grows_a_topic_and_writes_and_reads_a_new_partition(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let b = gw.bootstrap();
    runtime().block_on(create_topic(&b, "widened", 1, &[]));
    produce(&b, "widened", "none", &[(0, record("before"))]);

    assert_eq!(
        create_partitions(&b, "widened", 3),
        Ok("widened".to_string())
    );
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(count(&mut c, "widened"), Some(3));
    // The errors librdkafka surfaces, by Kafka's codes.
    assert_eq!(
        create_partitions(&b, "widened", 2),
        Err(RDKafkaErrorCode::InvalidPartitions)
    );
    assert_eq!(
        create_partitions(&b, "missing", 2),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );

    // A new producer (idempotent) learns of partition 2 from Metadata and writes to it.
    let written: Vec<(i32, Expected)> = (0..5).map(|n| (2, record(&format!("p2-{n}")))).collect();
    produce(&b, "widened", "lz4", &written);
    produce(
        &b,
        "widened",
        "none",
        &[(1, record("p1")), (0, record("after"))],
    );
    let got = consume(&b, "widened", &HashMap::from([(0, 2), (1, 1), (2, 5)]));
    assert_eq!(
        values(&got, 2),
        (0..5).map(|n| format!("p2-{n}")).collect::<Vec<_>>()
    );
    let offsets: Vec<i64> = got[&2].iter().map(|(o, _, _)| *o).collect();
    assert_eq!(offsets, [0, 1, 2, 3, 4], "a new partition counts from 0");
    assert_eq!(values(&got, 1), ["p1"]);
    assert_eq!(
        values(&got, 0),
        ["before", "after"],
        "partition 0 kept its records"
    );
}

/// A classic-group member that refreshes metadata often, so it notices a partition
/// count change within a second (librdkafka's default is every 5 minutes).
fn member(bootstrap: &str, group: &str, topic: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("topic.metadata.refresh.interval.ms", "500")
        .set("partition.assignment.strategy", "range")
        .create()
        .unwrap();
    c.subscribe(&[topic]).unwrap();
    c
}

fn assigned(c: &BaseConsumer) -> BTreeSet<i32> {
    let tpl = c.assignment().expect("assignment");
    tpl.elements().iter().map(|e| e.partition()).collect()
}

/// Polls the members until their assignments are `want` (one set each), collecting
/// the values they read meanwhile.
fn poll_until(members: &[&BaseConsumer], want: &[BTreeSet<i32>], got: &mut Vec<(i32, String)>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for m in members {
            if let Some(r) = m.poll(Duration::from_millis(50)) {
                let r = r.expect("consumer error");
                let value = String::from_utf8(r.payload().unwrap().to_vec()).unwrap();
                got.push((r.partition(), value));
            }
        }
        let now: Vec<BTreeSet<i32>> = members.iter().map(|m| assigned(m)).collect();
        let mut sorted = now.clone();
        sorted.sort();
        let mut wanted = want.to_vec();
        wanted.sort();
        if sorted == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "assignments {now:?}, want {want:?}"
        );
    }
}

fn a_group_rebalances_onto_new_partitions(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[("group_initial_rebalance_delay_ms", "0")]) else {
        return;
    };
    let b = gw.bootstrap();
    runtime().block_on(create_topic(&b, "regrouped", 1, &[]));
    let (one, two) = (
        member(&b, "growing-group", "regrouped"),
        member(&b, "growing-group", "regrouped"),
    );
    let mut got = Vec::new();
    // Range over one partition: one member gets it, the other nothing.
    poll_until(
        &[&one, &two],
        &[BTreeSet::from([0]), BTreeSet::new()],
        &mut got,
    );

    let mut c = RawClient::connect(gw.addr);
    assert_eq!(grow(&mut c, 3, &[("regrouped", 4, None)], false)[0].1, 0);
    // The leader sees 4 partitions in Metadata and rejoins: range splits them 2 and 2.
    let halves = [BTreeSet::from([0, 1]), BTreeSet::from([2, 3])];
    poll_until(&[&one, &two], &halves, &mut got);

    let written: Vec<(i32, Expected)> = (0..4).map(|p| (p, record(&format!("to-{p}")))).collect();
    produce(&b, "regrouped", "none", &written);
    // Nothing is committed, so a member given a partition again reads it from the
    // start: a record may come twice, but each from the partition it was written to.
    let want: BTreeSet<(i32, String)> = (0..4).map(|p| (p, format!("to-{p}"))).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        poll_until(&[&one, &two], &halves, &mut got);
        let read: BTreeSet<(i32, String)> = got.iter().cloned().collect();
        assert!(read.is_subset(&want), "read {got:?}");
        if read == want {
            break;
        }
        assert!(Instant::now() < deadline, "read {got:?}");
    }
}

fn a_grown_topic_keeps_its_count_and_records_across_a_restart(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let b = gw.bootstrap();
    runtime().block_on(create_topic(&b, "kept-wide", 1, &[]));
    produce(&b, "kept-wide", "none", &[(0, record("zero"))]);
    assert_eq!(
        create_partitions(&b, "kept-wide", 3),
        Ok("kept-wide".to_string())
    );
    produce(
        &b,
        "kept-wide",
        "none",
        &[(2, record("two")), (1, record("one"))],
    );

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(count(&mut c, "kept-wide"), Some(3), "the count survives");
    produce(&b, "kept-wide", "none", &[(2, record("two again"))]);
    let got = consume(&b, "kept-wide", &HashMap::from([(0, 1), (1, 1), (2, 2)]));
    assert_eq!(values(&got, 0), ["zero"]);
    assert_eq!(values(&got, 1), ["one"]);
    assert_eq!(values(&got, 2), ["two", "two again"]);
    let again = grow(&mut c, 3, &[("kept-wide", 3, None)], false);
    assert_eq!(
        again[0].2.as_deref(),
        Some("Topic already has 3 partition(s).")
    );
}

#[test]
fn a_second_gateway_on_one_iggy_sees_the_growth_at_its_refresh() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (first, second) = (server.gateway(), server.gateway());
    let (mut c1, mut c2) = (
        RawClient::connect(first.addr),
        RawClient::connect(second.addr),
    );
    let made = support::configs::create_with(&mut c1, 7, "seen-wide", 1, 1, &[], false);
    assert_eq!(made.error_code, 0);
    let deadline = Instant::now() + Duration::from_secs(15);
    while count(&mut c2, "seen-wide") != Some(1) {
        assert!(
            Instant::now() < deadline,
            "the second gateway never listed the topic"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(grow(&mut c1, 3, &[("seen-wide", 3, None)], false)[0].1, 0);
    while count(&mut c2, "seen-wide") != Some(3) {
        assert!(
            Instant::now() < deadline,
            "the second gateway still lists fewer"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // And answers a request for that count as the first would.
    let again = grow(&mut c2, 3, &[("seen-wide", 3, None)], false);
    assert_eq!(
        again[0].2.as_deref(),
        Some("Topic already has 3 partition(s).")
    );
}
