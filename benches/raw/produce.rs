//! A minimal Kafka producer: one record batch per Produce request, acks=all, as the SDK
//! producer of `benches/iggy.rs` sends one batch per call. Batch j goes to partition
//! j % partitions over connection j % connections, each batch encoded when sent.

use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::call;

/// Produce by topic name (v13 names topics by id).
const VERSION: i16 = 12;

/// Sends `n` records of `size` bytes in batches of `batch`. Returns (seconds, sorted
/// per-request latencies in ns); panics past `limit` or on any error code.
pub fn produce(
    addr: &str,
    topic: &str,
    (partitions, connections): (i32, usize),
    (size, n, batch): (usize, u64, usize),
    limit: Duration,
) -> (f64, Vec<u64>) {
    let batches = n.div_ceil(batch as u64);
    let start = Instant::now();
    let writers: Vec<_> = (0..connections as u64)
        .map(|c| {
            let (addr, topic) = (addr.to_string(), topic.to_string());
            thread::spawn(move || {
                let mut conn = TcpStream::connect(&addr).expect("connect");
                conn.set_nodelay(true).unwrap();
                let value = Bytes::from(vec![b'x'; size]);
                let mut latencies = Vec::new();
                for j in (c..batches).step_by(connections) {
                    assert!(start.elapsed() < limit, "raw produce: timed out");
                    let count = (n - j * batch as u64).min(batch as u64) as usize;
                    let partition = (j % partitions as u64) as i32;
                    let request = request(&topic, partition, &value, count);
                    let sent = Instant::now();
                    let mut answer = call(&mut conn, ApiKey::Produce, VERSION, j as i32, &request);
                    let answer = ProduceResponse::decode(&mut answer, VERSION).expect("answer");
                    latencies.push(sent.elapsed().as_nanos() as u64);
                    for p in answer.responses.iter().flat_map(|t| &t.partition_responses) {
                        assert_eq!(
                            p.error_code, 0,
                            "partition {}: {:?}",
                            p.index, p.error_message
                        );
                    }
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for w in writers {
        latencies.extend(w.join().expect("raw produce writer"));
    }
    let secs = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    (secs, latencies)
}

pub(crate) fn request(topic: &str, partition: i32, value: &Bytes, count: usize) -> ProduceRequest {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // No producer id: base sequence -1. The encoder keeps records in one batch
            // while offset - sequence stays the same.
            sequence: i as i32 - 1,
            timestamp: now,
            key: None,
            value: Some(value.clone()),
            headers: Default::default(),
        })
        .collect();
    let mut encoded = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut encoded, &records, &options).expect("encode batch");
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(encoded.freeze()))])])
}
