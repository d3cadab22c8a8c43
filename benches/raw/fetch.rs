//! A minimal Kafka consumer: plain Fetch requests on a few connections, every record
//! decoded (as the SDK consumer decodes every message), nothing else. librdkafka keeps
//! one Fetch in flight per broker and spends most of two shared cores decoding, so it
//! shows what a typical client gets; this shows what the gateway can serve, the figure
//! to hold against the SDK reading Iggy directly with the same number of connections.

use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchResponse, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;

use super::call;

/// Fetch by topic name (v13 names topics by id).
const VERSION: i16 = 12;
/// librdkafka's default `max.partition.fetch.bytes`.
const PARTITION_MAX_BYTES: i32 = 1 << 20;

/// Reads every record of `partitions` partitions of `topic` from offset 0 up to each
/// high watermark, over `connections` connections (partition p on connection
/// p % connections). Returns (records/s, MB/s of values); panics past `limit`.
pub fn consume(
    addr: &str,
    topic: &str,
    partitions: i32,
    connections: usize,
    limit: Duration,
) -> (f64, f64) {
    let start = Instant::now();
    let readers: Vec<_> = (0..connections)
        .map(|c| {
            let (addr, topic) = (addr.to_string(), topic.to_string());
            let mine: Vec<i32> = (c as i32..partitions).step_by(connections).collect();
            thread::spawn(move || read_partitions(&addr, &topic, &mine, start + limit))
        })
        .collect();
    let (mut records, mut bytes) = (0u64, 0u64);
    for r in readers {
        let (n, b) = r.join().expect("raw fetch reader");
        records += n;
        bytes += b;
    }
    let secs = start.elapsed().as_secs_f64();
    (records as f64 / secs, bytes as f64 / secs / 1e6)
}

fn read_partitions(addr: &str, topic: &str, mine: &[i32], deadline: Instant) -> (u64, u64) {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_nodelay(true).unwrap();
    let mut offsets: Vec<(i32, i64, Option<i64>)> = mine.iter().map(|&p| (p, 0, None)).collect();
    let (mut records, mut bytes) = (0u64, 0u64);
    let mut correlation = 0;
    while offsets
        .iter()
        .any(|(_, at, high)| high.is_none_or(|h| *at < h))
    {
        assert!(Instant::now() < deadline, "raw fetch: timed out");
        correlation += 1;
        let wanted = offsets
            .iter()
            .map(|&(p, at, _)| {
                FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(at)
                    .with_partition_max_bytes(PARTITION_MAX_BYTES)
            })
            .collect();
        let request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(i32::MAX)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(wanted)]);
        let mut frame = call(&mut conn, ApiKey::Fetch, VERSION, correlation, &request);
        let answer = FetchResponse::decode(&mut frame, VERSION).expect("fetch response");
        for p in answer.responses.into_iter().flat_map(|t| t.partitions) {
            assert_eq!(p.error_code, 0, "partition {}: error", p.partition_index);
            let entry = offsets
                .iter_mut()
                .find(|(q, _, _)| *q == p.partition_index)
                .expect("asked-for partition");
            entry.2 = Some(p.high_watermark);
            let mut set = p.records.unwrap_or_default();
            for batch in RecordBatchDecoder::decode_all(&mut set).expect("record batches") {
                for r in batch.records {
                    records += 1;
                    bytes += r.value.map_or(0, |v| v.len() as u64);
                    entry.1 = r.offset + 1;
                }
            }
        }
    }
    (records, bytes)
}
