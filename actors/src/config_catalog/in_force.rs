//! Typed views of the configurations request paths act on, so a hot path reads a field
//! rather than a configuration by its name: a misspelt name cannot compile there. The
//! broker-wide part is parsed once per `ClusterConfig` the catalog publishes (a
//! change publishes a new one); a topic's own values, checked by the catalog when
//! they were set, are laid over it when asked.

use std::collections::BTreeMap;

use super::definitions::{topic_config, IGGY_MESSAGE_FORMAT};
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
    /// `iggy.message.format=batch`: the Iggy backend keeps each batch whole.
    pub whole_batches: bool,
}

/// What the compactor acts on for a topic whose `cleanup.policy` holds `compact`
/// (`ClusterConfig::compaction`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactionInForce {
    /// `min.cleanable.dirty.ratio`: the share of a partition's bytes written since its
    /// last pass that makes it due.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this are not compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a partition with bytes written since its last pass is
    /// due this long after that pass, whatever its dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms`: how long a tombstone stays once compaction reached it.
    pub delete_retention_ms: i64,
}

/// The broker-wide values of the configurations [`InForce`] types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InForce {
    /// The topic values where a topic sets none of its own.
    pub topic_defaults: TopicInForce,
}

const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
const TIMESTAMP_TYPE: &str = "message.timestamp.type";
const CLEANUP_POLICY: &str = "cleanup.policy";

fn log_append_time(value: &str) -> bool {
    value == "LogAppendTime"
}

pub(super) fn compacted(value: &str) -> bool {
    list_items(value).contains(&"compact")
}

impl InForce {
    /// Parsed from the values in force: `topic` a topic configuration's where a topic
    /// sets none. A value that does not parse (the catalog checks each before it is
    /// stored) falls back to Kafka's default.
    pub fn of<'a>(topic: impl Fn(&str) -> Option<&'a str>) -> InForce {
        let max_message_bytes = (topic(MAX_MESSAGE_BYTES).and_then(|v| v.parse().ok()))
            .or_else(|| {
                let default = topic_config(MAX_MESSAGE_BYTES).and_then(|d| d.default);
                default.and_then(|d| d.parse().ok())
            })
            .expect("Kafka's default parses");
        InForce {
            topic_defaults: TopicInForce {
                max_message_bytes,
                log_append_time: log_append_time(topic(TIMESTAMP_TYPE).unwrap_or_default()),
                compacted: compacted(topic(CLEANUP_POLICY).unwrap_or_default()),
                whole_batches: false,
            },
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
            whole_batches: own(IGGY_MESSAGE_FORMAT.name) == Some("batch"),
        }
    }
}
