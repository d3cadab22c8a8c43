//! The vocabulary of the storage ports: partitions, batches, watermarks, what a topic
//! and a gateway are, and the errors a store answers with. Calls are async so a
//! network store fits, and boxed so the ports stay object-safe.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use uuid::Uuid;

use crate::protocol::records::BatchHeader;

pub type StoreResult<T> = Result<T, StoreError>;
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("topic '{0}' already exists")]
    TopicExists(String),
    #[error("topic '{0}' does not exist")]
    UnknownTopic(String),
    #[error("partition {partition} of topic '{topic}' does not exist")]
    UnknownPartition { topic: String, partition: i32 },
    /// Partitions asked for that would not be an increase: the topic has `partitions`.
    #[error("topic '{topic}' already has {partitions} partitions")]
    HasPartitions { topic: String, partitions: i32 },
    /// A log start asked for past the high watermark (DeleteRecords).
    #[error("offset {offset} of {tp} is out of range: the high watermark is {high}")]
    OffsetOutOfRange {
        tp: TopicPartition,
        offset: i64,
        high: i64,
    },
    /// A failure worth retrying: the store is busy, restarting or unreachable.
    #[error("storage temporarily unavailable: {what}{}", because(cause))]
    Unavailable {
        what: String,
        #[source]
        cause: Option<Cause>,
    },
    /// A failure retrying will not fix (disk error, corrupt data).
    #[error("storage failure: {what}{}", because(cause))]
    Fatal {
        what: String,
        #[source]
        cause: Option<Cause>,
    },
}

/// What a store failure came from, kept as its source.
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// The cause in a failure's message too: most log lines and Kafka error messages show
/// the message alone.
fn because(cause: &Option<Cause>) -> String {
    cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default()
}

impl StoreError {
    /// A failure worth retrying, described by `what`.
    pub fn unavailable(what: impl Into<String>) -> StoreError {
        StoreError::Unavailable {
            what: what.into(),
            cause: None,
        }
    }

    /// A failure worth retrying: `what` failed because of `cause`.
    pub fn unavailable_from(
        what: impl Into<String>,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> StoreError {
        StoreError::Unavailable {
            what: what.into(),
            cause: Some(Arc::from(cause.into())),
        }
    }

    /// A failure retrying will not fix, described by `what`.
    pub fn fatal(what: impl Into<String>) -> StoreError {
        StoreError::Fatal {
            what: what.into(),
            cause: None,
        }
    }

    /// A failure retrying will not fix: `what` failed because of `cause`.
    pub fn fatal_from(
        what: impl Into<String>,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> StoreError {
        StoreError::Fatal {
            what: what.into(),
            cause: Some(Arc::from(cause.into())),
        }
    }

    /// The Kafka error a client gets when the backend fails: retriable when retrying
    /// can help.
    pub fn code(&self) -> ResponseError {
        match self {
            StoreError::UnknownTopic(_) | StoreError::UnknownPartition { .. } => {
                ResponseError::UnknownTopicOrPartition
            }
            StoreError::TopicExists(_) => ResponseError::TopicAlreadyExists,
            StoreError::HasPartitions { .. } => ResponseError::InvalidPartitions,
            StoreError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
            StoreError::Unavailable { .. } => ResponseError::RequestTimedOut,
            StoreError::Fatal { .. } => ResponseError::KafkaStorageError,
        }
    }
}

/// One partition of one topic, by Kafka name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Arc<str>,
    pub partition: i32,
}

impl TopicPartition {
    /// The partition's slot among `n` (log slots, offset slots, Iggy clients): a
    /// stable hash, so the same partition always lands on the same one.
    pub fn slot(&self, n: usize) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        (h.finish() % n as u64) as usize
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// What the gateway knows about a topic; stored by the backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: Arc<str>,
    pub id: Uuid,
    pub partitions: i32,
    /// Replication factor the client asked for. Backends report what they really keep.
    pub replication_factor: i16,
    /// Topic configurations set explicitly (name → value), as validated by the config catalog.
    pub configs: BTreeMap<String, String>,
}

/// What a backend enforces of a topic's configuration, worked out by the config catalog
/// from the topic's and the broker's values (`docs/CONFIGS.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopicLimits {
    /// Records older than this many milliseconds may go; `None` keeps them.
    pub retention_ms: Option<u64>,
    /// Bytes each partition keeps at most; `None` is no limit.
    pub retention_bytes: Option<u64>,
    /// Size of the log's segments; `None` leaves the backend's own.
    pub segment_bytes: Option<u64>,
}

/// Named string maps every gateway on one backend shares (dynamic broker
/// configurations, finalized features): name → (key → value).
pub type ClusterConfigs = BTreeMap<String, BTreeMap<String, String>>;

/// A validated record batch to append. `bytes` is the batch exactly as it will be
/// served back, except its base offset, which the backend assigns; `records` is its
/// records section decompressed, as Produce checked it, for an engine that stores
/// records one by one (`LogStore::splits_batches`; so a batch is decompressed at most
/// once), and empty for the others. `whole`: the topic asks an engine that splits
/// batches to keep this one whole (`iggy.message.format=batch`); engines that keep
/// batches anyway ignore it.
#[derive(Clone, Debug)]
pub struct AppendBatch {
    pub header: BatchHeader,
    pub bytes: Bytes,
    pub records: Bytes,
    pub whole: bool,
}

