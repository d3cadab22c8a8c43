//! Unparseable frames close their own connection; bad contents get Kafka's error codes instead.

use crate::support;

use std::io::Write;
use std::net::Shutdown;

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;
use support::versions::served;
use support::{assert_closed, call, framed, Gateway, RawClient};

use super::{
    assert_api_versions_answer, create_topic, decode_answer, fetch_values, header,
    metadata_request, one_record, produce, produce_request, raw_connection, read_frame,
    request_frame,
};

#[test]
fn unparseable_frames_close_only_their_own_connection() {
    let gw = Gateway::start_with(&[("max_request_bytes", "1024")]);
    let mut witness = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut witness, "kept", &[]), 0);
    let kept = produce(&mut witness, "kept", 0, one_record("kept"), -1);
    assert_eq!(kept, (0, 0));

    let garbage: Vec<u8> = (0u32..48).map(|i| (i * 2_654_435) as u8).collect();
    let produce_garbage = [header(0, 3), garbage.clone()].concat();
    // Metadata v1 whose topic array claims i32::MAX entries, in a 20-byte frame:
    // decoding must fail on the missing bytes, not reserve room for them first.
    let mut huge_array = [header(3, 1), i32::MAX.to_be_bytes().to_vec()].concat();
    huge_array.resize(20, 0);
    // The same in a flexible version (Metadata v12, header v2 with no tagged fields):
    // the compact array's varint claims u32::MAX - 1 entries.
    let mut huge_compact = [header(3, 12), vec![0, 0xff, 0xff, 0xff, 0xff, 0x0f]].concat();
    huge_compact.resize(20, 0);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("length 1025 > max_request_bytes", oversize(1025)),
        ("length i32::MAX", oversize(i32::MAX)),
        ("negative length", oversize(-1)),
        ("garbage after a valid length", framed(&garbage)),
        ("Produce v3, garbage body", framed(&produce_garbage)),
        ("shorter than a request header", framed(&[0, 18])),
        ("Metadata v1, array count i32::MAX", framed(&huge_array)),
        ("Metadata v12, varint count u32::MAX", framed(&huge_compact)),
        ("unknown API key 999", framed(&header(999, 0))),
        ("Produce v2, older than served", framed(&header(0, 2))),
        ("Metadata v14, newer than served", framed(&header(3, 14))),
        // Part of a frame, then our side closes: the gateway must not wait for the rest.
        ("truncated, then the peer closes", oversize(100)),
    ];
    for (what, bytes) in cases {
        let mut s = raw_connection(&gw);
        s.write_all(&bytes).unwrap();
        if what.contains("peer closes") {
            s.shutdown(Shutdown::Write).unwrap();
        }
        assert_closed(&mut s, what);
        // The connection opened before the abuse is untouched.
        assert_api_versions_answer(&mut witness, what);
    }

    // The limit itself is inclusive: a request of exactly max_request_bytes is served.
    let (request, produced) = produce_frame_of_exactly(1024);
    let mut s = raw_connection(&gw);
    s.write_all(&request).unwrap();
    let (correlation, answer) = decode_answer(ApiKey::Produce, 9, read_frame(&mut s));
    let ResponseKind::Produce(answer) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(correlation, 77);
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);

    // A fresh connection still gets answers and everything acknowledged is readable.
    let mut fresh = RawClient::connect(gw.addr);
    assert_api_versions_answer(&mut fresh, "the abuse");
    let values = fetch_values(&mut fresh, "kept", 0);
    assert_eq!(values, ["kept".to_string(), produced]);
}

