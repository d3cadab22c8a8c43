//! CreateTopics with configurations at every version, validate_only, and stored configurations.

use crate::support;

use kafka_protocol::messages::ApiKey;
use support::configs::*;
use support::{Gateway, RawClient, Store};

/// Values Kafka refuses, and a word of the rule the answer must name besides the key.
const BAD_VALUES: &[(&str, &str, &str)] = &[
    ("retention.ms", "-7", "at least -1"),
    ("retention.ms", "a week", "integer"),
    ("cleanup.policy", "shred", "compact, delete"),
    ("compression.type", "brotli", "one of"),
    ("min.insync.replicas", "0", "at least 1"),
    ("segment.bytes", "1024", "at least 1048576"),
    ("min.cleanable.dirty.ratio", "2", "between 0 and 1"),
    ("message.timestamp.type", "Now", "one of"),
    ("preallocate", "maybe", "true or false"),
    ("compression.lz4.level", "99", "between 1 and 17"),
    // Kafka refuses tiered storage on a broker without it.
    ("remote.storage.enable", "true", "tiered storage"),
];

/// Every Kafka topic configuration is accepted at every version; from v5 the answer
/// carries the topic's full set, the ones given as DYNAMIC_TOPIC_CONFIG with the value
/// a broker shows, the rest as defaults.
fn create_topics_accepts_every_kafka_config(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let given: Vec<(&str, Option<&str>)> = KAFKA_TOPIC_CONFIGS
        .iter()
        .map(|(k, v, _)| (*k, Some(*v)))
        .collect();
    for v in versions(ApiKey::CreateTopics) {
        let topic = format!("all-configs-v{v}");
        let r = create(&mut c, v, &topic, &given, false);
        assert_eq!((r.error_code, &r.error_message), (0, &None), "v{v}: {r:?}");
        assert!(exists(&mut c, &topic), "v{v}: not created");
        let configs = r.configs.unwrap_or_default();
        if v < 5 {
            assert!(configs.is_empty(), "v{v} has no configs field");
            continue;
        }
        assert_eq!(
            configs.len(),
            KAFKA_TOPIC_CONFIGS.len(),
            "v{v}: the full set"
        );
        for (name, _, shown) in KAFKA_TOPIC_CONFIGS {
            let e = configs
                .iter()
                .find(|e| e.name.as_str() == *name)
                .unwrap_or_else(|| panic!("v{v}: {name} missing"));
            let answered = (
                e.value.as_deref(),
                e.config_source,
                e.read_only,
                e.is_sensitive,
            );
            assert_eq!(
                answered,
                (Some(*shown), DYNAMIC_TOPIC_CONFIG, false, false),
                "v{v}: {name}"
            );
        }
    }
    // A topic created without configurations shows Kafka's defaults.
    let r = create(&mut c, 7, "no-configs", &[], false);
    assert_eq!(r.error_code, 0, "{r:?}");
    let configs = r.configs.unwrap_or_default();
    let value = |name: &str| {
        let e = configs
            .iter()
            .find(|e| e.name.as_str() == name)
            .expect(name);
        (
            e.value.as_deref().unwrap_or_default().to_string(),
            e.config_source,
        )
    };
    assert_eq!(value("cleanup.policy"), ("delete".into(), DEFAULT_CONFIG));
    assert_eq!(value("retention.ms"), ("604800000".into(), DEFAULT_CONFIG));
    // Set for every broker by Kafka 4.1+'s controller (KIP-966), as Kafka 4.4 answers.
    assert_eq!(
        value("min.insync.replicas"),
        ("1".into(), DYNAMIC_DEFAULT_BROKER_CONFIG)
    );
}

