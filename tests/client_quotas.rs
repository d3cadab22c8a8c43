//! Client quotas end to end. Raw requests for the exact answers of AlterClientQuotas
//! and DescribeClientQuotas (entities, defaults, filters, refusals, validate_only),
//! kept across a restart on both stores and refused without the cluster ACLs; then
//! enforcement: a Produce or Fetch over its quota answered with a throttle time and
//! its connection muted for it, librdkafka clients with a quota held near it while a
//! client id without one is not throttled, an IP over its connection rate refused, and
//! quotas shared by gateways on one Iggy server and restored from their snapshot.

use crate::support;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Message, Statistics};

use support::acls::{create_topic_code, CLUSTER_AUTHORIZATION_FAILED};
use support::admin::{eventually, Scrape};
use support::iggy::{snapshot_upto, IggyServer};
use support::{batch, call, record, topic_name, Gateway, RawClient, Store};

const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// An entity as (type, name) pairs; a `None` name is `<default>`.
type Entity<'a> = &'a [(&'a str, Option<&'a str>)];

fn entry(entity: Entity, ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(s(t))
                        .with_entity_name(n.map(s))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(k, v)| {
                    OpData::default()
                        .with_key(s(k))
                        .with_value(v.unwrap_or(0.0))
                        .with_remove(v.is_none())
                })
                .collect(),
        )
}

