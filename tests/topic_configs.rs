//! Topic and broker configurations (issue 4), on every store: CreateTopics with
//! configurations, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, with raw
//! requests at every served version for the exact codes, sources and values. What the
//! configurations do to Iggy topics is checked in `iggy_backend.rs`.

use crate::support;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest};

use support::configs::*;
use support::{call, Gateway, RawClient, Store};

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

// ---- CreateTopics ---------------------------------------------------------------------

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
    assert_eq!(value("min.insync.replicas"), ("1".into(), DEFAULT_CONFIG));
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

// ---- DescribeConfigs -----------------------------------------------------------------

/// A gateway whose static `message_max_bytes` differs from Kafka's default, so the
/// STATIC_BROKER_CONFIG source shows.
const STATIC: &[(&str, &str)] = &[("message_max_bytes", "2000000")];

/// (name, value, source) of each synonym.
fn chain(e: &DescribeConfigsResourceResult) -> Vec<(String, String, i8)> {
    e.synonyms
        .iter()
        .map(|x| {
            (
                x.name.to_string(),
                x.value.as_deref().unwrap_or_default().to_string(),
                x.source,
            )
        })
        .collect()
}

fn owned(chain: &[(&str, &str, i8)]) -> Vec<(String, String, i8)> {
    chain
        .iter()
        .map(|(n, v, s)| (n.to_string(), v.to_string(), *s))
        .collect()
}

/// A topic's full set at every version: the value in force, its source, the synonyms
/// when asked (topic, broker, static, default, in that order), the type and the
/// documentation from v3; `configuration_keys` narrows the set.
fn describe_configs_reports_values_sources_and_synonyms(store: Store) {
    let Some(gw) = Gateway::start_on(store, STATIC) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let given = [
        ("cleanup.policy", Some("compact")),
        ("retention.ms", Some("1000")),
    ];
    assert_eq!(create(&mut c, 7, "described", &given, false).error_code, 0);
    let types = [
        ("retention.ms", 5),
        ("cleanup.policy", 7),
        ("preallocate", 1),
        ("compression.type", 2),
        ("segment.bytes", 3),
        ("min.cleanable.dirty.ratio", 6),
    ];
    for v in versions(ApiKey::DescribeConfigs) {
        let r = describe(&mut c, v, (2, "described"), None, true);
        assert_eq!((r.error_code, &r.error_message), (0, &None), "v{v}: {r:?}");
        let mut names: Vec<&str> = r.configs.iter().map(|e| e.name.as_str()).collect();
        names.sort();
        let mut kafka: Vec<&str> = KAFKA_TOPIC_CONFIGS.iter().map(|(n, ..)| *n).collect();
        kafka.sort();
        assert_eq!(names, kafka, "v{v}: every Kafka topic configuration, once");
        let entry = |name: &str| r.configs.iter().find(|e| e.name.as_str() == name).unwrap();
        let policy = entry("cleanup.policy");
        assert_eq!(
            (policy.value.as_deref(), policy.config_source),
            (Some("compact"), DYNAMIC_TOPIC_CONFIG)
        );
        assert_eq!(
            chain(policy),
            owned(&[
                ("cleanup.policy", "compact", DYNAMIC_TOPIC_CONFIG),
                ("log.cleanup.policy", "delete", DEFAULT_CONFIG),
            ]),
            "v{v}"
        );
        let max = entry("max.message.bytes");
        assert_eq!(
            (max.value.as_deref(), max.config_source),
            (Some("2000000"), STATIC_BROKER_CONFIG)
        );
        assert_eq!(
            chain(max),
            owned(&[
                ("message.max.bytes", "2000000", STATIC_BROKER_CONFIG),
                ("message.max.bytes", "1048588", DEFAULT_CONFIG),
            ]),
            "v{v}"
        );
        let segment = entry("segment.ms");
        assert_eq!(
            (segment.value.as_deref(), segment.config_source),
            (Some("604800000"), DEFAULT_CONFIG)
        );
        // No broker synonym: the default, and no synonym to show (as Kafka answers).
        let remote = entry("remote.storage.enable");
        assert_eq!(
            (
                remote.value.as_deref(),
                remote.config_source,
                remote.synonyms.len()
            ),
            (Some("false"), DEFAULT_CONFIG, 0)
        );
        for e in &r.configs {
            assert!(!e.read_only && !e.is_sensitive, "v{v}: {e:?}");
            let documented = e.documentation.as_deref().is_some_and(|d| !d.is_empty());
            assert_eq!(
                documented,
                v >= 3,
                "v{v}: documentation of {}",
                e.name.as_str()
            );
        }
        for (name, code) in types {
            assert_eq!(
                entry(name).config_type,
                if v >= 3 { code } else { 0 },
                "v{v}: type of {name}"
            );
        }
        // Without synonyms asked, none; a key list narrows the answer (unknown keys drop out).
        let r = describe(
            &mut c,
            v,
            (2, "described"),
            Some(&["retention.ms", "no.such"]),
            false,
        );
        let [e] = &r.configs[..] else {
            panic!("v{v}: {r:?}")
        };
        let shown = (
            e.name.as_str(),
            e.value.as_deref(),
            e.config_source,
            e.synonyms.len(),
        );
        assert_eq!(
            shown,
            ("retention.ms", Some("1000"), DYNAMIC_TOPIC_CONFIG, 0),
            "v{v}"
        );
    }
}

