//! librdkafka (through the `rdkafka` crate) producing and consuming through the
//! gateway: 100,000 records over 8 partitions, every codec, keys and headers,
//! read back byte-exact with dense per-partition offsets.

use crate::support;

use std::collections::HashMap;

use rdkafka::message::Timestamp;

use support::kafka::{consume, create_topic, produce, Expected};
use support::{Gateway, Store};

const PARTITIONS: i32 = 8;
const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const PER_CODEC: usize = 20_000;

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

async fn hundred_thousand_records_every_codec_byte_exact(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
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

async fn log_append_time_topics_stamp_the_broker_time(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
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

support::on_every_store!(
    async:
    hundred_thousand_records_every_codec_byte_exact,
    log_append_time_topics_stamp_the_broker_time,
);
