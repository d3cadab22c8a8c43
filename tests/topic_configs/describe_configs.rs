//! DescribeConfigs at every version: values, sources, synonyms; resources alone; the BROKER set.

use crate::support;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest};
use support::configs::*;
use support::{call, Gateway, RawClient, Store};

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
        // The cluster default holds only what was set for every broker: nothing yet but
        // the min.insync.replicas of Kafka 4.1+'s controller (KIP-966).
        ((4, ""), 0, 1),
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
                let names: Vec<&str> = got.configs.iter().map(|e| e.name.as_str()).collect();
                assert_eq!(names, ["min.insync.replicas"], "{what}");
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
            ("auto.create.topics.enable", "true", DEFAULT_CONFIG, true),
            ("default.replication.factor", "1", DEFAULT_CONFIG, true),
            ("num.partitions", "1", DEFAULT_CONFIG, true),
            ("delete.topic.enable", "true", DEFAULT_CONFIG, true),
            ("log.retention.ms", "604800000", DEFAULT_CONFIG, false),
            ("log.retention.bytes", "-1", DEFAULT_CONFIG, false),
            ("log.segment.bytes", "1073741824", DEFAULT_CONFIG, false),
            (
                "min.insync.replicas",
                "1",
                DYNAMIC_DEFAULT_BROKER_CONFIG,
                false,
            ),
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

/// The gateway's own `iggy.message.format` (docs/IGGY_MAPPING.md, "The batch form"):
/// checked like Kafka's, described on a topic that sets it and nowhere else, alterable.
fn the_gateways_own_topic_configuration_shows_only_where_set(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let format = "iggy.message.format";
    let refused = create(&mut c, 7, "odd", &[(format, Some("pages"))], false);
    assert_eq!(refused.error_code, 40, "INVALID_CONFIG: {refused:?}");
    assert_eq!(create(&mut c, 7, "plain", &[], false).error_code, 0);
    assert_eq!(topic_configs(&mut c, "plain").get(format), None);
    let whole = [(format, Some("batch"))];
    assert_eq!(create(&mut c, 7, "whole", &whole, false).error_code, 0);
    let batch = super::owned_value("batch", DYNAMIC_TOPIC_CONFIG);
    assert_eq!(topic_configs(&mut c, "whole").get(format), Some(&batch));
    let back = [((2, "whole"), &[(format, Some("record"))][..])];
    assert_eq!(alter(&mut c, 2, &back, false), vec![(0, None)]);
    let record = super::owned_value("record", DYNAMIC_TOPIC_CONFIG);
    assert_eq!(topic_configs(&mut c, "whole").get(format), Some(&record));
}

support::on_every_store!(
    the_gateways_own_topic_configuration_shows_only_where_set,
    describe_configs_reports_values_sources_and_synonyms,
    describe_configs_answers_each_resource_on_its_own,
    broker_describe_has_what_tools_read,
);