/// Each resource is answered on its own: a missing topic (3) and a bad name (17) with
/// a message, an unknown resource type or another broker's id (42), beside topics and
/// brokers that are answered.
fn describe_configs_answers_each_resource_on_its_own(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "present", &[], false).error_code, 0);
    let asked: [((i8, &str), i16, usize); 8] = [
        ((2, "missing"), UNKNOWN_TOPIC, 0),
        ((2, "bad name"), INVALID_TOPIC, 0),
        ((2, "present"), 0, KAFKA_TOPIC_CONFIGS.len()),
        ((99, "anything"), INVALID_REQUEST, 0),
        ((4, "7"), INVALID_REQUEST, 0),
        ((4, "zero"), INVALID_REQUEST, 0),
        // The cluster default holds only what was set for every broker: nothing yet.
        ((4, ""), 0, 0),
        ((4, "0"), 0, BROKER_MIN),
    ];
    for v in versions(ApiKey::DescribeConfigs) {
        let resources = asked.iter().map(|((kind, name), ..)| {
            DescribeConfigsResource::default()
                .with_resource_type(*kind)
                .with_resource_name(s(name))
        });
        let request = DescribeConfigsRequest::default().with_resources(resources.collect());
        let r = call!(c, DescribeConfigs, v, request);
        assert_eq!(r.results.len(), asked.len(), "v{v}");
        for (got, ((kind, name), code, at_least)) in r.results.iter().zip(asked) {
            let what = format!("v{v} ({kind}, {name:?})");
            assert_eq!(
                (got.resource_type, got.resource_name.as_str()),
                (kind, name),
                "{what}"
            );
            assert_eq!(got.error_code, code, "{what}: {got:?}");
            assert_eq!(got.error_message.is_some(), code != 0, "{what}: {got:?}");
            assert!(
                got.configs.len() >= at_least && (code == 0 || got.configs.is_empty()),
                "{what}: {got:?}"
            );
            if kind == 4 && name.is_empty() {
                assert!(got.configs.is_empty(), "{what}: {got:?}");
            }
        }
    }
}

/// Broker configurations that admin tools read are described with this gateway's
/// values; fewer than these is a broken BROKER describe.
const BROKER_MIN: usize = 11;

