//! Every configuration the gateway knows: Kafka 4.1's topic configurations (`TopicConfig`,
//! `LogConfig`) with their broker-level synonyms (`ServerTopicConfigSynonyms`), and the
//! broker configurations a client may describe. Types, defaults and valid values are
//! Kafka's; the documentation is Kafka's, shortened.

/// A configuration's data type, with its code in DescribeConfigs (v3+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
}

/// The values a configuration accepts beyond its type, after Kafka's validators.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// Any value of the type.
    Any,
    AtLeast(i64),
    Between(i64, i64),
    /// Between the bounds, or exactly the third value (gzip's "library default" -1).
    BetweenOr(i64, i64, i64),
    /// A number between 0 and 1.
    Ratio,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these words (possibly empty).
    ListOf(&'static [&'static str]),
    /// `[partition]:[broker]` pairs, or `*` (replica throttle lists).
    ThrottledReplicas,
    /// A multiple of this.
    MultipleOf(i64),
}

/// One configuration.
#[derive(Debug)]
pub struct Definition {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The value when nothing sets it, as DescribeConfigs shows it.
    pub default: &'static str,
    pub rule: Rule,
    /// Topic configurations: the broker configuration that sets the default for every
    /// topic. Broker configurations: none.
    pub synonym: Option<&'static str>,
    /// Broker configurations: whether AlterConfigs may change it while gateways run.
    /// Topic configurations are always alterable.
    pub dynamic: bool,
    pub doc: &'static str,
}

const COMPRESSION: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
const LONG_MAX: &str = "9223372036854775807";

const fn topic(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    rule: Rule,
    synonym: Option<&'static str>,
    doc: &'static str,
) -> Definition {
    Definition {
        name,
        kind,
        default,
        rule,
        synonym,
        dynamic: true,
        doc,
    }
}

const fn broker(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    rule: Rule,
    dynamic: bool,
    doc: &'static str,
) -> Definition {
    Definition {
        name,
        kind,
        default,
        rule,
        synonym: None,
        dynamic,
        doc,
    }
}

use ConfigType::{Boolean, Double, Int, List, Long, String as Str};

/// Partitions one topic may have: far above any real use, low enough that a
/// Metadata answer for the topic stays a reasonable size.
pub const MAX_PARTITIONS: i32 = 100_000;

