//! Produce, Fetch, ListOffsets and InitProducerId at each version, on the test topic's records.

use crate::support;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use support::{batch, call, record, topic_name as name, RawClient};
use uuid::Uuid;

use super::Topic;

pub(super) fn produce(c: &mut RawClient, v: i16, t: &mut Topic) {
    let value = format!("produced at v{v}");
    let offset = t.values.len() as i64;
    let batch = one_record(&value, timestamp_of(offset));
    let p = produce_to(c, v, by_name_or_id(v, &t.name, t.id), batch.clone());
    assert_eq!((p.error_code, p.base_offset), (0, offset), "{p:?}");
    t.values.push(value); // written: later checks expect it whatever fails below
    assert_eq!(p.log_append_time_ms, -1, "CreateTime topic");
    if v >= 5 {
        assert_eq!(p.log_start_offset, 0);
    }
    // A topic that does not exist: UNKNOWN_TOPIC_ID (100) by id, else (3) by name.
    let missing = by_name_or_id(v, &name("missing"), Uuid::new_v4());
    let p = produce_to(c, v, missing, batch);
    assert_eq!(p.error_code, if v >= 13 { 100 } else { 3 }, "{p:?}");
}

pub(super) fn fetch(c: &mut RawClient, v: i16, t: &Topic) {
    // Both isolation levels see everything, as nothing here is transactional.
    for isolation_level in [0, 1] {
        let topic = by_name_or_id(v, &t.name, t.id);
        let p = fetch_from(c, v, topic, isolation_level);
        let end = t.values.len() as i64;
        let watermarks = (p.high_watermark, p.last_stable_offset);
        assert_eq!((p.error_code, watermarks), (0, (end, end)), "{p:?}");
        if v >= 5 {
            assert_eq!(p.log_start_offset, 0);
        }
        // The batches come back as produced: every record at its offset, decodable.
        let mut records = p.records.clone().expect("records");
        let sets = RecordBatchDecoder::decode_all(&mut records).expect("batches decode");
        let got = sets.into_iter().flat_map(|set| set.records).map(|r| {
            let value = String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap();
            (r.offset, r.timestamp, value)
        });
        let want = t.values.iter().enumerate().map(|(i, value)| {
            let offset = i as i64;
            (offset, timestamp_of(offset), value.clone())
        });
        assert_eq!(got.collect::<Vec<_>>(), want.collect::<Vec<_>>());
    }
    let missing = by_name_or_id(v, &name("missing"), Uuid::new_v4());
    let p = fetch_from(c, v, missing, 0);
    assert_eq!(p.error_code, if v >= 13 { 100 } else { 3 }, "{p:?}");
}

pub(super) fn list_offsets(c: &mut RawClient, v: i16, t: &Topic) {
    let end = t.values.len() as i64;
    // (timestamp asked, offset and timestamp answered): -2 earliest, -1 latest,
    // a time between two records finds the later one, a time after all finds none.
    let mut cases = vec![
        (-2, 0, -1),
        (-1, end, -1),
        (timestamp_of(1) + 1, 2, timestamp_of(2)),
        (timestamp_of(end), -1, -1),
    ];
    if v >= 7 {
        cases.push((-3, end - 1, timestamp_of(end - 1))); // MAX_TIMESTAMP (KIP-734)
    }
    if v >= 8 {
        cases.push((-4, 0, -1)); // EARLIEST_LOCAL_TIMESTAMP (KIP-405)
    }
    if v >= 9 {
        cases.push((-5, -1, -1)); // LATEST_TIERED_TIMESTAMP (KIP-1005): nothing tiered
    }
    if v >= 11 {
        // EARLIEST_PENDING_UPLOAD_TIMESTAMP (KIP-1023): no remote storage, no offset.
        cases.push((-6, -1, -1));
    }
    for (timestamp, offset, found) in cases {
        let partition = ListOffsetsPartition::default().with_timestamp(timestamp);
        let topic = ListOffsetsTopic::default().with_name(t.name.clone());
        let topics = vec![topic.with_partitions(vec![partition])];
        let request = ListOffsetsRequest::default().with_replica_id(BrokerId(-1));
        let r = call!(c, ListOffsets, v, request.with_topics(topics));
        let p = &r.topics[0].partitions[0];
        let answer = (p.error_code, p.offset, p.timestamp);
        assert_eq!(answer, (0, offset, found), "timestamp {timestamp}: {p:?}");
    }
}

pub(super) fn init_producer_id(c: &mut RawClient, v: i16, t: &mut Topic) {
    // No transactional id: an idempotent producer. (The default is Some(""), not null.)
    let request = InitProducerIdRequest::default().with_transactional_id(None);
    let request = request.with_transaction_timeout_ms(60_000);
    let r = call!(c, InitProducerId, v, request);
    assert_eq!(r.error_code, 0);
    assert!(r.producer_id.0 >= 0 && r.producer_epoch >= 0, "{r:?}");
    assert!(t.producer_ids.insert(r.producer_id.0), "given twice: {r:?}");
}

/// Produce v13 and Fetch v13+ name topics by id (KIP-516); earlier versions by name.
fn by_name_or_id(v: i16, name: &TopicName, id: Uuid) -> (Option<TopicName>, Uuid) {
    if v >= 13 {
        (None, id)
    } else {
        (Some(name.clone()), Uuid::nil())
    }
}

fn produce_to(
    c: &mut RawClient,
    v: i16,
    (name, id): (Option<TopicName>, Uuid),
    batch: Bytes,
) -> PartitionProduceResponse {
    let data = PartitionProduceData::default().with_records(Some(batch));
    let topic = TopicProduceData::default().with_name(name.clone().unwrap_or_default());
    let topic = topic.with_topic_id(id).with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000);
    let r = call!(c, Produce, v, request.with_topic_data(vec![topic]));
    let answered = (r.responses[0].name.clone(), r.responses[0].topic_id);
    assert_eq!(answered, (name.unwrap_or_default(), id));
    r.responses[0].partition_responses[0].clone()
}

/// A full fetch (no session: id 0, epoch -1) of partition 0 from offset 0.
fn fetch_from(
    c: &mut RawClient,
    v: i16,
    (name, id): (Option<TopicName>, Uuid),
    isolation_level: i8,
) -> PartitionData {
    let partition = FetchPartition::default().with_partition_max_bytes(1 << 20);
    let topic = FetchTopic::default().with_topic(name.clone().unwrap_or_default());
    let topic = topic.with_topic_id(id).with_partitions(vec![partition]);
    let request = FetchRequest::default().with_isolation_level(isolation_level);
    let request = request.with_min_bytes(1).with_topics(vec![topic]);
    let r = call!(c, Fetch, v, request);
    assert_eq!(r.error_code, 0);
    let answered = (r.responses[0].topic.clone(), r.responses[0].topic_id);
    assert_eq!(answered, (name.unwrap_or_default(), id));
    r.responses[0].partitions[0].clone()
}

/// Record i of the test topic was written at this time (one second apart).
fn timestamp_of(offset: i64) -> i64 {
    1_700_000_000_000 + 1000 * offset
}

fn one_record(value: &str, timestamp: i64) -> Bytes {
    batch(
        &[record(Some(b"k"), value.as_bytes(), timestamp)],
        Compression::None,
    )
}
