//! Effective values: where each configuration's value comes from, in Kafka's order.
//!
//! A topic configuration is the topic's own value (DYNAMIC_TOPIC_CONFIG), else its
//! broker synonym's; a broker configuration is this gateway's dynamic value
//! (DYNAMIC_BROKER_CONFIG), else the one set for every gateway
//! (DYNAMIC_DEFAULT_BROKER_CONFIG), else the gateway's static setting
//! (STATIC_BROKER_CONFIG, when it differs from Kafka's default), else the default
//! (DEFAULT_CONFIG). [`ClusterConfig`] is the immutable snapshot the catalog publishes.

use std::collections::BTreeMap;

use super::definitions::{
    broker_config, broker_configs, topic_config, BrokerConfig, ConfigType, Definition,
    IGGY_MESSAGE_FORMAT, TOPIC_CONFIGS,
};
use super::features::Finalized;
use super::in_force::{self, CompactionInForce, InForce};
use super::rules::list_items;
use crate::settings::BrokerSettings;
use crate::store::TopicLimits;

/// DescribeConfigs' `ConfigSource` codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    DynamicTopic = 1,
    DynamicBroker = 2,
    DynamicDefaultBroker = 3,
    StaticBroker = 4,
    Default = 5,
}

/// One place a value comes from; no value is Kafka's null (a null default, or a
/// sensitive value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
}

/// A configuration as DescribeConfigs reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    /// Passwords and names Kafka does not know: described without their values.
    pub sensitive: bool,
    /// Every place a value comes from, the one in force first.
    pub synonyms: Vec<Synonym>,
    pub kind: ConfigType,
    pub doc: &'static str,
}

/// The broker configurations in force, as the config catalog last published them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The gateway's static settings that differ from Kafka's defaults.
    statics: BTreeMap<&'static str, String>,
    /// Dynamic broker configurations of every gateway (resource name "").
    cluster_default: BTreeMap<String, String>,
    /// Dynamic broker configurations of this gateway (resource name: its node id).
    this_broker: BTreeMap<String, String>,
    /// The finalized `gateway.version`.
    finalized: Finalized,
    /// The typed values request paths read, parsed from the above when they change.
    in_force: Option<InForce>,
}

impl ClusterConfig {
    pub fn new(settings: &BrokerSettings) -> ClusterConfig {
        ClusterConfig {
            statics: static_configs(settings)
                .into_iter()
                .filter(|c| {
                    broker_config(c.name)
                        .is_some_and(|b| b.definition().default != Some(c.value.as_str()))
                })
                .map(|c| (c.name, c.value))
                .collect(),
            ..ClusterConfig::default()
        }
        .typed()
    }

    fn typed(self) -> ClusterConfig {
        let in_force = Some(self.parse_in_force());
        ClusterConfig { in_force, ..self }
    }

    fn parse_in_force(&self) -> InForce {
        let none = BTreeMap::new();
        let topic = |name: &str| self.topic_value(&none, name).map(|(v, _)| v);
        InForce::of(topic)
    }

    /// The typed values request paths act on.
    pub fn in_force(&self) -> InForce {
        self.in_force.unwrap_or_else(|| self.parse_in_force())
    }

    /// The same statics with these dynamic broker configurations. Values stored for
    /// read-only ones are left out: older gateways let clients set `num.partitions` and
    /// four others Kafka keeps static, which only the gateway's settings set now.
    pub fn with_dynamic(
        &self,
        cluster_default: BTreeMap<String, String>,
        this_broker: BTreeMap<String, String>,
    ) -> ClusterConfig {
        ClusterConfig {
            statics: self.statics.clone(),
            cluster_default: without_read_only(cluster_default),
            this_broker: without_read_only(this_broker),
            finalized: self.finalized,
            in_force: None,
        }
        .typed()
    }

    /// The same with this finalized feature level.
    pub fn with_finalized(self, finalized: Finalized) -> ClusterConfig {
        ClusterConfig { finalized, ..self }
    }

    pub fn finalized(&self) -> Finalized {
        self.finalized
    }

