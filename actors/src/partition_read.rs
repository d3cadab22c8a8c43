//! A Fetch's read of one partition, bounded by the Fetch's deadline.
//!
//! The read runs as a task of its own: a store that does not answer must not hold the
//! Fetch past `max_wait_ms`, and a store call abandoned halfway could leave its
//! connection out of step. A read still running at the deadline is kept
//! (`late_reads.rs`) and the partition answered empty; the next Fetch of the partition
//! from the same place takes that read instead of starting another.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::time::{timeout_at, Instant};

use crate::late_reads::{LateRead, Next, PartitionRead, ReadAt, ReadOutcome};
use crate::partitions::Partitions;
use crate::protocol::records;
use crate::store::{ReadBatches, StoreError, TopicPartition};
use crate::topic_admin::internal::is_internal;

impl Partitions {
    /// The partition read from `at`, or `None` when it is not done by `deadline`
    /// (it goes on, for the next Fetch from the same place).
    pub async fn read_by(
        &self,
        deadline: Instant,
        tp: &TopicPartition,
        at: ReadAt,
    ) -> Result<Option<PartitionRead>, ResponseError> {
        let read = match self.late_reads().take(tp, at) {
            Next::Late(read) => read,
            // Another place's read is still running: a stuck store gets no second one.
            Next::Busy => return Ok(None),
            Next::New => {
                let (me, tp) = (self.clone(), tp.clone());
                LateRead::start(async move { me.read(&tp, at).await })
            }
        };
        match timeout_at(deadline, read.clone().outcome()).await {
            Ok(outcome) => outcome.map(Some),
            Err(_) => {
                tracing::debug!(partition = %tp, offset = at.offset, "read outlived its fetch");
                self.late_reads().keep(tp, at, read);
                Ok(None)
            }
        }
    }

    /// One partition's batches from `at.offset`. Read committed, they stop at the last
    /// stable offset, leave out fenced batches, and come with the aborted transactions
    /// among them, whose records consumers drop (`txn_index.rs`).
    async fn read(&self, tp: &TopicPartition, at: ReadAt) -> ReadOutcome {
        let ReadAt {
            offset,
            max_bytes,
            read_committed,
        } = at;
        if is_internal(&tp.topic) {
            // Its contents live in the offset store: an empty log.
            return match offset {
                0 => Ok(PartitionRead {
                    batches: Vec::new(),
                    log_start: 0,
                    high: 0,
                    stable: 0,
                    aborted: Vec::new(),
                }),
                _ => Err(ResponseError::OffsetOutOfRange),
            };
        }
        let read = if read_committed {
            self.read_committed(tp, offset, max_bytes.max(1)).await
        } else {
            self.logs().read(tp.clone(), offset, max_bytes.max(1)).await
        };
        let failed = |e: StoreError| {
            // A topic deleted while a fetch waits on it is routine (Iggy names it an
            // unknown partition: its server says the same for both); anything else is not.
            match e {
                StoreError::UnknownTopic(_) | StoreError::UnknownPartition { .. } => {
                    tracing::debug!(partition = %tp, "fetched topic was deleted")
                }
                _ => tracing::warn!(partition = %tp, error = %e, "fetch read failed"),
            }
            e.code()
        };
        let ReadBatches {
            mut batches,
            watermarks: w,
            ..
        } = read.map_err(failed)?;
        if offset < w.log_start || offset > w.high {
            tracing::debug!(partition = %tp, offset, log_start = w.log_start, high = w.high, "fetch offset out of range");
            return Err(ResponseError::OffsetOutOfRange);
        }
        let (stable, aborted) = if read_committed {
            let stable = self
                .stable(tp, (offset, w.high), &batches)
                .await
                .map_err(failed)?;
            // What lies past the stable offset or `max_bytes`, and what the index read past
            // the fetch, is what this reader reads next: kept for it.
            let stable_end = batches.partition_point(|b| records::base_offset(b) < stable.offset);
            let mut unserved = batches.split_off(stable_end.min(fitting(&batches, 0, max_bytes)));
            unserved.extend(stable.read_past);
            self.keep_unserved(tp, unserved);
            batches.retain(|b| {
                !stable
                    .fenced
                    .iter()
                    .any(|f| f.base == records::base_offset(b))
            });
            let end = batches.last().map_or(offset, |b| records::end_offset(b));
            let mut aborted = stable.aborted;
            aborted.retain(|a| a.first_offset < end);
            (stable.offset, aborted)
        } else {
            (w.high, Vec::new())
        };
        Ok(PartitionRead {
            batches,
            log_start: w.log_start,
            high: w.high,
            stable,
            aborted,
        })
    }
}

/// How many leading batches fit in `max_bytes` beside the `used` bytes, an answer's
/// first batch whatever its size (KIP-74).
pub fn fitting(batches: &[Bytes], used: usize, max_bytes: usize) -> usize {
    let mut total = used;
    let fit = batches.iter().take_while(|b| {
        let first = total == 0;
        total += b.len();
        first || total <= max_bytes
    });
    fit.count()
}
