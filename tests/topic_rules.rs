//! Topic rules (issue 4) on both stores: CreateTopics defaults for -1, auto-creation
//! (KIP-361) with the setting on and off, every DeleteTopics rule, and what a deleted
//! topic takes with it. Raw requests at every served version give the exact codes;
//! librdkafka shows what real clients see.

use crate::support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, MetadataRequest};
use rdkafka::admin::AdminOptions;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Timestamp;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;

use support::configs::{create_with, versions, INVALID_TOPIC, UNKNOWN_TOPIC};
use support::kafka::{admin, commit_offsets, committed, consume, create_topic, produce, Expected};
use support::{call, topic_name, Gateway, RawClient, StartOn, Store};

/// Broker settings every test runs with: defaults that differ from Kafka's, so a -1
/// not resolved through them shows, and a DeleteTopics limit that
/// [`delete_topics_follows_every_rule`]'s request just fits.
const RULES: &[(&str, &str)] = &[
    ("num_partitions", "3"),
    ("default_replication_factor", "2"),
    ("delete_topics_max_names", "11"),
];
const DEFAULT_PARTITIONS: i32 = 3;
const DEFAULT_REPLICATION: i16 = 2;
const DELETE_LIMIT: usize = 11;

const LEADER_NOT_AVAILABLE: i16 = 5;
const UNKNOWN_TOPIC_ID: i16 = 100;
const POLICY_VIOLATION: i16 = 44;

/// A gateway on `store` with [`RULES`] and `auto_create_topics_enable` as given,
/// in-process.
fn start(store: Store, auto_create: bool) -> Option<Gateway> {
    start_by(Gateway::start_on, store, auto_create)
}

/// The same, started by `start` (`Gateway::process_on` for a SIGKILL).
fn start_by(start: StartOn, store: Store, auto_create: bool) -> Option<Gateway> {
    let mut settings = RULES.to_vec();
    settings.push((
        "auto_create_topics_enable",
        if auto_create { "true" } else { "false" },
    ));
    start(store, &settings)
}

// ---- CreateTopics ---------------------------------------------------------------------

/// -1 partitions and replication factor mean the broker defaults at every version;
/// any replication factor from 1 is accepted, and Metadata shows the one replica the
/// backend really keeps.
async fn create_topics_use_the_broker_defaults_for_minus_one(store: Store) {
    let Some(gw) = start(store, true) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::CreateTopics) {
        let name = format!("defaults-v{v}");
        let r = create_with(&mut c, v, &name, -1, -1, &[], false);
        assert_eq!(r.error_code, 0, "v{v}: {r:?}");
        if v >= 5 {
            let answered = (r.num_partitions, r.replication_factor);
            assert_eq!(answered, (DEFAULT_PARTITIONS, DEFAULT_REPLICATION), "v{v}");
        }
        let listed = describe(&mut c, &name);
        assert_eq!(listed.error_code, 0, "v{v}");
        assert_eq!(listed.partitions.len(), DEFAULT_PARTITIONS as usize, "v{v}");
        assert!(
            listed.partitions.iter().all(|p| p.replica_nodes.len() == 1),
            "v{v}: one replica kept: {listed:?}"
        );

        // Any factor from 1 is accepted (Connect asks for 3, MirrorMaker for 2)...
        let name = format!("replicated-v{v}");
        let r = create_with(&mut c, v, &name, 2, 3, &[], false);
        assert_eq!(r.error_code, 0, "v{v}: {r:?}");
        if v >= 5 {
            assert_eq!((r.num_partitions, r.replication_factor), (2, 3), "v{v}");
        }
        let listed = describe(&mut c, &name);
        assert!(listed.partitions.iter().all(|p| p.replica_nodes.len() == 1));
        // ...anything else below 1 is refused: INVALID_PARTITIONS (37),
        // INVALID_REPLICATION_FACTOR (38).
        for (partitions, replication, code) in [(0, 1, 37), (-2, 1, 37), (1, 0, 38), (1, -2, 38)] {
            let name = format!("refused-v{v}");
            let r = create_with(&mut c, v, &name, partitions, replication, &[], false);
            assert_eq!(r.error_code, code, "v{v} {partitions}/{replication}: {r:?}");
            assert_eq!(describe(&mut c, &name).error_code, UNKNOWN_TOPIC);
        }
        // validate_only resolves the defaults the same way and creates nothing.
        let name = format!("validated-v{v}");
        let r = create_with(&mut c, v, &name, -1, -1, &[], true);
        assert_eq!(r.error_code, 0, "v{v}: {r:?}");
        if v >= 5 {
            let answered = (r.num_partitions, r.replication_factor);
            assert_eq!(answered, (DEFAULT_PARTITIONS, DEFAULT_REPLICATION), "v{v}");
        }
        assert_eq!(describe(&mut c, &name).error_code, UNKNOWN_TOPIC, "v{v}");
    }
}

