//! Offset slots: the actors that commit consumer-group offsets.
//!
//! A partition always maps to the same slot (`Offsets`), and each slot owns the
//! commit client of its own ([`CommitClient`]). A slot takes one commit message at a
//! time (its handler is atomic: the mailbox holds the next until this one is
//! written), so commits on a slot are applied one at a time, in the order they
//! arrived, by construction.
//!
//! Deadlines are actor timeouts: `Offsets` sends each message with what is left of
//! the request's timeout, and the requester gets Timeout when it passes. A message
//! whose requester has given up is dropped unhandled when its turn comes (actix does
//! not run a handler nobody waits for), so it is never written; a write already under
//! way when the deadline passes completes in the slot, so a commit answered Timeout
//! may have been applied, as in Kafka. Reads never come here: they go through the
//! slot's read client, so they never wait behind a commit.

use actix::prelude::*;
use std::sync::Arc;

use super::clients::CommitClient;
use crate::metrics::Queued;
use crate::store::{CommittedOffset, StoreError, TopicPartition};

#[derive(Clone, Debug, thiserror::Error)]
pub enum OffsetError {
    #[error("deadline passed before the offset store answered")]
    Timeout,
    #[error("{0}")]
    Backend(Arc<StoreError>),
}

impl From<StoreError> for OffsetError {
    fn from(e: StoreError) -> Self {
        OffsetError::Backend(Arc::new(e))
    }
}

/// Store (`Some`) or delete (`None`) committed offsets of one group, all or none.
#[derive(Message)]
#[rtype(result = "Result<(), OffsetError>")]
pub struct CommitOffsets {
    pub group: Arc<str>,
    pub entries: Vec<(TopicPartition, Option<CommittedOffset>)>,
    /// In the slot's queue until the commit is done.
    pub queued: Queued,
}

pub struct OffsetSlot {
    commits: CommitClient,
}

impl OffsetSlot {
    pub fn new(commits: CommitClient) -> Self {
        OffsetSlot { commits }
    }
}

impl Actor for OffsetSlot {
    type Context = Context<Self>;
}

impl Handler<CommitOffsets> for OffsetSlot {
    type Result = AtomicResponse<Self, Result<(), OffsetError>>;

    fn handle(&mut self, msg: CommitOffsets, _: &mut Self::Context) -> Self::Result {
        let commits = self.commits.clone();
        AtomicResponse::new(Box::pin(
            async move {
                // In the slot's queue until this future ends.
                let _queued = msg.queued;
                let written = commits.commit(&msg.group, &msg.entries).await;
                written.map_err(OffsetError::from)
            }
            .into_actor(self),
        ))
    }
}
