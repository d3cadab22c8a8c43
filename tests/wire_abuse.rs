//! Bad input on the wire, answered as a Kafka broker answers it: a request the broker
//! cannot parse or does not serve closes that one connection; a well-formed request
//! with bad contents gets an error code and the connection stays open. Either way every
//! other connection keeps working and nothing already acknowledged is lost.

use crate::support;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, TcpStream};
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
use support::versions::{assert_advertised, served};
use support::{
    assert_closed, batch, call, framed, i32_at, record, topic_name as name, Gateway, RawClient,
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
    assert!(listed.contains(&(18, 0, 4)), "{listed:?}");
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

#[test]
fn a_fetch_waiting_at_the_end_wakes_when_a_record_arrives() {
    // The consumer waits for a first record with a deadline it never reaches (i32::MAX
    // ms, weeks): only a record arriving can end the wait. A record produced once the
    // Fetch is read must end it (a fetch that only re-read at its deadline would leave
    // the client without an answer until the read timeout, which fails).
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "tail", &[]), 0);
    c.set_read_timeout(Duration::from_secs(30));
    let before = received_bytes(&gw);
    let fetch = RequestKind::Fetch(fetch_request("tail", 0, i32::MAX));
    let frame = request_frame(ApiKey::Fetch, 12, 1, &fetch);
    c.send_raw(&frame);
    // The Fetch was read by the gateway before the record is produced.
    wait_for_received(&gw, before + frame.len() as f64, "the Fetch");
    assert!(!c.has_arrived(), "the Fetch was answered before any record");
    let mut p = RawClient::connect(gw.addr);
    assert_eq!(produce(&mut p, "tail", 0, one_record("woken"), 1).0, 0);
    let ResponseKind::Fetch(fetched) = c.receive(ApiKey::Fetch, 12) else {
        unreachable!()
    };
    assert_eq!(
        record_values(&fetched.responses[0].partitions[0]),
        ["woken"]
    );
}

#[test]
fn fetch_byte_limits_cut_at_batch_boundaries_but_always_return_one_batch() {
    // KIP-74: max_bytes and partition_max_bytes bound the answer, except that the first
    // batch comes whole even when it alone is larger, so a consumer never stalls.
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "limits", &[]), 0);
    let values = ["first", "second", "third"];
    let sizes: Vec<usize> = values
        .iter()
        .map(|v| {
            let batch = one_record(v);
            assert_eq!(produce(&mut c, "limits", 0, batch.clone(), -1).0, 0);
            batch.len()
        })
        .collect();
    let fetch = |c: &mut RawClient, max: i32, partition_max: i32| {
        let mut request = fetch_request("limits", 0, 0).with_max_bytes(max);
        request.topics[0].partitions[0].partition_max_bytes = partition_max;
        let answer = call!(c, Fetch, 12, request);
        record_values(&answer.responses[0].partitions[0])
    };
    assert_eq!(fetch(&mut c, 1 << 20, 1 << 20), values, "everything fits");
    let two = (sizes[0] + sizes[1]) as i32;
    assert_eq!(
        fetch(&mut c, two, 1 << 20),
        ["first", "second"],
        "request max_bytes"
    );
    assert_eq!(
        fetch(&mut c, 1 << 20, two),
        ["first", "second"],
        "partition_max_bytes"
    );
    assert_eq!(
        fetch(&mut c, 1, 1),
        ["first"],
        "one batch even over every limit"
    );
}