/// AlterClientQuotas at `v`: each entry's (code, message).
fn alter(
    c: &mut RawClient,
    v: i16,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let request = AlterClientQuotasRequest::default()
        .with_entries(entries)
        .with_validate_only(validate_only);
    let r = call!(c, AlterClientQuotas, v, request);
    r.entries
        .iter()
        .map(|e| {
            (
                e.error_code,
                e.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

fn set(c: &mut RawClient, entity: Entity, key: &str, value: f64) {
    let answer = alter(c, 1, vec![entry(entity, &[(key, Some(value))])], false);
    assert_eq!(answer, [(0, None)]);
}

/// A described entity: its parts, sorted, and its values.
type Described = (Vec<(String, Option<String>)>, Vec<(String, f64)>);

/// DescribeClientQuotas at `v` with (type, match type, match) components: the code
/// and the entries, sorted.
fn describe(
    c: &mut RawClient,
    v: i16,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> (i16, Option<Vec<Described>>) {
    let request = DescribeClientQuotasRequest::default()
        .with_components(
            components
                .iter()
                .map(|(t, m, name)| {
                    ComponentData::default()
                        .with_entity_type(s(t))
                        .with_match_type(*m)
                        .with_match(name.map(s))
                })
                .collect(),
        )
        .with_strict(strict);
    let r = call!(c, DescribeClientQuotas, v, request);
    let entries = r.entries.map(|entries| {
        let mut out: Vec<Described> = entries
            .iter()
            .map(|e| {
                let mut entity: Vec<_> = e
                    .entity
                    .iter()
                    .map(|p| {
                        let name = p.entity_name.as_ref().map(|n| n.to_string());
                        (p.entity_type.to_string(), name)
                    })
                    .collect();
                entity.sort();
                let values = e.values.iter().map(|x| (x.key.to_string(), x.value));
                (entity, values.collect())
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    });
    (r.error_code, entries)
}

fn described(entity: Entity, values: &[(&str, f64)]) -> Described {
    let mut parts: Vec<_> = entity
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect();
    parts.sort();
    let values = values.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    (parts, values)
}

const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const ANY: i8 = 2;

const ALICE: Entity = &[("user", Some("alice"))];
const ALICE_APP: Entity = &[("user", Some("alice")), ("client-id", Some("app"))];
const DEFAULT_USER: Entity = &[("user", None)];
const DEFAULT_CLIENT: Entity = &[("client-id", None)];

fn quota_apis_answer_as_kafka_does(store: Store) {
    // A process: the quotas are read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in 0..=1 {
        assert_eq!(describe(&mut c, v, &[], false), (0, Some(vec![])));
    }
    set(&mut c, ALICE, "producer_byte_rate", 1024.0);
    set(&mut c, ALICE_APP, "consumer_byte_rate", 2048.0);
    set(&mut c, DEFAULT_USER, "request_percentage", 12.5);
    set(&mut c, DEFAULT_CLIENT, "controller_mutation_rate", 3.0);
    // Several keys at once, at v0; one set then changed.
    let answer = alter(
        &mut c,
        0,
        vec![entry(
            ALICE,
            &[
                ("consumer_byte_rate", Some(4096.0)),
                ("producer_byte_rate", Some(1500.0)),
            ],
        )],
        false,
    );
    assert_eq!(answer, [(0, None)]);

    // validate_only checks and answers, and stores nothing.
    let answer = alter(
        &mut c,
        1,
        vec![
            entry(
                &[("client-id", Some("dry"))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            entry(&[("client-id", Some("dry"))], &[("nope", Some(1.0))]),
        ],
        true,
    );
    assert_eq!(
        answer[0].0, INVALID_REQUEST,
        "the same entity twice: {answer:?}"
    );
    let answer = alter(
        &mut c,
        1,
        vec![entry(
            &[("client-id", Some("dry"))],
            &[("producer_byte_rate", Some(1.0))],
        )],
        true,
    );
    assert_eq!(answer, [(0, None)]);

    // Refusals, each naming the problem, as Kafka's.
    let refused = |c: &mut RawClient, entity: Entity, ops: &[(&str, Option<f64>)]| {
        let answer = alter(c, 1, vec![entry(entity, ops)], false);
        assert_eq!(answer.len(), 1);
        assert_eq!(answer[0].0, INVALID_REQUEST, "{entity:?} {ops:?}");
        answer[0].1.clone().unwrap_or_default()
    };
    let message = refused(&mut c, ALICE, &[("bytes_per_fortnight", Some(5.0))]);
    assert!(message.contains("bytes_per_fortnight"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(-5.0))]);
    assert!(message.contains("greater than 0"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(10.5))]);
    assert!(message.contains("fractional"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(f64::NAN))]);
    assert!(message.contains("producer_byte_rate"), "{message}");
    let message = refused(
        &mut c,
        &[("group", Some("g"))],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("group"), "{message}");
    let message = refused(&mut c, &[], &[("producer_byte_rate", Some(5.0))]);
    assert!(message.contains("empty"), "{message}");
    let message = refused(
        &mut c,
        &[("user", Some(""))],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("Empty user"), "{message}");
    let message = refused(
        &mut c,
        ALICE,
        &[
            ("producer_byte_rate", Some(5.0)),
            ("producer_byte_rate", None),
        ],
    );
    assert!(message.contains("Duplicate quota key"), "{message}");
    let message = refused(
        &mut c,
        &[("ip", Some("not-an-ip"))],
        &[("connection_creation_rate", Some(5.0))],
    );
    assert!(message.contains("not a valid IP"), "{message}");
    let message = refused(
        &mut c,
        &[("ip", None), ("user", Some("alice"))],
        &[("connection_creation_rate", Some(5.0))],
    );
    assert!(message.contains("combination"), "{message}");
    // IP entities take connection_creation_rate only, the others everything else.
    let message = refused(
        &mut c,
        &[("ip", None)],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("producer_byte_rate"), "{message}");
    let message = refused(&mut c, ALICE, &[("connection_creation_rate", Some(5.0))]);
    assert!(message.contains("connection_creation_rate"), "{message}");
    // One bad entry leaves the good one beside it applied.
    let answer = alter(
        &mut c,
        1,
        vec![
            entry(
                &[("client-id", Some("good"))],
                &[("producer_byte_rate", Some(7.0))],
            ),
            entry(
                &[("client-id", Some("bad"))],
                &[("producer_byte_rate", Some(0.0))],
            ),
        ],
        false,
    );
    assert_eq!(answer[0], (0, None));
    assert_eq!(answer[1].0, INVALID_REQUEST);
    // Removing a key that is not set is not an error.
    let answer = alter(
        &mut c,
        1,
        vec![entry(
            &[("client-id", Some("good"))],
            &[("consumer_byte_rate", None)],
        )],
        false,
    );
    assert_eq!(answer, [(0, None)]);

    // Sorted by (type, name) pairs, as `describe` sorts them.
    let everything = vec![
        described(DEFAULT_CLIENT, &[("controller_mutation_rate", 3.0)]),
        described(ALICE_APP, &[("consumer_byte_rate", 2048.0)]),
        described(
            &[("client-id", Some("good"))],
            &[("producer_byte_rate", 7.0)],
        ),
        described(DEFAULT_USER, &[("request_percentage", 12.5)]),
        described(
            ALICE,
            &[
                ("consumer_byte_rate", 4096.0),
                ("producer_byte_rate", 1500.0),
            ],
        ),
    ];
    let check_filters = |c: &mut RawClient| {
        for v in 0..=1 {
            assert_eq!(
                describe(c, v, &[], false),
                (0, Some(everything.clone())),
                "v{v}"
            );
        }
        // Exact: every entity naming alice; strict: only the one with no other part.
        let alices = vec![everything[1].clone(), everything[4].clone()];
        let exact = [("user", EXACT, Some("alice"))];
        assert_eq!(describe(c, 1, &exact, false), (0, Some(alices)));
        assert_eq!(
            describe(c, 1, &exact, true),
            (0, Some(vec![everything[4].clone()]))
        );
        let default = [("user", DEFAULT, None)];
        assert_eq!(
            describe(c, 1, &default, false),
            (0, Some(vec![everything[3].clone()]))
        );
        let clients = [("client-id", ANY, None)];
        let with_client = vec![
            everything[0].clone(),
            everything[1].clone(),
            everything[2].clone(),
        ];
        assert_eq!(describe(c, 1, &clients, false), (0, Some(with_client)));
        let only_clients = vec![everything[0].clone(), everything[2].clone()];
        assert_eq!(describe(c, 0, &clients, true), (0, Some(only_clients)));
        let both = [
            ("user", EXACT, Some("alice")),
            ("client-id", EXACT, Some("app")),
        ];
        assert_eq!(
            describe(c, 1, &both, true),
            (0, Some(vec![everything[1].clone()]))
        );
        assert_eq!(
            describe(c, 1, &[("ip", ANY, None)], false),
            (0, Some(vec![]))
        );
    };
    check_filters(&mut c);
    // Bad filters: the whole answer refused, as Kafka's.
    let bad = [
        (vec![("group", ANY, None)], UNSUPPORTED_VERSION),
        (vec![("user", 9, None)], UNSUPPORTED_VERSION),
        (vec![("user", EXACT, None)], INVALID_REQUEST),
        (vec![("user", DEFAULT, Some("alice"))], INVALID_REQUEST),
        (
            vec![("user", ANY, None), ("user", DEFAULT, None)],
            INVALID_REQUEST,
        ),
        (
            vec![("ip", ANY, None), ("user", ANY, None)],
            INVALID_REQUEST,
        ),
        (vec![("", ANY, None)], INVALID_REQUEST),
    ];
    for (components, code) in bad {
        assert_eq!(
            describe(&mut c, 1, &components, false),
            (code, None),
            "{components:?}"
        );
    }

    // Kept across a restart: read back from the store.
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    check_filters(&mut c);
    // Removing the last key removes the entity.
    let answer = alter(
        &mut c,
        1,
        vec![entry(DEFAULT_USER, &[("request_percentage", None)])],
        false,
    );
    assert_eq!(answer, [(0, None)]);
    assert_eq!(
        describe(&mut c, 1, &[("user", DEFAULT, None)], false),
        (0, Some(vec![]))
    );
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        describe(&mut c, 1, &[("user", DEFAULT, None)], false),
        (0, Some(vec![]))
    );
}

#[test]
fn quota_apis_need_the_cluster_acls() {
    let acls_on = [("authorizer", "standard"), ("super_users", "User:admin")];
    // A process: restarted (SIGKILL) with other settings on the same data.
    let mut gw = Gateway::process_with(&acls_on);
    let mut c = RawClient::connect(gw.addr);
    let ops = [("producer_byte_rate", Some(10.0))];
    let answer = alter(
        &mut c,
        1,
        vec![entry(ALICE, &ops), entry(DEFAULT_USER, &ops)],
        false,
    );
    assert_eq!(answer.len(), 2);
    assert!(
        answer
            .iter()
            .all(|(code, _)| *code == CLUSTER_AUTHORIZATION_FAILED),
        "{answer:?}"
    );
    assert_eq!(
        describe(&mut c, 1, &[], false),
        (CLUSTER_AUTHORIZATION_FAILED, None)
    );
    // A cluster without ACLs open to everyone: both allowed.
    gw.restart_with("allow_everyone_if_no_acl_found", Some("true"));
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        alter(&mut c, 1, vec![entry(ALICE, &ops)], false),
        [(0, None)]
    );
    let alice = vec![described(ALICE, &[("producer_byte_rate", 10.0)])];
    assert_eq!(describe(&mut c, 1, &[], false), (0, Some(alice)));
}

/// The raw client's client id (`support::RawClient`).
const RAW_CLIENT: Entity = &[("client-id", Some("raw-test"))];

fn produce(c: &mut RawClient, topic: &str, bytes: usize) -> ProduceResponse {
    let value = vec![b'q'; bytes];
    let records = batch(&[record(None, &value, 1)], Compression::None);
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(records));
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![partition])]);
    call!(c, Produce, 9, request)
}

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

