//! Offset slots: the actors that commit consumer-group offsets.
//!
//! A partition always maps to the same slot (`Offsets`), and each slot owns a commit
//! client of the metadata store of its own. A slot takes one commit message at a time
//! (its handler is atomic: the mailbox holds the next until this one is written), so
//! commits on a slot are applied one at a time, in the order they arrived, by
//! construction. A commit message past its deadline when its turn comes answers
//! Timeout unwritten; one whose write outlives the deadline answers Timeout too.
//! Reads never come here: they go through the slot's read client, so they never wait
//! behind a commit.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;

use super::table;
use crate::metrics::Queued;
use crate::store::meta::Change;
use crate::store::Meta;
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
    pub deadline: Instant,
    /// In the slot's queue until the commit is done.
    pub queued: Queued,
}

pub struct OffsetSlot {
    commits: Meta,
}

impl OffsetSlot {
    /// A slot committing through `commits`, a client of its own.
    pub fn new(commits: Meta) -> Self {
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
                if Instant::now() >= msg.deadline {
                    return Err(OffsetError::Timeout);
                }
                let changes = msg
                    .entries
                    .iter()
                    .map(|(tp, offset)| {
                        let key = table::key(&msg.group, tp);
                        match offset {
                            Some(c) => Change::Put {
                                key,
                                value: table::encode(c),
                            },
                            None => Change::Delete { key },
                        }
                    })
                    .collect();
                let write = commits.write(table::TABLE, changes);
                match tokio::time::timeout_at(msg.deadline.into(), write).await {
                    Ok(written) => written.map(drop).map_err(OffsetError::from),
                    Err(_) => Err(OffsetError::Timeout),
                }
            }
            .into_actor(self),
        ))
    }
}