#[test]
fn connections_over_the_per_address_cap_are_closed_on_accept() {
    // Kafka's max.connections.per.ip, and an override for one address: each source
    // address has its own count, and a closed connection gives its place back.
    let gw = Gateway::start_with(&[
        ("max_connections_per_ip", "2"),
        ("max_connections_per_ip_overrides", "127.0.0.2:3"),
    ]);
    let one: IpAddr = "127.0.0.1".parse().unwrap();
    let two: IpAddr = "127.0.0.2".parse().unwrap();
    let mut held: Vec<RawClient> = (0..2)
        .map(|_| RawClient::connect_from(one, gw.addr))
        .collect();
    held.iter_mut()
        .for_each(|c| assert_api_versions_answer(c, "connecting"));
    let mut over = RawClient::connect_from(one, gw.addr);
    assert!(
        over.is_closed(),
        "a third connection from 127.0.0.1 was kept"
    );

    let mut others: Vec<RawClient> = (0..3)
        .map(|_| RawClient::connect_from(two, gw.addr))
        .collect();
    others
        .iter_mut()
        .for_each(|c| assert_api_versions_answer(c, "the override"));
    let mut over = RawClient::connect_from(two, gw.addr);
    assert!(
        over.is_closed(),
        "a fourth connection from 127.0.0.2 was kept"
    );

    // Counted before a place is given back: retries below may be refused meanwhile.
    let metrics = support::admin::get(gw.admin, "/metrics").body;
    let refused = "refused_connections_total{limit=\"max_connections_per_ip\"} 2";
    assert!(metrics.contains(refused), "{metrics}");

    drop(held.pop());
    let reopened = support::admin::eventually(Duration::from_secs(5), || {
        let mut c = RawClient::connect_from(one, gw.addr);
        c.send(ApiKey::ApiVersions, 3, &api_versions_request());
        c.read_frame().is_some()
    });
    assert!(
        reopened,
        "the place of a closed connection was not given back"
    );
}

#[test]
fn a_connection_reads_no_request_beyond_its_byte_budget() {
    // A Fetch waiting for a record, then, pipelined behind it, the Produce of that
    // record: together one byte over max_inflight_bytes_per_connection. Read at once,
    // the Produce would wake the Fetch with its record; held back unread, it waits for
    // the Fetch to answer empty at its deadline.
    let (fetch, then_produce) = fetch_then_produce("budget", 1_000);
    let budget = (fetch.len() + then_produce.len() - 8 - 1).to_string();
    let gw = Gateway::start_with(&[("max_inflight_bytes_per_connection", &budget)]);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "budget", &[]), 0);
    let mut s = raw_connection(&gw);
    s.write_all(&[fetch, then_produce].concat()).unwrap();
    let mut same = s.try_clone().unwrap();
    fetch_waited_then_produce_served(&mut s, &mut same);

    // A request larger than the whole budget is still served, alone.
    let big = "z".repeat(budget.parse::<usize>().unwrap());
    assert_eq!(produce(&mut c, "budget", 0, one_record(&big), -1), (0, 1));
    assert_eq!(fetch_values(&mut c, "budget", 0).len(), 2);
}

/// The Fetch of [`fetch_then_produce`] is answered on `fetch` empty at its deadline:
/// the Produce of the record it waits for stayed unread meanwhile (read, it would have
/// woken the Fetch with its record); then the Produce is answered on `produce`.
fn fetch_waited_then_produce_served(fetch: &mut TcpStream, produce: &mut TcpStream) {
    let (_, fetched) = decode_answer(ApiKey::Fetch, 12, read_frame(fetch));
    let ResponseKind::Fetch(fetched) = fetched else {
        panic!("{fetched:?}")
    };
    assert_eq!(
        record_values(&fetched.responses[0].partitions[0]),
        Vec::<String>::new()
    );
    let (_, produced) = decode_answer(ApiKey::Produce, 9, read_frame(produce));
    let ResponseKind::Produce(produced) = produced else {
        panic!("{produced:?}")
    };
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
}