// ---- auto-creation (KIP-361) ----------------------------------------------------------

async fn missing_topics_are_created_when_allowed_and_never_for_a_consumer_that_refuses(
    store: Store,
) {
    let Some(gw) = start(store, true) else {
        return;
    };
    metadata_auto_creates_only_when_allowed(gw.addr, true);
    a_producer_creates_a_missing_topic_only_when_enabled(gw.addr, true).await;
    a_consumer_without_auto_create_never_creates_a_topic(gw.addr);
}

async fn with_auto_creation_off_nothing_creates_topics(store: Store) {
    let Some(gw) = start(store, false) else {
        return;
    };
    metadata_auto_creates_only_when_allowed(gw.addr, false);
    a_producer_creates_a_missing_topic_only_when_enabled(gw.addr, false).await;
    a_consumer_without_auto_create_never_creates_a_topic(gw.addr);
}

/// Metadata by topic id (from v10; the Java client sends it from v12): the topic the
/// id names, whatever name comes with it (its `describeTopics` by id, kafka-topics
/// `--describe --topic-id`, sends ""), and for an id no topic has UNKNOWN_TOPIC_ID
/// (100) with no name, as Kafka answers; an id never auto-creates a topic.
async fn metadata_by_topic_id_answers_the_topic_it_names(store: Store) {
    let Some(gw) = start(store, true) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        create_with(&mut c, 7, "named-by-id", 2, 1, &[], false).error_code,
        0
    );
    let id = describe(&mut c, "named-by-id").topic_id;
    assert_ne!(id, uuid::Uuid::nil());
    let unknown = uuid::Uuid::from_u128(1); // no topic has it: theirs are random or derived
    let by_id = |c: &mut RawClient, v: i16, id: uuid::Uuid, name: Option<&str>| {
        let wanted = MetadataRequestTopic::default()
            .with_topic_id(id)
            .with_name(name.map(topic_name));
        let request = MetadataRequest::default()
            .with_topics(Some(vec![wanted]))
            .with_allow_auto_topic_creation(true);
        let mut r = call!(c, Metadata, v, request);
        assert_eq!(r.topics.len(), 1, "v{v}: {r:?}");
        r.topics.remove(0)
    };
    for v in 10..=13 {
        for name in [Some(""), None] {
            let t = by_id(&mut c, v, id, name);
            let got = (
                t.error_code,
                t.name.as_ref().map(|n| n.as_str()),
                t.topic_id,
            );
            assert_eq!(
                got,
                (0, Some("named-by-id"), id),
                "v{v}, name {name:?}: {t:?}"
            );
            assert_eq!(t.partitions.len(), 2, "v{v}");
            let t = by_id(&mut c, v, unknown, name);
            let got = (
                t.error_code,
                t.name.as_ref().map(|n| n.as_str()),
                t.topic_id,
            );
            assert_eq!(
                got,
                (UNKNOWN_TOPIC_ID, None, unknown),
                "v{v}, name {name:?}: {t:?}"
            );
        }
    }
    // Nothing was made of the empty name or the unknown id.
    let all = MetadataRequest::default().with_topics(None);
    let names: Vec<_> = call!(c, Metadata, 12, all)
        .topics
        .into_iter()
        .filter_map(|t| t.name)
        .collect();
    assert_eq!(
        names.iter().filter(|n| !n.starts_with("__")).count(),
        1,
        "{names:?}"
    );
}

/// Metadata for a missing topic at every version: created with the broker defaults,
/// and answered LEADER_NOT_AVAILABLE that time, only when the setting (`enabled`) and,
/// from v4, the request allow it; otherwise UNKNOWN_TOPIC_OR_PARTITION and nothing is
/// made. Invalid names are INVALID_TOPIC_EXCEPTION either way.
fn metadata_auto_creates_only_when_allowed(addr: SocketAddr, enabled: bool) {
    let mut c = RawClient::connect(addr);
    for v in versions(ApiKey::Metadata) {
        let asks: &[bool] = if v >= 4 { &[true, false] } else { &[true] };
        for &allow in asks {
            let name = format!("auto-v{v}-{allow}");
            let created = enabled && allow;
            let first = metadata(&mut c, v, &name, allow);
            let code = if created {
                LEADER_NOT_AVAILABLE
            } else {
                UNKNOWN_TOPIC
            };
            assert_eq!(first.error_code, code, "v{v} allow={allow}: {first:?}");
            assert!(first.partitions.is_empty());
            let listed = describe(&mut c, &name);
            if created {
                assert_eq!(listed.error_code, 0, "v{v}: not created");
                assert_eq!(listed.partitions.len(), DEFAULT_PARTITIONS as usize);
            } else {
                assert_eq!(
                    listed.error_code, UNKNOWN_TOPIC,
                    "v{v} allow={allow}: created"
                );
            }
        }
        let bad = metadata(&mut c, v, "not a name", true);
        assert_eq!(bad.error_code, INVALID_TOPIC, "v{v}");
    }
}