#[test]
fn gateways_on_one_iggy_share_their_quotas() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let refresh = [("topic_refresh_ms", "200")];
    let (first, second) = (server.gateway_with(&refresh), server.gateway_with(&refresh));
    let (mut c1, mut c2) = (
        RawClient::connect(first.addr),
        RawClient::connect(second.addr),
    );
    assert_eq!(create_topic_code(&mut c1, "shared"), 0);
    set(&mut c1, RAW_CLIENT, "producer_byte_rate", 1500.0);
    // Described through the other gateway at once: it reads the store.
    let raw = vec![described(RAW_CLIENT, &[("producer_byte_rate", 1500.0)])];
    assert_eq!(describe(&mut c2, 1, &[], false), (0, Some(raw)));
    // And enforced there once it has re-read the quotas.
    assert!(
        eventually(Duration::from_secs(10), || {
            produce(&mut c2, "shared", 11_000).throttle_time_ms > 0
        }),
        "the other gateway never throttled the client"
    );
}

#[test]
fn quotas_on_iggy_come_back_from_their_snapshot() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A process: started again after a SIGKILL, from what it stored.
    let mut gw = server.process_gateway_with(&[("iggy_snapshot_records", "5")]);
    let mut c = RawClient::connect(gw.addr);
    // Twelve changes to four client ids; the last of each wins.
    for n in 1..=12 {
        let client = format!("c{}", n % 4);
        let entity = [("client-id", Some(client.as_str()))];
        set(&mut c, &entity, "producer_byte_rate", 1000.0 * n as f64);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sdk = runtime.block_on(server.sdk());
    let snapshotted = || runtime.block_on(snapshot_upto(&sdk, "meta.quota")) >= Some(10);
    assert!(
        eventually(Duration::from_secs(20), snapshotted),
        "no snapshot of the quota table's log"
    );
    // Started again from the snapshot, then the records after it: the same quotas.
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let want: Vec<Described> = [
        ("c0", 12_000.0),
        ("c1", 9_000.0),
        ("c2", 10_000.0),
        ("c3", 11_000.0),
    ]
    .iter()
    .map(|(client, rate)| {
        described(
            &[("client-id", Some(client))],
            &[("producer_byte_rate", *rate)],
        )
    })
    .collect();
    assert_eq!(describe(&mut c, 1, &[], false), (0, Some(want)));
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

/// What librdkafka reported of a client's run: the largest throttle time in its
/// statistics, and the bytes done (acknowledged or consumed).
#[derive(Clone, Default)]
struct Throttles {
    max_ms: Arc<AtomicI64>,
    done: Arc<AtomicI64>,
}

impl ClientContext for Throttles {
    fn stats(&self, statistics: Statistics) {
        let max = statistics
            .brokers
            .values()
            .filter_map(|b| b.throttle.as_ref().map(|w| w.max))
            .max()
            .unwrap_or(0);
        self.max_ms.fetch_max(max, Ordering::SeqCst);
    }
}

impl ProducerContext for Throttles {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        // Purged at the end of the run: not delivered, and no error of the gateway's.
        let m = match result {
            Ok(m) => m,
            Err((
                KafkaError::MessageProduction(
                    RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight,
                ),
                _,
            )) => return,
            Err((e, _)) => panic!("a record was not delivered: {e}"),
        };
        let len = m.payload().map_or(0, |p| p.len());
        self.done.fetch_add(len as i64, Ordering::SeqCst);
    }
}