/// A partition's stored bytes before and after a [`crate::store::LogCall::Compact`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Of `bytes_after`, those below the compaction's end: the clean part.
    pub cleaned_bytes: u64,
}

/// Offsets that bound a partition's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// First offset still stored.
    pub log_start: i64,
    /// Offset the next appended record gets; every record below it is committed.
    pub high: i64,
}

impl Watermarks {
    /// Where DeleteRecords below `offset` (-1: the high watermark) moves the log start:
    /// `None` when it is there already or beyond, OFFSET_OUT_OF_RANGE past the high
    /// watermark. Every engine decides by this, under its own lock.
    pub fn moved_start(&self, tp: &TopicPartition, offset: i64) -> StoreResult<Option<i64>> {
        let start = if offset == -1 { self.high } else { offset };
        if start < 0 || start > self.high {
            return Err(StoreError::OffsetOutOfRange {
                tp: tp.clone(),
                offset,
                high: self.high,
            });
        }
        Ok((start > self.log_start).then_some(start))
    }
}

/// Where an appended batch landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: i64,
    /// The log's bounds right after the append.
    pub watermarks: Watermarks,
}

/// Record batches read from a partition, in Kafka wire format with offsets set.
/// `watermarks`: the log's bounds as the read saw them; an engine that has not yet
/// asked where the log starts may answer the first offset it read as its start (Iggy's
/// does), so they judge the offset read, not an earlier one.
/// `read_ahead`: the engine had started this read before it was asked for (Iggy's
/// read-ahead); counted, so its hit rate shows.
/// `stored_read`: bytes of stored data the engine read to make this answer, what it
/// read and did not serve included (Iggy's polls); counted beside the batches' bytes,
/// so read amplification shows.
/// `compressions`: the compressed batches an engine that stores records one by one
/// put back together for this answer (Iggy's).
#[derive(Clone, Debug, Default)]
pub struct ReadBatches {
    pub batches: Vec<Bytes>,
    pub watermarks: Watermarks,
    pub read_ahead: bool,
    pub stored_read: u64,
    pub compressions: Compressions,
}

/// Compressed batches a read put back together, by where their records section came
/// from: kept from their Produce, or compressed for the read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compressions {
    pub kept: u32,
    pub made: u32,
}

/// One record located by timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampedOffset {
    pub offset: i64,
    pub timestamp: i64,
}

/// An idempotent producer's batch, as kept for duplicate and sequence checks, or its
/// transaction marker, kept for its epoch: a marker carries no sequence (-1 for both,
/// as on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub base_offset: i64,
    pub last_offset: i64,
}

/// Data batches a producer history keeps per producer, as Kafka does.
pub const PRODUCER_HISTORY_BATCHES: usize = 5;

impl ProducerBatch {
    /// A marker of `producer_id` at `offset`.
    pub fn marker(producer_id: i64, producer_epoch: i16, offset: i64) -> ProducerBatch {
        ProducerBatch {
            producer_id,
            producer_epoch,
            first_sequence: -1,
            last_sequence: -1,
            base_offset: offset,
            last_offset: offset,
        }
    }

    pub fn is_marker(&self) -> bool {
        self.first_sequence < 0
    }

    /// A partition's producer history from its producers' batches and markers, newest
    /// first: of each producer its last [`PRODUCER_HISTORY_BATCHES`] data batches and
    /// its last marker, oldest first.
    pub fn history(newest_first: impl IntoIterator<Item = ProducerBatch>) -> Vec<ProducerBatch> {
        let mut seen: HashMap<i64, (usize, bool)> = HashMap::new();
        let mut kept: Vec<ProducerBatch> = (newest_first.into_iter())
            .filter(|b| {
                let (batches, marker) = seen.entry(b.producer_id).or_default();
                match b.is_marker() {
                    true => !std::mem::replace(marker, true),
                    false => {
                        *batches += 1;
                        *batches <= PRODUCER_HISTORY_BATCHES
                    }
                }
            })
            .collect();
        kept.reverse();
        kept
    }
}

/// A consumer group's committed position in one partition, kept as OffsetCommit sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedOffset {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// A gateway as it announces itself to the others sharing a backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    /// Where clients reach it, one per listener, in the order the listeners are
    /// configured; never empty.
    pub endpoints: Vec<Endpoint>,
}

/// The advertised address of one listener (Kafka's `advertised.listeners` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub listener: String,
    pub host: String,
    pub port: u16,
}

impl Node {
    /// Where clients that came through `listener` reach this node; `None` when the
    /// node has no listener of that name (Kafka leaves such brokers out).
    pub fn endpoint(&self, listener: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.listener == listener)
    }

    /// The node's identity among gateways: its first listener's `host:port`.
    pub fn address(&self) -> String {
        self.endpoints
            .first()
            .map_or_else(String::new, |e| format!("{}:{}", e.host, e.port))
    }
}

/// A SCRAM mechanism (RFC 5802, RFC 7677), with the type number Kafka gives it in
/// AlterUserScramCredentials and DescribeUserScramCredentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The SASL name (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Kafka's type number: 1 for SHA-256, 2 for SHA-512.
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_kafka_type(t: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == t)
    }
}

/// What is kept of a SCRAM password: enough to verify a client's proof, never the
/// password or the salted password. `Debug` hides the keys.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ScramCredential(iterations={}, keys hidden)",
            self.iterations
        )
    }
}

/// Every stored SCRAM credential: user → mechanism → credential.
pub type ScramCredentials = BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>;