/// A librdkafka producer to a missing topic creates it when the broker allows it
/// (`enabled`); otherwise its record fails and no topic appears.
async fn a_producer_creates_a_missing_topic_only_when_enabled(addr: SocketAddr, enabled: bool) {
    let topic = format!("produced-to-{enabled}");
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", addr.to_string())
        .set("message.timeout.ms", "15000")
        // How long librdkafka waits for a missing topic to appear before failing.
        .set("topic.metadata.propagation.max.ms", "3000")
        .create()
        .expect("producer");
    let record = FutureRecord::to(&topic).key("k").payload("v");
    let sent = producer.send(record, Duration::from_secs(20)).await;
    let mut c = RawClient::connect(addr);
    let listed = describe(&mut c, &topic);
    if enabled {
        let delivered = sent.expect("delivered to the created topic");
        assert_eq!(delivered.offset, 0);
        assert_eq!(listed.partitions.len(), DEFAULT_PARTITIONS as usize);
    } else {
        match sent {
            Err((KafkaError::MessageProduction(code), _)) => assert!(
                matches!(
                    code,
                    RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic
                ),
                "{code:?}"
            ),
            other => panic!("a record to a missing topic: {other:?}"),
        }
        assert_eq!(
            listed.error_code, UNKNOWN_TOPIC,
            "created with the setting off"
        );
    }
}

/// A librdkafka consumer with `allow.auto.create.topics=false` subscribed to a missing
/// topic is told it does not exist, and never creates it, whatever the broker allows.
/// (librdkafka sends the flag false for subscriptions even when set true, so only the
/// raw requests above show a consumer's consent taking effect.)
fn a_consumer_without_auto_create_never_creates_a_topic(addr: SocketAddr) {
    let topic = "subscribed-not-created";
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", addr.to_string())
        .set("group.id", "subscriber")
        .set("allow.auto.create.topics", "false")
        .set("topic.metadata.refresh.interval.ms", "500")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).unwrap();
    // librdkafka asks for the subscription at once, then every refresh interval.
    let until = Instant::now() + Duration::from_secs(3);
    let mut told_missing = false;
    while Instant::now() < until {
        if let Some(Err(KafkaError::MessageConsumption(code))) =
            consumer.poll(Duration::from_millis(100))
        {
            told_missing |= code == RDKafkaErrorCode::UnknownTopicOrPartition;
        }
    }
    assert!(
        told_missing,
        "the consumer never heard the topic is missing"
    );
    let mut c = RawClient::connect(addr);
    assert_eq!(describe(&mut c, topic).error_code, UNKNOWN_TOPIC, "created");
}

// ---- DeleteTopics ---------------------------------------------------------------------

/// The names [`delete_topics_follows_every_rule`] sends, what each answers, and a word
/// its error message must hold (from v5).
fn delete_plan(v: i16) -> Vec<(String, i16, &'static str)> {
    let (a, b) = (format!("delete-v{v}-a"), format!("delete-v{v}-b"));
    vec![
        (a.clone(), 0, ""),
        (String::new(), INVALID_TOPIC, "empty"),
        (format!(" {b}"), INVALID_TOPIC, "whitespace"),
        (format!("{b}\t"), INVALID_TOPIC, "whitespace"),
        (".".into(), INVALID_TOPIC, "'.'"),
        ("..".into(), INVALID_TOPIC, "'.'"),
        ("x".repeat(250), INVALID_TOPIC, "249"),
        (format!("{b}/x"), INVALID_TOPIC, "letters"),
        (
            format!("delete-v{v}-missing"),
            UNKNOWN_TOPIC,
            "does not exist",
        ),
        // Deleted once, then missing.
        (a, UNKNOWN_TOPIC, "does not exist"),
        (b, 0, ""),
    ]
}