impl rdkafka::consumer::ConsumerContext for Throttles {}

fn config(bootstrap: &str, client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("client.id", client_id)
        .set("statistics.interval.ms", "200");
    config
}

const RUN: Duration = Duration::from_secs(8);
/// Bytes these clients may have on the wire when they learn of a throttle: one fetch
/// (`fetch.max.bytes`), or four produce batches of `batch.size`.
const IN_FLIGHT_BYTES: f64 = 65_536.0;
/// Bytes a client without a quota moves at most: enough to tell its rate.
const UNBOUNDED_STOP: f64 = 32e6;

/// What a client achieved: bytes, over how long, the largest throttle time reported.
#[derive(Debug)]
struct Run {
    bytes: f64,
    took: Duration,
    throttle_ms: i64,
}

impl Run {
    fn of(throttles: &Throttles, took: Duration) -> Run {
        Run {
            bytes: throttles.done.load(Ordering::SeqCst) as f64,
            took,
            throttle_ms: throttles.max_ms.load(Ordering::SeqCst),
        }
    }

    fn rate(&self) -> f64 {
        self.bytes / self.took.as_secs_f64()
    }
}

/// Produces 1 kB records as fast as the gateway lets it for `RUN` (or until
/// `UNBOUNDED_STOP` bytes are acknowledged); any failed delivery fails the test.
fn produce_for_a_while(bootstrap: &str, topic: &str, client_id: &str) -> Run {
    let throttles = Throttles::default();
    let producer: ThreadedProducer<Throttles> = config(bootstrap, client_id)
        .set("linger.ms", "5")
        .set("batch.size", "16384") // a quarter of IN_FLIGHT_BYTES
        .create_with_context(throttles.clone())
        .expect("producer");
    let payload = vec![b'p'; 1024];
    let started = Instant::now();
    let acknowledged = || throttles.done.load(Ordering::SeqCst) as f64;
    while started.elapsed() < RUN && acknowledged() < UNBOUNDED_STOP {
        let record = BaseRecord::<str, [u8]>::to(topic)
            .payload(&payload[..])
            .key("k");
        match producer.send(record) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err((e, _)) => panic!("{client_id}: a record was not queued: {e}"),
        }
    }
    let run = Run::of(&throttles, started.elapsed());
    producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
    run
}

