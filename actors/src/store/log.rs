//! The log port: what a partition log needs and nothing else. Every call is a
//! [`LogCall`] answered by a [`LogAnswer`], so one layer can time, count or trace all
//! of them (`metrics::MeteredLog`); [`Logs`] gives the calls their types back.

use std::sync::Arc;

use crate::store::{
    AppendBatch, Appended, Compacted, ProducerBatch, ReadBatches, StoreError, StoreFuture,
    StoreResult, TimestampedOffset, TopicLimits, TopicPartition, Watermarks,
};

/// A topic's partition logs as the store holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogInfo {
    pub name: Arc<str>,
    pub partitions: i32,
    /// Tells this set of logs from an earlier one of the same name: a topic deleted and
    /// made again (by anyone, a native Iggy client too) is another incarnation.
    pub incarnation: u64,
}

/// One call to a log store.
#[derive(Debug)]
pub enum LogCall {
    /// Every topic's logs, whoever made them.
    List,
    /// Makes a topic's logs with `limits` applied; `TopicExists` if the name is taken.
    Create {
        name: Arc<str>,
        partitions: i32,
        limits: TopicLimits,
    },
    /// Deletes a topic's logs with their records.
    Delete(Arc<str>),
    /// Grows a topic's logs to `partitions` in all, the new ones empty, and applies
    /// `limits` again (a size cap may count the partitions); `HasPartitions` when the
    /// topic already has that many or more. Existing partitions and their records stay.
    AddPartitions {
        name: Arc<str>,
        partitions: i32,
        limits: TopicLimits,
    },
    /// Applies new limits to a topic's logs.
    SetLimits {
        name: Arc<str>,
        limits: TopicLimits,
    },
    /// Appends batches in order, one after the other, and says where each landed (one
    /// answer per batch, in order). Calls for one partition are never concurrent (the
    /// log slots serialize them); when the answer comes the batches survive a crash of
    /// the gateway process. Several batches in one call are one write where the engine
    /// can make it one (group commit: `log_slot.rs`). Only a log slot calls it; an
    /// engine that [`LogStore::blocks_in_append`] may block where it is polled.
    Append {
        tp: TopicPartition,
        batches: Vec<AppendBatch>,
    },
    /// Batches holding `offset` and after, up to about `max_bytes` (always at least one
    /// batch when any exists, as Kafka does).
    Read {
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
    },
    /// As `Read`, but a batch may come as its header alone (its first
    /// `records::HEADER_LEN` bytes); control batches come whole. What a transaction
    /// index needs to learn a partition's transactions without reading every record;
    /// an engine that cannot read less answers as `Read` does.
    ReadHeaders {
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
    },
    Watermarks(TopicPartition),
    /// The first record whose timestamp is at or after `timestamp`.
    OffsetForTimestamp {
        tp: TopicPartition,
        timestamp: i64,
    },
    /// The record with the largest timestamp (the first of them on ties).
    MaxTimestamp(TopicPartition),
    /// Moves the partition's log start up to `offset` (-1: the high watermark), as
    /// Kafka's DeleteRecords: records below it are never read again, and it survives
    /// restarts. An offset below the log start changes nothing; one past the high
    /// watermark (or below -1) is `OffsetOutOfRange`. Answers the watermarks after.
    DeleteRecords {
        tp: TopicPartition,
        offset: i64,
    },
    /// The last few batches of each idempotent producer, oldest first, so sequence
    /// checks survive a restart.
    ProducerHistory(TopicPartition),
    /// Bytes each of a topic's partitions takes in the store, by partition number
    /// (DescribeLogDirs): what the engine keeps, its own framing included.
    Sizes(Arc<str>),
    /// Removes every record below `below` whose offset `keep` (sorted) does not hold;
    /// the offsets of the records kept never change. The compactor decides what stays
    /// (`compactor`); the engine only carries it out, and only where
    /// [`LogStore::compacts`] says it can. `below` is a batch boundary under the high
    /// watermark; the partition's log start stays where it is.
    Compact {
        tp: TopicPartition,
        below: i64,
        keep: Arc<[i64]>,
    },
}