/// At every version: invalid names answer INVALID_TOPIC_EXCEPTION with the reason
/// (from v5, where the answer has a message), missing ones UNKNOWN_TOPIC_OR_PARTITION,
/// a repeated name is deleted once, and none of them stops the valid names. More names
/// than `delete_topics_max_names` answer POLICY_VIOLATION each and delete nothing.
async fn delete_topics_follows_every_rule(store: Store) {
    let Some(gw) = start(store, true) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::DeleteTopics) {
        let plan = delete_plan(v);
        assert_eq!(plan.len(), DELETE_LIMIT, "the plan fits the limit exactly");
        let kept = format!("delete-v{v}-kept");
        for name in [&plan[0].0, &plan[10].0, &kept] {
            assert_eq!(create_with(&mut c, 7, name, 1, 1, &[], false).error_code, 0);
        }

        // One name over the limit: refused whole.
        let mut over: Vec<String> = plan.iter().map(|p| p.0.clone()).collect();
        over.push(kept.clone());
        let answers = delete(&mut c, v, &over);
        for (name, a) in over.iter().zip(&answers) {
            assert_eq!(a.error_code, POLICY_VIOLATION, "v{v} '{name}': {a:?}");
            if v >= 5 {
                let message = a.error_message.as_deref().unwrap_or_default();
                assert!(
                    message.contains(&DELETE_LIMIT.to_string()),
                    "v{v}: {message}"
                );
            }
        }
        for name in [&plan[0].0, &plan[10].0, &kept] {
            assert_eq!(
                describe(&mut c, name).error_code,
                0,
                "v{v}: '{name}' deleted"
            );
        }

        // At the limit: every name answered on its own, in order.
        let names: Vec<String> = plan.iter().map(|p| p.0.clone()).collect();
        let answers = delete(&mut c, v, &names);
        assert_eq!(answers.len(), plan.len(), "v{v}");
        for ((name, code, reason), a) in plan.iter().zip(&answers) {
            let answered = a.name.as_ref().map(|n| n.as_str());
            assert_eq!(answered, Some(name.as_str()), "v{v}");
            assert_eq!(a.error_code, *code, "v{v} '{name}': {a:?}");
            match (&a.error_message, v >= 5 && *code != 0) {
                (Some(message), true) => {
                    assert!(message.contains(reason), "v{v} '{name}': {message}")
                }
                (None, false) => {}
                (message, _) => panic!("v{v} '{name}': message {message:?}"),
            }
        }
        for (name, _, _) in [&plan[0], &plan[10]] {
            assert_eq!(
                describe(&mut c, name).error_code,
                UNKNOWN_TOPIC,
                "v{v} '{name}'"
            );
        }
        assert_eq!(
            describe(&mut c, &kept).error_code,
            0,
            "v{v}: a topic not named went"
        );
    }
}

/// The same rules as librdkafka's admin client reports them.
async fn delete_topics_rules_hold_for_librdkafka(store: Store) {
    let Some(gw) = start(store, true) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    let mut c = RawClient::connect(gw.addr);
    for name in ["rd-a", "rd-b"] {
        assert_eq!(create_with(&mut c, 7, name, 1, 1, &[], false).error_code, 0);
    }
    let admin = admin(&bootstrap);
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));

    // An existing topic among one name more than the limit: it stays.
    let mut names = vec!["rd-a".to_string()];
    names.extend((1..=DELETE_LIMIT).map(|i| format!("rd-{i}")));
    let too_many: Vec<&str> = names.iter().map(String::as_str).collect();
    let results = admin.delete_topics(&too_many, &options).await.unwrap();
    assert_eq!(results.len(), too_many.len());
    for r in &results {
        assert!(
            matches!(r, Err((_, RDKafkaErrorCode::PolicyViolation))),
            "{r:?}"
        );
    }
    assert_eq!(
        describe(&mut c, "rd-a").error_code,
        0,
        "deleted over the limit"
    );

    let names = ["rd-a", "not a name", "..", "rd-missing", "rd-b"];
    let results = admin.delete_topics(&names, &options).await.unwrap();
    let codes: HashMap<String, Option<RDKafkaErrorCode>> = results
        .into_iter()
        .map(|r| match r {
            Ok(name) => (name, None),
            Err((name, code)) => (name, Some(code)),
        })
        .collect();
    let want = HashMap::from([
        ("rd-a".to_string(), None),
        (
            "not a name".to_string(),
            Some(RDKafkaErrorCode::InvalidTopic),
        ),
        ("..".to_string(), Some(RDKafkaErrorCode::InvalidTopic)),
        (
            "rd-missing".to_string(),
            Some(RDKafkaErrorCode::UnknownTopicOrPartition),
        ),
        ("rd-b".to_string(), None),
    ]);
    assert_eq!(codes, want);
    for name in ["rd-a", "rd-b"] {
        assert_eq!(
            describe(&mut c, name).error_code,
            UNKNOWN_TOPIC,
            "{name} kept"
        );
    }
}

