//! Wake-ups for consumers waiting at the end of a log.
//!
//! A Fetch that finds too little data subscribes to its partitions and sleeps until
//! a log slot announces a new high watermark or the wait runs out: no polling. A
//! `watch` channel keeps a version, so an append between the read and the subscribe
//! is never missed (subscribe first, then read).

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::store::TopicPartition;

#[derive(Default)]
pub struct AppendSignals {
    partitions: Mutex<HashMap<TopicPartition, watch::Sender<i64>>>,
}

impl AppendSignals {
    /// A receiver that changes whenever the partition's high watermark moves.
    pub fn subscribe(&self, tp: &TopicPartition) -> watch::Receiver<i64> {
        self.partitions
            .lock()
            .entry(tp.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Announces a new high watermark; free when nobody waits on the partition.
    pub fn appended(&self, tp: &TopicPartition, high_watermark: i64) {
        let mut partitions = self.partitions.lock();
        if let Some(tx) = partitions.get(tp) {
            if tx.receiver_count() == 0 {
                partitions.remove(tp);
            } else {
                tx.send_replace(high_watermark);
            }
        }
    }
}
