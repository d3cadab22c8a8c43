//! The gateway on the Iggy backend, against a real `iggy-server`: Kafka clients and
//! native Iggy clients on the same data.
//!
//! The server binary comes from `IGGY_SERVER_BIN` or `iggy-server` on PATH; each test
//! starts its own on a free loopback port with a temporary directory. Without one,
//! the tests print one SKIPPED line and return.
//!
//! `IGGY_TEST_RECORDS` sets the size of the round-trip workload (default 100,000).
//!
//! By concern: [`records`] (Kafka records and native messages both ways, lookups by
//! time), [`topics`] (topics and their configurations as Iggy topics), [`offsets`]
//! (committed offsets, their snapshots, the offset slots' clients), [`lifecycle`]
//! (startup errors, Iggy restarting under load, readiness) and [`deadlines`] (requests'
//! deadlines met while Iggy does not answer). What they share is here.

mod batch_form;
mod deadlines;
mod lifecycle;
mod offsets;
mod records;
mod topics;

use crate::support;

use iggy::prelude::{Consumer, Identifier, IggyMessage, MessageClient, PollingStrategy, TcpClient};

use bytes::Buf;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestKind, ResponseKind};
use std::collections::HashMap;

use rdkafka::message::Timestamp;
use support::kafka::{consume, produce, Expected};
use support::{topic_name, RawClient};

const STREAM: &str = "kafka";
/// The stream of the gateway's own logs (`iggy_gateway_stream`).
const GATEWAY_STREAM: &str = "kafka-gateway";

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

/// The batches one Fetch of `partition` from `offset` serves, as (base offset, record
/// count, compression codec), read from their headers as sent.
pub(super) fn served(
    c: &mut RawClient,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Vec<(i64, i32, i16)> {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])]);
    let ResponseKind::Fetch(r) = c.call(ApiKey::Fetch, 12, RequestKind::Fetch(req)) else {
        panic!("not a Fetch response")
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "Fetch {topic}-{partition} at {offset}");
    let mut data = p.records.clone().unwrap_or_default();
    let mut batches = Vec::new();
    while data.remaining() >= 61 {
        let base = (&data[..8]).get_i64();
        let len = (&data[8..12]).get_i32() as usize;
        let attributes = (&data[21..23]).get_i16();
        let count = (&data[57..61]).get_i32();
        batches.push((base, count, attributes & 0x07));
        data.advance(12 + len);
    }
    batches
}

/// Produces `count` records (record n to partition n % `partitions`) in equal runs, one
/// run per codec in `codecs`, each through its own librdkafka producer; what each
/// partition then holds, in order.
async fn produce_per_codec(
    bootstrap: &str,
    topic: &'static str,
    (partitions, count): (i32, usize),
    codecs: &[&str],
) -> HashMap<i32, Vec<Expected>> {
    let per_codec = count.div_ceil(codecs.len());
    let mut expected: HashMap<i32, Vec<Expected>> = HashMap::new();
    for (c, codec) in codecs.iter().enumerate() {
        let records: Vec<(i32, Expected)> = (c * per_codec..((c + 1) * per_codec).min(count))
            .map(|n| ((n % partitions as usize) as i32, record(n)))
            .collect();
        for (p, r) in &records {
            expected.entry(*p).or_default().push(r.clone());
        }
        let (bootstrap, codec) = (bootstrap.to_string(), codec.to_string());
        tokio::task::spawn_blocking(move || produce(&bootstrap, topic, &codec, &records))
            .await
            .unwrap();
    }
    expected
}

/// Reads every partition of `topic` from the start and checks it holds `expected`: each
/// record as written, at offsets dense from 0, with its own CreateTime timestamp.
async fn consume_and_check(
    bootstrap: &str,
    topic: &'static str,
    expected: &HashMap<i32, Vec<Expected>>,
) {
    let want = expected.iter().map(|(p, v)| (*p, v.len())).collect();
    let bootstrap = bootstrap.to_string();
    let got = tokio::task::spawn_blocking(move || consume(&bootstrap, topic, &want))
        .await
        .unwrap();
    for (p, records) in expected {
        let back = &got[p];
        assert_eq!(back.len(), records.len(), "partition {p}");
        for (i, ((offset, r, ts), want)) in back.iter().zip(records).enumerate() {
            assert_eq!(*offset, i as i64, "offsets dense from 0 in partition {p}");
            assert_eq!(r, want, "record {i} of partition {p}");
            assert_eq!(*ts, Timestamp::CreateTime(want.timestamp), "record {i}");
        }
    }
}

