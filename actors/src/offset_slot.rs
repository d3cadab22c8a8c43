//! Offset slots: the actors that commit and read consumer-group offsets.
//!
//! A partition always maps to the same slot ([`crate::Gateway::offset_slot`]). Each
//! slot has a commit lane and a read lane: commits take the lane's lock in arrival
//! order (a fair lock), so commits on a slot are applied one at a time and in order;
//! reads never take it, so they never wait behind commits. A request sends at most
//! one message per slot (all its partitions on that slot), so a huge request cannot
//! starve others, and its deadline is enforced here: partitions not done in time
//! answer a retriable error.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use tokio::sync::Mutex;

use crate::backend::{Backend, BackendError, CommittedOffset, TopicPartition};
use crate::metrics::Queued;

#[derive(Debug, thiserror::Error)]
pub enum OffsetError {
    #[error("deadline passed before the offset store answered")]
    Timeout,
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Store (`Some`) or delete (`None`) committed offsets of one group.
#[derive(Message)]
#[rtype(result = "Vec<Result<(), OffsetError>>")]
pub struct CommitOffsets {
    pub group: Arc<str>,
    pub entries: Vec<(TopicPartition, Option<CommittedOffset>)>,
    pub deadline: Instant,
    /// In the slot's queue until the commit is done.
    pub queued: Queued,
}

/// Read committed offsets of one group.
#[derive(Message)]
#[rtype(result = "Vec<Result<Option<CommittedOffset>, OffsetError>>")]
pub struct FetchOffsets {
    pub group: Arc<str>,
    pub partitions: Vec<TopicPartition>,
    pub deadline: Instant,
    /// In the slot's queue until the read is done.
    pub queued: Queued,
}

pub struct OffsetSlot {
    backend: Arc<dyn Backend>,
    /// The commit lane: held for the whole of one commit message.
    commit_lane: Arc<Mutex<()>>,
}

impl OffsetSlot {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        OffsetSlot {
            backend,
            commit_lane: Arc::new(Mutex::new(())),
        }
    }
}

impl Actor for OffsetSlot {
    type Context = Context<Self>;
}

/// Runs `op` unless the deadline has passed, and gives up on it at the deadline.
async fn before<T>(
    deadline: Instant,
    op: impl std::future::Future<Output = Result<T, BackendError>>,
) -> Result<T, OffsetError> {
    match tokio::time::timeout_at(deadline.into(), op).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(OffsetError::Timeout),
    }
}

impl Handler<CommitOffsets> for OffsetSlot {
    type Result = ResponseFuture<Vec<Result<(), OffsetError>>>;

    fn handle(&mut self, msg: CommitOffsets, _: &mut Self::Context) -> Self::Result {
        let (backend, lane) = (self.backend.clone(), self.commit_lane.clone());
        // The lock is requested now, in arrival order (tokio's Mutex is fair).
        let turn = lane.lock_owned();
        Box::pin(async move {
            // In the slot's queue until this future ends.
            let _queued = msg.queued;
            let Ok(_turn) = tokio::time::timeout_at(msg.deadline.into(), turn).await else {
                return msg
                    .entries
                    .iter()
                    .map(|_| Err(OffsetError::Timeout))
                    .collect();
            };
            let mut out = Vec::with_capacity(msg.entries.len());
            for (tp, offset) in &msg.entries {
                out.push(
                    before(
                        msg.deadline,
                        backend.commit_offset(&msg.group, tp, offset.clone()),
                    )
                    .await,
                );
            }
            out
        })
    }
}

impl Handler<FetchOffsets> for OffsetSlot {
    type Result = ResponseFuture<Vec<Result<Option<CommittedOffset>, OffsetError>>>;

