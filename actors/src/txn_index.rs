//! What read-committed readers need of a partition, learnt from the log itself: the
//! transactions still open (so the last stable offset, below which everything is
//! decided) and the aborted ones (whose records a consumer drops). The log is the one
//! source of truth, so every gateway and every restart reads the same answer.
//!
//! A marker of an epoch older than the producer's open transaction in the partition
//! is dropped, as a Kafka partition refuses one: it is a copy of an earlier end, sent
//! by a coordinator that lost the id with the copy on its way, which landed after the
//! producer began again (the coordinator that completed that end fenced the producer
//! so that its later batches carry a newer epoch: `transactions/slot.rs`).
//!
//! A transactional batch of an epoch older than the producer's last marker in the
//! partition is fenced: a marker of a newer epoch ended whatever the producer had
//! open at that epoch (an abort at a timeout or at a new producer's InitProducerId,
//! or a transactions v2 end), so no later marker can decide it. A Kafka broker
//! refuses such a batch; here another gateway may append one after it checked the
//! transaction and before the coordinator's marker landed (`COMPATIBILITY.md`), so
//! readers skip it: it opens nothing and read-committed readers are not served it.
//!
//! A partition's index is built on first use by reading batch headers from where the
//! first reader starts (a reader at an offset the last stable offset once reached finds
//! every transaction open there beginning at or above it), or from offset 0 when this
//! gateway appends the partition's first batch, then kept up to date by this gateway's
//! own appends (`appended`) and by reading what others appended (`catch_up`). A
//! compaction pass that removed records drops it (`forget`): a marker may have gone.
//!
//! What an index knows at an offset is a [`Checkpoint`]: the transactions open there
//! and each producer's last marker epoch, all a reader from that offset on needs of
//! what came before. Saved (`txn_checkpoints.rs`), it lets a gateway without the index
//! (restarted, or one that did not write the partition) read on from there instead of
//! from the log start.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use crate::protocol::markers::{self, Marker};
use crate::protocol::records::{self, BatchHeader};
use crate::store::{Logs, StoreResult, TopicPartition, Watermarks};

/// Bytes of log walked a time while catching up (of which only the batch headers and
/// the markers are read where the store can: `Logs::read_headers`).
const SCAN_BYTES: usize = 1 << 20;
/// What a reader's catch-up hands back of what it read ([`Stable::read_past`]): more than
/// its next fetch takes only when that fetch is large.
const READ_PAST_BYTES: usize = 4 << 20;

/// An aborted transaction's span in one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aborted {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The abort marker's offset.
    pub last_offset: i64,
}

/// A fenced batch's offsets: `base..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fenced {
    pub base: i64,
    pub end: i64,
}

/// One partition's transactions, from `from` up to `scanned`.
#[derive(Debug, Default)]
struct PartitionTxns {
    from: i64,
    scanned: i64,
    /// Producer id → the first offset and the epoch of its open transaction.
    open: HashMap<i64, (i64, i16)>,
    aborted: Vec<Aborted>,
    /// Producer id → the epoch of its last marker here.
    marked_epochs: HashMap<i64, i16>,
    fenced: Vec<Fenced>,
    /// Read from the log start (or restored from the checkpoint of an index that was):
    /// only such an index is saved. One a reader built from its offset knows nothing of
    /// a transaction open before that offset.
    whole: bool,
}

impl PartitionTxns {
    fn empty(from: i64, whole: bool) -> PartitionTxns {
        PartitionTxns {
            from,
            scanned: from,
            whole,
            ..PartitionTxns::default()
        }
    }

    /// Applies the batch at `base_offset`, which must be the next one.
    fn apply(&mut self, base_offset: i64, h: &BatchHeader, marker: Option<Marker>) {
        let end = base_offset + h.record_count as i64;
        if h.transactional {
            match (h.control, marker) {
                (true, Some(_))
                    if (self.open.get(&h.producer_id))
                        .is_some_and(|&(_, epoch)| h.producer_epoch < epoch) => {}
                (true, Some(m)) => {
                    let epoch = self.marked_epochs.entry(h.producer_id).or_insert(i16::MIN);
                    *epoch = (*epoch).max(h.producer_epoch);
                    if let Some((first, _)) = self.open.remove(&h.producer_id) {
                        if m == Marker::Abort {
                            self.aborted.push(Aborted {
                                producer_id: h.producer_id,
                                first_offset: first,
                                last_offset: base_offset,
                            });
                        }
                    }
                }
                (true, None) => {}
                (false, _) => {
                    let marked = self.marked_epochs.get(&h.producer_id);
                    if marked.is_some_and(|&epoch| h.producer_epoch < epoch) {
                        self.fenced.push(Fenced {
                            base: base_offset,
                            end,
                        });
                    } else {
                        (self.open.entry(h.producer_id)).or_insert((base_offset, h.producer_epoch));
                    }
                }
            }
        }
        self.scanned = end;
    }

