//! What one client may hold: connections per address, request bytes, decompressed bytes, time.

use crate::support;

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Duration;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use support::{assert_closed, batch, call, record, topic_name as name, Gateway, RawClient};

use super::{
    api_versions_request, assert_api_versions_answer, create_topic, decode_answer, fetch_request,
    fetch_values, metadata_request, one_record, produce, produce_request, raw_connection,
    read_frame, received_bytes, record_values, request_frame, wait_for_received,
};

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

/// Creates a topic of `partitions` partitions; returns its error code.
fn create_topic_with(c: &mut RawClient, topic: &str, partitions: i32) -> i16 {
    let topic = CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default().with_topics(vec![topic]);
    call!(c, CreateTopics, 7, request).topics[0].error_code
}