#[test]
fn bad_requests_get_kafka_error_codes_and_keep_the_connection() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    let small = [("max.message.bytes", "200")];
    assert_eq!(create_topic(&mut c, "small", &small), 0);
    let first = produce(&mut c, "small", 0, one_record("kept"), -1);
    assert_eq!(first, (0, 0));

    // KIP-511: ApiVersions newer than served is answered at v0 with UNSUPPORTED_VERSION
    // (35) and at least ApiVersions' own range (all Kafka sends), so the client can
    // retry at a version both know. The header is read as v1, the body ignored.
    let mut future = BytesMut::from(&header(ApiKey::ApiVersions as i16, 99)[..8]);
    future.put_i16(6);
    future.put_slice(b"future");
    future.put_slice(&[0, 3, b'a', b'b', 0, 9, 9, 9]);
    c.send_frame(&future);
    let mut frame = c.read_frame().expect("an answer to ApiVersions v99");
    let header = ResponseHeader::decode(&mut frame, 0).unwrap();
    assert_eq!(header.correlation_id, 1);
    let answer = ApiVersionsResponse::decode(&mut frame, 0).unwrap();
    assert_eq!(answer.error_code, 35, "UNSUPPORTED_VERSION");
    let listed = answer
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version));
    let listed: Vec<_> = listed.collect();
    // Checked against the pinned ranges (tests/support/versions.rs), not SERVED.
    let pinned = |key: i16| served(key).map(|a| (a.key, a.min, a.max));
    assert!(listed.contains(&pinned(18).unwrap()), "{listed:?}");
    assert!(listed.iter().all(|k| pinned(k.0) == Some(*k)), "{listed:?}");

    // A batch whose CRC does not match its bytes is CORRUPT_MESSAGE (2).
    let mut corrupt = one_record("bit flip").to_vec();
    *corrupt.last_mut().unwrap() ^= 0x01;
    let r = produce(&mut c, "small", 0, corrupt.into(), -1);
    assert_eq!(r.0, 2, "bad CRC: {r:?}");
    // A batch over the topic's max.message.bytes is MESSAGE_TOO_LARGE (10).
    let r = produce(&mut c, "small", 0, one_record(&"x".repeat(300)), -1);
    assert_eq!(r.0, 10, "batch over max.message.bytes: {r:?}");
    // UNKNOWN_TOPIC_OR_PARTITION (3) for a missing topic and for a partition past the end.
    let r = produce(&mut c, "missing", 0, one_record("lost"), -1);
    assert_eq!(r.0, 3, "missing topic: {r:?}");
    let r = produce(&mut c, "small", 1, one_record("lost"), -1);
    assert_eq!(r.0, 3, "partition out of range: {r:?}");
    // acks other than -1, 0 and 1 is INVALID_REQUIRED_ACKS (21).
    let r = produce(&mut c, "small", 0, one_record("lost"), 5);
    assert_eq!(r.0, 21, "acks=5: {r:?}");
    // A name Kafka forbids is INVALID_TOPIC_EXCEPTION (17).
    for bad in ["bad name", "a/b", "..", ""] {
        assert_eq!(create_topic(&mut c, bad, &[]), 17, "topic name {bad:?}");
    }

    // The same connection still serves; nothing refused was written or created.
    assert_api_versions_answer(&mut c, "the refused requests");
    let mut fresh = RawClient::connect(gw.addr);
    assert_eq!(fetch_values(&mut fresh, "small", 0), ["kept"]);
    let RequestKind::Metadata(lookup) = metadata_request("missing") else {
        unreachable!()
    };
    let lookup = lookup.with_allow_auto_topic_creation(false);
    let m = call!(fresh, Metadata, 12, lookup);
    assert_eq!(m.topics[0].error_code, 3, "Produce created it");
}

/// A length prefix, then fewer bytes than it announces.
fn oversize(size: i32) -> Vec<u8> {
    [size.to_be_bytes().to_vec(), vec![0; 16]].concat()
}

/// A Produce v9 frame to "kept" of exactly `size` bytes after the length prefix, and
/// the value it carries.
fn produce_frame_of_exactly(size: usize) -> (Vec<u8>, String) {
    let mut value_len = size / 2;
    for _ in 0..10 {
        let value = "y".repeat(value_len);
        let request = produce_request("kept", 0, one_record(&value), -1);
        let frame = request_frame(ApiKey::Produce, 9, 77, &RequestKind::Produce(request));
        if frame.len() - 4 == size {
            return (frame, value);
        }
        // A byte of value is a byte of frame, give or take the varint lengths.
        value_len = (value_len + size + 4) - frame.len();
    }
    panic!("no Produce frame of exactly {size} bytes");
}
