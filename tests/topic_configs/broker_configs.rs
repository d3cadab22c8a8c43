//! Dynamic broker configurations: where Kafka allows them, kept, and the topic defaults they set.

use crate::support;

use support::configs::*;
use support::{call, Gateway, RawClient, Store};

use super::{owned_value, value};

/// Broker configurations: dynamic ones are alterable for every gateway ("") or this one
/// ("0"), shown with their source on the broker and on topics that do not set their
/// own, and survive a restart; read-only ones answer INVALID_REQUEST naming them, as
/// Kafka's dynamic-config check does.
fn broker_configs_are_alterable_where_kafka_allows(store: Store) {
    // A process: SIGKILLed, then read back.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        create(&mut c, 7, "follows-broker", &[], false).error_code,
        0
    );
    let cluster = [
        ("log.retention.ms", SET, Some("3600000")),
        ("num.partitions", SET, Some("3")),
        ("log.cleanup.policy", APPEND, Some("compact")),
    ];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &cluster)], true),
        [(0, None)]
    );
    // Before anything is set, every gateway's set holds the min.insync.replicas a Kafka
    // 4.1+ controller writes (KIP-966), nothing else.
    assert_eq!(
        broker_configs(&mut c, "").keys().collect::<Vec<_>>(),
        ["min.insync.replicas"],
        "validate_only stored nothing"
    );
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &cluster)], false),
        [(0, None)]
    );
    let every = broker_configs(&mut c, "");
    assert_eq!(every.len(), 4, "{every:?}");
    assert_eq!(
        every["log.retention.ms"],
        owned_value("3600000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    assert_eq!(
        every["log.cleanup.policy"],
        owned_value("delete,compact", DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    let this = broker_configs(&mut c, "0");
    assert_eq!(
        this["num.partitions"],
        owned_value("3", DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    assert_eq!(
        value(&mut c, "follows-broker", "retention.ms"),
        owned_value("3600000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
    // This gateway's own value wins over every gateway's.
    let own = [("log.retention.ms", SET, Some("7200000"))];
    assert_eq!(
        incremental(&mut c, 0, &[((4, "0"), &own)], false),
        [(0, None)]
    );
    let r = describe(
        &mut c,
        4,
        (2, "follows-broker"),
        Some(&["retention.ms"]),
        true,
    );
    let e = &r.configs[0];
    assert_eq!(
        (e.value.as_deref(), e.config_source),
        (Some("7200000"), DYNAMIC_BROKER_CONFIG)
    );
    let sources: Vec<i8> = e.synonyms.iter().map(|x| x.source).collect();
    assert_eq!(
        sources,
        [
            DYNAMIC_BROKER_CONFIG,
            DYNAMIC_DEFAULT_BROKER_CONFIG,
            DEFAULT_CONFIG
        ]
    );
    // Refused: read-only, a bad value, another broker.
    let refused: [(&str, Ops, i16, &str); 4] = [
        (
            "",
            &[("delete.topic.enable", SET, Some("false"))],
            INVALID_REQUEST,
            "delete.topic.enable",
        ),
        (
            "0",
            &[("node.id", SET, Some("5"))],
            INVALID_REQUEST,
            "node.id",
        ),
        (
            "",
            &[("num.partitions", SET, Some("0"))],
            INVALID_REQUEST,
            "num.partitions",
        ),
        (
            "7",
            &[("num.partitions", SET, Some("2"))],
            INVALID_REQUEST,
            "7",
        ),
    ];
    for (broker, entries, code, named) in refused {
        let answered = incremental(&mut c, 1, &[((4, broker), entries)], false);
        assert_eq!(answered[0].0, code, "{broker:?} {entries:?}: {answered:?}");
        let message = answered[0].1.as_deref().unwrap_or_default();
        assert!(message.contains(named), "{message:?}");
    }
    // AlterConfigs replaces every gateway's set, which may not lose min.insync.replicas
    // (Kafka's ELR rule): only it and num.partitions stay.
    let (code, message) = alter(
        &mut c,
        2,
        &[((4, ""), &[("num.partitions", Some("2"))])],
        false,
    )
    .remove(0);
    assert_eq!(
        (code, message.as_deref()),
        (
            INVALID_CONFIG,
            Some("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        )
    );
    let kept = [
        ("num.partitions", Some("2")),
        ("min.insync.replicas", Some("1")),
    ];
    assert_eq!(alter(&mut c, 2, &[((4, ""), &kept)], false), [(0, None)]);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let every = broker_configs(&mut c, "");
    assert_eq!(
        every.keys().collect::<Vec<_>>(),
        ["min.insync.replicas", "num.partitions"],
        "after a restart"
    );
    assert_eq!(
        broker_configs(&mut c, "0")["log.retention.ms"],
        owned_value("7200000", DYNAMIC_BROKER_CONFIG)
    );
    let clear = [("log.retention.ms", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((4, "0"), &clear)], false),
        [(0, None)]
    );
    assert_eq!(
        value(&mut c, "follows-broker", "retention.ms"),
        owned_value("604800000", DEFAULT_CONFIG)
    );
}

/// `num.partitions`, `default.replication.factor` and `auto.create.topics.enable` set
/// as dynamic broker configurations are what CreateTopics' -1 and Metadata's
/// auto-creation use; deleting them brings the static settings back.
fn dynamic_broker_configs_drive_topic_defaults(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[("num_partitions", "2")]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let r = create_with(&mut c, 7, "static-default", -1, -1, &[], false);
    assert_eq!(
        (r.error_code, r.num_partitions, r.replication_factor),
        (0, 2, 1),
        "{r:?}"
    );
    let set = [
        ("num.partitions", SET, Some("5")),
        ("default.replication.factor", SET, Some("3")),
        ("auto.create.topics.enable", SET, Some("false")),
    ];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &set)], false),
        [(0, None)]
    );
    let r = create_with(&mut c, 7, "dynamic-default", -1, -1, &[], false);
    assert_eq!(
        (r.error_code, r.num_partitions, r.replication_factor),
        (0, 5, 3),
        "{r:?}"
    );
    assert_eq!(auto_create(&mut c, "not-made"), UNKNOWN_TOPIC);
    assert!(!exists(&mut c, "not-made"));
    let unset = [
        ("auto.create.topics.enable", DELETE, None),
        ("num.partitions", DELETE, None),
    ];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &unset)], false),
        [(0, None)]
    );
    assert_eq!(
        auto_create(&mut c, "made"),
        5,
        "LEADER_NOT_AVAILABLE while it is made"
    );
    let r = create_with(&mut c, 7, "static-again", -1, 1, &[], false);
    assert_eq!((r.error_code, r.num_partitions), (0, 2), "{r:?}");
}

/// Metadata v12 for a missing topic, allowing auto-creation: the topic's error code.
fn auto_create(c: &mut RawClient, topic: &str) -> i16 {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::MetadataRequest;
    let wanted = MetadataRequestTopic::default().with_name(Some(support::topic_name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(true);
    call!(c, Metadata, 12, request).topics[0].error_code
}

support::on_every_store!(
    broker_configs_are_alterable_where_kafka_allows,
    dynamic_broker_configs_drive_topic_defaults,
);