    /// Applies the batches of a read, skipping those already seen.
    fn apply_read(&mut self, batches: &[Bytes]) {
        for b in batches {
            let h = BatchHeader::parse(b);
            let base = records::base_offset(b);
            if base + h.record_count as i64 > self.scanned {
                self.apply(base, &h, h.control.then(|| markers::read(b)).flatten());
            }
        }
    }

    /// The index from `cp.at` on, as if it had read the log up to there.
    fn restored(cp: &Checkpoint) -> PartitionTxns {
        PartitionTxns {
            open: (cp.open.iter())
                .map(|&(producer_id, first, epoch)| (producer_id, (first, epoch)))
                .collect(),
            marked_epochs: cp.marked.iter().copied().collect(),
            ..PartitionTxns::empty(cp.at, true)
        }
    }

    fn checkpoint(&self) -> Checkpoint {
        let mut open: Vec<_> = (self.open.iter())
            .map(|(&producer_id, &(first, epoch))| (producer_id, first, epoch))
            .collect();
        let mut marked: Vec<_> = self.marked_epochs.iter().map(|(&p, &e)| (p, e)).collect();
        open.sort_unstable();
        marked.sort_unstable();
        Checkpoint {
            at: self.scanned,
            open,
            marked,
        }
    }

    fn stable(&self, high: i64) -> i64 {
        self.open
            .values()
            .map(|&(first, _)| first)
            .min()
            .unwrap_or(high)
            .min(high)
    }
}

/// What a partition's index knows at offset `at`, a batch boundary: all that a reader
/// from `at` on needs of the log before it. Aborted and fenced spans before `at` overlap
/// no such read, so they are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub at: i64,
    /// Producer id, first offset and epoch of each transaction open at `at`.
    pub open: Vec<(i64, i64, i16)>,
    /// Producer id and the epoch of its last marker before `at`: a later batch of an
    /// older epoch is fenced.
    pub marked: Vec<(i64, i16)>,
}

/// What a read-committed read may serve of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stable {
    /// The last stable offset: nothing at or above it is served.
    pub offset: i64,
    /// Aborted transactions overlapping the read, oldest first.
    pub aborted: Vec<Aborted>,
    /// Fenced batches from the read's offset on, oldest first: not served.
    pub fenced: Vec<Fenced>,
    /// The batches the index read past the reader's fetch to answer it, in offset order,
    /// up to `READ_PAST_BYTES`, where the store read them whole (Iggy): the reader's next
    /// fetch may be served from them (`unserved.rs`).
    pub read_past: Vec<Bytes>,
}

/// Every partition's index this gateway has built. Cheap to clone.
#[derive(Clone, Default)]
pub struct TxnIndexes {
    /// Read-locked by every append (most find no index); each index has a lock of its
    /// own, so partitions never wait on each other.
    partitions: Arc<RwLock<HashMap<TopicPartition, Arc<Mutex<PartitionTxns>>>>>,
}

impl TxnIndexes {
    /// A batch this gateway appended at `base_offset`: applied when it is the next the
    /// index expects; otherwise the next reader catches up from the log. A partition's
    /// first batch (offset 0) gives it an index: nothing before it can hold a
    /// transaction, so while this gateway writes the partition, its read-committed
    /// readers and its last stable offset need no read of the log.
    pub fn appended(&self, tp: &TopicPartition, base_offset: i64, h: &BatchHeader, bytes: &Bytes) {
        let known = self.partitions.read().get(tp).cloned();
        let Some(p) = known.or_else(|| (base_offset == 0).then(|| self.index(tp, 0, true))) else {
            return;
        };
        let mut p = p.lock();
        if p.scanned == base_offset {
            let marker = h.control.then(|| markers::read(bytes)).flatten();
            p.apply(base_offset, h, marker);
        }
    }