/// A deleted topic takes its stored configurations and committed offsets with it:
/// after a restart it is gone, and a new topic of the same name starts bare.
async fn a_deleted_topic_leaves_no_configs_or_offsets(store: Store) {
    // A process: SIGKILLed, then read back.
    let Some(mut gw) = start_by(Gateway::process_on, store, true) else {
        return;
    };
    let topic = "short-lived";
    let timestamp = 1_600_000_000_000;
    let bootstrap = gw.bootstrap();
    create_topic(
        &bootstrap,
        topic,
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    let back = produce_and_read_back(bootstrap.clone(), topic, timestamp).await;
    assert!(matches!(back, Timestamp::LogAppendTime(_)), "{back:?}");
    let b = bootstrap.clone();
    let stored = tokio::task::spawn_blocking(move || {
        commit_offsets(&b, "readers", topic, &[(0, 1)]);
        committed(&b, "readers", topic, 1)
    })
    .await
    .unwrap();
    assert_eq!(stored, [1]);

    let mut c = RawClient::connect(gw.addr);
    let answers = delete(&mut c, 6, &[topic.to_string()]);
    assert_eq!(answers[0].error_code, 0, "{answers:?}");
    gw.restart_after_kill();
    let bootstrap = gw.bootstrap();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        describe(&mut c, topic).error_code,
        UNKNOWN_TOPIC,
        "back after a restart"
    );

    create_topic(&bootstrap, topic, 1, &[]).await;
    let back = produce_and_read_back(bootstrap.clone(), topic, timestamp).await;
    assert_eq!(
        back,
        Timestamp::CreateTime(timestamp),
        "the old configuration applies"
    );
    let b = bootstrap.clone();
    let stored = tokio::task::spawn_blocking(move || committed(&b, "readers", topic, 1))
        .await
        .unwrap();
    assert_eq!(
        stored,
        [-1],
        "the old topic's commit applies to the new one"
    );
}

/// Produces one record stamped `timestamp` to partition 0 and reads the partition's
/// last record back; the timestamp the consumer sees.
async fn produce_and_read_back(
    bootstrap: String,
    topic: &'static str,
    timestamp: i64,
) -> Timestamp {
    tokio::task::spawn_blocking(move || {
        let record = Expected {
            key: None,
            value: Some(b"v".to_vec()),
            headers: Vec::new(),
            timestamp,
        };
        produce(&bootstrap, topic, "none", &[(0, record)]);
        let got = consume(&bootstrap, topic, &HashMap::from([(0, 1)]));
        got[&0][0].2
    })
    .await
    .unwrap()
}

// ---- raw requests ---------------------------------------------------------------------

/// DeleteTopics of `names` at version `v` (v6 names them in `topics`).
fn delete(c: &mut RawClient, v: i16, names: &[String]) -> Vec<DeletableTopicResult> {
    let request = if v >= 6 {
        let states = names
            .iter()
            .map(|n| DeleteTopicState::default().with_name(Some(topic_name(n))));
        DeleteTopicsRequest::default().with_topics(states.collect())
    } else {
        DeleteTopicsRequest::default()
            .with_topic_names(names.iter().map(|n| topic_name(n)).collect())
    };
    call!(c, DeleteTopics, v, request.with_timeout_ms(5000)).responses
}

/// Metadata for one topic by name at version `v`; `allow` is carried from v4.
fn metadata(c: &mut RawClient, v: i16, name: &str, allow: bool) -> MetadataResponseTopic {
    let wanted = MetadataRequestTopic::default().with_name(Some(topic_name(name)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(allow);
    let mut r = call!(c, Metadata, v, request);
    assert_eq!(r.topics.len(), 1);
    r.topics.remove(0)
}

/// The topic as Metadata lists it now, never creating it.
fn describe(c: &mut RawClient, name: &str) -> MetadataResponseTopic {
    metadata(c, 12, name, false)
}

support::on_every_store!(async:
    create_topics_use_the_broker_defaults_for_minus_one,
    missing_topics_are_created_when_allowed_and_never_for_a_consumer_that_refuses,
    with_auto_creation_off_nothing_creates_topics,
    metadata_by_topic_id_answers_the_topic_it_names,
    delete_topics_follows_every_rule,
    delete_topics_rules_hold_for_librdkafka,
    a_deleted_topic_leaves_no_configs_or_offsets,
);