/// One record as written, to compare with what comes back.
/// Every shape the mapping treats differently: null, empty, short and long keys;
/// null and empty values; native headers; repeated, null, empty, long and reserved
/// header names.
fn record(n: usize) -> Expected {
    let key = match n % 7 {
        0 => None,
        1 => Some(Vec::new()),
        2 => Some(vec![b'k'; 300 + n % 50]),
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
    let headers = match n % 6 {
        0 => Vec::new(),
        1 => vec![
            ("h".into(), Some(b"1".to_vec())),
            ("h".into(), Some(b"2".to_vec())),
        ],
        2 => vec![("null".into(), None), ("empty".into(), Some(Vec::new()))],
        3 => vec![("long".into(), Some(vec![b'x'; 256]))],
        4 => vec![("kafka.key".into(), Some(b"not the key".to_vec()))],
        _ => vec![
            (format!("n{n}"), Some(n.to_string().into_bytes())),
            ("trace".into(), Some(b"t".to_vec())),
        ],
    };
    Expected {
        key,
        value,
        headers,
        timestamp: 1_700_000_000_000 + n as i64,
    }
}

/// Every message of an Iggy partition, read with the SDK.
async fn iggy_messages(client: &TcpClient, topic: &str, partition: u32) -> Vec<IggyMessage> {
    let mut out = Vec::new();
    loop {
        let polled = client
            .poll_messages(
                &id(STREAM),
                &id(topic),
                Some(partition),
                &Consumer::default(),
                &PollingStrategy::offset(out.len() as u64),
                1_000,
                false,
            )
            .await
            .expect("poll");
        if polled.messages.is_empty() {
            return out;
        }
        out.extend(polled.messages);
    }
}

/// A message's user headers by name, decoded by the SDK (a map: last of a name wins).
fn header(m: &IggyMessage, name: &str) -> Option<Vec<u8>> {
    let map = m.user_headers_map().expect("headers")?;
    map.iter()
        .find(|(k, _)| k.as_bytes() == name.as_bytes())
        .map(|(_, v)| v.as_bytes().to_vec())
}

/// What a native Iggy client must see for a record, per `docs/IGGY_MAPPING.md`.
fn check_native_view(m: &IggyMessage, r: &Expected) {
    // Version 2: nothing of a transaction, so the previous release reads it too.
    assert_eq!(header(m, "kafka.mapping"), Some(vec![2]), "marker");
    // These records' timestamps fit Iggy's origin timestamp (µs), so no header holds it.
    assert_eq!(m.header.origin_timestamp, r.timestamp as u64 * 1000);
    assert_eq!(header(m, "kafka.timestamp"), None);
    // Keys here stay far below Iggy's 100 KB of headers: the payload is the value.
    assert_eq!(
        m.payload.as_ref(),
        r.value.as_deref().unwrap_or_default(),
        "payload is the value"
    );
    assert_eq!(
        header(m, "kafka.value"),
        r.value.is_none().then(|| b"null".to_vec())
    );
    let native_key = r.key.as_ref().is_none_or(|k| (1..=255).contains(&k.len()));
    match &r.key {
        Some(k) if native_key => assert_eq!(header(m, "kafka.key").as_ref(), Some(k)),
        _ => assert_eq!(header(m, "kafka.key"), None),
    }
    let native_headers = r.headers.iter().enumerate().all(|(i, (k, v))| {
        v.as_ref().is_some_and(|v| (1..=255).contains(&v.len()))
            && !k.starts_with("kafka.")
            && !r.headers[..i].iter().any(|(n, _)| n == k)
    });
    if native_headers {
        for (k, v) in &r.headers {
            assert_eq!(header(m, k).as_ref(), v.as_ref(), "native header {k}");
        }
    }
    assert_eq!(
        header(m, "kafka.extra.000").is_some(),
        !(native_key && native_headers),
        "fallback blob exactly when needed: {r:?}"
    );
}