    /// Whether the partition has an index here.
    pub fn has(&self, tp: &TopicPartition) -> bool {
        self.partitions.read().contains_key(tp)
    }

    /// The partition's index from a saved checkpoint, unless it has one by now.
    pub fn restore(&self, tp: &TopicPartition, cp: &Checkpoint) {
        let fresh = || Arc::new(Mutex::new(PartitionTxns::restored(cp)));
        self.partitions
            .write()
            .entry(tp.clone())
            .or_insert_with(fresh);
    }

    /// The checkpoint of each index read from the log start that `due` names (by a
    /// key of its own), given its partition and how far it has read.
    pub fn checkpoints<K>(
        &self,
        mut due: impl FnMut(&TopicPartition, i64) -> Option<K>,
    ) -> Vec<(K, Checkpoint)> {
        let all = self.partitions.read();
        (all.iter())
            .filter_map(|(tp, p)| {
                let p = p.lock();
                if !p.whole {
                    return None;
                }
                Some((due(tp, p.scanned)?, p.checkpoint()))
            })
            .collect()
    }

    /// The partition's index, made empty from `offset` if there is none (`whole`: the
    /// log start).
    fn index(&self, tp: &TopicPartition, offset: i64, whole: bool) -> Arc<Mutex<PartitionTxns>> {
        if let Some(p) = self.partitions.read().get(tp) {
            return p.clone();
        }
        let mut all = self.partitions.write();
        let fresh = || Arc::new(Mutex::new(PartitionTxns::empty(offset, whole)));
        all.entry(tp.clone()).or_insert_with(fresh).clone()
    }

    /// The partition's stable offset and the aborted transactions from `offset` on, for
    /// a read from `offset` that `fetched` these batches. An index that has reached the
    /// reader learns the batches from them and answers up to where it has seen, so the
    /// first read-committed reader builds it as it goes instead of reading the log twice.
    /// An index behind the reader, or one whose answer would give the reader nothing (a
    /// transaction open as far as the index has seen, which may end just past it), reads
    /// on towards `high` until the answer gives the reader something, and hands back
    /// what it read past the fetch.
    pub async fn stable(
        &self,
        logs: &Logs,
        tp: &TopicPartition,
        (offset, high): (i64, i64),
        fetched: &[Bytes],
    ) -> StoreResult<Stable> {
        let answer = |p: &PartitionTxns| Stable {
            offset: p.stable(high.min(p.scanned)),
            aborted: (p.aborted.iter())
                .filter(|a| a.last_offset >= offset)
                .copied()
                .collect(),
            fenced: (p.fenced.iter())
                .filter(|f| f.end > offset)
                .copied()
                .collect(),
            read_past: Vec::new(),
        };
        // An answer that gives the reader something.
        let useful = |p: &PartitionTxns| p.stable(high.min(p.scanned)) > offset;
        let index = self.index(tp, offset, offset == 0);
        {
            let mut p = index.lock();
            if offset >= p.from && p.scanned >= offset {
                p.apply_read(fetched);
                if p.scanned >= high || useful(&p) {
                    return Ok(answer(&p));
                }
            }
        }
        // Only a run of whole batches can serve a fetch: gathered until one is not.
        let (mut read_past, mut read_bytes, mut whole) = (Vec::new(), 0, true);
        let gather = |batches: &[Bytes]| {
            for b in batches {
                whole &= records::is_whole(b) && read_bytes + b.len() <= READ_PAST_BYTES;
                if !whole {
                    break;
                }
                read_bytes += b.len();
                read_past.push(b.clone());
            }
        };
        let stable = (self.caught_up(
            logs,
            tp,
            (offset, high, offset == 0),
            (answer, useful),
            gather,
        ))
        .await?;
        Ok(Stable {
            read_past,
            ..stable
        })
    }

    /// The last stable offset of a partition with these watermarks, read from the
    /// log start when no reader built its index yet (ListOffsets read committed).
    pub async fn last_stable(
        &self,
        logs: &Logs,
        tp: &TopicPartition,
        w: Watermarks,
    ) -> StoreResult<i64> {
        let from = self.built_from(tp, w);
        let answer = |p: &PartitionTxns| p.stable(w.high);
        (self.caught_up(logs, tp, (from, w.high, true), (answer, |_| false), |_| {})).await
    }