/// A BROKER describe (what the Strimzi topic operator sends at startup) answers the
/// configurations tools read, with the gateway's values, read-only where AlterConfigs
/// cannot change them, and not `inter.broker.protocol.version`.
fn broker_describe_has_what_tools_read(store: Store) {
    let Some(gw) = Gateway::start_on(store, STATIC) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::DescribeConfigs) {
        let r = describe(&mut c, v, (4, "0"), None, true);
        assert_eq!(r.error_code, 0, "v{v}: {r:?}");
        let entry = |name: &str| {
            let e = r.configs.iter().find(|e| e.name.as_str() == name);
            let e = e.unwrap_or_else(|| panic!("v{v}: {name} missing"));
            (
                e.value.as_deref().unwrap_or_default().to_string(),
                e.config_source,
                e.read_only,
            )
        };
        let want = [
            ("auto.create.topics.enable", "true", DEFAULT_CONFIG, false),
            ("default.replication.factor", "1", DEFAULT_CONFIG, false),
            ("num.partitions", "1", DEFAULT_CONFIG, false),
            ("delete.topic.enable", "true", DEFAULT_CONFIG, true),
            ("log.retention.ms", "604800000", DEFAULT_CONFIG, false),
            ("log.retention.bytes", "-1", DEFAULT_CONFIG, false),
            ("log.segment.bytes", "1073741824", DEFAULT_CONFIG, false),
            ("min.insync.replicas", "1", DEFAULT_CONFIG, false),
            ("message.max.bytes", "2000000", STATIC_BROKER_CONFIG, false),
            ("log.cleanup.policy", "delete", DEFAULT_CONFIG, false),
            ("compression.type", "producer", DEFAULT_CONFIG, false),
            ("node.id", "0", STATIC_BROKER_CONFIG, true),
        ];
        for (name, value, source, read_only) in want {
            assert_eq!(
                entry(name),
                (value.to_string(), source, read_only),
                "v{v}: {name}"
            );
        }
        assert!(r.configs.len() >= BROKER_MIN, "v{v}");
        let names: Vec<&str> = r.configs.iter().map(|e| e.name.as_str()).collect();
        assert!(
            !names.contains(&"inter.broker.protocol.version"),
            "v{v}: {names:?}"
        );
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

// ---- AlterConfigs and IncrementalAlterConfigs ----------------------------------------

/// A topic's value of `name` and its source.
fn value(c: &mut RawClient, topic: &str, name: &str) -> (String, i8) {
    topic_configs(c, topic)[name].clone()
}

fn owned_value(value: &str, source: i8) -> (String, i8) {
    (value.to_string(), source)
}

/// AlterConfigs replaces a topic's whole set at every version (what is not given goes
/// back to its default); validate_only changes nothing; a bad entry fails its own
/// resource only; the change survives a restart.
fn alter_configs_replaces_the_whole_set(store: Store) {
    // A process: SIGKILLed, then read back.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::AlterConfigs) {
        let (a, b) = (format!("replaced-a-v{v}"), format!("replaced-b-v{v}"));
        let given = [
            ("cleanup.policy", Some("compact")),
            ("retention.ms", Some("1000")),
        ];
        for t in [&a, &b] {
            assert_eq!(create(&mut c, 7, t, &given, false).error_code, 0);
        }
        let new = [("segment.ms", Some("5000"))];
        let checked = alter(&mut c, v, &[((2, &a), &new)], true);
        assert_eq!(checked, [(0, None)], "v{v}");
        assert_eq!(
            value(&mut c, &a, "segment.ms"),
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}: validate_only"
        );
        let bad = [("retention.ms", Some("-9"))];
        let answered = alter(&mut c, v, &[((2, &a), &new), ((2, &b), &bad)], false);
        assert_eq!(answered[0], (0, None), "v{v}");
        let (code, message) = &answered[1];
        assert_eq!(*code, INVALID_CONFIG, "v{v}");
        assert!(
            message
                .as_deref()
                .unwrap_or_default()
                .contains("retention.ms"),
            "v{v}: {message:?}"
        );
        let a_now = topic_configs(&mut c, &a);
        assert_eq!(
            a_now["segment.ms"],
            owned_value("5000", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            a_now["cleanup.policy"],
            owned_value("delete", DEFAULT_CONFIG),
            "v{v}: not given, back to default"
        );
        assert_eq!(
            a_now["retention.ms"],
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}"
        );
        assert_eq!(
            value(&mut c, &b, "retention.ms"),
            owned_value("1000", DYNAMIC_TOPIC_CONFIG),
            "v{v}: b untouched"
        );
        // Missing topic, bad name, unknown resource type, a null value.
        let refused = alter(
            &mut c,
            v,
            &[
                ((2, "missing"), &new),
                ((2, "bad name"), &new),
                ((99, "x"), &new),
                ((2, &b), &[("retention.ms", None)]),
                ((2, &b), &[("no.such", Some("1"))]),
            ],
            false,
        );
        let codes: Vec<i16> = refused.iter().map(|(code, _)| *code).collect();
        assert_eq!(
            codes,
            [
                UNKNOWN_TOPIC,
                INVALID_TOPIC,
                INVALID_REQUEST,
                INVALID_REQUEST,
                INVALID_CONFIG
            ],
            "v{v}: {refused:?}"
        );
        assert!(
            refused.iter().all(|(_, m)| m.is_some()),
            "v{v}: {refused:?}"
        );
    }
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let v = *versions(ApiKey::AlterConfigs).end();
    let kept = value(&mut c, &format!("replaced-a-v{v}"), "segment.ms");
    assert_eq!(
        kept,
        owned_value("5000", DYNAMIC_TOPIC_CONFIG),
        "after a restart"
    );
}