impl LogCall {
    /// The call's name, as metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            LogCall::List => "topics",
            LogCall::Create { .. } => "create_topic",
            LogCall::Delete(_) => "delete_topic",
            LogCall::AddPartitions { .. } => "add_partitions",
            LogCall::SetLimits { .. } => "set_limits",
            LogCall::Append { .. } => "append",
            LogCall::Read { .. } => "read",
            LogCall::ReadHeaders { .. } => "read_headers",
            LogCall::Watermarks(_) => "watermarks",
            LogCall::OffsetForTimestamp { .. } => "offset_for_timestamp",
            LogCall::MaxTimestamp(_) => "max_timestamp",
            LogCall::DeleteRecords { .. } => "delete_records",
            LogCall::ProducerHistory(_) => "producer_batches",
            LogCall::Sizes(_) => "sizes",
            LogCall::Compact { .. } => "compact",
        }
    }
}

/// What a [`LogCall`] gets back, one variant per kind of call.
#[derive(Debug)]
pub enum LogAnswer {
    Listed(Vec<LogInfo>),
    Created(LogInfo),
    Done,
    Appended(Vec<Appended>),
    Read(ReadBatches),
    Watermarks(Watermarks),
    Record(Option<TimestampedOffset>),
    ProducerHistory(Vec<ProducerBatch>),
    Sizes(Vec<u64>),
    Compacted(Compacted),
}

/// Partition logs: the embedded store's keyspaces, or Iggy's partitions.
pub trait LogStore: Send + Sync + 'static {
    fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer>;
    /// Where the logs live, named as DescribeLogDirs names a broker's log directory.
    fn log_dir(&self) -> String;
    /// True when writers other than this gateway append to the logs (native Iggy
    /// producers): their appends raise no signal, so waiting fetches also re-read.
    fn external_appends(&self) -> bool {
        false
    }
    /// True when the engine stores a batch record by record (Iggy messages): Produce
    /// then keeps the records it decompressed to check them (`AppendBatch::records`),
    /// so they are decompressed once. Otherwise it only checks them and keeps nothing.
    fn splits_batches(&self) -> bool {
        false
    }
    /// True when the engine carries out [`LogCall::Compact`]; the gateway starts its
    /// compactor only then.
    fn compacts(&self) -> bool {
        false
    }
    /// True when an append does blocking work (file writes) right where its future is
    /// polled: each log slot then runs on a thread of its own (`gateway::Threads`), so
    /// the write holds up no connection and costs no hop to a blocking pool and back.
    /// An engine that appends over the network leaves the slots on the workers' threads.
    fn blocks_in_append(&self) -> bool {
        false
    }
    /// Offsets a consumer group committed (`None`: deleted), once they stand: an
    /// engine that keeps consumers' progress of its own (Iggy's consumer groups, so its
    /// tools and retention see Kafka groups) follows them, without holding up the
    /// commit; others ignore them. What Kafka clients read never depends on it.
    fn committed(&self, _commits: &[GroupCommit]) {}
}

/// One committed offset as [`LogStore::committed`] hears of it: group, partition, and
/// the offset (the next to read), or `None` when the group's entry was deleted.
pub type GroupCommit = (Arc<str>, TopicPartition, Option<i64>);

/// A log store with typed calls. Cheap to clone.
#[derive(Clone)]
pub struct Logs(Arc<dyn LogStore>);

/// Each typed call: the [`LogCall`] it sends and the [`LogAnswer`] it expects.
macro_rules! typed_calls {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $out:ty = $call:expr => $answer:ident;)*) => {
        impl Logs {
            $($(#[$doc])* pub async fn $name(&self, $($arg: $ty),*) -> StoreResult<$out> {
                let call = $call;
                let name = call.name();
                match self.0.call(call).await? {
                    LogAnswer::$answer(answer) => Ok(answer),
                    _ => Err(StoreError::fatal(format!(
                        "the log store answered {name} with another kind of answer"
                    ))),
                }
            })*
        }
    };
}

