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

    use std::sync::LazyLock;
    use std::time::Duration;

    use tokio::sync::Semaphore;

    use super::*;
    use crate::metrics::Metrics;
    use crate::test_backend::TestOffsets;

    /// Queue tickets of the tests that do not look at queue depths.
    static UNWATCHED: LazyLock<Arc<Metrics>> = LazyLock::new(Metrics::new);

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

    fn slot(delay: Duration) -> (Arc<TestOffsets>, Addr<OffsetSlot>) {
        start(TestOffsets {
            delay,
            ..Default::default()
        })
    }

    /// A slot whose commits wait in the store until `gate` gives them a permit.
    fn gated_slot(gate: &Arc<Semaphore>) -> (Arc<TestOffsets>, Addr<OffsetSlot>) {
        start(TestOffsets {
            gate: Some(gate.clone()),
            ..Default::default()
        })
    }

    fn start(backend: TestOffsets) -> (Arc<TestOffsets>, Addr<OffsetSlot>) {
        let backend = Arc::new(backend);
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
    async fn reads_and_other_slots_never_wait_behind_a_stuck_commit() {
        let gate = Arc::new(Semaphore::new(0));
        let (stuck_store, stuck) = gated_slot(&gate);
        let (_, other) = slot(Duration::ZERO);
        let pending = stuck.send(commit(1, Duration::from_secs(10)));
        // The commit holds the slot's commit lane and waits inside the store.
        stuck_store.entered.notified().await;
        let read = stuck
            .send(FetchOffsets {
                group: "g".into(),
                partitions: vec![tp()],
                deadline: Instant::now() + Duration::from_secs(10),
                queued: UNWATCHED.offset_slots.enter(0),
            })
            .await
            .unwrap();
        assert!(matches!(read[..], [Ok(None)]), "{read:?}");
        let done = other
            .send(commit(2, Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(done[0].is_ok(), "{done:?}");
        // Both answered while the first commit was still held.
        assert!(stuck_store.applied.lock().is_empty());
        gate.add_permits(1);
        assert!(pending.await.unwrap()[0].is_ok());
        assert_eq!(*stuck_store.applied.lock(), [1]);
    }

    #[actix_rt::test]
    async fn queue_depth_counts_commits_until_they_are_done() {
        let metrics = Metrics::new();
        let depth =
            |d: usize| format!("iggy_kafka_gateway_offset_slot_queue_depth{{slot=\"3\"}} {d}\n");
        let gate = Arc::new(Semaphore::new(0));
        let (store, slot) = gated_slot(&gate);
        let pending: Vec<_> = (0..3)
            .map(|i| {
                slot.send(CommitOffsets {
                    queued: metrics.offset_slots.enter(3),
                    ..commit(i, Duration::from_secs(10))
                })
            })
            .collect();
        // One commit holds the lane, two wait for it.
        store.entered.notified().await;
        assert!(metrics.encode().contains(&depth(3)), "{}", metrics.encode());
        gate.add_permits(3);
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