    pub fn cluster_default(&self) -> &BTreeMap<String, String> {
        &self.cluster_default
    }

    pub fn this_broker(&self) -> &BTreeMap<String, String> {
        &self.this_broker
    }

    /// Where a broker configuration's value may come from, in Kafka's order: the
    /// first is the one in force. A null default is no place.
    fn broker_sources(&self, b: BrokerConfig) -> impl Iterator<Item = (&str, ConfigSource)> {
        let name = b.name();
        [
            (self.this_broker.get(name), ConfigSource::DynamicBroker),
            (
                self.cluster_default.get(name),
                ConfigSource::DynamicDefaultBroker,
            ),
            (self.statics.get(name), ConfigSource::StaticBroker),
        ]
        .into_iter()
        .filter_map(|(value, source)| Some((value?.as_str(), source)))
        .chain(b.definition().default.map(|d| (d, ConfigSource::Default)))
    }

    fn broker_chain(&self, b: BrokerConfig) -> Vec<Synonym> {
        let sensitive = b.definition().kind == ConfigType::Password;
        self.broker_sources(b)
            .map(|(value, source)| Synonym {
                name: b.name().to_string(),
                value: (!sensitive).then(|| value.to_string()),
                source,
            })
            .collect()
    }

    /// A broker configuration of this gateway.
    pub fn broker_entry(&self, b: BrokerConfig) -> Entry {
        let synonyms = self.broker_chain(b);
        let d = b.definition();
        let (value, source) = match synonyms.first() {
            Some(s) => (s.value.clone(), s.source),
            None => (None, ConfigSource::Default),
        };
        Entry {
            name: b.name().to_string(),
            value,
            source,
            read_only: b.read_only(),
            sensitive: d.kind == ConfigType::Password,
            synonyms,
            kind: d.kind,
            doc: b.doc(),
        }
    }

    /// Every broker configuration of this gateway: Kafka's, then the names Kafka does not
    /// define that were stored for this gateway or every one, as Kafka describes them.
    pub fn broker_entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = broker_configs().map(|b| self.broker_entry(b)).collect();
        let unknown = [
            (&self.this_broker, ConfigSource::DynamicBroker),
            (&self.cluster_default, ConfigSource::DynamicDefaultBroker),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (map, source) in unknown {
            for name in map.keys().filter(|n| broker_config(n).is_none()) {
                if seen.insert(name) {
                    entries.push(unknown_entry(name, source));
                }
            }
        }
        entries
    }

    /// The configurations set for every gateway (resource name ""), as Kafka
    /// describes the cluster default: those only.
    pub fn cluster_default_entries(&self) -> Vec<Entry> {
        let source = ConfigSource::DynamicDefaultBroker;
        self.cluster_default
            .iter()
            .map(|(name, value)| {
                let Some(b) = broker_config(name) else {
                    return unknown_entry(name, source);
                };
                let d = b.definition();
                let sensitive = d.kind == ConfigType::Password;
                let value = (!sensitive).then(|| value.clone());
                Entry {
                    name: b.name().to_string(),
                    value: value.clone(),
                    source,
                    read_only: b.read_only(),
                    sensitive,
                    synonyms: vec![Synonym {
                        name: b.name().to_string(),
                        value,
                        source,
                    }],
                    kind: d.kind,
                    doc: b.doc(),
                }
            })
            .collect()
    }

    /// The value in force of a broker configuration (`num.partitions`, …).
    pub fn broker_value(&self, name: &str) -> Option<&str> {
        let b = broker_config(name)?;
        self.broker_sources(b).next().map(|(value, _)| value)
    }