typed_calls! {
    list() -> Vec<LogInfo> = LogCall::List => Listed;
    create(name: Arc<str>, partitions: i32, limits: TopicLimits) -> LogInfo =
        LogCall::Create { name, partitions, limits } => Created;
    append_all(tp: TopicPartition, batches: Vec<AppendBatch>) -> Vec<Appended> =
        LogCall::Append { tp, batches } => Appended;
    read(tp: TopicPartition, offset: i64, max_bytes: usize) -> ReadBatches =
        LogCall::Read { tp, offset, max_bytes } => Read;
    read_headers(tp: TopicPartition, offset: i64, max_bytes: usize) -> ReadBatches =
        LogCall::ReadHeaders { tp, offset, max_bytes } => Read;
    watermarks(tp: TopicPartition) -> Watermarks = LogCall::Watermarks(tp) => Watermarks;
    offset_for_timestamp(tp: TopicPartition, timestamp: i64) -> Option<TimestampedOffset> =
        LogCall::OffsetForTimestamp { tp, timestamp } => Record;
    max_timestamp(tp: TopicPartition) -> Option<TimestampedOffset> =
        LogCall::MaxTimestamp(tp) => Record;
    delete_records(tp: TopicPartition, offset: i64) -> Watermarks =
        LogCall::DeleteRecords { tp, offset } => Watermarks;
    producer_history(tp: TopicPartition) -> Vec<ProducerBatch> =
        LogCall::ProducerHistory(tp) => ProducerHistory;
    sizes(name: Arc<str>) -> Vec<u64> = LogCall::Sizes(name) => Sizes;
    compact(tp: TopicPartition, below: i64, keep: Arc<[i64]>) -> Compacted =
        LogCall::Compact { tp, below, keep } => Compacted;
}

impl Logs {
    pub fn new(store: Arc<dyn LogStore>) -> Logs {
        Logs(store)
    }

    /// Tells the engine of offsets that now stand ([`LogStore::committed`]).
    pub fn committed(&self, commits: &[GroupCommit]) {
        self.0.committed(commits)
    }

    /// Appends one batch (`append_all` of one).
    pub async fn append(&self, tp: TopicPartition, batch: AppendBatch) -> StoreResult<Appended> {
        let mut appended = self.append_all(tp, vec![batch]).await?;
        match (appended.pop(), appended.is_empty()) {
            (Some(one), true) => Ok(one),
            _ => Err(StoreError::fatal(
                "the log store answered an append of one batch with another number of answers",
            )),
        }
    }

    pub async fn delete(&self, name: Arc<str>) -> StoreResult<()> {
        self.done(LogCall::Delete(name)).await
    }

    pub async fn add_partitions(
        &self,
        name: Arc<str>,
        partitions: i32,
        limits: TopicLimits,
    ) -> StoreResult<()> {
        self.done(LogCall::AddPartitions {
            name,
            partitions,
            limits,
        })
        .await
    }

    pub async fn set_limits(&self, name: Arc<str>, limits: TopicLimits) -> StoreResult<()> {
        self.done(LogCall::SetLimits { name, limits }).await
    }

    async fn done(&self, call: LogCall) -> StoreResult<()> {
        let name = call.name();
        match self.0.call(call).await? {
            LogAnswer::Done => Ok(()),
            _ => Err(StoreError::fatal(format!(
                "the log store answered {name} with another kind of answer"
            ))),
        }
    }

    pub fn external_appends(&self) -> bool {
        self.0.external_appends()
    }

    pub fn log_dir(&self) -> String {
        self.0.log_dir()
    }

    pub fn splits_batches(&self) -> bool {
        self.0.splits_batches()
    }

    pub fn compacts(&self) -> bool {
        self.0.compacts()
    }
}
