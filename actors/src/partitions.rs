//! Partitions: the one way handlers reach the partition logs. An append goes to the
//! log slot that owns the partition (always the same one, so appends to a partition
//! keep the order they arrived in, and the slot checks idempotent producers); reads
//! and lookups go straight to the log store; a Fetch waiting at the end of a log
//! subscribes to the partition's appends. A read-committed reader is served first what
//! was read for it before and not served (`unserved.rs`); a Fetch's read is bounded by
//! its deadline (`partition_read.rs`). A partition's transaction index starts from its
//! saved checkpoint where it has one (`txn_checkpoints.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::dev::Request;
use actix::{Actor, Addr, ArbiterHandle};
use bytes::Bytes;
use tokio::sync::watch;
use uuid::Uuid;

use crate::append_signals::AppendSignals;
use crate::late_reads::LateReads;
use crate::log_slot::{Append, ForgetProducers, ForgetTopic, LogSlot, ReadProducers, Verify};
use crate::metrics::Metrics;
use crate::producer_state::ActiveProducer;
use crate::protocol::markers::{self, Marker};
use crate::protocol::records::{self, BatchHeader};
use crate::store::{
    AppendBatch, Logs, Meta, ReadBatches, StoreError, StoreResult, TopicPartition, Watermarks,
};
use crate::topic_admin::TopicTable;
use crate::txn_checkpoints::{self, Load, Save, TopicsNow, TxnCheckpointer};
use crate::txn_index::{Stable, TxnIndexes};
use crate::unserved::Unserved;

/// A producer of a partition with the first offset of its open transaction there.
pub type PartitionProducer = (ActiveProducer, Option<i64>);

#[derive(Clone)]
pub struct Partitions {
    logs: Logs,
    slots: Arc<[Addr<LogSlot>]>,
    signals: Arc<AppendSignals>,
    txns: TxnIndexes,
    checkpoints: Addr<TxnCheckpointer>,
    unserved: Arc<Unserved>,
    late_reads: Arc<LateReads>,
    metrics: Arc<Metrics>,
}

impl Partitions {
    /// A log slot on each of `threads` (`gateway::Threads::log_slots`), and the owner of
    /// the transaction index checkpoints on `meta`, saving them every
    /// `checkpoint_interval` (`None`: never).
    pub fn start(
        logs: Logs,
        (meta, checkpoint_interval): (&Meta, Option<Duration>),
        threads: &[ArbiterHandle],
        metrics: Arc<Metrics>,
    ) -> StoreResult<Self> {
        let signals = Arc::new(AppendSignals::default());
        let txns = TxnIndexes::default();
        let checkpoints =
            TxnCheckpointer::new(meta.client()?, txns.clone(), checkpoint_interval).start();
        let slots: Arc<[Addr<LogSlot>]> = (threads.iter())
            .map(|thread| {
                let slot = LogSlot::new(logs.clone(), signals.clone(), txns.clone());
                LogSlot::start_in_arbiter(thread, |_| slot)
            })
            .collect();
        metrics.log_slots.show(slots.len());
        Ok(Partitions {
            logs,
            slots,
            signals,
            txns,
            checkpoints,
            unserved: Arc::default(),
            late_reads: Arc::default(),
            metrics,
        })
    }

    /// Sends an append to the partition's log slot; sent now, so appends sent in
    /// request order reach the slot in that order.
    pub fn append(
        &self,
        tp: TopicPartition,
        batch: AppendBatch,
        verify: Option<Verify>,
    ) -> Request<LogSlot, Append> {
        self.send(tp, batch, verify, false)
    }

    fn send(
        &self,
        tp: TopicPartition,
        batch: AppendBatch,
        verify: Option<Verify>,
        strict_marker: bool,
    ) -> Request<LogSlot, Append> {
        let slot = tp.slot(self.slots.len());
        let queued = self.metrics.log_slots.enter(slot);
        self.slots[slot].send(Append {
            tp,
            batch,
            verify,
            strict_marker,
            queued,
            span: tracing::Span::current(),
        })
    }