#[test]
fn the_gateway_reads_no_request_beyond_its_total_byte_budget() {
    // queued_max_request_bytes is shared: one connection's waiting Fetch holds bytes,
    // and another connection's Produce that does not fit in the rest stays unread
    // until the Fetch is answered, empty, at its deadline.
    let (fetch, then_produce) = fetch_then_produce("queued", 1_000);
    let budget = (fetch.len() + then_produce.len() - 8 - 1).to_string();
    let gw = Gateway::start_with(&[("queued_max_request_bytes", &budget)]);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "queued", &[]), 0);
    let mut waiting = raw_connection(&gw);
    let before = received_bytes(&gw);
    waiting.write_all(&fetch).unwrap();
    // The Fetch holds its bytes of the budget before the Produce is sent.
    wait_for_received(&gw, before + fetch.len() as f64, "the Fetch");
    let mut producer = raw_connection(&gw);
    producer.write_all(&then_produce).unwrap();
    fetch_waited_then_produce_served(&mut waiting, &mut producer);
    assert_eq!(fetch_values(&mut c, "queued", 0).len(), 1);
}

#[test]
fn records_decompressing_past_the_request_budget_are_message_too_large() {
    // A compression bomb: 6 MiB of zeros is a few hundred bytes of zstd. Two of them in
    // one Produce against a budget of 8 MiB per request: the first fits, the second is
    // MESSAGE_TOO_LARGE (10), on which producers split their batches, with a message.
    let gw = Gateway::start_with(&[("max_decompressed_request_bytes", "8388608")]);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic_with(&mut c, "bombs", 2), 0);
    let bomb = batch(
        &[record(None, &vec![0; 6 << 20], 1_700_000_000_000)],
        Compression::Zstd,
    );
    assert!(bomb.len() < 4096, "{} bytes", bomb.len());
    let data = |p| {
        PartitionProduceData::default()
            .with_index(p)
            .with_records(Some(bomb.clone()))
    };
    let topic = TopicProduceData::default()
        .with_name(name("bombs"))
        .with_partition_data(vec![data(0), data(1)]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![topic]);
    let answer = call!(c, Produce, 9, request);
    let [fits, over] = &answer.responses[0].partition_responses[..] else {
        panic!("{answer:?}")
    };
    assert_eq!((fits.error_code, fits.base_offset), (0, 0));
    assert_eq!(over.error_code, 10, "{over:?}");
    let message = over
        .error_message
        .as_ref()
        .map(|m| m.to_string())
        .unwrap_or_default();
    assert!(message.contains("decompress"), "{message}");

    // The connection serves on, a bomb alone over the budget is refused the same way,
    // and ordinary compressed batches are taken.
    let big = batch(&[record(None, &vec![0; 9 << 20], 0)], Compression::Gzip);
    assert_eq!(produce(&mut c, "bombs", 1, big, -1).0, 10);
    let small = batch(&[record(None, b"small", 0)], Compression::Lz4);
    assert_eq!(produce(&mut c, "bombs", 1, small, -1), (0, 0));
}

#[test]
fn slow_senders_idle_connections_and_slow_readers_are_closed_in_time() {
    let gw = Gateway::start_with(&[
        ("read_timeout_ms", "500"),
        ("idle_timeout_ms", "800"),
        ("write_timeout_ms", "500"),
    ]);
    // Slowloris: a byte every 100 ms would complete the request in about 3.5 s, seven
    // read timeouts; trickling must not reset the clock, in the size or in the body:
    // the gateway closes the connection before the request is whole, unanswered.
    let metadata = request_frame(ApiKey::Metadata, 12, 1, &metadata_request("t"));
    for (what, sent_at_once) in [("size", 0), ("body", 6)] {
        let mut s = raw_connection(&gw);
        s.write_all(&metadata[..sent_at_once]).unwrap();
        let mut cut = false;
        for byte in &metadata[sent_at_once..] {
            std::thread::sleep(Duration::from_millis(100));
            if s.write_all(&[*byte]).is_err() {
                cut = true;
                break;
            }
        }
        assert!(cut, "a request trickled in its {what} was taken whole");
        assert_closed(&mut s, what);
    }

    // Idle: nothing sent at all, closed (after idle_timeout_ms; the 5 s read timeout
    // only keeps a gateway that never closes it from hanging the test).
    let mut idle = raw_connection(&gw);
    assert_closed(&mut idle, "an idle connection");

    // A reader that stops reading: 1 MB answers pile up unread far past what socket
    // buffers hold; the gateway gives up on writing and closes, and the bytes it had
    // written are all the client gets.
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic(&mut c, "large", &[]), 0);
    assert_eq!(
        produce(&mut c, "large", 0, one_record(&"L".repeat(1_000_000)), -1).0,
        0
    );
    let fetch = RequestKind::Fetch(fetch_request("large", 0, 0));
    let fetches: Vec<u8> = (0..60)
        .flat_map(|i| request_frame(ApiKey::Fetch, 12, i, &fetch))
        .collect();
    let mut s = raw_connection(&gw);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let _ = s.write_all(&fetches);
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => received += n,
            Err(e) => break e.kind() != ErrorKind::WouldBlock,
        }
    };
    assert!(ended, "the gateway kept a client that read nothing for 2 s");
    assert!(
        received < 60 * 1_000_000,
        "all {received} bytes arrived: nothing was cut"
    );
    writer.join().unwrap();
}

