//! rskafka (a pure-Rust client) against the gateway: topic creation, produce with
//! every codec, fetch by offset, and list offsets.

use crate::support;

use std::collections::BTreeMap;

use chrono::{TimeZone, Utc};
use rskafka::client::partition::{Compression, OffsetAt, UnknownTopicHandling};
use rskafka::client::ClientBuilder;
use rskafka::record::Record;

use support::{Gateway, Store};

async fn produce_fetch_and_offsets(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let client = ClientBuilder::new(vec![gw.bootstrap()])
        .build()
        .await
        .expect("client");
    client
        .controller_client()
        .unwrap()
        .create_topic("rs", 2, 1, 5_000)
        .await
        .expect("create topic");
    let partition = client
        .partition_client("rs", 1, UnknownTopicHandling::Retry)
        .await
        .unwrap();

    let mut sent = Vec::new();
    for (i, compression) in [
        Compression::NoCompression,
        Compression::Gzip,
        Compression::Lz4,
        Compression::Snappy,
        Compression::Zstd,
    ]
    .into_iter()
    .enumerate()
    {
        let records: Vec<Record> = (0..50)
            .map(|n| Record {
                key: Some(format!("k{i}-{n}").into_bytes()),
                value: Some(vec![n as u8; n * 10]),
                headers: BTreeMap::from([("codec".to_string(), vec![i as u8])]),
                timestamp: Utc
                    .timestamp_millis_opt(1_600_000_000_000 + n as i64)
                    .unwrap(),
            })
            .collect();
        let offsets = partition
            .produce(records.clone(), compression)
            .await
            .expect("produce");
        assert_eq!(
            offsets,
            (sent.len() as i64..sent.len() as i64 + 50).collect::<Vec<_>>()
        );
        sent.extend(records);
    }

    assert_eq!(partition.get_offset(OffsetAt::Earliest).await.unwrap(), 0);
    assert_eq!(
        partition.get_offset(OffsetAt::Latest).await.unwrap(),
        sent.len() as i64
    );

    let mut got = Vec::new();
    while got.len() < sent.len() {
        let (records, high) = partition
            .fetch_records(got.len() as i64, 1..1_000_000, 1_000)
            .await
            .expect("fetch");
        assert_eq!(high, sent.len() as i64);
        assert!(
            !records.is_empty(),
            "fetch made no progress at {}",
            got.len()
        );
        got.extend(records);
    }
    for (i, (r, want)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(r.offset, i as i64);
        assert_eq!(&r.record, want, "record {i}");
    }

    // The other partition is empty and says so.
    let empty = client
        .partition_client("rs", 0, UnknownTopicHandling::Retry)
        .await
        .unwrap();
    assert_eq!(empty.get_offset(OffsetAt::Latest).await.unwrap(), 0);
    let (records, high) = empty.fetch_records(0, 1..1_000, 100).await.unwrap();
    assert!(records.is_empty());
    assert_eq!(high, 0);
}

support::on_every_store!(
    async:
    produce_fetch_and_offsets,
);
