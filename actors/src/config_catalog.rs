//! The config-catalog actor: every topic configuration a Kafka 4 broker defines,
//! with its type and valid values, and the check CreateTopics runs on what a
//! client sends.

use std::collections::BTreeMap;

use actix::prelude::*;

/// How a value is checked, after Kafka's `ConfigDef` types and validators.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// An integer (`int` or `long` in Kafka) at least this large.
    AtLeast(i64),
    Boolean,
    /// A fraction between 0 and 1.
    Ratio,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these words.
    ListOf(&'static [&'static str]),
    /// Free text (replica throttle lists and the like).
    Text,
}

struct Definition {
    name: &'static str,
    rule: Rule,
}

const COMPRESSION: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

/// Topic-level configurations of Kafka 4.1 (`TopicConfig` and `LogConfig`).
const TOPIC_CONFIGS: &[Definition] = &[
    d("cleanup.policy", Rule::ListOf(&["delete", "compact"])),
    d("compression.type", Rule::OneOf(COMPRESSION)),
    d("compression.gzip.level", Rule::AtLeast(-1)),
    d("compression.lz4.level", Rule::AtLeast(1)),
    d("compression.zstd.level", Rule::AtLeast(-131072)),
    d("delete.retention.ms", Rule::AtLeast(0)),
    d("file.delete.delay.ms", Rule::AtLeast(0)),
    d("flush.messages", Rule::AtLeast(1)),
    d("flush.ms", Rule::AtLeast(0)),
    d("follower.replication.throttled.replicas", Rule::Text),
    d("index.interval.bytes", Rule::AtLeast(0)),
    d("leader.replication.throttled.replicas", Rule::Text),
    d("local.retention.bytes", Rule::AtLeast(-2)),
    d("local.retention.ms", Rule::AtLeast(-2)),
    d("max.compaction.lag.ms", Rule::AtLeast(1)),
    d("max.message.bytes", Rule::AtLeast(0)),
    d("message.timestamp.after.max.ms", Rule::AtLeast(0)),
    d("message.timestamp.before.max.ms", Rule::AtLeast(0)),
    d(
        "message.timestamp.type",
        Rule::OneOf(&["CreateTime", "LogAppendTime"]),
    ),
    d("min.cleanable.dirty.ratio", Rule::Ratio),
    d("min.compaction.lag.ms", Rule::AtLeast(0)),
    d("min.insync.replicas", Rule::AtLeast(1)),
    d("preallocate", Rule::Boolean),
    d("remote.log.copy.disable", Rule::Boolean),
    d("remote.log.delete.on.disable", Rule::Boolean),
    d("remote.storage.enable", Rule::Boolean),
    d("retention.bytes", Rule::AtLeast(-1)),
    d("retention.ms", Rule::AtLeast(-1)),
    d("segment.bytes", Rule::AtLeast(1024 * 1024)),
    d("segment.index.bytes", Rule::AtLeast(4)),
    d("segment.jitter.ms", Rule::AtLeast(0)),
    d("segment.ms", Rule::AtLeast(1)),
    d("unclean.leader.election.enable", Rule::Boolean),
];

const fn d(name: &'static str, rule: Rule) -> Definition {
    Definition { name, rule }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("unknown topic configuration '{0}'")]
    Unknown(String),
    #[error("topic configuration '{key}' has no value")]
    Null { key: String },
    #[error("invalid value '{value}' for topic configuration '{key}': {rule}")]
    Invalid {
        key: String,
        value: String,
        rule: String,
    },
}

/// Validate the configurations a client sent for a new topic; the answer holds them
/// normalised (trimmed) for storage.
#[derive(Message)]
#[rtype(result = "Result<BTreeMap<String, String>, ConfigError>")]
pub struct ValidateTopicConfigs(pub Vec<(String, Option<String>)>);

#[derive(Default)]
pub struct ConfigCatalog;

impl ConfigCatalog {
    fn validate(
        &self,
        configs: Vec<(String, Option<String>)>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut out = BTreeMap::new();
        for (key, value) in configs {
            let def = TOPIC_CONFIGS
                .iter()
                .find(|d| d.name == key)
                .ok_or_else(|| ConfigError::Unknown(key.clone()))?;
            let value = value.ok_or_else(|| ConfigError::Null { key: key.clone() })?;
            let value = value.trim().to_string();
            if let Err(rule) = check(def.rule, &value) {
                return Err(ConfigError::Invalid { key, value, rule });
            }
            out.insert(key, value);
        }
        Ok(out)
    }
}

fn check(rule: Rule, value: &str) -> Result<(), String> {
    match rule {
        Rule::AtLeast(min) => match value.parse::<i64>() {
            Ok(v) if v >= min => Ok(()),
            Ok(_) => Err(format!("must be at least {min}")),
            Err(_) => Err("must be an integer".into()),
        },
        Rule::Boolean => match value.to_ascii_lowercase().as_str() {
            "true" | "false" => Ok(()),
            _ => Err("must be true or false".into()),
        },
        Rule::Ratio => match value.parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => Ok(()),
            _ => Err("must be a number between 0 and 1".into()),
        },
        Rule::OneOf(words) if words.contains(&value) => Ok(()),
        Rule::OneOf(words) => Err(format!("must be one of {}", words.join(", "))),
        Rule::ListOf(words) => {
            let items: Vec<&str> = value.split(',').map(str::trim).collect();
            if !items.is_empty() && items.iter().all(|i| words.contains(i)) {
                Ok(())
            } else {
                Err(format!("must be a list of {}", words.join(", ")))
            }
        }
        Rule::Text => Ok(()),
    }
}

impl Actor for ConfigCatalog {
    type Context = Context<Self>;
}

impl Handler<ValidateTopicConfigs> for ConfigCatalog {
    type Result = Result<BTreeMap<String, String>, ConfigError>;

    fn handle(&mut self, msg: ValidateTopicConfigs, _: &mut Self::Context) -> Self::Result {
        self.validate(msg.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, String>, ConfigError> {
        ConfigCatalog.validate(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                .collect(),
        )
    }

    #[test]
    fn accepts_what_frameworks_send() {
        let ok = validate(&[
            ("cleanup.policy", "compact,delete"),
            ("retention.bytes", "-1"),
            ("retention.ms", "604800000"),
            ("message.timestamp.type", "LogAppendTime"),
            ("min.cleanable.dirty.ratio", "0.5"),
        ])
        .unwrap();
        assert_eq!(ok["cleanup.policy"], "compact,delete");
    }

    #[test]
    fn names_the_key_and_the_rule_it_broke() {
        assert_eq!(
            validate(&[("no.such", "1")]),
            Err(ConfigError::Unknown("no.such".into()))
        );
        let e = validate(&[("retention.ms", "-7")]).unwrap_err().to_string();
        assert!(
            e.contains("retention.ms") && e.contains("at least -1"),
            "{e}"
        );
        let e = validate(&[("cleanup.policy", "shred")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cleanup.policy"), "{e}");
    }
}