    /// The first offset of each producer's open transaction in the partition, by
    /// producer id (DescribeProducers), read like `last_stable`.
    pub async fn open_transactions(
        &self,
        logs: &Logs,
        tp: &TopicPartition,
        w: Watermarks,
    ) -> StoreResult<HashMap<i64, i64>> {
        let from = self.built_from(tp, w);
        let answer = |p: &PartitionTxns| {
            p.open
                .iter()
                .map(|(&id, &(first, _))| (id, first))
                .collect()
        };
        (self.caught_up(logs, tp, (from, w.high, true), (answer, |_| false), |_| {})).await
    }

    /// Where the partition's index starts: where it was built from, else the log start.
    fn built_from(&self, tp: &TopicPartition, w: Watermarks) -> i64 {
        (self.partitions.read().get(tp)).map_or(w.log_start, |p| p.lock().from)
    }

    /// `answer` of the partition's index once it has read the log from `offset` (or
    /// before; `whole`: the log start) up to `high`, or sooner once the index is
    /// `enough`; `applied` is given each read the index learnt from.
    async fn caught_up<T>(
        &self,
        logs: &Logs,
        tp: &TopicPartition,
        (offset, high, whole): (i64, i64, bool),
        (answer, enough): (
            impl Fn(&PartitionTxns) -> T,
            impl Fn(&PartitionTxns) -> bool,
        ),
        mut applied: impl FnMut(&[Bytes]),
    ) -> StoreResult<T> {
        loop {
            let index = self.index(tp, offset, whole);
            let scanned = {
                let mut p = index.lock();
                if offset < p.from {
                    // A reader further back than any before: build again from it.
                    *p = PartitionTxns::empty(offset, whole);
                }
                if p.scanned >= high || enough(&p) {
                    return Ok(answer(&p));
                }
                p.scanned
            };
            self.catch_up(logs, (tp, &index), (scanned, high), &mut applied)
                .await?;
        }
    }

    /// Reads batch headers (and markers) from `scanned` towards `high` and applies
    /// them, unless someone else moved the index meanwhile.
    async fn catch_up(
        &self,
        logs: &Logs,
        (tp, index): (&TopicPartition, &Mutex<PartitionTxns>),
        (scanned, high): (i64, i64),
        applied: &mut impl FnMut(&[Bytes]),
    ) -> StoreResult<()> {
        let read = logs.read_headers(tp.clone(), scanned, SCAN_BYTES).await?;
        let mut p = index.lock();
        if p.scanned != scanned {
            return Ok(());
        }
        p.apply_read(&read.batches);
        applied(&read.batches);
        let start = read.watermarks.log_start;
        if p.scanned == scanned {
            // Nothing to read here: below the log start, records were deleted (and with
            // them what they held); above it the log holds nothing more up to `high`.
            p.scanned = if scanned < start { start } else { high };
        }
        p.aborted.retain(|a| a.last_offset >= start);
        p.fenced.retain(|f| f.end > start);
        Ok(())
    }

    /// The partition's index goes: the next reader builds it from the log.
    pub fn forget(&self, tp: &TopicPartition) {
        self.partitions.write().remove(tp);
    }

