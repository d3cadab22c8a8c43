//! A Fetch waiting at the end wakes on a record; its byte limits cut at batch boundaries (KIP-74).

use crate::support;

use std::time::Duration;

use kafka_protocol::messages::*;
use support::{call, Gateway, RawClient};

use super::{
    create_topic, fetch_request, one_record, produce, received_bytes, record_values, request_frame,
    wait_for_received,
};

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
