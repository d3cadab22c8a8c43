//! Bad input on the wire, answered as a Kafka broker answers it: a request the broker
//! cannot parse or does not serve closes that one connection; a well-formed request
//! with bad contents gets an error code and the connection stays open. Either way every
//! other connection keeps working and nothing already acknowledged is lost.

mod bad_input;
mod fetch_waits_and_limits;
mod pipelining_and_acks_zero;
mod resource_limits;

use crate::support;

use std::io::Read;
use std::net::TcpStream;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use support::versions::assert_advertised;
use support::{batch, call, framed, record, topic_name as name, Gateway, RawClient};

/// Request bytes the gateway has read so far, over every connection.
fn received_bytes(gw: &Gateway) -> f64 {
    let scrape = support::admin::Scrape::take(gw.admin);
    scrape.sum("iggy_kafka_gateway_received_bytes_total", &[])
}

/// Waits until the gateway has read `bytes` request bytes in all: `what` was read.
fn wait_for_received(gw: &Gateway, bytes: f64, what: &str) {
    let read = support::admin::eventually(Duration::from_secs(10), || received_bytes(gw) >= bytes);
    assert!(read, "{what} was not read");
}

fn raw_connection(gw: &Gateway) -> TcpStream {
    let s = TcpStream::connect(gw.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn read_frame(s: &mut TcpStream) -> Bytes {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("an answer");
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("a whole answer");
    Bytes::from(body)
}

/// A request header with correlation id 1 and a null client id, and no body.
fn header(key: i16, version: i16) -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_i16(key);
    b.put_i16(version);
    b.put_i32(1);
    b.put_i16(-1);
    b.to_vec()
}

fn assert_api_versions_answer(c: &mut RawClient, after: &str) {
    let r = call!(c, ApiVersions, 3, api_versions_request_body());
    assert_eq!(r.error_code, 0, "ApiVersions after {after}");
    assert_served_list(&r);
}

fn assert_served_list(r: &ApiVersionsResponse) {
    let listed = r
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version));
    assert_advertised(&listed.collect::<Vec<_>>());
}

/// One uncompressed batch holding one record.
pub(crate) fn one_record(value: &str) -> Bytes {
    batch(
        &[record(None, value.as_bytes(), 1_700_000_000_000)],
        Compression::None,
    )
}

fn request_frame(key: ApiKey, version: i16, correlation: i32, body: &RequestKind) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str("wire-abuse")));
    let header_version = key.request_header_version(version);
    header.encode(&mut buf, header_version).unwrap();
    body.encode(&mut buf, version).unwrap();
    framed(&buf)
}

fn decode_answer(key: ApiKey, version: i16, mut frame: Bytes) -> (i32, ResponseKind) {
    let header_version = match key {
        ApiKey::ApiVersions => 0,
        _ => key.response_header_version(version),
    };
    let header = ResponseHeader::decode(&mut frame, header_version).unwrap();
    let body = ResponseKind::decode(key, &mut frame, version).unwrap();
    (header.correlation_id, body)
}

fn api_versions_request_body() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("wire-abuse"))
        .with_client_software_version(StrBytes::from_static_str("1.0"))
}

fn api_versions_request() -> RequestKind {
    RequestKind::ApiVersions(api_versions_request_body())
}

fn metadata_request(topic: &str) -> RequestKind {
    let topic = MetadataRequestTopic::default().with_name(Some(name(topic)));
    RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![topic])))
}

fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    let data = PartitionProduceData::default().with_records(Some(records));
    let data = vec![data.with_index(partition)];
    let topic = TopicProduceData::default().with_name(name(topic));
    let request = ProduceRequest::default().with_timeout_ms(5000);
    let topics = vec![topic.with_partition_data(data)];
    request.with_acks(acks).with_topic_data(topics)
}

pub(crate) fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32) -> FetchRequest {
    let partition = FetchPartition::default().with_fetch_offset(offset);
    let partitions = vec![partition.with_partition_max_bytes(1 << 20)];
    let topic = FetchTopic::default().with_topic(name(topic));
    let request = FetchRequest::default().with_max_wait_ms(max_wait_ms);
    request
        .with_min_bytes(1)
        .with_topics(vec![topic.with_partitions(partitions)])
}

/// Produce v9 of one batch to one partition: (error code, base offset).
pub(crate) fn produce(c: &mut RawClient, t: &str, p: i32, batch: Bytes, acks: i16) -> (i16, i64) {
    let answer = call!(c, Produce, 9, produce_request(t, p, batch, acks));
    let p = &answer.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Values of the records of partition 0 from `offset`.
fn fetch_values(c: &mut RawClient, topic: &str, offset: i64) -> Vec<String> {
    let answer = call!(c, Fetch, 12, fetch_request(topic, offset, 0));
    record_values(&answer.responses[0].partitions[0])
}

pub(crate) fn record_values(p: &PartitionData) -> Vec<String> {
    assert_eq!(p.error_code, 0, "fetch: {p:?}");
    let mut records = p.records.clone().unwrap_or_default();
    let sets = RecordBatchDecoder::decode_all(&mut records).unwrap();
    let values = sets.into_iter().flat_map(|set| set.records);
    let values = values.map(|r| r.value.unwrap_or_default().to_vec());
    values.map(|v| String::from_utf8(v).unwrap()).collect()
}

/// Creates a one-partition topic with CreateTopics v7; returns its error code.
fn create_topic(c: &mut RawClient, topic: &str, configs: &[(&str, &str)]) -> i16 {
    let config = |&(k, v): &(&str, &str)| {
        let value = Some(StrBytes::from_string(v.to_string()));
        let config = CreatableTopicConfig::default().with_value(value);
        config.with_name(StrBytes::from_string(k.to_string()))
    };
    let topic = CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(1);
    let topic = topic.with_replication_factor(1);
    let topic = topic.with_configs(configs.iter().map(config).collect());
    let request = CreateTopicsRequest::default().with_topics(vec![topic]);
    call!(c, CreateTopics, 7, request).topics[0].error_code
}
