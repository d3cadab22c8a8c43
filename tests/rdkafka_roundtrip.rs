//! librdkafka (through the `rdkafka` crate) producing and consuming through the
//! gateway: 100,000 records over 8 partitions, every codec, keys and headers,
//! read back byte-exact with dense per-partition offsets.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, Timestamp};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use support::Gateway;

const PARTITIONS: i32 = 8;
const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const PER_CODEC: usize = 20_000;

/// One record as written, to compare with what comes back.
#[derive(Clone, Debug, PartialEq)]
struct Expected {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
}

fn record(n: usize) -> Expected {
    // Null and empty keys and values stay distinct; headers repeat keys and carry nulls.
    let key = match n % 7 {
        0 => None,
        1 => Some(Vec::new()),
        _ => Some(format!("key-{n}").into_bytes()),
    };
    let value = match n % 11 {
        0 => None,
        1 => Some(Vec::new()),
        _ => Some(
            (0..(n % 300) as u32)
                .map(|i| (i ^ n as u32) as u8)
                .collect(),
        ),
    };
    let headers = match n % 5 {
        0 => Vec::new(),
        1 => vec![
            ("h".into(), Some(b"1".to_vec())),
            ("h".into(), Some(b"2".to_vec())),
        ],
        2 => vec![("null".into(), None), ("empty".into(), Some(Vec::new()))],
        _ => vec![(format!("n{n}"), Some(n.to_string().into_bytes()))],
    };
    Expected {
        key,
        value,
        headers,
        timestamp: 1_700_000_000_000 + n as i64,
    }
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

async fn create_topic(bootstrap: &str, name: &str, partitions: i32, configs: &[(&str, &str)]) {
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

fn produce(bootstrap: &str, topic: &str, codec: &str, records: &[(i32, Expected)]) {
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
    producer.flush(Duration::from_secs(60)).expect("flush");
    assert_eq!(producer.in_flight_count(), 0);
}

/// Reads every partition from the start until `want[p]` records came back.
fn consume(
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
    let mut tpl = TopicPartitionList::new();
    for p in want.keys() {
        tpl.add_partition_offset(topic, *p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut got: HashMap<i32, Vec<(i64, Expected, Timestamp)>> = HashMap::new();
    let total: usize = want.values().sum();
    let deadline = Instant::now() + Duration::from_secs(120);
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

#[tokio::test(flavor = "multi_thread")]
async fn hundred_thousand_records_every_codec_byte_exact() {
    let gw = Gateway::start();
    let topic = "roundtrip";
    create_topic(&gw.bootstrap(), topic, PARTITIONS, &[]).await;

    let mut expected: HashMap<i32, Vec<Expected>> = HashMap::new();
    for (c, codec) in CODECS.iter().enumerate() {
        let records: Vec<(i32, Expected)> = (0..PER_CODEC)
            .map(|i| {
                let n = c * PER_CODEC + i;
                ((n % PARTITIONS as usize) as i32, record(n))
            })
            .collect();
        for (p, r) in &records {
            expected.entry(*p).or_default().push(r.clone());
        }
        let bootstrap = gw.bootstrap();
        let codec = codec.to_string();
        tokio::task::spawn_blocking(move || produce(&bootstrap, topic, &codec, &records))
            .await
            .unwrap();
    }

    let want = expected.iter().map(|(p, v)| (*p, v.len())).collect();
    let bootstrap = gw.bootstrap();
    let got = tokio::task::spawn_blocking(move || consume(&bootstrap, topic, &want))
        .await
        .unwrap();
    for (p, records) in &expected {
        let back = &got[p];
        assert_eq!(back.len(), records.len(), "partition {p}");
        for (i, ((offset, r, ts), want)) in back.iter().zip(records).enumerate() {
            assert_eq!(
                *offset, i as i64,
                "offsets are dense from 0 in partition {p}"
            );
            assert_eq!(r, want, "record {i} of partition {p}");
            assert!(matches!(ts, Timestamp::CreateTime(_)), "{ts:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn log_append_time_topics_stamp_the_broker_time() {
    let gw = Gateway::start();
    let topic = "appended";
    create_topic(
        &gw.bootstrap(),
        topic,
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    let before = chrono::Utc::now().timestamp_millis();
    let records: Vec<(i32, Expected)> = (0..10).map(|n| (0, record(n))).collect();
    let bootstrap = gw.bootstrap();
    tokio::task::spawn_blocking(move || produce(&bootstrap, topic, "lz4", &records))
        .await
        .unwrap();
    let bootstrap = gw.bootstrap();
    let got =
        tokio::task::spawn_blocking(move || consume(&bootstrap, topic, &HashMap::from([(0, 10)])))
            .await
            .unwrap();
    let after = chrono::Utc::now().timestamp_millis();
    for (offset, r, ts) in &got[&0] {
        let Timestamp::LogAppendTime(t) = ts else {
            panic!("offset {offset}: {ts:?}")
        };
        assert!(
            (before..=after).contains(t),
            "append time {t} outside [{before}, {after}]"
        );
        assert_eq!(r.value, record(*offset as usize).value);
    }
}