/// Consumes `topic` from its start for `RUN` (or until `UNBOUNDED_STOP` bytes); a
/// consumer error fails the test at once.
fn consume_for_a_while(bootstrap: &str, topic: &str, client_id: &str) -> Run {
    let throttles = Throttles::default();
    let consumer: BaseConsumer<Throttles> = config(bootstrap, client_id)
        .set("group.id", client_id)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("message.max.bytes", "65536")
        .set("fetch.max.bytes", "65536")
        .set("max.partition.fetch.bytes", "65536")
        .create_with_context(throttles.clone())
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let started = Instant::now();
    let consumed = || throttles.done.load(Ordering::SeqCst) as f64;
    while started.elapsed() < RUN && consumed() < UNBOUNDED_STOP {
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(m)) => {
                let len = m.payload().map_or(0, |p| p.len());
                throttles.done.fetch_add(len as i64, Ordering::SeqCst);
            }
            Some(Err(e)) => panic!("{client_id}: consumer error: {e}"),
        }
    }
    Run::of(&throttles, started.elapsed())
}

/// Framing on top of the 1 kB values these clients move (record, batch and request
/// headers): generous.
const FRAMING: f64 = 1.05;
/// Kafka's rate window is at least this long (11 samples of 1 s, the current one
/// partly elapsed).
const MIN_WINDOW_MS: f64 = 10_000.0;

