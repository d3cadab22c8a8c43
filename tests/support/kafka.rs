//! librdkafka (the `rdkafka` crate) helpers shared by the tests that produce and
//! consume records through the gateway, whatever backend it runs on.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, Timestamp};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

/// One record as written, to compare with what comes back.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: i64,
}

pub fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

pub async fn create_topic(bootstrap: &str, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        topic = topic.set(k, v);
    }
    let results = admin(bootstrap)
        .create_topics(
            &[topic],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("create topics");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

pub fn produce(bootstrap: &str, topic: &str, codec: &str, records: &[(i32, Expected)]) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("compression.codec", codec)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    for (partition, r) in records {
        let mut headers = OwnedHeaders::new();
        for (k, v) in &r.headers {
            headers = headers.insert(Header {
                key: k,
                value: v.as_deref(),
            });
        }
        let mut base = BaseRecord::<[u8], [u8]>::to(topic)
            .partition(*partition)
            .timestamp(r.timestamp)
            .headers(headers);
        base.key = r.key.as_deref();
        base.payload = r.value.as_deref();
        let mut pending = base;
        loop {
            match producer.send(pending) {
                Ok(()) => break,
                Err((e, back)) => {
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "{e}"
                    );
                    producer.poll(Duration::from_millis(10));
                    pending = back;
                }
            }
        }
    }
    producer.flush(Duration::from_secs(120)).expect("flush");
    assert_eq!(producer.in_flight_count(), 0);
}

/// Assigns `consumer` the given partitions of `topic`, each from its first record
/// (manual assignment: no group is joined).
pub fn assign_from_start(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: impl IntoIterator<Item = i32>,
) {
    let mut tpl = TopicPartitionList::new();
    for p in partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
}

/// Reads every partition from the start until `want[p]` records came back.
pub fn consume(
    bootstrap: &str,
    topic: &str,
    want: &HashMap<i32, usize>,
) -> HashMap<i32, Vec<(i64, Expected, Timestamp)>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        // librdkafka wants a group id, but with assign() and explicit offsets it joins no group.
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    assign_from_start(&consumer, topic, want.keys().copied());
    let mut got: HashMap<i32, Vec<(i64, Expected, Timestamp)>> = HashMap::new();
    let total: usize = want.values().sum();
    let deadline = Instant::now() + Duration::from_secs(180);
    while got.values().map(Vec::len).sum::<usize>() < total {
        assert!(Instant::now() < deadline, "timed out consuming");
        let Some(m) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m.expect("consume error");
        let headers = m.headers().map_or_else(Vec::new, |h| {
            h.iter()
                .map(|h| (h.key.to_string(), h.value.map(<[u8]>::to_vec)))
                .collect()
        });
        let e = Expected {
            key: m.key().map(<[u8]>::to_vec),
            value: m.payload().map(<[u8]>::to_vec),
            headers,
            timestamp: m.timestamp().to_millis().unwrap_or(-1),
        };
        got.entry(m.partition())
            .or_default()
            .push((m.offset(), e, m.timestamp()));
    }
    got
}

/// The values of partition 0 of `topic`, read from the start by a client made from
/// `config` (any listener, any security settings) until `n` came; panics after 30 s.
pub fn read_values(config: &ClientConfig, topic: &str, n: usize) -> Vec<String> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    assign_from_start(&consumer, topic, [0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            Instant::now() < deadline,
            "read {} of {n}: {got:?}",
            got.len()
        );
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.expect("consume error");
            got.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned());
        }
    }
    got
}

/// A consumer of `group` that commits only when told to.
pub fn group_consumer(bootstrap: &str, group: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer")
}

/// Commits `offsets` for `group` (an empty group: generation -1, like admin tools).
pub fn commit_offsets(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let consumer = group_consumer(bootstrap, group);
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))
            .unwrap();
    }
    consumer.commit(&tpl, CommitMode::Sync).expect("commit");
}

/// The group's committed offsets for partitions `0..partitions` (-1: none).
pub fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> Vec<i64> {
    committed_at(bootstrap, (group, "read_committed"), topic, partitions)
}

/// `committed` by a consumer at `isolation`: read committed (librdkafka's default), it
/// waits while a transaction holds an offset (`require_stable`); read uncommitted, not.
pub fn committed_at(
    bootstrap: &str,
    (group, isolation): (&str, &str),
    topic: &str,
    partitions: i32,
) -> Vec<i64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .expect("committed offsets");
    (0..partitions)
        .map(|p| match got.find_partition(topic, p).unwrap().offset() {
            Offset::Offset(o) => o,
            _ => -1,
        })
        .collect()
}

/// What a consumer from the beginning reads of partition 0, up to its end: each
/// record's offset, key and value (`None`: a tombstone).
pub fn read_to_end(bootstrap: &str, topic: &str) -> Vec<(i64, String, Option<Vec<u8>>)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .expect("consumer");
    let mut at = TopicPartitionList::new();
    at.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&at).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut got = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "no end of the partition: read {}",
            got.len()
        );
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => got.push((
                m.offset(),
                String::from_utf8(m.key().unwrap().to_vec()).unwrap(),
                m.payload().map(<[u8]>::to_vec),
            )),
            Some(Err(KafkaError::PartitionEOF(_))) => return got,
            Some(Err(e)) => panic!("consumer: {e}"),
            None => {}
        }
    }
}

/// Reads partitions `0..partitions` of `topic` from the beginning to the high
/// watermarks they had at the start, checking each batch's CRC: `(partition, offset,
/// key, value)` in each partition's offset order. A consumer error is kept and shown if
/// the read does not get there within a minute.
pub fn read_partitions(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
) -> Vec<(i32, i64, Vec<u8>, Vec<u8>)> {
    // librdkafka needs a group.id even for assign(); no group is joined or committed.
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "read-partitions")
        .set("enable.auto.commit", "false")
        .set("check.crcs", "true")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    let mut remaining = HashMap::new();
    for p in 0..partitions {
        let (_, high) = consumer
            .fetch_watermarks(topic, p, Duration::from_secs(10))
            .expect("watermarks");
        if high > 0 {
            remaining.insert(p, high);
        }
        assignment
            .add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).expect("assign");
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !remaining.is_empty() {
        assert!(
            Instant::now() < deadline,
            "read-back timed out; partitions still short of their high watermark: {remaining:?}; errors: {errors:?}"
        );
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => errors.push(e.to_string()),
            Some(Ok(m)) => {
                let (p, offset) = (m.partition(), m.offset());
                out.push((
                    p,
                    offset,
                    m.key().unwrap_or_default().to_vec(),
                    m.payload().unwrap_or_default().to_vec(),
                ));
                if remaining.get(&p).is_some_and(|high| offset + 1 >= *high) {
                    remaining.remove(&p);
                }
            }
        }
    }
    out
}