    fn handle(&mut self, msg: FetchOffsets, _: &mut Self::Context) -> Self::Result {
        let backend = self.backend.clone();
        Box::pin(async move {
            let _queued = msg.queued;
            let mut out = Vec::with_capacity(msg.partitions.len());
            for tp in &msg.partitions {
                out.push(before(msg.deadline, backend.committed_offset(&msg.group, tp)).await);
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    //! Slot behaviour with a backend whose commits are slow on purpose: an injected
    //! delay behind the storage port, the one real seam (no Iggy is involved).

    use std::collections::HashMap;
    use std::sync::LazyLock;
    use std::time::Duration;

    use parking_lot::Mutex as SyncMutex;

    use super::*;
    use crate::backend::*;
    use crate::metrics::Metrics;

    /// Queue tickets of the tests that do not look at queue depths.
    static UNWATCHED: LazyLock<Arc<Metrics>> = LazyLock::new(Metrics::new);

    /// Committed offsets in memory; commits take `delay`, reads are immediate.
    #[derive(Default)]
    struct SlowCommits {
        delay: Duration,
        stored: SyncMutex<HashMap<(String, TopicPartition), CommittedOffset>>,
        /// Offsets in the order commits were applied.
        applied: SyncMutex<Vec<i64>>,
    }

    fn unused<T>() -> BackendFuture<'static, T> {
        Box::pin(async { Err(BackendError::Fatal("not used by these tests".into())) })
    }

    impl Backend for SlowCommits {
        fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
            unused()
        }
        fn create_topic(&self, _: TopicMeta, _: TopicLimits) -> BackendFuture<'_, ()> {
            unused()
        }
        fn delete_topic(&self, _: &str) -> BackendFuture<'_, ()> {
            unused()
        }
        fn alter_topic_configs(
            &self,
            _: &str,
            _: std::collections::BTreeMap<String, String>,
            _: TopicLimits,
        ) -> BackendFuture<'_, ()> {
            unused()
        }
        fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
            unused()
        }
        fn set_cluster_config(
            &self,
            _: &str,
            _: std::collections::BTreeMap<String, String>,
        ) -> BackendFuture<'_, ()> {
            unused()
        }
        fn append(&self, _: &TopicPartition, _: AppendBatch) -> BackendFuture<'_, Appended> {
            unused()
        }
        fn read(&self, _: &TopicPartition, _: i64, _: usize) -> BackendFuture<'_, ReadBatches> {
            unused()
        }
        fn watermarks(&self, _: &TopicPartition) -> BackendFuture<'_, Watermarks> {
            unused()
        }
        fn offset_for_timestamp(
            &self,
            _: &TopicPartition,
            _: i64,
        ) -> BackendFuture<'_, Option<TimestampedOffset>> {
            unused()
        }
        fn max_timestamp(
            &self,
            _: &TopicPartition,
        ) -> BackendFuture<'_, Option<TimestampedOffset>> {
            unused()
        }
        fn producer_batches(&self, _: &TopicPartition) -> BackendFuture<'_, Vec<ProducerBatch>> {
            unused()
        }
        fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
            unused()
        }
        fn commit_offset(
            &self,
            group: &str,
            tp: &TopicPartition,
            offset: Option<CommittedOffset>,
        ) -> BackendFuture<'_, ()> {
            let key = (group.to_string(), tp.clone());
            Box::pin(async move {
                tokio::time::sleep(self.delay).await;
                if let Some(c) = offset {
                    self.applied.lock().push(c.offset);
                    self.stored.lock().insert(key, c);
                }
                Ok(())
            })
        }
        fn committed_offset(
            &self,
            group: &str,
            tp: &TopicPartition,
        ) -> BackendFuture<'_, Option<CommittedOffset>> {
            let found = self
                .stored
                .lock()
                .get(&(group.to_string(), tp.clone()))
                .cloned();
            Box::pin(async move { Ok(found) })
        }
        fn committed_partitions(&self, _: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
            unused()
        }
        fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
            unused()
        }
        fn ping(&self) -> BackendFuture<'_, ()> {
            unused()
        }
        fn flush(&self) -> BackendFuture<'_, ()> {
            unused()
        }
    }

    fn tp() -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: 0,
        }
    }

    fn commit(offset: i64, within: Duration) -> CommitOffsets {
        let stored = CommittedOffset {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
        };
        CommitOffsets {
            group: "g".into(),
            entries: vec![(tp(), Some(stored))],
            deadline: Instant::now() + within,
            queued: UNWATCHED.offset_slots.enter(0),
        }
    }

    fn slot(delay: Duration) -> (Arc<SlowCommits>, Addr<OffsetSlot>) {
        let backend = Arc::new(SlowCommits {
            delay,
            ..Default::default()
        });
        (backend.clone(), OffsetSlot::new(backend).start())
    }

    #[actix_rt::test]
    async fn commits_apply_in_arrival_order_one_at_a_time() {
        let (backend, slot) = slot(Duration::from_millis(5));
        let pending: Vec<_> = (0..20)
            .map(|i| slot.send(commit(i, Duration::from_secs(10))))
            .collect();
        for p in pending {
            assert!(p.await.unwrap().into_iter().all(|r| r.is_ok()));
        }
        assert_eq!(*backend.applied.lock(), (0..20).collect::<Vec<_>>());
    }

    #[actix_rt::test]
    async fn reads_and_other_slots_never_wait_behind_a_slow_commit() {
        let (_, slow) = slot(Duration::from_millis(800));
        let (_, other) = slot(Duration::from_millis(0));
        let started = Instant::now();
        let stuck = slow.send(commit(1, Duration::from_secs(10)));
        // Give the slow commit time to take the commit lane.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let read = slow
            .send(FetchOffsets {
                group: "g".into(),
                partitions: vec![tp()],
                deadline: Instant::now() + Duration::from_secs(10),
                queued: UNWATCHED.offset_slots.enter(0),
            })
            .await
            .unwrap();
        assert!(matches!(read[..], [Ok(None)]), "{read:?}");
        other
            .send(commit(2, Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(600),
            "a read or another slot waited for the slow commit: {:?}",
            started.elapsed()
        );
        assert!(stuck.await.unwrap()[0].is_ok());
    }

    #[actix_rt::test]
    async fn queue_depth_counts_commits_until_they_are_done() {
        let metrics = Metrics::new();
        let depth =
            |d: usize| format!("iggy_kafka_gateway_offset_slot_queue_depth{{slot=\"3\"}} {d}\n");
        let (_, slot) = slot(Duration::from_millis(300));
        let pending: Vec<_> = (0..3)
            .map(|i| {
                slot.send(CommitOffsets {
                    queued: metrics.offset_slots.enter(3),
                    ..commit(i, Duration::from_secs(10))
                })
            })
            .collect();
        // One commit holds the lane, two wait for it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(metrics.encode().contains(&depth(3)), "{}", metrics.encode());
        for p in pending {
            p.await.unwrap();
        }
        assert!(metrics.encode().contains(&depth(0)), "{}", metrics.encode());
    }

    #[actix_rt::test]
    async fn a_commit_past_its_deadline_answers_timeout() {
        let (backend, slot) = slot(Duration::from_millis(500));
        let result = slot
            .send(commit(7, Duration::from_millis(100)))
            .await
            .unwrap();
        assert!(
            matches!(result[..], [Err(OffsetError::Timeout)]),
            "{result:?}"
        );
        assert!(backend.applied.lock().is_empty());
    }
}