/// Topic-level configurations of Kafka 4.1, sorted by name.
#[rustfmt::skip]
pub const TOPIC_CONFIGS: &[Definition] = &[
    topic("cleanup.policy", List, "delete", Rule::ListOf(&["compact", "delete"]), Some("log.cleanup.policy"),
        "The retention policy of the log segments: \"delete\" discards old segments when their retention time or size limit is reached, \"compact\" keeps the latest value of each key. Both may be listed (\"compact,delete\")."),
    topic("compression.gzip.level", Int, "-1", Rule::BetweenOr(1, 9, -1), Some("compression.gzip.level"),
        "The compression level to use if compression.type is set to gzip."),
    topic("compression.lz4.level", Int, "9", Rule::Between(1, 17), Some("compression.lz4.level"),
        "The compression level to use if compression.type is set to lz4."),
    topic("compression.type", Str, "producer", Rule::OneOf(COMPRESSION), Some("compression.type"),
        "The final compression type of the topic: 'gzip', 'snappy', 'lz4', 'zstd', 'uncompressed', or 'producer' to keep the codec the producer used."),
    topic("compression.zstd.level", Int, "3", Rule::Between(-131072, 22), Some("compression.zstd.level"),
        "The compression level to use if compression.type is set to zstd."),
    topic("delete.retention.ms", Long, "86400000", Rule::AtLeast(0), Some("log.cleaner.delete.retention.ms"),
        "How long delete tombstone markers are kept in log compacted topics."),
    topic("file.delete.delay.ms", Long, "60000", Rule::AtLeast(0), Some("log.segment.delete.delay.ms"),
        "The time to wait before deleting a file from the filesystem."),
    topic("flush.messages", Long, LONG_MAX, Rule::AtLeast(1), Some("log.flush.interval.messages"),
        "Force an fsync of the log after this many messages."),
    topic("flush.ms", Long, LONG_MAX, Rule::AtLeast(0), Some("log.flush.interval.ms"),
        "Force an fsync of the log after this many milliseconds."),
    topic("follower.replication.throttled.replicas", List, "", Rule::ThrottledReplicas, None,
        "Replicas whose replication is throttled on the follower side: [PartitionId]:[BrokerId] pairs, or '*' for all of the topic's replicas."),
    topic("index.interval.bytes", Int, "4096", Rule::AtLeast(0), Some("log.index.interval.bytes"),
        "How often an entry is added to the offset index, in bytes of log."),
    topic("leader.replication.throttled.replicas", List, "", Rule::ThrottledReplicas, None,
        "Replicas whose replication is throttled on the leader side: [PartitionId]:[BrokerId] pairs, or '*' for all of the topic's replicas."),
    topic("local.retention.bytes", Long, "-2", Rule::AtLeast(-2), Some("log.local.retention.bytes"),
        "The most bytes of local log segments a partition keeps with tiered storage; -2 means retention.bytes."),
    topic("local.retention.ms", Long, "-2", Rule::AtLeast(-2), Some("log.local.retention.ms"),
        "How long local log segments are kept with tiered storage; -2 means retention.ms."),
    topic("max.compaction.lag.ms", Long, LONG_MAX, Rule::AtLeast(1), Some("log.cleaner.max.compaction.lag.ms"),
        "The longest time a message stays ineligible for compaction. Only for compacted logs."),
    topic("max.message.bytes", Int, "1048588", Rule::AtLeast(0), Some("message.max.bytes"),
        "The largest record batch size allowed (after compression if compression is enabled)."),
    topic("message.timestamp.after.max.ms", Long, "3600000", Rule::AtLeast(0), Some("log.message.timestamp.after.max.ms"),
        "How far a CreateTime message timestamp may be ahead of the broker's time."),
    topic("message.timestamp.before.max.ms", Long, LONG_MAX, Rule::AtLeast(0), Some("log.message.timestamp.before.max.ms"),
        "How far a CreateTime message timestamp may be behind the broker's time."),
    topic("message.timestamp.type", Str, "CreateTime", Rule::OneOf(&["CreateTime", "LogAppendTime"]), Some("log.message.timestamp.type"),
        "Whether a message's timestamp is its create time or its log append time."),
    topic("min.cleanable.dirty.ratio", Double, "0.5", Rule::Ratio, Some("log.cleaner.min.cleanable.ratio"),
        "How much of the log must be uncompacted before the compactor cleans it."),
    topic("min.compaction.lag.ms", Long, "0", Rule::AtLeast(0), Some("log.cleaner.min.compaction.lag.ms"),
        "The shortest time a message stays uncompacted. Only for compacted logs."),
    topic("min.insync.replicas", Int, "1", Rule::AtLeast(1), Some("min.insync.replicas"),
        "With acks=all, the fewest replicas that must acknowledge a write for it to succeed."),
    topic("preallocate", Boolean, "false", Rule::Any, Some("log.preallocate"),
        "True if the segment file is preallocated on disk when a new segment is created."),
    topic("remote.log.copy.disable", Boolean, "false", Rule::Any, None,
        "Makes the topic's tiered data read only: no more uploads to remote storage."),
    topic("remote.log.delete.on.disable", Boolean, "false", Rule::Any, None,
        "Deletes the topic's tiered data when tiered storage is disabled for it."),
    topic("remote.storage.enable", Boolean, "false", Rule::Any, None,
        "Enables tiered storage for the topic."),
    topic("retention.bytes", Long, "-1", Rule::AtLeast(-1), Some("log.retention.bytes"),
        "The most bytes a partition keeps before old segments are discarded under the \"delete\" policy; -1 is no limit. Per partition: multiply by the partitions for the topic."),
    topic("retention.ms", Long, "604800000", Rule::AtLeast(-1), Some("log.retention.ms"),
        "How long the log is kept before old segments are discarded under the \"delete\" policy; -1 is no time limit."),
    topic("segment.bytes", Int, "1073741824", Rule::AtLeast(1024 * 1024), Some("log.segment.bytes"),
        "The segment file size of the log. Retention and cleaning work a whole segment at a time."),
    topic("segment.index.bytes", Int, "10485760", Rule::AtLeast(4), Some("log.index.size.max.bytes"),
        "The size of the index that maps offsets to file positions."),
    topic("segment.jitter.ms", Long, "0", Rule::AtLeast(0), Some("log.roll.jitter.ms"),
        "The most random jitter subtracted from the scheduled segment roll time."),
    topic("segment.ms", Long, "604800000", Rule::AtLeast(1), Some("log.roll.ms"),
        "How long before the log rolls to a new segment even if the current one is not full."),
    topic("unclean.leader.election.enable", Boolean, "false", Rule::Any, Some("unclean.leader.election.enable"),
        "Whether replicas outside the ISR may be elected leader as a last resort, at the risk of data loss."),
];

