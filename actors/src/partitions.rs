//! Partitions: the one way handlers reach the partition logs. An append goes to the
//! log slot that owns the partition (always the same one, so appends to a partition
//! keep the order they arrived in, and the slot checks idempotent producers); reads
//! and lookups go straight to the log store; a Fetch waiting at the end of a log
//! subscribes to the partition's appends.

use std::sync::Arc;

use actix::dev::Request;
use actix::{Actor, Addr, ArbiterHandle};
use tokio::sync::watch;

use crate::append_signals::AppendSignals;
use crate::log_slot::{Append, ForgetProducers, ForgetTopic, LogSlot, Verify};
use crate::metrics::Metrics;
use crate::store::{AppendBatch, Logs, StoreResult, TopicPartition};
use crate::txn_index::{Stable, TxnIndexes};

#[derive(Clone)]
pub struct Partitions {
    logs: Logs,
    slots: Arc<[Addr<LogSlot>]>,
    signals: Arc<AppendSignals>,
    txns: TxnIndexes,
    metrics: Arc<Metrics>,
}

impl Partitions {
    /// `n` log slots spread over `arbiters`.
    pub fn start(logs: Logs, n: usize, arbiters: &[ArbiterHandle], metrics: Arc<Metrics>) -> Self {
        let signals = Arc::new(AppendSignals::default());
        let txns = TxnIndexes::default();
        let slots: Arc<[Addr<LogSlot>]> = (0..n.max(1))
            .map(|i| {
                let slot = LogSlot::new(logs.clone(), signals.clone(), txns.clone());
                LogSlot::start_in_arbiter(&arbiters[i % arbiters.len()], |_| slot)
            })
            .collect();
        metrics.log_slots.show(slots.len());
        Partitions {
            logs,
            slots,
            signals,
            txns,
            metrics,
        }
    }

    /// Sends an append to the partition's log slot; sent now, so appends sent in
    /// request order reach the slot in that order.
    pub fn append(
        &self,
        tp: TopicPartition,
        batch: AppendBatch,
        verify: Option<Verify>,
    ) -> Request<LogSlot, Append> {
        let slot = tp.slot(self.slots.len());
        let queued = self.metrics.log_slots.enter(slot);
        self.slots[slot].send(Append {
            tp,
            batch,
            verify,
            queued,
        })
    }

    /// What a read-committed read from `offset` may serve of the partition, whose high
    /// watermark is `high` (`txn_index.rs`).
    pub async fn stable(&self, tp: &TopicPartition, offset: i64, high: i64) -> StoreResult<Stable> {
        self.txns.stable(&self.logs, tp, offset, high).await
    }

    /// The partition's last stable offset (ListOffsets read committed).
    pub async fn last_stable(&self, tp: &TopicPartition) -> StoreResult<i64> {
        let w = self.logs.watermarks(tp.clone()).await?;
        self.txns.last_stable(&self.logs, tp, w).await
    }

    /// Reads and lookups.
    pub fn logs(&self) -> &Logs {
        &self.logs
    }

    /// A receiver that changes whenever the partition's high watermark moves.
    pub fn subscribe(&self, tp: &TopicPartition) -> watch::Receiver<i64> {
        self.signals.subscribe(tp)
    }

    /// A deleted topic's producer state goes, in every slot.
    pub fn forget_topic(&self, topic: &Arc<str>) {
        self.txns.forget_topic(topic);
        for slot in self.slots.iter() {
            slot.do_send(ForgetTopic(topic.clone()));
        }
    }

    /// Every partition's producer state is read again from the store before its next
    /// use: other gateways may have appended meanwhile.
    pub fn forget_producers(&self) {
        for slot in self.slots.iter() {
            slot.do_send(ForgetProducers);
        }
    }
}