    /// A topic configuration of a topic whose own values are `overrides`.
    pub fn topic_entry(
        &self,
        d: &'static Definition,
        overrides: &BTreeMap<String, String>,
    ) -> Entry {
        let mut synonyms: Vec<Synonym> = overrides
            .get(d.name)
            .map(|v| Synonym {
                name: d.name.to_string(),
                value: Some(v.clone()),
                source: ConfigSource::DynamicTopic,
            })
            .into_iter()
            .collect();
        if let Some(b) = d.synonym.and_then(broker_config) {
            synonyms.extend(self.broker_chain(b));
        }
        let (value, source) = match synonyms.first() {
            Some(s) => (s.value.clone(), s.source),
            None => (d.default.map(str::to_string), ConfigSource::Default),
        };
        Entry {
            name: d.name.to_string(),
            value,
            source,
            read_only: false,
            sensitive: false,
            synonyms,
            kind: d.kind,
            doc: d.doc,
        }
    }

    /// Every topic configuration of a topic whose own values are `overrides`.
    pub fn topic_entries(&self, overrides: &BTreeMap<String, String>) -> Vec<Entry> {
        let own = overrides
            .contains_key(IGGY_MESSAGE_FORMAT.name)
            .then_some(&IGGY_MESSAGE_FORMAT);
        (TOPIC_CONFIGS.iter().chain(own))
            .map(|d| self.topic_entry(d, overrides))
            .collect()
    }

    /// The value in force of one topic configuration, and where it comes from.
    pub fn topic_value<'a>(
        &'a self,
        overrides: &'a BTreeMap<String, String>,
        name: &str,
    ) -> Option<(&'a str, ConfigSource)> {
        let d = topic_config(name)?;
        if let Some(v) = overrides.get(name) {
            return Some((v, ConfigSource::DynamicTopic));
        }
        Some(match d.synonym.and_then(broker_config) {
            Some(b) => self.broker_sources(b).next()?,
            None => (d.default?, ConfigSource::Default),
        })
    }

    /// What the backend enforces for a topic. Retention and segment size set anywhere
    /// (topic or broker) apply; Kafka's built-in defaults do not, so a topic nobody
    /// configured keeps its data (longer than Kafka's 7 days, never shorter). A topic
    /// whose policy is not "delete" alone never loses data to retention: there is no
    /// compaction to keep the latest value of each key.
    pub fn limits(&self, overrides: &BTreeMap<String, String>) -> TopicLimits {
        let set = |name: &str| {
            self.topic_value(overrides, name)
                .filter(|(_, source)| *source != ConfigSource::Default)
                .and_then(|(v, _)| v.parse::<i64>().ok())
                .filter(|&n| n > 0)
                .map(|n| n as u64)
        };
        let policy = self
            .topic_value(overrides, "cleanup.policy")
            .map(|(v, _)| v)
            .unwrap_or_default();
        let policy = list_items(policy);
        // `compact,delete` deletes too: what the compactor left ages out the same way.
        let deletes = policy.contains(&"delete");
        TopicLimits {
            retention_ms: set("retention.ms").filter(|_| deletes),
            retention_bytes: set("retention.bytes").filter(|_| deletes),
            segment_bytes: set("segment.bytes"),
        }
    }
}

impl ClusterConfig {
    /// What the compactor acts on for a topic: `None` unless its `cleanup.policy`
    /// holds `compact`. Values set on the topic or the broker, else Kafka's defaults.
    pub fn compaction(&self, overrides: &BTreeMap<String, String>) -> Option<CompactionInForce> {
        let value = |name: &str| self.topic_value(overrides, name).map(|(v, _)| v);
        if !in_force::compacted(value("cleanup.policy").unwrap_or_default()) {
            return None;
        }
        let long = |name: &str| value(name).and_then(|v| v.parse::<i64>().ok());
        Some(CompactionInForce {
            min_cleanable_dirty_ratio: value("min.cleanable.dirty.ratio")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.5),
            min_compaction_lag_ms: long("min.compaction.lag.ms").unwrap_or(0),
            max_compaction_lag_ms: long("max.compaction.lag.ms").unwrap_or(i64::MAX),
            delete_retention_ms: long("delete.retention.ms").unwrap_or(86_400_000),
        })
    }
}

/// Stored dynamic broker configurations without those Kafka keeps read-only; names
/// Kafka does not define stay (Kafka stores them).
fn without_read_only(mut stored: BTreeMap<String, String>) -> BTreeMap<String, String> {
    stored.retain(|name, _| broker_config(name).is_none_or(|b| !b.read_only()));
    stored
}

