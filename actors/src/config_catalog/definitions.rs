//! Every configuration the gateway knows: Kafka 4.1's topic configurations (`TopicConfig`,
//! `LogConfig`) with their broker-level synonyms (`ServerTopicConfigSynonyms`), and every
//! broker configuration of Kafka 4.4 ([`KAFKA_BROKER_CONFIGS`], generated from Kafka's own
//! definitions), each alterable where Kafka's is. Types, defaults and valid values are
//! Kafka's; the topic configurations' documentation is Kafka's, shortened; the broker
//! configurations' is Kafka's as DescribeConfigs reports it.

pub use super::kafka_broker_configs::KAFKA_BROKER_CONFIGS;

/// A configuration's data type, with its code in DescribeConfigs (v3+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    /// A name no definition knows (Kafka stores unknown broker configurations).
    Unknown = 0,
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    /// Never described with its value (Kafka's sensitive configurations).
    Password = 9,
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
    /// One of these words, in any case.
    OneOfAnyCase(&'static [&'static str]),
    /// Not empty (a string or a list).
    NonEmpty,
    /// A comma-separated list of these words (possibly empty).
    ListOf(&'static [&'static str]),
    /// `[partition]:[broker]` pairs, or `*` (replica throttle lists).
    ThrottledReplicas,
    /// A multiple of this.
    MultipleOf(i64),
}

/// Where a broker configuration may be changed while brokers run: Kafka's "update
/// mode" (`DynamicBrokerConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only in the broker's static configuration.
    ReadOnly,
    /// Per broker (resource name = its id), never for every broker ("").
    PerBroker,
    /// Per broker or for every broker.
    ClusterWide,
    /// Only with a listener prefix (`listener.name.<name>.ssl.keystore.location`): Kafka's
    /// dynamic security configurations.
    PerListener,
}

/// One configuration.
#[derive(Clone, Copy, Debug)]
pub struct Definition {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The value when nothing sets it, as DescribeConfigs shows it; None is Kafka's null.
    pub default: Option<&'static str>,
    pub rule: Rule,
    /// Topic configurations: the broker configuration that sets the default for every
    /// topic. Broker configurations: none.
    pub synonym: Option<&'static str>,
    /// Broker configurations: where AlterConfigs may change it. Topic configurations are
    /// always alterable (ClusterWide).
    pub mode: Mode,
    pub doc: &'static str,
}

impl Definition {
    /// A broker configuration (the generated table's rows).
    pub const fn broker(
        name: &'static str,
        kind: ConfigType,
        default: Option<&'static str>,
        rule: Rule,
        mode: Mode,
        doc: &'static str,
    ) -> Definition {
        Definition {
            name,
            kind,
            default,
            rule,
            synonym: None,
            mode,
            doc,
        }
    }

    /// The default as text; a null default reads as empty (list operations start from it).
    pub fn default_text(&self) -> &'static str {
        self.default.unwrap_or_default()
    }
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
        default: Some(default),
        rule,
        synonym,
        mode: Mode::ClusterWide,
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

/// The cluster-level `min.insync.replicas` Kafka's controller writes when Eligible Leader
/// Replicas are enabled (KIP-966, the default of a Kafka 4.1+ cluster): described for
/// every broker as DYNAMIC_DEFAULT_BROKER_CONFIG even when nobody set it, never removed,
/// and not alterable per broker.
pub const ELR_MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// The gateway's own topic configuration: how the Iggy backend stores the topic's
/// records (`docs/IGGY_MAPPING.md`, "The batch form"). Not Kafka's, so described only on
/// a topic that sets it.
pub const IGGY_MESSAGE_FORMAT: Definition = topic(
    "iggy.message.format",
    Str,
    "record",
    Rule::OneOf(&["record", "batch"]),
    None,
    "How the Iggy backend stores this topic's records: \"record\", one Iggy message per Kafka record, readable by Iggy's own clients; \"batch\", each Kafka batch as produced (compressed if it was) in one Iggy message, for topics only Kafka clients read. Takes effect for the batches written after a change; the embedded store always keeps batches whole.",
);

/// A topic configuration: Kafka's, or the gateway's own.
pub fn topic_config(name: &str) -> Option<&'static Definition> {
    (TOPIC_CONFIGS.iter().chain([&IGGY_MESSAGE_FORMAT])).find(|d| d.name == name)
}

/// The topic configuration whose default a broker configuration sets.
pub fn topic_of_synonym(broker: &str) -> Option<&'static Definition> {
    TOPIC_CONFIGS.iter().find(|d| d.synonym == Some(broker))
}

fn kafka_broker_config(name: &str) -> Option<&'static Definition> {
    KAFKA_BROKER_CONFIGS
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &KAFKA_BROKER_CONFIGS[i])
}