    /// Sends a transaction marker (commit or abort) of `(producer id, epoch)` to the
    /// partition's log slot, as `append` does: how a transaction's end reaches its
    /// partitions. `strict_epoch`: a marker of transactions v2 (KIP-1228), refused
    /// unless its epoch is above the producer's (`Append::strict_marker`).
    pub fn append_marker(
        &self,
        tp: TopicPartition,
        marker: Marker,
        (producer_id, epoch): (i64, i16),
        (coordinator_epoch, strict_epoch): (i32, bool),
        timestamp: i64,
    ) -> Request<LogSlot, Append> {
        let bytes = markers::batch(marker, producer_id, epoch, coordinator_epoch, timestamp);
        let batch = AppendBatch {
            header: BatchHeader::parse(&bytes),
            bytes,
            records: Bytes::new(),
            whole: false,
        };
        self.send(tp, batch, None, strict_epoch)
    }

    /// The partition's producers (DescribeProducers), from its log slot's producer
    /// state, each with where its open transaction began (`txn_index.rs`).
    pub async fn producers(&self, tp: &TopicPartition) -> StoreResult<Vec<PartitionProducer>> {
        let slot = &self.slots[tp.slot(self.slots.len())];
        let active = (slot.send(ReadProducers(tp.clone())).await)
            .map_err(|e| StoreError::unavailable_from(format!("log slot of {tp}"), e))??;
        let w = self.logs.watermarks(tp.clone()).await?;
        self.restore_txn_index(tp, w).await;
        let open = self.txns.open_transactions(&self.logs, tp, w).await?;
        Ok(active
            .into_iter()
            .map(|p| {
                let start = open.get(&p.producer_id).copied();
                (p, start)
            })
            .collect())
    }

    /// What a read-committed read from `offset`, which `fetched` these batches, may serve
    /// of the partition, whose high watermark is `high` (`txn_index.rs`).
    pub async fn stable(
        &self,
        tp: &TopicPartition,
        (offset, high): (i64, i64),
        fetched: &[Bytes],
    ) -> StoreResult<Stable> {
        self.txns
            .stable(&self.logs, tp, (offset, high), fetched)
            .await
    }

