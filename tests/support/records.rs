//! DeleteRecords by hand-built request, and what Produce, Fetch and ListOffsets say of
//! a partition around it.

use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, DeleteRecordsRequest, FetchRequest, ListOffsetsRequest, ProduceRequest,
};
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::{batch, call, record, topic_name, RawClient};

pub const OFFSET_OUT_OF_RANGE: i16 = 1;

/// One partition's answer: partition, error code, low watermark.
pub type Deleted = (i32, i16, i64);

/// DeleteRecords at `v` for partitions of `topic`, each `(partition, offset)`.
pub fn delete(c: &mut RawClient, v: i16, topic: &str, asked: &[(i32, i64)]) -> Vec<Deleted> {
    let partitions = asked
        .iter()
        .map(|&(p, offset)| {
            DeleteRecordsPartition::default()
                .with_partition_index(p)
                .with_offset(offset)
        })
        .collect();
    let wanted = DeleteRecordsTopic::default()
        .with_name(topic_name(topic))
        .with_partitions(partitions);
    let request = DeleteRecordsRequest::default()
        .with_topics(vec![wanted])
        .with_timeout_ms(5000);
    let r = call!(c, DeleteRecords, v, request);
    assert_eq!(r.topics.len(), 1, "{r:?}");
    assert_eq!(r.topics[0].name, topic_name(topic));
    (r.topics[0].partitions.iter())
        .map(|p| (p.partition_index, p.error_code, p.low_watermark))
        .collect()
}

/// Produce v9 of `n` records in one batch to `partition`: the base offset.
pub fn produce_n(c: &mut RawClient, topic: &str, partition: i32, n: usize) -> i64 {
    let records: Vec<_> = (0..n)
        .map(|i| {
            let mut r = record(None, format!("v{i}").as_bytes(), 1_700_000_000_000);
            // One batch: the encoder splits where offset − sequence changes.
            r.offset = i as i64;
            r.sequence = i as i32 - 1;
            r
        })
        .collect();
    let data = TopicProduceData::default()
        .with_name(topic_name(topic))
        .with_partition_data(vec![PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(batch(&records, Compression::None)))]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![data]);
    let r = call!(c, Produce, 9, request);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.base_offset
}

/// What Fetch v12 from `offset` answers: error code, log start, high watermark and
/// the offsets of the records served at or after `offset`.
pub fn fetch_from(
    c: &mut RawClient,
    topic: &str,
    partition: i32,
    offset: i64,
) -> (i16, i64, i64, Vec<i64>) {
    fetch_with(c, (topic, partition, offset), (0, 1 << 20))
}

/// As [`fetch_from`], at an isolation level (1: read committed) and at most
/// `max_bytes`.
pub fn fetch_with(
    c: &mut RawClient,
    (topic, partition, offset): (&str, i32, i64),
    (isolation, max_bytes): (i8, i32),
) -> (i16, i64, i64, Vec<i64>) {
    let wanted = FetchTopic::default()
        .with_topic(topic_name(topic))
        .with_partitions(vec![FetchPartition::default()
            .with_partition(partition)
            .with_fetch_offset(offset)
            .with_partition_max_bytes(max_bytes)]);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(max_bytes)
        .with_isolation_level(isolation)
        .with_topics(vec![wanted]);
    let r = call!(c, Fetch, 12, request);
    let p = &r.responses[0].partitions[0];
    let mut offsets = Vec::new();
    if let Some(mut bytes) = p.records.clone() {
        if !bytes.is_empty() {
            let set = RecordBatchDecoder::decode(&mut bytes).expect("record batches");
            offsets.extend(
                set.records
                    .iter()
                    .map(|r| r.offset)
                    .filter(|&o| o >= offset),
            );
        }
    }
    (p.error_code, p.log_start_offset, p.high_watermark, offsets)
}

/// ListOffsets v7 of `partition` at `timestamp` (-2 earliest, -1 latest): the offset.
pub fn list_offset(c: &mut RawClient, topic: &str, partition: i32, timestamp: i64) -> i64 {
    let wanted = ListOffsetsTopic::default()
        .with_name(topic_name(topic))
        .with_partitions(vec![ListOffsetsPartition::default()
            .with_partition_index(partition)
            .with_timestamp(timestamp)]);
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![wanted]);
    let r = call!(c, ListOffsets, 7, request);
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.offset
}