// ---- helpers -------------------------------------------------------------------------

/// A Fetch v12 of `topic` waiting up to `wait_ms` for a first record, and a Produce v9
/// of one 200-byte record to it, as frames.
fn fetch_then_produce(topic: &str, wait_ms: i32) -> (Vec<u8>, Vec<u8>) {
    let fetch = RequestKind::Fetch(fetch_request(topic, 0, wait_ms));
    let record = one_record(&"r".repeat(200));
    let produce = RequestKind::Produce(produce_request(topic, 0, record, -1));
    (
        request_frame(ApiKey::Fetch, 12, 1, &fetch),
        request_frame(ApiKey::Produce, 9, 2, &produce),
    )
}

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

/// A length prefix, then fewer bytes than it announces.
fn oversize(size: i32) -> Vec<u8> {
    [size.to_be_bytes().to_vec(), vec![0; 16]].concat()
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
fn one_record(value: &str) -> Bytes {
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

fn fetch_request(topic: &str, offset: i64, max_wait_ms: i32) -> FetchRequest {
    let partition = FetchPartition::default().with_fetch_offset(offset);
    let partitions = vec![partition.with_partition_max_bytes(1 << 20)];
    let topic = FetchTopic::default().with_topic(name(topic));
    let request = FetchRequest::default().with_max_wait_ms(max_wait_ms);
    request
        .with_min_bytes(1)
        .with_topics(vec![topic.with_partitions(partitions)])
}

/// Produce v9 of one batch to one partition: (error code, base offset).
fn produce(c: &mut RawClient, t: &str, p: i32, batch: Bytes, acks: i16) -> (i16, i64) {
    let answer = call!(c, Produce, 9, produce_request(t, p, batch, acks));
    let p = &answer.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Values of the records of partition 0 from `offset`.
fn fetch_values(c: &mut RawClient, topic: &str, offset: i64) -> Vec<String> {
    let answer = call!(c, Fetch, 12, fetch_request(topic, offset, 0));
    record_values(&answer.responses[0].partitions[0])
}

fn record_values(p: &PartitionData) -> Vec<String> {
    assert_eq!(p.error_code, 0, "fetch: {p:?}");
    let mut records = p.records.clone().unwrap_or_default();
    let sets = RecordBatchDecoder::decode_all(&mut records).unwrap();
    let values = sets.into_iter().flat_map(|set| set.records);
    let values = values.map(|r| r.value.unwrap_or_default().to_vec());
    values.map(|v| String::from_utf8(v).unwrap()).collect()
}

/// Creates a topic of `partitions` partitions; returns its error code.
fn create_topic_with(c: &mut RawClient, topic: &str, partitions: i32) -> i16 {
    let topic = CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default().with_topics(vec![topic]);
    call!(c, CreateTopics, 7, request).topics[0].error_code
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
