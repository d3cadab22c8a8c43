//! Versions as data: every (API, version) in `iggy_kafka_actors::api::SERVED` gets a
//! valid request built with `kafka-protocol` at exactly that version, and its answer
//! must decode at that version and say what a Kafka broker would. Widening a range in
//! SERVED widens this test; an API added to SERVED fails it until it is taught here.

mod support;

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use iggy_kafka_actors::api::SERVED;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder, TimestampType};
use support::{batch, framed, i32_at, Gateway, RawClient};
use uuid::Uuid;

/// Sends a typed request of API `$api` at version `$v` and returns the typed answer.
macro_rules! call {
    ($c:expr, $api:ident, $v:expr, $request:expr) => {
        match call($c, ApiKey::$api, $v, RequestKind::$api($request)) {
            ResponseKind::$api(answer) => answer,
            other => panic!("expected a {} answer, got {other:?}", stringify!($api)),
        }
    };
}

/// The topic every version reads and writes, and what it holds.
struct Topic {
    name: TopicName,
    id: Uuid,
    /// The value of the record at offset i.
    values: Vec<String>,
    producer_ids: HashSet<i64>,
}

#[test]
fn every_served_version_of_every_api_answers_as_kafka_does() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    let id = create(&mut c, 7, "versions", 1).topic_id;
    let (name, values, producer_ids) = (name("versions"), Vec::new(), HashSet::new());
    let mut t = Topic {
        name,
        id,
        values,
        producer_ids,
    };
    // Data for Fetch and ListOffsets, whichever API SERVED happens to list first.
    for _ in 0..3 {
        produce(&mut c, 9, &mut t);
    }

    // Every version is tried even after one fails, so one run lists every broken one.
    let mut failures = Vec::new();
    for &(key, min, max) in SERVED {
        for v in min..=max {
            let outcome = catch_unwind(AssertUnwindSafe(|| match key {
                ApiKey::Produce => produce(&mut c, v, &mut t),
                ApiKey::Fetch => fetch(&mut c, v, &t),
                ApiKey::ListOffsets => list_offsets(&mut c, v, &t),
                ApiKey::Metadata => metadata(&mut c, v, &t),
                ApiKey::ApiVersions => api_versions(&mut c, v),
                ApiKey::CreateTopics => create_topics(&mut c, v),
                ApiKey::DeleteTopics => delete_topics(&mut c, v),
                ApiKey::InitProducerId => init_producer_id(&mut c, v, &mut t),
                other => panic!("{other:?} is served but this test builds no request for it"),
            }));
            if let Err(panic) = outcome {
                let text = panic.downcast_ref::<&str>().map(|s| s.to_string());
                let text = text.or_else(|| panic.downcast_ref::<String>().cloned());
                failures.push(format!("{key:?} v{v}: {}", text.unwrap_or_default()));
                c = RawClient::connect(gw.addr); // the old one may hold an unread answer
            }
        }
    }
    assert!(failures.is_empty(), "failed:\n{}", failures.join("\n"));
}

