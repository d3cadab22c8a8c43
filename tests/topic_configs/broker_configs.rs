//! Dynamic broker configurations: where Kafka allows them, kept, and the topic defaults
//! they set; the read-only ones the gateway's settings set, refused as Kafka refuses them.

use crate::support;

use std::collections::BTreeMap;

use kafka_protocol::messages::ApiKey;
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
        ("log.cleaner.threads", SET, Some("3")),
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
        this["log.cleaner.threads"],
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
            &[("log.cleaner.threads", SET, Some("-1"))],
            INVALID_REQUEST,
            "log.cleaner.threads",
        ),
        (
            "7",
            &[("log.cleaner.threads", SET, Some("2"))],
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
    // (Kafka's ELR rule): only it and log.cleaner.threads stay.
    let (code, message) = alter(
        &mut c,
        2,
        &[((4, ""), &[("log.cleaner.threads", Some("2"))])],
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
        ("log.cleaner.threads", Some("2")),
        ("min.insync.replicas", Some("1")),
    ];
    assert_eq!(alter(&mut c, 2, &[((4, ""), &kept)], false), [(0, None)]);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let every = broker_configs(&mut c, "");
    assert_eq!(
        every.keys().collect::<Vec<_>>(),
        ["log.cleaner.threads", "min.insync.replicas"],
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

/// The broker configurations Kafka keeps read-only that the gateway's settings set
/// (docs/CONFIGS.md), with a value other than Kafka's default: the setting and its
/// value, the configuration, and a value a client might try.
pub(super) const STATIC_SETTINGS: &[(&str, &str, &str, &str)] = &[
    (
        "auto_create_topics_enable",
        "false",
        "auto.create.topics.enable",
        "true",
    ),
    (
        "default_replication_factor",
        "2",
        "default.replication.factor",
        "3",
    ),
    ("num_partitions", "3", "num.partitions", "5"),
    (
        "transaction_max_timeout_ms",
        "60000",
        "transaction.max.timeout.ms",
        "120000",
    ),
    (
        "transactional_id_expiration_ms",
        "3600000",
        "transactional.id.expiration.ms",
        "1000",
    ),
];

/// A gateway on `store` with [`STATIC_SETTINGS`].
pub(super) fn with_static_settings(store: Store) -> Option<Gateway> {
    let settings: Vec<(&str, &str)> = STATIC_SETTINGS.iter().map(|s| (s.0, s.1)).collect();
    Gateway::start_on(store, &settings)
}

/// `auto.create.topics.enable`, `num.partitions`, `default.replication.factor`,
/// `transaction.max.timeout.ms` and `transactional.id.expiration.ms` are Kafka's static
/// configurations: AlterConfigs and IncrementalAlterConfigs setting one, for every
/// gateway ("") or this one ("0"), at every version, validate_only or not, answer
/// INVALID_REQUEST with Kafka's message, and the settings stay what CreateTopics' -1,
/// Metadata's auto-creation and InitProducerId act on.
fn read_only_broker_configs_are_refused_and_follow_the_settings(store: Store) {
    let Some(gw) = with_static_settings(store) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for &(_, _, name, value) in STATIC_SETTINGS {
        let message = format!("Cannot update these configs dynamically: [{name}]");
        let refused = [(INVALID_REQUEST, Some(message))];
        for broker in ["", "0"] {
            for validate_only in [true, false] {
                for v in versions(ApiKey::AlterConfigs) {
                    let entries = [(name, Some(value))];
                    let answered = alter(&mut c, v, &[((4, broker), &entries)], validate_only);
                    assert_eq!(answered, refused, "AlterConfigs v{v} {broker:?}");
                }
                for v in versions(ApiKey::IncrementalAlterConfigs) {
                    let ops = [(name, SET, Some(value))];
                    let answered = incremental(&mut c, v, &[((4, broker), &ops)], validate_only);
                    assert_eq!(answered, refused, "v{v} {broker:?}");
                    // A DELETE removes whatever is stored under the name, as Kafka's
                    // does: nothing, here (an older gateway's value is ignored anyway).
                    let ops = [(name, DELETE, None)];
                    let answered = incremental(&mut c, v, &[((4, broker), &ops)], validate_only);
                    assert_eq!(answered, [(0, None)], "v{v} {broker:?} DELETE");
                }
            }
        }
    }
    assert_eq!(
        broker_configs(&mut c, "").keys().collect::<Vec<_>>(),
        ["min.insync.replicas"],
        "nothing stored for every gateway"
    );
    follows_the_settings(&mut c, 0, "static");
}

/// What a gateway started with [`STATIC_SETTINGS`] (node `node`) describes and does:
/// the settings' values, read-only, as STATIC_BROKER_CONFIG; CreateTopics' -1 and
/// Metadata's auto-creation by them (topics named after `tag`); InitProducerId taking no
/// timeout above transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT, 50).
fn follows_the_settings(c: &mut RawClient, node: i32, tag: &str) {
    let r = describe(c, 4, (4, &node.to_string()), None, false);
    for &(_, setting, name, _) in STATIC_SETTINGS {
        let e = r.configs.iter().find(|e| e.name.as_str() == name).unwrap();
        let shown = (e.value.as_deref(), e.config_source, e.read_only);
        assert_eq!(shown, (Some(setting), STATIC_BROKER_CONFIG, true), "{name}");
    }
    let r = create_with(c, 7, &format!("{tag}-default"), -1, -1, &[], false);
    assert_eq!(
        (r.error_code, r.num_partitions, r.replication_factor),
        (0, 3, 2),
        "{r:?}"
    );
    let missing = format!("{tag}-not-made");
    assert_eq!(auto_create(c, &missing), UNKNOWN_TOPIC);
    assert!(!exists(c, &missing));
    let id = format!("{tag}-timeout");
    for (timeout, code) in [(60_001, 50), (60_000, 0)] {
        let r = crate::support::transactions::init_with_timeout(c, &id, timeout);
        assert_eq!(r.error_code, code, "{timeout}: {r:?}");
    }
}

/// Values an older gateway (which let clients set the five) stored for them, for every
/// gateway and for this one, are ignored: neither described nor in force, whether they
/// were there when the gateway started (embedded store) or written by another gateway
/// on the same Iggy while it runs. A dynamic configuration written beside them is taken.
async fn values_an_older_gateway_stored_are_ignored(store: Store) {
    use std::sync::Arc;

    use iggy_kafka_actors::store::Meta;
    use iggy_kafka_gateway::{EmbeddedStore, SyncPolicy};

    let mut settings: Vec<(&str, &str)> = STATIC_SETTINGS.iter().map(|s| (s.0, s.1)).collect();
    settings.push(("topic_refresh_ms", "200"));
    let (gw, _server) = match store {
        Store::Embedded => {
            let Some(mut gw) = Gateway::process_on(store, &settings) else {
                return;
            };
            gw.kill();
            let embedded = EmbeddedStore::open(gw.data_dir(), SyncPolicy::EveryBatch)
                .expect("the store opens");
            let meta = Meta::new(Arc::new(embedded));
            meta.write("cluster", stored_by_an_older_gateway(0))
                .await
                .unwrap();
            meta.flush().await.unwrap();
            drop(meta);
            gw.restart_after_kill();
            (gw, None)
        }
        Store::Iggy => {
            let Some(server) = support::iggy::IggyServer::start() else {
                return;
            };
            let gw = server.gateway_with(&settings);
            let node = node_id(&mut RawClient::connect(gw.addr));
            let older = crate::ports::iggy_backend(&server, |_| {}).await;
            let meta = Meta::new(Arc::new(older));
            meta.write("cluster", stored_by_an_older_gateway(node))
                .await
                .unwrap();
            (gw, Some(server))
        }
    };
    let mut c = RawClient::connect(gw.addr);
    let node = node_id(&mut c);
    // The dynamic one written beside them shows once the gateway has read them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let every = loop {
        let every = broker_configs(&mut c, "");
        if every.contains_key("log.cleaner.threads") {
            break every;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never read: {every:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        every.keys().collect::<Vec<_>>(),
        ["log.cleaner.threads", "min.insync.replicas"]
    );
    assert!(
        broker_configs(&mut c, &node.to_string())
            .values()
            .all(|(_, source)| *source != DYNAMIC_BROKER_CONFIG),
        "a per-gateway value described"
    );
    follows_the_settings(&mut c, node, "older");
}

/// The stored maps (table `cluster`, `config_catalog/stored.rs`) of an older gateway
/// that let clients set the five: some for every gateway, the others for gateway
/// `node`, and one dynamic configuration beside them.
fn stored_by_an_older_gateway(node: i32) -> Vec<iggy_kafka_actors::store::meta::Change> {
    use iggy_kafka_actors::store::meta::Change;
    let map = |pairs: &[(&str, &str)]| {
        let map: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        bytes::Bytes::from(serde_json::to_vec(&map).unwrap())
    };
    let every = map(&[
        ("auto.create.topics.enable", "true"),
        ("log.cleaner.threads", "2"),
        ("min.insync.replicas", "1"),
        ("num.partitions", "9"),
    ]);
    let this = map(&[
        ("default.replication.factor", "5"),
        ("transaction.max.timeout.ms", "5"),
        ("transactional.id.expiration.ms", "7"),
    ]);
    vec![
        Change::Put {
            key: "broker-configs".into(),
            value: every,
        },
        Change::Put {
            key: format!("broker-configs/{node}"),
            value: this,
        },
    ]
}

/// This gateway's node id, as Metadata lists it (allocated on a shared store).
fn node_id(c: &mut RawClient) -> i32 {
    use kafka_protocol::messages::MetadataRequest;
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(Some(vec![]))
    );
    assert_eq!(r.brokers.len(), 1, "{r:?}");
    r.brokers[0].node_id.0
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
    read_only_broker_configs_are_refused_and_follow_the_settings,
);

mod older_gateway {
    support::on_every_store!(async: values_an_older_gateway_stored_are_ignored);
    use super::*;
}
