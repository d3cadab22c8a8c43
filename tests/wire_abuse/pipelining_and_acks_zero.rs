//! Pipelined requests answered in order, up to a bad frame; acks=0 Produce answered by nothing.

use crate::support;

use std::io::Write;
use std::time::Duration;

use kafka_protocol::messages::*;
use support::{assert_closed, call, framed, i32_at, Gateway, RawClient};

use super::{
    api_versions_request, create_topic, decode_answer, fetch_request, metadata_request, one_record,
    produce_request, raw_connection, read_frame, record_values, request_frame,
};

#[test]
fn pipelined_requests_are_answered_in_request_order() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "pipe", &[]), 0);
    assert_eq!(create_topic(&mut c, "idle", &[]), 0);

    // Five requests in one write, before reading anything (the default in-flight limit).
    // The Fetch waits for a record on an empty partition; the Produce behind it brings
    // that record. The Fetch's answer holding it shows the later request was done first,
    // and the gateway must still write the answers in request order.
    let piped = produce_request("pipe", 0, one_record("piped"), -1);
    let waiting = fetch_request("idle", 0, 20_000);
    let waking = produce_request("idle", 0, one_record("woken"), -1);
    let requests: Vec<(ApiKey, i16, RequestKind)> = vec![
        (ApiKey::Metadata, 12, metadata_request("pipe")),
        (ApiKey::Produce, 9, RequestKind::Produce(piped)),
        (ApiKey::Fetch, 12, RequestKind::Fetch(waiting)),
        (ApiKey::Produce, 9, RequestKind::Produce(waking)),
        (ApiKey::Metadata, 1, metadata_request("pipe")),
    ];
    let mut s = raw_connection(&gw);
    // Longer than the Fetch's wait: one that is never woken fails on what it holds.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut bytes = Vec::new();
    for (i, (key, version, body)) in requests.iter().enumerate() {
        bytes.extend(request_frame(*key, *version, 100 + i as i32, body));
    }
    s.write_all(&bytes).unwrap();
    let mut answers = Vec::new();
    for (i, (key, version, _)) in requests.iter().enumerate() {
        let (correlation, body) = decode_answer(*key, *version, read_frame(&mut s));
        assert_eq!(correlation, 100 + i as i32, "answer {i} out of order");
        answers.push(body);
    }
    let produced = |answer: &ResponseKind| {
        let ResponseKind::Produce(p) = answer else {
            panic!("{answer:?}")
        };
        let p = &p.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    };
    assert_eq!(produced(&answers[1]), (0, 0));
    assert_eq!(produced(&answers[3]), (0, 0));
    let ResponseKind::Fetch(fetched) = &answers[2] else {
        panic!("{:?}", answers[2])
    };
    assert_eq!(
        record_values(&fetched.responses[0].partitions[0]),
        ["woken"],
        "the Fetch was not woken by the Produce pipelined behind it"
    );
}

#[test]
fn a_bad_frame_closes_the_connection_after_answering_the_requests_before_it() {
    // Twenty requests (four times the in-flight limit, so reading must pause and
    // resume) and then an unparseable frame, all in one write: every request before
    // the bad frame is answered, in order, and only then is the connection closed.
    let gw = Gateway::start();
    let mut s = raw_connection(&gw);
    let mut bytes = Vec::new();
    for i in 0..20 {
        let request = api_versions_request();
        bytes.extend(request_frame(ApiKey::ApiVersions, 3, 1000 + i, &request));
    }
    bytes.extend(framed(&[0xff; 12]));
    s.write_all(&bytes).unwrap();
    for i in 0..20 {
        assert_eq!(i32_at(&read_frame(&mut s), 0), 1000 + i, "answer {i}");
    }
    assert_closed(&mut s, "a bad frame after twenty good ones");
}

#[test]
fn produce_with_acks_zero_gets_no_answer() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "quiet", &[]), 0);

    let quiet = RequestKind::Produce(produce_request("quiet", 0, one_record("quiet"), 0));
    let mut bytes = request_frame(ApiKey::Produce, 9, 500, &quiet);
    bytes.extend(request_frame(
        ApiKey::ApiVersions,
        3,
        501,
        &api_versions_request(),
    ));
    let mut s = raw_connection(&gw);
    s.write_all(&bytes).unwrap();
    // The frame after the Produce is the ApiVersions answer: nothing was sent for acks=0.
    let next = i32_at(&read_frame(&mut s), 0);
    assert_eq!(next, 501, "acks=0 Produce was answered");
    // The record was still taken (a fetch that waits covers the append in flight).
    let fetched = call!(c, Fetch, 12, fetch_request("quiet", 0, 5000));
    let values = record_values(&fetched.responses[0].partitions[0]);
    assert_eq!(values, ["quiet"]);
}

#[test]
fn failed_produce_with_acks_zero_closes_the_connection() {
    // A producer with acks=0 reads no answer, so a broker that cannot take the data
    // closes the connection instead (Kafka's KafkaApis.handleProduceRequest): that is
    // how the producer learns to refresh its metadata. Silence would lose data unseen.
    let gw = Gateway::start();
    let mut s = raw_connection(&gw);
    let lost = RequestKind::Produce(produce_request("missing", 0, one_record("lost"), 0));
    s.write_all(&request_frame(ApiKey::Produce, 9, 600, &lost))
        .unwrap();
    assert_closed(&mut s, "acks=0 Produce to a missing topic");
}