#[test]
fn versions_just_outside_each_served_range_are_refused() {
    // A broker closes the connection on a version it does not serve, except for
    // ApiVersions, which KIP-511 answers at v0 with UNSUPPORTED_VERSION (35).
    let gw = Gateway::start();
    for &(key, min, max) in SERVED {
        for v in [min - 1, max + 1].into_iter().filter(|&v| v >= 0) {
            let mut header = BytesMut::new();
            header.put_i16(key as i16);
            header.put_i16(v);
            header.put_i32(9); // correlation id
            header.put_i16(-1); // null client id
            if key == ApiKey::ApiVersions && v > max {
                let mut c = RawClient::connect(gw.addr);
                c.send_frame(&header);
                let frame = c.read_frame().expect("a KIP-511 answer");
                assert_eq!(i32_at(&frame, 0), 9, "correlation id");
                assert_eq!(i16::from_be_bytes([frame[4], frame[5]]), 35, "error code");
                continue;
            }
            let mut s = TcpStream::connect(gw.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(&framed(&header)).unwrap();
            // Nothing comes back, and the gateway closes (a 5 s timeout fails).
            let mut answer = Vec::new();
            let read = s.read_to_end(&mut answer);
            let reset = read
                .as_ref()
                .is_err_and(|e| e.kind() == ErrorKind::ConnectionReset);
            assert!(read.is_ok() || reset, "{key:?} v{v}: not closed ({read:?})");
            assert!(answer.is_empty(), "{key:?} v{v} was answered");
        }
    }
}

// ---- one function per API: a request valid at `v`, and what its answer must say ----

fn produce(c: &mut RawClient, v: i16, t: &mut Topic) {
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

fn fetch(c: &mut RawClient, v: i16, t: &Topic) {
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

fn list_offsets(c: &mut RawClient, v: i16, t: &Topic) {
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

fn metadata(c: &mut RawClient, v: i16, t: &Topic) {
    // By name (without auto-creation where the request can say so), then all topics:
    // v0 asks for all with an empty list, later versions with null.
    let wanted = MetadataRequestTopic::default().with_name(Some(t.name.clone()));
    let mut by_name = MetadataRequest::default().with_topics(Some(vec![wanted]));
    if v >= 4 {
        by_name = by_name.with_allow_auto_topic_creation(false);
    }
    let all = MetadataRequest::default().with_topics((v == 0).then(Vec::new));
    for request in [by_name, all] {
        let r = call!(c, Metadata, v, request);
        assert_eq!(r.brokers.len(), 1);
        let listed = r.topics.iter().find(|x| x.name.as_ref() == Some(&t.name));
        let topic = listed.expect("the topic is listed");
        assert_eq!((topic.error_code, topic.partitions.len()), (0, 1));
        assert_eq!(topic.partitions[0].leader_id, r.brokers[0].node_id);
        // Topic ids are answered from v10.
        assert_eq!(topic.topic_id, if v >= 10 { t.id } else { Uuid::nil() });
    }
}

fn api_versions(c: &mut RawClient, v: i16) {
    let mut request = ApiVersionsRequest::default();
    if v >= 3 {
        // Kafka checks these from v3 against [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
        request = request
            .with_client_software_name(StrBytes::from_static_str("protocol-versions"))
            .with_client_software_version(StrBytes::from_static_str("1.0"));
    }
    let r = call!(c, ApiVersions, v, request);
    assert_eq!(r.error_code, 0);
    let listed = r
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version));
    let served = SERVED.iter().map(|&(k, min, max)| (k as i16, min, max));
    assert!(listed.eq(served), "ApiVersions lists {:?}", r.api_keys);
}

fn create_topics(c: &mut RawClient, v: i16) {
    let topic = format!("created-v{v}");
    let r = create(c, v, &topic, 3);
    assert_eq!((r.error_code, r.name.0.as_str()), (0, &*topic));
    if v >= 5 {
        assert_eq!((r.num_partitions, r.replication_factor), (3, 1));
    }
    let listed = describe(c, &topic);
    assert_eq!((listed.error_code, listed.partitions.len()), (0, 3));
    if v >= 7 {
        assert_eq!(r.topic_id, listed.topic_id, "topic id");
    }
    // Creating it again is TOPIC_ALREADY_EXISTS (36), answered at this version too.
    assert_eq!(create(c, v, &topic, 3).error_code, 36);
}

fn delete_topics(c: &mut RawClient, v: i16) {
    let topic = format!("deleted-v{v}");
    let id = create(c, 7, &topic, 1).topic_id;
    // v6 names topics by name or id (KIP-516); the id is what it adds, so use that.
    let request = match v {
        6.. => DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default().with_topic_id(id)]),
        _ => DeleteTopicsRequest::default().with_topic_names(vec![name(&topic)]),
    };
    let request = request.with_timeout_ms(5000);
    let r = call!(c, DeleteTopics, v, request.clone());
    let d = &r.responses[0];
    assert_eq!((d.error_code, &d.name), (0, &Some(name(&topic))));
    if v >= 6 {
        assert_eq!(d.topic_id, id);
    }
    assert_eq!(describe(c, &topic).error_code, 3, "still listed");
    // Again: UNKNOWN_TOPIC_ID (100) by id, UNKNOWN_TOPIC_OR_PARTITION (3) by name.
    let r = call!(c, DeleteTopics, v, request);
    assert_eq!(r.responses[0].error_code, if v >= 6 { 100 } else { 3 });
}

fn init_producer_id(c: &mut RawClient, v: i16, t: &mut Topic) {
    // No transactional id: an idempotent producer. (The default is Some(""), not null.)
    let request = InitProducerIdRequest::default().with_transactional_id(None);
    let request = request.with_transaction_timeout_ms(60_000);
    let r = call!(c, InitProducerId, v, request);
    assert_eq!(r.error_code, 0);
    assert!(r.producer_id.0 >= 0 && r.producer_epoch >= 0, "{r:?}");
    assert!(t.producer_ids.insert(r.producer_id.0), "given twice: {r:?}");
}

// ---- helpers -------------------------------------------------------------------------

/// Sends one request and decodes its answer at the same version, to the last byte.
fn call(c: &mut RawClient, key: ApiKey, v: i16, body: RequestKind) -> ResponseKind {
    c.send(key, v, &body);
    let mut frame = c.read_frame().expect("an answer");
    let header_version = match key {
        ApiKey::ApiVersions => 0, // KIP-511: always v0
        _ => key.response_header_version(v),
    };
    ResponseHeader::decode(&mut frame, header_version).expect("response header decodes");
    let answer = ResponseKind::decode(key, &mut frame, v).expect("response decodes");
    assert!(frame.is_empty(), "{} bytes left over", frame.len());
    answer
}

/// CreateTopics at `v`: one topic with one configuration set.
fn create(c: &mut RawClient, v: i16, topic: &str, partitions: i32) -> CreatableTopicResult {
    let config = CreatableTopicConfig::default()
        .with_name(StrBytes::from_static_str("retention.ms"))
        .with_value(Some(StrBytes::from_static_str("86400000")));
    let topic = CreatableTopic::default()
        .with_name(name(topic))
        .with_configs(vec![config]);
    let topic = topic
        .with_num_partitions(partitions)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default().with_timeout_ms(5000);
    let r = call!(c, CreateTopics, v, request.with_topics(vec![topic]));
    r.topics.into_iter().next().expect("one result")
}

/// Metadata v12 for one topic, without creating it.
fn describe(c: &mut RawClient, topic: &str) -> MetadataResponseTopic {
    let wanted = MetadataRequestTopic::default().with_name(Some(name(topic)));
    let request = MetadataRequest::default().with_topics(Some(vec![wanted]));
    let request = request.with_allow_auto_topic_creation(false);
    let r = call!(c, Metadata, 12, request);
    r.topics.into_iter().next().expect("one topic")
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

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn one_record(value: &str, timestamp: i64) -> Bytes {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key: Some(Bytes::from_static(b"k")),
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: Default::default(),
    };
    batch(&[record], Compression::None)
}
