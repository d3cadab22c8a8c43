//! Typed views of the configurations request paths act on, so a hot path reads a field
//! rather than a configuration by its name: a misspelt name cannot compile there. The
//! broker-wide part is parsed once per [`ClusterConfig`] the catalog publishes (a
//! change publishes a new one); a topic's own values, checked by the catalog when
//! they were set, are laid over it when asked.

use std::collections::BTreeMap;

use super::definitions::{broker_config, topic_config};
use super::effective::ClusterConfig;
use super::rules::list_items;

/// What a topic's records are checked and stamped by at Produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicInForce {
    /// `max.message.bytes`: the largest record batch accepted.
    pub max_message_bytes: usize,
    /// `message.timestamp.type=LogAppendTime`: the broker stamps each batch.
    pub log_append_time: bool,
    /// `cleanup.policy` holds `compact`: every record needs a key.
    pub compacted: bool,
}

/// The broker-wide values of the configurations [`InForce`] types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InForce {
    /// The topic values where a topic sets none of its own.
    pub topic_defaults: TopicInForce,
    /// `transactional.id.expiration.ms`: an idle transactional id is forgotten after it.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.max.timeout.ms`: the longest transaction timeout InitProducerId takes.
    pub transaction_max_timeout_ms: i32,
}

const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
const TIMESTAMP_TYPE: &str = "message.timestamp.type";
const CLEANUP_POLICY: &str = "cleanup.policy";

fn log_append_time(value: &str) -> bool {
    value == "LogAppendTime"
}

fn compacted(value: &str) -> bool {
    list_items(value).contains(&"compact")
}

impl InForce {
    /// Parsed from `config`'s values; a value that does not parse (the catalog checks
    /// each before it is stored) falls back to Kafka's default.
    pub fn of(config: &ClusterConfig) -> InForce {
        fn parsed<T: std::str::FromStr>(value: Option<&str>, default: Option<&str>) -> T {
            (value.and_then(|v| v.parse().ok()))
                .or_else(|| default.and_then(|d| d.parse().ok()))
                .expect("Kafka's default parses")
        }
        let none = BTreeMap::new();
        let topic = |name| {
            let default = topic_config(name).and_then(|d| d.default);
            (config.topic_value(&none, name).map(|(v, _)| v), default)
        };
        let broker = |name| {
            let default = broker_config(name).and_then(|b| b.definition().default);
            (config.broker_value(name), default)
        };
        let (max, max_default) = topic(MAX_MESSAGE_BYTES);
        let stamp = topic(TIMESTAMP_TYPE).0.unwrap_or_default();
        let policy = topic(CLEANUP_POLICY).0.unwrap_or_default();
        let (expiration, expiration_default) = broker("transactional.id.expiration.ms");
        let (max_timeout, max_timeout_default) = broker("transaction.max.timeout.ms");
        InForce {
            topic_defaults: TopicInForce {
                max_message_bytes: parsed(max, max_default),
                log_append_time: log_append_time(stamp),
                compacted: compacted(policy),
            },
            transactional_id_expiration_ms: parsed(expiration, expiration_default),
            transaction_max_timeout_ms: parsed(max_timeout, max_timeout_default),
        }
    }

    /// A topic's values: its own (`overrides`) over the broker-wide ones.
    pub fn topic(&self, overrides: &BTreeMap<String, String>) -> TopicInForce {
        if overrides.is_empty() {
            return self.topic_defaults;
        }
        let own = |name: &str| overrides.get(name).map(String::as_str);
        let defaults = self.topic_defaults;
        TopicInForce {
            max_message_bytes: (own(MAX_MESSAGE_BYTES).and_then(|v| v.parse().ok()))
                .unwrap_or(defaults.max_message_bytes),
            log_append_time: own(TIMESTAMP_TYPE).map_or(defaults.log_append_time, log_append_time),
            compacted: own(CLEANUP_POLICY).map_or(defaults.compacted, compacted),
        }
    }
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

    #[test]
    fn typed_values_follow_kafka_defaults_then_the_broker_then_the_topic() {
        let kafka = InForce::of(&ClusterConfig::default());
        let expected = TopicInForce {
            max_message_bytes: 1_048_588,
            log_append_time: false,
            compacted: false,
        };
        assert_eq!(kafka.topic_defaults, expected);
        assert_eq!(kafka.transactional_id_expiration_ms, 604_800_000);
        assert_eq!(kafka.transaction_max_timeout_ms, 900_000);
        let broker = ClusterConfig::default().with_dynamic(
            map(&[
                ("message.max.bytes", "2000"),
                ("log.message.timestamp.type", "LogAppendTime"),
                ("log.cleanup.policy", "compact,delete"),
                ("transaction.max.timeout.ms", "60000"),
            ]),
            BTreeMap::new(),
        );
        let set = broker.in_force();
        let expected = TopicInForce {
            max_message_bytes: 2000,
            log_append_time: true,
            compacted: true,
        };
        assert_eq!(set.topic_defaults, expected);
        assert_eq!(set.transaction_max_timeout_ms, 60_000);
        let own = map(&[
            ("max.message.bytes", "100"),
            ("message.timestamp.type", "CreateTime"),
            ("cleanup.policy", "delete"),
        ]);
        let expected = TopicInForce {
            max_message_bytes: 100,
            log_append_time: false,
            compacted: false,
        };
        assert_eq!(set.topic(&own), expected);
        let partly = map(&[("cleanup.policy", "compact")]);
        assert_eq!(set.topic(&partly).max_message_bytes, 2000);
        assert!(set.topic(&partly).compacted);
    }
}
