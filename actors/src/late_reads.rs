//! Partition reads that outlived their Fetch (`partition_read.rs`), kept for the next
//! Fetch of the partition from the same place. At most one per partition, so a store
//! that stops answering holds one task per partition read, not one per Fetch; a read
//! nobody took is dropped once it is done and stale.
//!
//! Each read runs as a task that publishes its outcome on a watch channel: whether it
//! ended is then known without anyone polling it (a `Shared` future only learns that
//! when polled, so a kept read nobody took looked unfinished forever and kept every
//! other Fetch of its partition waiting).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::future::Future;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::store::TopicPartition;
use crate::txn_index::Aborted;

/// A done read nobody took by then is stale: its consumer moved on or left.
const KEPT_FOR: Duration = Duration::from_secs(30);

/// What one partition gives a fetch.
#[derive(Clone, Debug)]
pub struct PartitionRead {
    pub batches: Vec<Bytes>,
    pub log_start: i64,
    pub high: i64,
    /// The last stable offset; the high watermark for a read-uncommitted fetch.
    pub stable: i64,
    /// Aborted transactions among the batches (read committed only).
    pub aborted: Vec<Aborted>,
}

/// A partition read's outcome: its answer, or the Kafka error for the partition.
pub type ReadOutcome = Result<PartitionRead, ResponseError>;

/// A read running as a task of its own, shared by the Fetch that started it and the
/// one that takes it.
#[derive(Clone)]
pub struct LateRead(watch::Receiver<Option<ReadOutcome>>);

impl LateRead {
    /// Runs `read` as a task of its own.
    pub fn start(read: impl Future<Output = ReadOutcome> + Send + 'static) -> LateRead {
        let (outcome, read_outcome) = watch::channel(None);
        tokio::spawn(async move {
            outcome.send_replace(Some(read.await));
        });
        LateRead(read_outcome)
    }

    /// Whether the read ended, a panicked one (its sender gone) too.
    fn ended(&self) -> bool {
        self.0.borrow().is_some() || self.0.has_changed().is_err()
    }

    /// The read's outcome, once it ended.
    pub async fn outcome(mut self) -> ReadOutcome {
        match self.0.wait_for(Option::is_some).await {
            Ok(outcome) => outcome
                .clone()
                .unwrap_or(Err(ResponseError::UnknownServerError)),
            Err(_) => Err(ResponseError::UnknownServerError),
        }
    }
}

/// Where a partition read starts and what it may bring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadAt {
    pub offset: i64,
    pub max_bytes: usize,
    pub read_committed: bool,
}

struct Late {
    at: ReadAt,
    read: LateRead,
    kept: Instant,
}

/// How a partition read goes on from what is kept.
pub enum Next {
    Late(LateRead),
    New,
    Busy,
}

#[derive(Default)]
pub struct LateReads {
    reads: Mutex<HashMap<TopicPartition, Late>>,
}

impl LateReads {
    /// What a read of the partition from `at` starts from: the late read from exactly
    /// there, or a new one (a finished late read from elsewhere is dropped), or none
    /// while a late read from elsewhere still runs.
    pub fn take(&self, tp: &TopicPartition, at: ReadAt) -> Next {
        let mut reads = self.reads.lock();
        let Some(late) = reads.get(tp) else {
            return Next::New;
        };
        if late.at != at && !late.read.ended() {
            return Next::Busy;
        }
        match reads.remove(tp) {
            Some(late) if late.at == at => Next::Late(late.read),
            _ => Next::New,
        }
    }

    /// Keeps a read that did not finish in time; stale finished ones go.
    pub fn keep(&self, tp: &TopicPartition, at: ReadAt, read: LateRead) {
        let mut reads = self.reads.lock();
        let now = Instant::now();
        reads.retain(|_, l| !l.read.ended() || now - l.kept < KEPT_FOR);
        let kept = now;
        reads.insert(tp.clone(), Late { at, read, kept });
    }

    /// A deleted topic's reads go with it.
    pub fn forget_topic(&self, topic: &Arc<str>) {
        self.reads.lock().retain(|tp, _| tp.topic != *topic);
    }
}