/// IncrementalAlterConfigs at every version: SET, DELETE (back to the default), APPEND
/// and SUBTRACT on a list; APPEND on a non-list (40), a repeated key, a null SET and an
/// unknown operation (42) fail their resource only; validate_only changes nothing.
fn incremental_alter_configs_applies_every_op(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let (t, other) = (
            format!("incremental-v{v}"),
            format!("incremental-other-v{v}"),
        );
        let given = [
            ("cleanup.policy", Some("delete")),
            ("retention.ms", Some("1000")),
        ];
        for name in [&t, &other] {
            assert_eq!(create(&mut c, 7, name, &given, false).error_code, 0);
        }
        let ops = [
            ("max.message.bytes", SET, Some("2000")),
            ("retention.ms", DELETE, None),
            ("cleanup.policy", APPEND, Some("compact")),
        ];
        assert_eq!(
            incremental(&mut c, v, &[((2, &t), &ops)], true),
            [(0, None)],
            "v{v}"
        );
        assert_eq!(
            value(&mut c, &t, "retention.ms"),
            owned_value("1000", DYNAMIC_TOPIC_CONFIG),
            "v{v}: validate_only"
        );
        let bad: [(Ops, i16); 5] = [
            (&[("retention.ms", APPEND, Some("5"))], INVALID_CONFIG),
            (
                &[("segment.ms", SET, Some("1")), ("segment.ms", DELETE, None)],
                INVALID_REQUEST,
            ),
            (&[("segment.ms", SET, None)], INVALID_REQUEST),
            (&[("segment.ms", 7, Some("1"))], INVALID_REQUEST),
            (&[("cleanup.policy", APPEND, Some("shred"))], INVALID_CONFIG),
        ];
        for (entries, code) in bad {
            let answered =
                incremental(&mut c, v, &[((2, &t), &ops), ((2, &other), entries)], false);
            assert_eq!(answered[0], (0, None), "v{v} {entries:?}");
            assert_eq!(answered[1].0, code, "v{v} {entries:?}: {answered:?}");
            let message = answered[1].1.as_deref().unwrap_or_default();
            assert!(message.contains(entries[0].0), "v{v}: {message:?}");
        }
        let now = topic_configs(&mut c, &t);
        assert_eq!(
            now["max.message.bytes"],
            owned_value("2000", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            now["retention.ms"],
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}"
        );
        assert_eq!(
            now["cleanup.policy"],
            owned_value("delete,compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            topic_configs(&mut c, &other),
            {
                let mut before = topic_configs(&mut c, &other);
                before.insert(
                    "retention.ms".into(),
                    owned_value("1000", DYNAMIC_TOPIC_CONFIG),
                );
                before
            },
            "v{v}: refused resources keep their values"
        );
        let subtract = [("cleanup.policy", SUBTRACT, Some("delete"))];
        assert_eq!(
            incremental(&mut c, v, &[((2, &t), &subtract)], false),
            [(0, None)]
        );
        assert_eq!(
            value(&mut c, &t, "cleanup.policy"),
            owned_value("compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        // APPEND to a list nobody set starts from its default.
        let append = [("cleanup.policy", APPEND, Some("compact"))];
        assert_eq!(
            incremental(&mut c, v, &[((2, &other), &append)], false),
            [(0, None)]
        );
        assert_eq!(
            value(&mut c, &other, "cleanup.policy"),
            owned_value("delete,compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
    }
}

/// A topic's max.message.bytes, as altered, is what Produce enforces.
fn altered_configs_take_effect_on_produce(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "limited", &[], false).error_code, 0);
    assert_eq!(produce(&mut c, "limited", 500), 0);
    let set = [("max.message.bytes", SET, Some("300"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "limited"), &set)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "limited", 500), 10, "MESSAGE_TOO_LARGE");
    // The broker-wide default applies to topics that do not set their own.
    assert_eq!(create(&mut c, 7, "defaulted", &[], false).error_code, 0);
    let broker = [("message.max.bytes", SET, Some("300"))];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &broker)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "defaulted", 500), 10);
    let unset = [("message.max.bytes", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &unset)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "defaulted", 500), 0);
}