/// A stored broker configuration Kafka does not define, as Kafka describes one: its
/// value hidden (an unknown type may hold a secret), read-only, of unknown type.
fn unknown_entry(name: &str, source: ConfigSource) -> Entry {
    Entry {
        name: name.to_string(),
        value: None,
        source,
        read_only: true,
        sensitive: true,
        synonyms: vec![Synonym {
            name: name.to_string(),
            value: None,
            source,
        }],
        kind: ConfigType::Unknown,
        doc: "",
    }
}

/// One of the gateway's settings that is a Kafka broker configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticConfig {
    /// The gateway's setting (`message_max_bytes`).
    pub setting: &'static str,
    /// Kafka's name for it (`message.max.bytes`).
    pub name: &'static str,
    pub value: String,
}

/// The gateway's settings that are Kafka broker configurations, none of them sensitive.
pub fn static_configs(s: &BrokerSettings) -> Vec<StaticConfig> {
    let rules = &s.topic_rules;
    [
        (
            "auto_create_topics_enable",
            "auto.create.topics.enable",
            rules.auto_create_topics_enable.to_string(),
        ),
        ("node_id", "broker.id", s.node_id.to_string()),
        (
            "idle_timeout_ms",
            "connections.max.idle.ms",
            s.idle_timeout.as_millis().to_string(),
        ),
        (
            "default_replication_factor",
            "default.replication.factor",
            rules.default_replication_factor.to_string(),
        ),
        (
            "group_initial_rebalance_delay_ms",
            "group.initial.rebalance.delay.ms",
            s.group_initial_rebalance_delay.as_millis().to_string(),
        ),
        (
            "max_connections",
            "max.connections",
            s.max_connections.to_string(),
        ),
        (
            "max_incremental_fetch_session_cache_slots",
            "max.incremental.fetch.session.cache.slots",
            s.fetch_sessions.slots.to_string(),
        ),
        (
            "message_max_bytes",
            "message.max.bytes",
            s.message_max_bytes.to_string(),
        ),
        ("node_id", "node.id", s.node_id.to_string()),
        (
            "num_partitions",
            "num.partitions",
            rules.num_partitions.to_string(),
        ),
        (
            "offsets_commit_timeout_ms",
            "offsets.commit.timeout.ms",
            s.offsets_commit_timeout.as_millis().to_string(),
        ),
        (
            "max_request_bytes",
            "socket.request.max.bytes",
            s.max_request_bytes.to_string(),
        ),
        (
            "transaction_max_timeout_ms",
            "transaction.max.timeout.ms",
            s.transaction_max_timeout_ms.to_string(),
        ),
        (
            "transactional_id_expiration_ms",
            "transactional.id.expiration.ms",
            s.transactional_id_expiration.as_millis().to_string(),
        ),
    ]
    .into_iter()
    .map(|(setting, name, value)| StaticConfig {
        setting,
        name,
        value,
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn config() -> ClusterConfig {
        ClusterConfig {
            statics: BTreeMap::from([("message.max.bytes", "2000000".to_string())]),
            ..ClusterConfig::default()
        }
    }

    #[test]
    fn topic_values_come_from_the_topic_then_the_broker_then_the_default() {
        let c = config().with_dynamic(
            map(&[
                ("log.retention.ms", "1000"),
                ("log.cleanup.policy", "compact"),
            ]),
            map(&[("log.retention.ms", "2000")]),
        );
        let e = c.topic_entry(
            topic_config("retention.ms").unwrap(),
            &map(&[("retention.ms", "5")]),
        );
        assert_eq!(
            (e.value.as_deref(), e.source),
            (Some("5"), ConfigSource::DynamicTopic)
        );
        let chain: Vec<_> = e
            .synonyms
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.value.as_deref().unwrap_or_default(),
                    s.source,
                )
            })
            .collect();
        assert_eq!(
            chain,
            [
                ("retention.ms", "5", ConfigSource::DynamicTopic),
                ("log.retention.ms", "2000", ConfigSource::DynamicBroker),
                (
                    "log.retention.ms",
                    "1000",
                    ConfigSource::DynamicDefaultBroker
                ),
                ("log.retention.ms", "604800000", ConfigSource::Default),
            ]
        );
        let none = BTreeMap::new();
        assert_eq!(
            c.topic_value(&none, "retention.ms"),
            Some(("2000", ConfigSource::DynamicBroker))
        );
        assert_eq!(
            c.topic_value(&none, "max.message.bytes"),
            Some(("2000000", ConfigSource::StaticBroker))
        );
        assert_eq!(
            c.topic_value(&none, "segment.ms"),
            Some(("604800000", ConfigSource::Default))
        );
        // No broker synonym: the default, and no synonyms at all (as Kafka).
        let e = c.topic_entry(topic_config("remote.storage.enable").unwrap(), &none);
        assert_eq!(
            (e.value.as_deref(), e.source, e.synonyms.len()),
            (Some("false"), ConfigSource::Default, 0)
        );
    }

    #[test]
    fn limits_follow_the_policy_and_ignore_built_in_defaults() {
        let c = config();
        assert_eq!(c.limits(&BTreeMap::new()), TopicLimits::default());
        let l = c.limits(&map(&[
            ("retention.ms", "60000"),
            ("retention.bytes", "1000"),
            ("segment.bytes", "1048576"),
        ]));
        assert_eq!(
            l,
            TopicLimits {
                retention_ms: Some(60000),
                retention_bytes: Some(1000),
                segment_bytes: Some(1048576)
            }
        );
        for (policy, retention) in [
            ("compact", None),
            ("compact,delete", Some(60000)),
            ("", None),
        ] {
            let l = c.limits(&map(&[
                ("retention.ms", "60000"),
                ("cleanup.policy", policy),
            ]));
            assert_eq!(l.retention_ms, retention, "{policy}");
        }
        let minus_one = c.limits(&map(&[("retention.ms", "-1"), ("retention.bytes", "-1")]));
        assert_eq!(minus_one, TopicLimits::default());
        let broker =
            config().with_dynamic(map(&[("log.retention.ms", "3600000")]), BTreeMap::new());
        assert_eq!(
            broker.limits(&BTreeMap::new()).retention_ms,
            Some(3_600_000)
        );
    }

    #[test]
    fn broker_entries_say_which_are_read_only() {
        let c = config().with_dynamic(map(&[("log.cleaner.threads", "3")]), BTreeMap::new());
        let e = c.broker_entry(broker_config("log.cleaner.threads").unwrap());
        assert_eq!(
            (e.value.as_deref(), e.source, e.read_only),
            (Some("3"), ConfigSource::DynamicDefaultBroker, false)
        );
        let e = c.broker_entry(broker_config("delete.topic.enable").unwrap());
        assert_eq!(
            (e.value.as_deref(), e.source, e.read_only),
            (Some("true"), ConfigSource::Default, true)
        );
        assert_eq!(c.cluster_default_entries().len(), 1);
        assert_eq!(c.broker_value("message.max.bytes"), Some("2000000"));
    }

    #[test]
    fn read_only_configs_follow_the_settings_whatever_is_stored() {
        let mut settings = crate::test_store::settings();
        settings.topic_rules.num_partitions = 4;
        settings.transaction_max_timeout_ms = 60_000;
        // What an older gateway stored for them, for every gateway and for this one.
        let c = ClusterConfig::new(&settings).with_dynamic(
            map(&[
                ("num.partitions", "3"),
                ("transaction.max.timeout.ms", "5"),
                ("log.cleaner.threads", "2"),
            ]),
            map(&[("auto.create.topics.enable", "true")]),
        );
        let described = |name| {
            let e = c.broker_entry(broker_config(name).unwrap());
            let chain: Vec<ConfigSource> = e.synonyms.iter().map(|s| s.source).collect();
            (e.value, e.source, e.read_only, chain)
        };
        let static_then_default = vec![ConfigSource::StaticBroker, ConfigSource::Default];
        assert_eq!(
            described("num.partitions"),
            (
                Some("4".into()),
                ConfigSource::StaticBroker,
                true,
                static_then_default.clone()
            )
        );
        assert_eq!(
            described("transaction.max.timeout.ms"),
            (
                Some("60000".into()),
                ConfigSource::StaticBroker,
                true,
                static_then_default
            )
        );
        // Off in the test settings (Kafka's default: on), whatever this gateway stored.
        assert_eq!(
            described("auto.create.topics.enable"),
            (
                Some("false".into()),
                ConfigSource::StaticBroker,
                true,
                vec![ConfigSource::StaticBroker, ConfigSource::Default]
            )
        );
        assert_eq!(
            described("transactional.id.expiration.ms"),
            (
                Some("604800000".into()),
                ConfigSource::Default,
                true,
                vec![ConfigSource::Default]
            )
        );
        let every: Vec<String> = (c.cluster_default_entries().into_iter())
            .map(|e| e.name)
            .collect();
        assert_eq!(every, ["log.cleaner.threads"]);
        assert!(c.this_broker().is_empty());
    }

    #[test]
    fn null_defaults_passwords_and_unknown_names_are_described_as_kafka_does() {
        let c = config().with_dynamic(
            map(&[("no.such", "1")]),
            map(&[("ssl.keystore.password", "secret")]),
        );
        // A null default: no value, no synonym.
        let e = c.broker_entry(broker_config("log.retention.minutes").unwrap());
        assert_eq!(
            (e.value, e.source, e.synonyms.len()),
            (None, ConfigSource::Default, 0)
        );
        let e = c.broker_entry(broker_config("ssl.keystore.password").unwrap());
        assert_eq!(
            (e.value, e.source, e.sensitive, e.kind),
            (
                None,
                ConfigSource::DynamicBroker,
                true,
                ConfigType::Password
            )
        );
        let entries = c.broker_entries();
        let unknown = entries.iter().find(|e| e.name == "no.such").unwrap();
        assert_eq!(
            (
                &unknown.value,
                unknown.source,
                unknown.read_only,
                unknown.sensitive,
                unknown.kind
            ),
            (
                &None,
                ConfigSource::DynamicDefaultBroker,
                true,
                true,
                ConfigType::Unknown
            )
        );
        assert_eq!(entries.iter().filter(|e| e.name == "no.such").count(), 1);
    }

    #[test]
    fn typed_values_follow_kafka_defaults_then_the_broker_then_the_topic() {
        use crate::config_catalog::TopicInForce;
        let kafka = ClusterConfig::default().in_force();
        let expected = TopicInForce {
            max_message_bytes: 1_048_588,
            log_append_time: false,
            compacted: false,
            whole_batches: false,
        };
        assert_eq!(kafka.topic_defaults, expected);
        let broker = ClusterConfig::default().with_dynamic(
            map(&[
                ("message.max.bytes", "2000"),
                ("log.message.timestamp.type", "LogAppendTime"),
                ("log.cleanup.policy", "compact,delete"),
            ]),
            BTreeMap::new(),
        );
        let set = broker.in_force();
        let expected = TopicInForce {
            max_message_bytes: 2000,
            log_append_time: true,
            compacted: true,
            whole_batches: false,
        };
        assert_eq!(set.topic_defaults, expected);
        let own = map(&[
            ("max.message.bytes", "100"),
            ("message.timestamp.type", "CreateTime"),
            ("cleanup.policy", "delete"),
        ]);
        let expected = TopicInForce {
            max_message_bytes: 100,
            log_append_time: false,
            compacted: false,
            whole_batches: false,
        };
        assert_eq!(set.topic(&own), expected);
        let partly = map(&[("cleanup.policy", "compact")]);
        assert_eq!(set.topic(&partly).max_message_bytes, 2000);
        assert!(set.topic(&partly).compacted);
        let whole = map(&[("iggy.message.format", "batch")]);
        assert!(set.topic(&whole).whole_batches);
        assert!(
            !set.topic(&map(&[("iggy.message.format", "record")]))
                .whole_batches
        );
    }
}