/// A broker configuration Kafka 4.4 defines, as the gateway serves it.
pub fn broker_config(name: &str) -> Option<BrokerConfig> {
    let kafka = kafka_broker_config(name)?;
    let values = topic_of_synonym(name).unwrap_or(kafka);
    Some(BrokerConfig { kafka, values })
}

/// Every broker configuration Kafka 4.4 defines, sorted by name.
pub fn broker_configs() -> impl Iterator<Item = BrokerConfig> {
    KAFKA_BROKER_CONFIGS
        .iter()
        .filter_map(|d| broker_config(d.name))
}

/// A broker configuration: Kafka's definition, and what its values follow.
#[derive(Clone, Copy, Debug)]
pub struct BrokerConfig {
    /// Kafka's: name, documentation.
    kafka: &'static Definition,
    /// Type, default and valid values: the topic configuration's for a topic synonym
    /// (`log.retention.ms` follows `retention.ms`, Kafka's effective default rather than
    /// its null), else Kafka's.
    values: &'static Definition,
}

impl BrokerConfig {
    pub fn name(&self) -> &'static str {
        self.kafka.name
    }

    /// Type, default and valid values (the name is the topic configuration's for a
    /// topic synonym: the feature-level rules are named by it).
    pub fn definition(&self) -> &'static Definition {
        self.values
    }

    pub fn doc(&self) -> &'static str {
        self.kafka.doc
    }

    pub fn mode(&self) -> Mode {
        self.kafka.mode
    }

    /// What Kafka's DescribeConfigs says of it: read-only unless some mode may change it.
    pub fn read_only(&self) -> bool {
        self.mode() == Mode::ReadOnly
    }
}

/// What an unknown broker configuration is checked by: nothing, as Kafka stores any
/// name it does not know (its value described as null, sensitive and read-only).
pub const UNKNOWN_BROKER_CONFIG: Definition = Definition::broker(
    "",
    ConfigType::Unknown,
    None,
    Rule::Any,
    Mode::ClusterWide,
    "",
);

#[cfg(test)]
mod tests {
    use super::super::rules::normalize;
    use super::*;

    fn sorted_unique(names: &[&str]) -> bool {
        names.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn tables_are_sorted_unique_and_defaults_valid() {
        let names: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
        assert!(sorted_unique(&names));
        let brokers: Vec<&str> = KAFKA_BROKER_CONFIGS.iter().map(|d| d.name).collect();
        assert!(
            sorted_unique(&brokers),
            "generated table sorted, each name once"
        );
        // Kafka leaves a required list empty by default (the quorum's voters or
        // bootstrap servers are set by whoever runs it): only those may break their rule.
        let broken: Vec<&str> = TOPIC_CONFIGS
            .iter()
            .chain(KAFKA_BROKER_CONFIGS)
            .filter(|d| d.default.is_some_and(|v| normalize(d, v).is_err()))
            .map(|d| d.name)
            .collect();
        assert_eq!(
            broken,
            [
                "controller.quorum.bootstrap.servers",
                "controller.quorum.voters"
            ]
        );
    }

    #[test]
    fn every_topic_synonym_is_a_kafka_broker_config() {
        for synonym in TOPIC_CONFIGS.iter().filter_map(|d| d.synonym) {
            let b = broker_config(synonym).unwrap_or_else(|| panic!("{synonym}"));
            assert_eq!(b.mode(), Mode::ClusterWide, "{synonym}");
        }
    }

    #[test]
    fn modes_are_kafkas() {
        let mode = |name| broker_config(name).unwrap().mode();
        assert_eq!(
            mode("sasl.kerberos.min.time.before.relogin"),
            Mode::PerBroker
        );
        assert_eq!(mode("log.cleaner.threads"), Mode::ClusterWide);
        assert_eq!(mode("delete.topic.enable"), Mode::ReadOnly);
        // Static in Kafka, set by the gateway's settings (docs/CONFIGS.md).
        for name in [
            "auto.create.topics.enable",
            "default.replication.factor",
            "num.partitions",
            "transaction.max.timeout.ms",
            "transactional.id.expiration.ms",
        ] {
            assert_eq!(mode(name), Mode::ReadOnly, "{name}");
        }
        assert_eq!(mode("ssl.keystore.location"), Mode::PerListener);
        assert_eq!(
            mode("follower.replication.throttled.rate"),
            Mode::ClusterWide
        );
        assert!(broker_config("inter.broker.protocol.version").is_none());
        // A topic synonym's values follow the topic configuration.
        let b = broker_config("log.retention.ms").unwrap();
        assert_eq!(b.definition().default, Some("604800000"));
        assert!(b.doc().contains("milliseconds"), "{}", b.doc());
    }
}
