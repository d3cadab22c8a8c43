//! Raw requests over a quota: throttled and muted; an IP over its connection rate: closed unserved.

use crate::support;

use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use support::acls::create_topic_code;
use support::admin::Scrape;
use support::configs::s;
use support::{call, topic_name, Gateway, RawClient};

use super::{alter, describe, described, entry, produce, set, ANY, RAW_CLIENT};

fn fetch(c: &mut RawClient, topic: &str) -> FetchResponse {
    let partition = FetchPartition::default()
        .with_partition(0)
        .with_fetch_offset(0)
        .with_partition_max_bytes(1 << 20);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![partition])]);
    call!(c, Fetch, 11, request)
}

fn api_versions_request() -> RequestKind {
    RequestKind::ApiVersions(
        ApiVersionsRequest::default()
            .with_client_software_name(s("raw"))
            .with_client_software_version(s("1")),
    )
}

/// An ApiVersions v3 answered without error.
fn api_versions_answered(c: &mut RawClient) {
    let ResponseKind::ApiVersions(r) = c.call(ApiKey::ApiVersions, 3, api_versions_request())
    else {
        unreachable!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
}

/// Whether a connection from `source` is served (its ApiVersions answered) or closed
/// unserved (end of stream or a reset, nothing sent); a connection left open without
/// an answer until the read timeout fails.
fn served_from(gw: &Gateway, source: &str) -> bool {
    let mut c = RawClient::connect_from(source.parse().unwrap(), gw.addr);
    c.send(ApiKey::ApiVersions, 3, &api_versions_request());
    match c.next() {
        support::Next::Frame(_) => true,
        support::Next::Closed => false,
        support::Next::Silent => panic!("a connection from {source} neither served nor closed"),
    }
}

#[test]
fn an_ip_over_its_connection_rate_is_closed_unserved() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    let rate = "connection_creation_rate";
    set(&mut c, &[("ip", Some("127.0.0.7"))], rate, 1.0);
    set(&mut c, &[("ip", None)], rate, 2.0);
    let ips = [("ip", ANY, None)];
    let both = vec![
        described(&[("ip", None)], &[(rate, 2.0)]),
        described(&[("ip", Some("127.0.0.7"))], &[(rate, 1.0)]),
    ];
    assert_eq!(describe(&mut c, 1, &ips, false), (0, Some(both)));
    // 1 connection/s over the 10 s window Kafka measures at least: ten are served,
    // the eleventh closed; refused ones are not counted, so it stays refused.
    let served = (0..10).filter(|_| served_from(&gw, "127.0.0.7")).count();
    assert_eq!(served, 10);
    // Held for its throttle time, then closed (not held open until the read timeout).
    assert!(
        !served_from(&gw, "127.0.0.7"),
        "the 11th connection was served"
    );
    assert!(!served_from(&gw, "127.0.0.7"));
    let scrape = Scrape::take(gw.admin);
    let limit = [("limit", "connection_creation_rate")];
    let refused = scrape.sum("iggy_kafka_gateway_refused_connections_total", &limit);
    assert_eq!(refused, 2.0);
    // Other addresses have the default rate, each its own.
    let served = (0..20).filter(|_| served_from(&gw, "127.0.0.8")).count();
    assert_eq!(served, 20);
    assert!(!served_from(&gw, "127.0.0.8"));
    assert!(served_from(&gw, "127.0.0.9"));
    // Without the quotas, connections are served again.
    let remove = |ip| entry(&[("ip", ip)], &[(rate, None)]);
    let answer = alter(
        &mut c,
        1,
        vec![remove(Some("127.0.0.7")), remove(None)],
        false,
    );
    assert_eq!(answer, [(0, None), (0, None)]);
    assert!(served_from(&gw, "127.0.0.7"));
}

#[test]
fn over_its_quota_a_request_is_throttled_and_its_connection_muted() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic_code(&mut c, "q"), 0);
    // 1,500 B/s: a 16 kB produce is about 1.1 kB/s over the 10 s window, within it;
    // a second one is twice that, a second over (Kafka's (rate - quota) / quota × window).
    set(&mut c, RAW_CLIENT, "producer_byte_rate", 1500.0);
    let first = produce(&mut c, "q", 11_000);
    assert_eq!(first.throttle_time_ms, 0, "{first:?}");
    let second = produce(&mut c, "q", 11_000);
    let throttle = second.throttle_time_ms;
    assert!((1_000..20_000).contains(&throttle), "{second:?}");
    // The records were stored anyway.
    let code = second.responses[0].partition_responses[0].error_code;
    assert_eq!(code, 0);
    let throttled = |quota| {
        let scrape = Scrape::take(gw.admin);
        scrape.sum(
            "iggy_kafka_gateway_throttled_requests_total",
            &[("quota", quota)],
        )
    };
    assert_eq!(throttled("producer_byte_rate"), 1.0);
    // The connection is muted for the throttle time (at least the second asserted
    // above): its next request stays unanswered while another connection is served,
    // and is answered once the mute ends. The read timeout leaves room for the mute.
    c.set_read_timeout(Duration::from_millis(throttle as u64) + Duration::from_secs(10));
    c.send(ApiKey::ApiVersions, 3, &api_versions_request());
    let mut other = RawClient::connect(gw.addr);
    api_versions_answered(&mut other);
    assert!(
        !c.has_arrived(),
        "the throttled connection was served while muted"
    );
    let ResponseKind::ApiVersions(r) = c.receive(ApiKey::ApiVersions, 3) else {
        unreachable!()
    };
    assert_eq!(r.error_code, 0, "after the mute: {r:?}");

    // A Fetch over its quota: an empty answer with the throttle time, as Kafka's.
    set(&mut c, RAW_CLIENT, "consumer_byte_rate", 1000.0);
    let r = fetch(&mut c, "q");
    assert!(r.throttle_time_ms > 0, "{r:?}");
    assert!(r.responses.is_empty(), "{r:?}");
    assert_eq!(throttled("consumer_byte_rate"), 1.0);
    // Without the quota the same fetch gets the records, unthrottled.
    let remove = entry(RAW_CLIENT, &[("consumer_byte_rate", None)]);
    assert_eq!(alter(&mut c, 1, vec![remove], false), [(0, None)]);
    let r = fetch(&mut c, "q");
    assert_eq!(r.throttle_time_ms, 0);
    let records = r.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |b| b.len());
    assert!(records > 20_000, "{r:?}");
}
