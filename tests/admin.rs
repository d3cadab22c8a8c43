//! The admin listener from outside, over plain HTTP: health and readiness on a port of
//! their own, and Prometheus metrics that move with real Kafka traffic (librdkafka, and
//! a raw request where an exact error code is wanted). Readiness against a stopped Iggy
//! server is in `iggy_backend/`.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiVersionsRequest, DescribeGroupsRequest, ProduceRequest};
use kafka_protocol::records::Compression;
use support::admin::{eventually, get, http, Scrape};
use support::{batch, call, groups, record, topic_name, Gateway, RawClient};

fn m(name: &str) -> String {
    format!("iggy_kafka_gateway_{name}")
}

#[test]
fn health_readiness_and_metrics_answer_on_their_own_port() {
    let gw = Gateway::start();
    assert_ne!(gw.admin.port(), gw.addr.port());

    let health = get(gw.admin, "/healthz");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
    let ready = get(gw.admin, "/readyz");
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));

    let metrics = get(gw.admin, "/metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .content_type
            .starts_with("application/openmetrics-text"),
        "{metrics:?}"
    );
    assert!(metrics.body.ends_with("# EOF\n"), "{}", metrics.body);
    assert!(metrics
        .body
        .contains(&format!("# TYPE {} gauge", m("open_connections"))));

    assert_eq!(get(gw.admin, "/nothing-here").status, 404);
    let post = http(gw.admin, "POST", "/metrics");
    assert_eq!(post.status, 405, "{post:?}");
}