    /// A deleted topic's indexes go.
    pub fn forget_topic(&self, topic: &str) {
        self.partitions.write().retain(|tp, _| &*tp.topic != topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(producer_id: i64, transactional: bool, control: bool, count: i32) -> BatchHeader {
        BatchHeader {
            record_count: count,
            base_timestamp: 0,
            max_timestamp: 0,
            log_append_time: false,
            transactional,
            control,
            producer_id,
            producer_epoch: 0,
            base_sequence: 0,
        }
    }

    #[test]
    fn open_transactions_hold_the_stable_offset_and_aborts_are_kept() {
        let mut p = PartitionTxns::default();
        p.apply(0, &header(-1, false, false, 2), None);
        p.apply(2, &header(5, true, false, 3), None);
        p.apply(5, &header(6, true, false, 1), None);
        assert_eq!(p.stable(6), 2);
        p.apply(6, &header(5, true, true, 1), Some(Marker::Commit));
        assert_eq!(p.stable(7), 5);
        p.apply(7, &header(6, true, true, 1), Some(Marker::Abort));
        assert_eq!(p.stable(8), 8);
        assert_eq!(
            p.aborted,
            [Aborted {
                producer_id: 6,
                first_offset: 5,
                last_offset: 7
            }]
        );
        assert_eq!(p.scanned, 8);
    }

    /// A copy of an earlier abort, landing late among the batches of the producer's
    /// next transaction (fenced and initialized again since, so at a later epoch),
    /// ends nothing: the transaction's own commit does.
    #[test]
    fn a_marker_older_than_the_open_transaction_ends_nothing() {
        let at = |epoch, control| BatchHeader {
            producer_epoch: epoch,
            ..header(5, true, control, 1)
        };
        let mut p = PartitionTxns::default();
        p.apply(0, &at(3, false), None);
        p.apply(1, &at(3, true), Some(Marker::Abort));
        p.apply(2, &at(5, false), None);
        p.apply(3, &at(3, true), Some(Marker::Abort));
        assert_eq!(p.stable(4), 2, "the open transaction is still open");
        p.apply(4, &at(5, true), Some(Marker::Commit));
        assert_eq!(p.stable(5), 5);
        let aborted = |first_offset, last_offset| Aborted {
            producer_id: 5,
            first_offset,
            last_offset,
        };
        assert_eq!(p.aborted, [aborted(0, 1)], "only the first abort ended one");
    }

    #[test]
    fn a_batch_of_an_epoch_a_marker_ended_is_fenced_and_opens_nothing() {
        let at = |epoch, control| BatchHeader {
            producer_epoch: epoch,
            ..header(5, true, control, 1)
        };
        let mut p = PartitionTxns::default();
        p.apply(0, &at(3, false), None);
        p.apply(1, &at(4, true), Some(Marker::Abort));
        // A straggler of epoch 3 after the epoch-4 abort: no marker will come for it.
        p.apply(2, &at(3, false), None);
        assert_eq!(p.stable(3), 3, "the straggler holds nothing back");
        assert_eq!(p.fenced, [Fenced { base: 2, end: 3 }]);
        // The producer's next transaction, at the marker's epoch or after, is its own.
        p.apply(3, &at(4, false), None);
        assert_eq!(p.stable(4), 3);
        p.apply(4, &at(4, true), Some(Marker::Commit));
        assert_eq!((p.stable(5), p.fenced.len(), p.aborted.len()), (5, 1, 1));
    }

    /// An index restored from a checkpoint and fed the rest of the log answers what the
    /// index that read it all answers for readers from the checkpoint on: the open
    /// transaction that began before it, the abort after it, and the straggler fenced
    /// by a marker before it.
    #[test]
    fn an_index_restored_from_a_checkpoint_reads_on_as_the_whole_log_does() {
        let at = |producer_id, epoch, control| BatchHeader {
            producer_epoch: epoch,
            ..header(producer_id, true, control, 1)
        };
        let before: [(BatchHeader, Option<Marker>); 4] = [
            (at(5, 3, false), None),
            (at(5, 4, true), Some(Marker::Commit)),
            (at(6, 1, false), None),
            (header(-1, false, false, 2), None),
        ];
        let after: [(BatchHeader, Option<Marker>); 3] = [
            (at(5, 3, false), None),
            (at(6, 1, true), Some(Marker::Abort)),
            (at(7, 0, false), None),
        ];
        let mut whole = PartitionTxns::default();
        let mut offset = 0;
        for (h, m) in &before {
            whole.apply(offset, h, *m);
            offset += h.record_count as i64;
        }
        let cp = whole.checkpoint();
        assert_eq!(
            (cp.at, cp.open.clone(), cp.marked.clone()),
            (5, vec![(6, 2, 1)], vec![(5, 4)])
        );
        let mut restored = PartitionTxns::restored(&cp);
        for (h, m) in &after {
            whole.apply(offset, h, *m);
            restored.apply(offset, h, *m);
            offset += h.record_count as i64;
        }
        assert_eq!(restored.stable(offset), whole.stable(offset));
        assert_eq!(
            restored.stable(offset),
            7,
            "only the last transaction is open"
        );
        assert_eq!(restored.aborted, whole.aborted);
        assert_eq!(restored.fenced, [Fenced { base: 5, end: 6 }]);
        assert_eq!(restored.checkpoint(), whole.checkpoint());
    }
}
