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
}

/// Read committed offsets of one group.
#[derive(Message)]
#[rtype(result = "Vec<Result<Option<CommittedOffset>, OffsetError>>")]
pub struct FetchOffsets {
    pub group: Arc<str>,
    pub partitions: Vec<TopicPartition>,
    pub deadline: Instant,
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
            let mut out = Vec::with_capacity(msg.partitions.len());
            for tp in &msg.partitions {
                out.push(before(msg.deadline, backend.committed_offset(&msg.group, tp)).await);
            }
            out
        })
    }
}
