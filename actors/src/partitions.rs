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
use crate::log_slot::{Append, ForgetProducers, ForgetTopic, LogSlot};
use crate::metrics::Metrics;
use crate::store::{AppendBatch, Logs, TopicPartition};

#[derive(Clone)]
pub struct Partitions {
    logs: Logs,
    slots: Arc<[Addr<LogSlot>]>,
    signals: Arc<AppendSignals>,
    metrics: Arc<Metrics>,
}

impl Partitions {
    /// `n` log slots spread over `arbiters`.
    pub fn start(logs: Logs, n: usize, arbiters: &[ArbiterHandle], metrics: Arc<Metrics>) -> Self {
        let signals = Arc::new(AppendSignals::default());
        let slots: Arc<[Addr<LogSlot>]> = (0..n.max(1))
            .map(|i| {
                let slot = LogSlot::new(logs.clone(), signals.clone());
                LogSlot::start_in_arbiter(&arbiters[i % arbiters.len()], |_| slot)
            })
            .collect();
        metrics.log_slots.show(slots.len());
        Partitions {
            logs,
            slots,
            signals,
            metrics,
        }
    }

    /// Sends an append to the partition's log slot; sent now, so appends sent in
    /// request order reach the slot in that order.
    pub fn append(&self, tp: TopicPartition, batch: AppendBatch) -> Request<LogSlot, Append> {
        let slot = tp.slot(self.slots.len());
        let queued = self.metrics.log_slots.enter(slot);
        self.slots[slot].send(Append { tp, batch, queued })
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