/// The client with a quota was throttled, never told to wait longer than Kafka's
/// formula allows for all it moved ((rate - quota) / quota × window is bytes in the
/// window / quota - window: at most its bytes, framed, and what it had on the wire,
/// over the quota, less the shortest window), and not starved: served at least the
/// shortest window's allowance less what one request brings, all it may have before
/// its first throttle whenever that comes. The one without a quota was never
/// throttled. The rates reached are printed, not asserted: speed is for benchmarks.
fn held_near(what: &str, quota: f64, slow: &Run, fast: &Run) {
    println!(
        "bench: {what}: with a quota of {quota:.0} B/s {:.0} B/s, without {:.0} B/s",
        slow.rate(),
        fast.rate()
    );
    let moved = slow.bytes * FRAMING + IN_FLIGHT_BYTES;
    let most = (moved / quota * 1000.0 - MIN_WINDOW_MS) as i64;
    assert!(
        (1..=most).contains(&slow.throttle_ms),
        "{what}: the client with a quota was throttled {} ms (expected 1 to {most}): {slow:?}",
        slow.throttle_ms
    );
    assert_eq!(
        fast.throttle_ms, 0,
        "{what}: the client without a quota was throttled: {fast:?}"
    );
    let allowance = quota * MIN_WINDOW_MS / 1000.0 - IN_FLIGHT_BYTES;
    assert!(
        slow.bytes >= allowance,
        "{what}: the client with a quota was starved (under {allowance} B): {slow:?}"
    );
    assert!(fast.bytes > 0.0, "{what}: {fast:?}");
}

#[test]
fn librdkafka_clients_are_held_near_their_quota() {
    let gw = Gateway::start_with(&[("group_initial_rebalance_delay_ms", "0")]);
    let bootstrap = gw.bootstrap();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic_code(&mut c, "produced"), 0);
    const QUOTA: f64 = 20_000.0;
    set(
        &mut c,
        &[("client-id", Some("slow"))],
        "producer_byte_rate",
        QUOTA,
    );
    set(
        &mut c,
        &[("client-id", Some("slow"))],
        "consumer_byte_rate",
        QUOTA,
    );

    // Two producers at once: one with a quota, one without.
    let (slow, fast) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| produce_for_a_while(&bootstrap, "produced", "slow"));
        let fast = scope.spawn(|| produce_for_a_while(&bootstrap, "produced", "fast"));
        (slow.join().unwrap(), fast.join().unwrap())
    });
    println!("produced: with a quota {slow:?}, without {fast:?}");
    held_near("produce", QUOTA, &slow, &fast);

    // Two consumers of what was produced at once, likewise.
    let (slow, fast) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| consume_for_a_while(&bootstrap, "produced", "slow"));
        let fast = scope.spawn(|| consume_for_a_while(&bootstrap, "produced", "fast"));
        (slow.join().unwrap(), fast.join().unwrap())
    });
    println!("consumed: with a quota {slow:?}, without {fast:?}");
    held_near("consume", QUOTA, &slow, &fast);
}

support::on_every_store!(quota_apis_answer_as_kafka_does);