/// Produce v9 of one record with a value of `bytes` bytes to partition 0: the error code.
fn produce(c: &mut RawClient, topic: &str, bytes: usize) -> i16 {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::ProduceRequest;
    let value = vec![b'x'; bytes];
    let records = support::batch(
        &[support::record(None, &value, 1_700_000_000_000)],
        kafka_protocol::records::Compression::None,
    );
    let data = PartitionProduceData::default().with_records(Some(records));
    let topic = TopicProduceData::default()
        .with_name(support::topic_name(topic))
        .with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![topic]);
    call!(c, Produce, 9, request).responses[0].partition_responses[0].error_code
}

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
    assert!(
        broker_configs(&mut c, "").is_empty(),
        "validate_only stored nothing"
    );
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &cluster)], false),
        [(0, None)]
    );
    let every = broker_configs(&mut c, "");
    assert_eq!(every.len(), 3, "{every:?}");
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
    // Refused: read-only, unknown, a bad value, another broker.
    let refused: [(&str, Ops, i16, &str); 5] = [
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
            &[("no.such.setting", SET, Some("1"))],
            INVALID_CONFIG,
            "no.such.setting",
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
    // AlterConfigs replaces every gateway's set: only num.partitions stays.
    assert_eq!(
        alter(
            &mut c,
            2,
            &[((4, ""), &[("num.partitions", Some("2"))])],
            false
        ),
        [(0, None)]
    );
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let every = broker_configs(&mut c, "");
    assert_eq!(
        every.keys().collect::<Vec<_>>(),
        ["num.partitions"],
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
    create_topics_accepts_every_kafka_config,
    create_topics_refuses_bad_configs_naming_them,
    validate_only_checks_everything_and_creates_nothing,
    describe_configs_reports_values_sources_and_synonyms,
    describe_configs_answers_each_resource_on_its_own,
    broker_describe_has_what_tools_read,
    stored_configs_survive_a_restart_and_go_with_their_topic,
    alter_configs_replaces_the_whole_set,
    incremental_alter_configs_applies_every_op,
    altered_configs_take_effect_on_produce,
    broker_configs_are_alterable_where_kafka_allows,
    dynamic_broker_configs_drive_topic_defaults,
);