/// Broker configurations that are not a topic configuration's synonym.
#[rustfmt::skip]
const BROKER_ONLY: &[Definition] = &[
    broker("auto.create.topics.enable", Boolean, "true", Rule::Any, true,
        "Enable auto creation of topics on the server (Metadata requests that allow it)."),
    broker("broker.id", Int, "-1", Rule::Any, false,
        "The broker id of this server (the gateway's node_id)."),
    broker("connections.max.idle.ms", Long, "600000", Rule::AtLeast(1), false,
        "Idle connections are closed after this many milliseconds."),
    broker("default.replication.factor", Int, "1", Rule::Between(1, i16::MAX as i64), true,
        "The replication factor of automatically created topics and of topics created with -1."),
    broker("delete.topic.enable", Boolean, "true", Rule::Any, false,
        "Enables topic deletion."),
    broker("group.initial.rebalance.delay.ms", Int, "3000", Rule::AtLeast(0), false,
        "How long the first rebalance of an empty consumer group waits for more members."),
    broker("max.connections", Int, "2147483647", Rule::AtLeast(0), false,
        "The most connections the broker accepts at any time."),
    broker("max.incremental.fetch.session.cache.slots", Int, "1000", Rule::AtLeast(0), false,
        "The most incremental fetch sessions kept at once (KIP-227)."),
    broker("node.id", Int, "-1", Rule::Any, false,
        "The node id of this server (the gateway's node_id)."),
    broker("num.partitions", Int, "1", Rule::Between(1, MAX_PARTITIONS as i64), true,
        "The number of partitions of automatically created topics and of topics created with -1."),
    broker("offsets.commit.timeout.ms", Int, "5000", Rule::AtLeast(1), false,
        "How long an offset commit waits for the offsets store before REQUEST_TIMED_OUT (the gateway's offsets_commit_timeout_ms)."),
    broker("socket.request.max.bytes", Int, "104857600", Rule::AtLeast(1), false,
        "The largest request the broker reads."),
    broker("transaction.max.timeout.ms", Int, "900000", Rule::AtLeast(1), true,
        "The longest transaction timeout a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)."),
    broker("transactional.id.expiration.ms", Int, "604800000", Rule::AtLeast(1), true,
        "A transactional id unused this long, with no transaction open, is forgotten."),
];

pub fn topic_config(name: &str) -> Option<&'static Definition> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// The topic configuration whose default a broker configuration sets.
pub fn topic_of_synonym(broker: &str) -> Option<&'static Definition> {
    TOPIC_CONFIGS.iter().find(|d| d.synonym == Some(broker))
}

/// A broker configuration: its own definition, or the topic configuration it is the
/// synonym of (same type, default and valid values; dynamic, as in Kafka).
pub fn broker_config(name: &str) -> Option<BrokerConfig> {
    BROKER_ONLY
        .iter()
        .find(|d| d.name == name)
        .map(BrokerConfig::Own)
        .or_else(|| topic_of_synonym(name).map(BrokerConfig::TopicDefault))
}

/// Every broker configuration, sorted by name.
pub fn broker_configs() -> Vec<BrokerConfig> {
    let mut all: Vec<BrokerConfig> = BROKER_ONLY.iter().map(BrokerConfig::Own).collect();
    all.extend(
        TOPIC_CONFIGS
            .iter()
            .filter(|d| d.synonym.is_some())
            .map(BrokerConfig::TopicDefault),
    );
    all.sort_by_key(|b| b.name());
    all
}

/// A broker configuration, by where its definition lives.
#[derive(Clone, Copy, Debug)]
pub enum BrokerConfig {
    Own(&'static Definition),
    /// The broker default of this topic configuration.
    TopicDefault(&'static Definition),
}

impl BrokerConfig {
    pub fn name(&self) -> &'static str {
        match self {
            BrokerConfig::Own(d) => d.name,
            BrokerConfig::TopicDefault(d) => d.synonym.unwrap_or(d.name),
        }
    }

    /// Type, default, valid values and documentation.
    pub fn definition(&self) -> &'static Definition {
        match self {
            BrokerConfig::Own(d) | BrokerConfig::TopicDefault(d) => d,
        }
    }

    pub fn dynamic(&self) -> bool {
        self.definition().dynamic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_unique_and_defaults_valid() {
        let names: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted);
        let brokers: Vec<&str> = broker_configs().iter().map(|b| b.name()).collect();
        let mut unique = brokers.clone();
        unique.dedup();
        assert_eq!(brokers, unique, "a broker name defined twice");
        for d in TOPIC_CONFIGS.iter().chain(BROKER_ONLY) {
            assert!(
                super::super::rules::normalize(d, d.default).is_ok(),
                "default of {}",
                d.name
            );
        }
    }

    #[test]
    fn the_broker_set_clients_describe_is_there() {
        for name in [
            "auto.create.topics.enable",
            "default.replication.factor",
            "num.partitions",
            "delete.topic.enable",
            "log.retention.ms",
            "log.retention.bytes",
            "log.segment.bytes",
            "min.insync.replicas",
            "message.max.bytes",
            "log.cleanup.policy",
            "compression.type",
        ] {
            assert!(broker_config(name).is_some(), "{name}");
        }
        assert!(broker_config("inter.broker.protocol.version").is_none());
    }
}