#[test]
fn metrics_follow_kafka_traffic() {
    let gw = Gateway::start_with(&[
        ("auto_create_topics_enable", "false"),
        ("log_slots", "2"),
        ("offset_slots", "3"),
        ("group_initial_rebalance_delay_ms", "0"),
    ]);
    let bootstrap = gw.bootstrap();
    let idle = Scrape::take(gw.admin);
    // Every slot is listed from the start, with nothing queued.
    for slot in 0..2 {
        let line = format!("{}{{slot=\"{slot}\"}} 0\n", m("log_slot_queue_depth"));
        assert!(idle.0.contains(&line), "{}", idle.0);
    }
    for slot in 0..3 {
        let line = format!("{}{{slot=\"{slot}\"}} 0\n", m("offset_slot_queue_depth"));
        assert!(idle.0.contains(&line), "{}", idle.0);
    }
    assert!(!idle.0.contains("slot=\"3\""), "{}", idle.0);
    assert_eq!(idle.sum(&m("open_connections"), &[]), 0.0);

    groups::create_topic(&bootstrap, "metered", 2);
    groups::produce(&bootstrap, "metered", 0, 50);
    let consumer = groups::member(&bootstrap, "metered-group", "metered", "range");
    let got = groups::consume(&[&consumer], 50, Duration::from_secs(30));
    assert_eq!(got[0].len(), 50);
    groups::commit(&consumer);

    // A produce to a topic that does not exist: counted under its error code.
    let mut raw = RawClient::connect(gw.addr);
    let records = batch(
        &[record(None, b"lost", 1_700_000_000_000)],
        Compression::None,
    );
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(records));
    let topic = TopicProduceData::default()
        .with_name(topic_name("no-such-topic"))
        .with_partition_data(vec![partition]);
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![topic]);
    let answer = call!(raw, Produce, 9, request);
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 3);

    let busy = Scrape::take(gw.admin);
    let errors =
        |api: &str, error: &str| busy.sum(&m("errors_total"), &[("api", api), ("error", error)]);
    assert_eq!(
        busy.sum(
            &m("errors_total"),
            &[
                ("api", "Produce"),
                ("version", "9"),
                ("error", "UNKNOWN_TOPIC_OR_PARTITION")
            ]
        ),
        1.0,
        "{}",
        busy.0
    );
    assert!(errors("Produce", "NONE") >= 1.0, "{}", busy.0);
    assert!(errors("Fetch", "NONE") >= 1.0, "{}", busy.0);
    assert!(errors("CreateTopics", "NONE") == 1.0, "{}", busy.0);
    assert!(errors("JoinGroup", "NONE") >= 1.0, "{}", busy.0);
    assert!(errors("SyncGroup", "NONE") >= 1.0, "{}", busy.0);
    // One per partition committed.
    assert!(errors("OffsetCommit", "NONE") >= 2.0, "{}", busy.0);

    for api in ["Produce", "Fetch", "Metadata", "ApiVersions", "JoinGroup"] {
        let requests = busy.sum(&m("requests_total"), &[("api", api)]);
        assert!(requests >= 1.0, "{api}: {}", busy.0);
    }
    assert!(busy.sum(&m("received_bytes_total"), &[]) > 0.0);
    assert!(busy.sum(&m("sent_bytes_total"), &[]) > 0.0);
    // The consumer's connections and the raw one.
    assert!(busy.sum(&m("open_connections"), &[]) >= 2.0, "{}", busy.0);

    let backend_calls =
        |call: &str| busy.sum(&m("backend_call_duration_seconds_count"), &[("call", call)]);
    assert_eq!(backend_calls("create_topic"), 1.0);
    assert!(backend_calls("append") >= 1.0, "{}", busy.0);
    assert!(backend_calls("read") >= 1.0, "{}", busy.0);
    // Commits are writes to the metadata table of offsets.
    let commits = busy.sum(
        &m("backend_call_duration_seconds_count"),
        &[("call", "meta_write"), ("table", "offsets")],
    );
    assert!(commits >= 1.0, "{}", busy.0);
    assert_eq!(busy.sum(&m("log_slot_queue_depth"), &[]), 0.0);

    // The group coordinator publishes its counts on its 100 ms tick.
    let stable = [("state", "Stable")];
    assert!(
        wait_for(gw.admin, |s| s.sum(&m("consumer_groups"), &stable) == 1.0),
        "{}",
        Scrape::take(gw.admin).0
    );
    assert!(busy.sum(&m("group_rebalances_total"), &[]) >= 1.0);

    drop(consumer);
    drop(raw);
    assert!(
        wait_for(gw.admin, |s| s.sum(&m("open_connections"), &[]) == 0.0),
        "connections still counted open: {}",
        Scrape::take(gw.admin).0
    );

    // Every request answered is counted (by API and version) and timed (by API) once:
    // with no other client left, a known number of requests moves both by exactly that.
    let before = Scrape::take(gw.admin);
    let mut raw = RawClient::connect(gw.addr);
    for _ in 0..3 {
        call!(raw, ApiVersions, 3, ApiVersionsRequest::default());
    }
    for _ in 0..2 {
        call!(raw, DescribeGroups, 5, DescribeGroupsRequest::default());
    }
    let after = Scrape::take(gw.admin);
    for (api, version, sent) in [("ApiVersions", "3", 3.0), ("DescribeGroups", "5", 2.0)] {
        let counted = [("api", api), ("version", version)];
        let checks = [
            ("requests_total", &counted[..]),
            ("request_duration_seconds_count", &counted[..1]),
        ];
        for (counter, labels) in checks {
            let moved = after.sum(&m(counter), labels) - before.sum(&m(counter), labels);
            assert_eq!(moved, sent, "{counter} of {api} v{version}: {}", after.0);
        }
    }
    drop(raw);
    assert!(
        wait_for(gw.admin, |s| s.sum(&m("open_connections"), &[]) == 0.0),
        "connections still counted open: {}",
        Scrape::take(gw.admin).0
    );
    assert!(wait_for(gw.admin, |s| s
        .sum(&m("consumer_groups"), &stable)
        == 0.0));
}

/// Scrapes until `done` holds, for up to 10 s.
fn wait_for(admin: SocketAddr, done: impl Fn(&Scrape) -> bool) -> bool {
    eventually(Duration::from_secs(10), || done(&Scrape::take(admin)))
}

#[test]
fn a_taken_admin_port_stops_startup_naming_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"))
        .env("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", &addr)
        .env("IGGY_KAFKA_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
}