    /// A read-committed reader's read of `offset`: the batches kept for it
    /// (`keep_unserved`) from the one holding `offset`, up to `max_bytes`, then, when they
    /// were the last kept, the log's after them, up to about `max_bytes` in all; with the
    /// log's watermarks now (so a reader whose batches were deleted meanwhile is out of
    /// range). The log's alone when none was kept.
    pub async fn read_committed(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> StoreResult<ReadBatches> {
        let Some((mut batches, more)) = self.unserved.take(tp, offset, max_bytes) else {
            return self.logs.read(tp.clone(), offset, max_bytes).await;
        };
        let bytes: usize = batches.iter().map(|b| b.len()).sum();
        let end = batches.last().map_or(offset, |b| records::end_offset(b));
        let watermarks = if more || bytes >= max_bytes {
            self.logs.watermarks(tp.clone()).await?
        } else {
            let rest = self.logs.read(tp.clone(), end, max_bytes - bytes).await?;
            // Served only where they follow on: a store may rebuild a batch around `end`.
            let mut next = end;
            for b in rest.batches {
                if records::base_offset(&b) != next {
                    break;
                }
                next = records::end_offset(&b);
                batches.push(b);
            }
            // The rest was read from `end`: a store that learns the log start from what
            // a read finds (Iggy's, before it has asked) puts it at `end` at most, and
            // the kept batches from `offset` are in the log too.
            let first = batches.first().map_or(offset, |b| records::base_offset(b));
            Watermarks {
                log_start: rest.watermarks.log_start.min(first),
                ..rest.watermarks
            }
        };
        // Its store reads were counted as they were made (`MeteredLog`).
        Ok(ReadBatches {
            batches,
            watermarks,
            ..ReadBatches::default()
        })
    }

    /// Batches read for a read-committed reader and not served to it: kept for its next
    /// read, which starts where they start (`unserved.rs`).
    pub fn keep_unserved(&self, tp: &TopicPartition, batches: Vec<Bytes>) {
        self.unserved.keep(tp, batches);
    }

    /// The partition's last stable offset (ListOffsets read committed).
    pub async fn last_stable(&self, tp: &TopicPartition) -> StoreResult<i64> {
        let w = self.logs.watermarks(tp.clone()).await?;
        self.restore_txn_index(tp, w).await;
        self.txns.last_stable(&self.logs, tp, w).await
    }

    /// A partition without a transaction index here gets it from its saved checkpoint,
    /// if it has one: then the index reads the log on from there, not from the log
    /// start. One that cannot be loaded, or is past the log's end `w.high` (records the
    /// store lost in a crash of its own), is not used: the index reads from the log
    /// start, as without.
    async fn restore_txn_index(&self, tp: &TopicPartition, w: Watermarks) {
        if self.txns.has(tp) {
            return;
        }
        match self.checkpoints.send(Load(tp.clone())).await {
            Ok(Ok(Some(cp))) if cp.at <= w.high => self.txns.restore(tp, &cp),
            Ok(Ok(Some(cp))) => {
                tracing::warn!(%tp, at = cp.at, high = w.high, "a transaction index checkpoint past the log's end: reading the partition from its log start")
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                tracing::warn!(%tp, error = %e, "cannot load the transaction index checkpoint")
            }
            Err(e) => {
                tracing::warn!(%tp, error = %e, "the transaction index checkpoints' owner is gone")
            }
        }
    }

    /// Saves every transaction index that moved since it was last saved (at shutdown).
    pub async fn save_txn_indexes(&self) -> StoreResult<usize> {
        (self.checkpoints.send(Save).await).map_err(|e| {
            StoreError::unavailable_from("the transaction index checkpoints' owner", e)
        })?
    }

    /// Reads and lookups.
    pub fn logs(&self) -> &Logs {
        &self.logs
    }

    /// Reads that outlived their Fetch (`partition_read.rs`).
    pub(crate) fn late_reads(&self) -> &LateReads {
        &self.late_reads
    }

    /// A receiver that changes whenever the partition's high watermark moves.
    pub fn subscribe(&self, tp: &TopicPartition) -> watch::Receiver<i64> {
        self.signals.subscribe(tp)
    }

    /// Forgets, as after its own DeleteTopics, what it keeps of each topic that went or
    /// came back with another id: deleted or made again by another gateway or a native
    /// Iggy client; then tells the checkpoints' owner the topics' ids. Kept, a
    /// transaction index of the old topic would answer for the new one: an open
    /// transaction of the old holding its last stable offset back for good, an aborted
    /// one having read-committed readers drop its producer's records.
    pub fn follow_topics(&self, mut table: watch::Receiver<Arc<TopicTable>>) {
        let ids = |t: &TopicTable| -> HashMap<Arc<str>, Uuid> {
            (t.all().into_iter())
                .map(|m| (m.name.clone(), m.id))
                .collect()
        };
        let (partitions, mut known) = (self.clone(), ids(&table.borrow()));
        self.checkpoints.do_send(TopicsNow(known.clone()));
        tokio::spawn(async move {
            while table.changed().await.is_ok() {
                let now = ids(&table.borrow_and_update());
                for (name, id) in &known {
                    if now.get(name) != Some(id) {
                        partitions.forget_topic(name);
                    }
                }
                // Only now: a checkpoint saved under a topic's new id is of its new logs.
                partitions.checkpoints.do_send(TopicsNow(now.clone()));
                known = now;
            }
        });
    }

    /// A deleted topic's producer state goes, in every slot.
    pub fn forget_topic(&self, topic: &Arc<str>) {
        self.txns.forget_topic(topic);
        self.unserved.forget_topic(topic);
        self.late_reads.forget_topic(topic);
        for slot in self.slots.iter() {
            slot.do_send(ForgetTopic(topic.clone()));
        }
    }

    /// A compaction pass removed records of the partition, transaction markers among
    /// them perhaps: an aborted transaction its index still lists without the marker
    /// that ends it would have readers drop every later record of its producer (Kafka's
    /// cleaner drops such entries with the marker). The next reader builds it again.
    /// Its saved checkpoint goes too: it may list a transaction whose marker went.
    pub fn compacted(&self, tp: &TopicPartition) {
        self.txns.forget(tp);
        self.checkpoints
            .do_send(txn_checkpoints::Forget(tp.clone()));
    }

    /// Every partition's producer state is read again from the store before its next
    /// use: other gateways may have appended meanwhile.
    pub fn forget_producers(&self) {
        for slot in self.slots.iter() {
            slot.do_send(ForgetProducers);
        }
    }
}