/// INVALID_CONFIG (40) for an unknown name or a value Kafka refuses, at every version,
/// with a message naming the key and the rule; nothing is created.
fn create_topics_refuses_bad_configs_naming_them(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::CreateTopics) {
        let mut cases: Vec<(&str, Option<&str>, Vec<&str>)> = BAD_VALUES
            .iter()
            .map(|(k, value, rule)| (*k, Some(*value), vec![*k, *rule]))
            .collect();
        cases.push((
            "no.such.config",
            Some("1"),
            vec!["no.such.config", "unknown"],
        ));
        cases.push(("retention.ms", None, vec!["retention.ms"]));
        for (i, (key, value, words)) in cases.into_iter().enumerate() {
            let topic = format!("bad-config-v{v}-{i}");
            let r = create(
                &mut c,
                v,
                &topic,
                &[("segment.ms", Some("1000")), (key, value)],
                false,
            );
            assert_eq!(r.error_code, INVALID_CONFIG, "v{v} {key}={value:?}: {r:?}");
            let message = r.error_message.as_deref().unwrap_or_default();
            for word in words {
                assert!(
                    message.contains(word),
                    "v{v} {key}={value:?}: {message:?} lacks {word:?}"
                );
            }
            assert!(!exists(&mut c, &topic), "v{v}: {topic} was created");
        }
    }
}

/// validate_only runs every check (name, existence, partitions, configurations) and
/// creates nothing; a valid request gets the answer the creation would get.
fn validate_only_checks_everything_and_creates_nothing(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "already-there", &[], false).error_code, 0);
    for v in versions(ApiKey::CreateTopics) {
        let topic = format!("validated-v{v}");
        let r = create(
            &mut c,
            v,
            &topic,
            &[("cleanup.policy", Some("compact"))],
            true,
        );
        assert_eq!(r.error_code, 0, "v{v}: {r:?}");
        if v >= 5 {
            assert_eq!((r.num_partitions, r.replication_factor), (3, 1), "v{v}");
            let policy = r
                .configs
                .unwrap_or_default()
                .into_iter()
                .find(|e| e.name.as_str() == "cleanup.policy");
            assert_eq!(
                policy.and_then(|e| e.value).as_deref(),
                Some("compact"),
                "v{v}"
            );
        }
        assert!(
            !exists(&mut c, &topic),
            "v{v}: validate_only created {topic}"
        );
        let refused = [
            (
                create(&mut c, v, &topic, &[("retention.ms", Some("x"))], true),
                INVALID_CONFIG,
            ),
            (create(&mut c, v, "already-there", &[], true), TOPIC_EXISTS),
            (create(&mut c, v, "bad name", &[], true), INVALID_TOPIC),
            (create_with(&mut c, v, &topic, 0, 1, &[], true), 37), // INVALID_PARTITIONS
            (create_with(&mut c, v, &topic, 1, 0, &[], true), 38), // INVALID_REPLICATION_FACTOR
        ];
        for (r, code) in refused {
            assert_eq!(r.error_code, code, "v{v}: {r:?}");
            assert!(r.error_message.is_some(), "v{v}: no message: {r:?}");
        }
        assert!(!exists(&mut c, &topic), "v{v}: {topic} was created");
    }
}

/// Stored configurations survive a gateway restart, and go with their topic: a topic
/// made again under the same name starts from the defaults.
fn stored_configs_survive_a_restart_and_go_with_their_topic(store: Store) {
    // A process: SIGKILLed, then read back.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let given = [
        ("cleanup.policy", Some("compact")),
        ("retention.bytes", Some("-1")),
    ];
    assert_eq!(create(&mut c, 7, "kept", &given, false).error_code, 0);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let configs = topic_configs(&mut c, "kept");
    assert_eq!(
        configs["cleanup.policy"],
        ("compact".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        configs["retention.bytes"],
        ("-1".into(), DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(delete(&mut c, "kept"), 0);
    assert_eq!(create(&mut c, 7, "kept", &[], false).error_code, 0);
    let configs = topic_configs(&mut c, "kept");
    assert_eq!(configs["cleanup.policy"], ("delete".into(), DEFAULT_CONFIG));
    assert_eq!(configs["retention.bytes"], ("-1".into(), DEFAULT_CONFIG));
}

support::on_every_store!(
    create_topics_accepts_every_kafka_config,
    create_topics_refuses_bad_configs_naming_them,
    validate_only_checks_everything_and_creates_nothing,
    stored_configs_survive_a_restart_and_go_with_their_topic,
);
