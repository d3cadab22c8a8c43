//! Retention on the embedded store: what Iggy's segment cleaner does on Iggy. A topic's
//! limits (`retention.ms`, `retention.bytes`, handed over at creation and at each
//! change, for policies that delete: `TopicLimits`) are kept in its `logs` entry, so
//! they hold across restarts. Every `retention_check_interval_ms` (Kafka's
//! `log.retention.check.interval.ms`) a thread moves each partition's log start past
//! the oldest batches retention lets go, as DeleteRecords does, and frees their space:
//! whole batches, as Kafka lets whole segments go.

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iggy_kafka_actors::store::{StoreResult, TopicLimits, TopicPartition};
use serde::{Deserialize, Serialize};

use super::Inner;

/// A topic's retention as its `logs` entry keeps it; none (the default, and what
/// entries written before retention was enforced read as) keeps everything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Retention {
    ms: Option<u64>,
    bytes: Option<u64>,
}

impl From<&TopicLimits> for Retention {
    fn from(limits: &TopicLimits) -> Self {
        Retention {
            ms: limits.retention_ms,
            bytes: limits.retention_bytes,
        }
    }
}

impl Retention {
    fn any(&self) -> bool {
        self.ms.is_some() || self.bytes.is_some()
    }
}

impl Inner {
    /// Moves the log start of every partition under a retention past what it lets go.
    fn enforce_retention(&self, now_ms: i64) {
        let logs: Vec<_> = self.topics.read().values().cloned().collect();
        for log in logs.iter().filter(|l| l.retention.any()) {
            let expired = log.retention.ms.map(|ms| now_ms.saturating_sub(ms as i64));
            for (p, partition) in log.partitions.iter().enumerate() {
                let (start, cut) = {
                    let index = partition.index.lock();
                    let cut = index.retained_from(expired, log.retention.bytes);
                    (index.watermarks().log_start, cut)
                };
                if cut <= start {
                    continue;
                }
                let tp = TopicPartition {
                    topic: log.info.name.clone(),
                    partition: p as i32,
                };
                match self.delete_records(&tp, cut) {
                    Ok(w) => {
                        tracing::info!(partition = %tp, log_start = w.log_start, "retention let records go")
                    }
                    // A topic deleted meanwhile is routine; the next round tries again.
                    Err(e) => {
                        tracing::warn!(partition = %tp, error = %e, "retention could not move the log start")
                    }
                }
            }
        }
    }
}

impl super::EmbeddedStore {
    /// Enforces retention every `every`, on a thread of its own, until the store is
    /// dropped.
    pub fn enforce_retention_every(&self, every: Duration) {
        let store: Weak<Inner> = Arc::downgrade(&self.inner);
        std::thread::Builder::new()
            .name("embedded-retention".into())
            .spawn(move || loop {
                std::thread::sleep(every);
                let Some(store) = store.upgrade() else { return };
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                store.enforce_retention(now);
            })
            .map(drop)
            .unwrap_or_else(
                |e| tracing::error!(error = %e, "could not start the retention thread"),
            );
    }
}

impl Inner {
    /// Records a topic's new retention in its `logs` entry, durably, then in force.
    pub(super) fn set_retention(&self, name: &Arc<str>, limits: &TopicLimits) -> StoreResult<()> {
        let retention = Retention::from(limits);
        self.update_log(name, |stored, log| {
            stored.retention = retention;
            log.retention = retention;
            Ok(())
        })
    }
}
