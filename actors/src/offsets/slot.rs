//! Offset slots: the actors that own committed consumer-group offsets.
//!
//! A partition always maps to the same slot (`Offsets`), and each slot owns the two
//! clients of its own ([`CommitClient`], [`ReadClient`]): nothing else writes or reads
//! its partitions' offsets. Commits queue in the slot and are written one at a time, in
//! the order they arrived (the slot holds the queue and starts the next write when the
//! one before ends), so commits on a slot are serialized by construction; reads are
//! served at once beside them, never behind a commit.
//!
//! Deadlines are actor timeouts: each message carries its request's deadline, and
//! `Offsets` sends it with what is left of it, so the requester gets Timeout when it
//! passes. A commit whose deadline has passed when its turn comes is answered Timeout
//! unwritten; a write already under way when the deadline passes completes in the
//! slot, so a commit answered Timeout may have been applied, as in Kafka, but never in
//! part (one store write a commit).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;
use tracing::Instrument;

use super::clients::{CommitClient, OffsetWrite, ReadClient};
use super::held::Held;
use crate::metrics::Queued;
use crate::store::{CommittedOffset, StoreError, TopicPartition};

#[derive(Clone, Debug, thiserror::Error)]
pub enum OffsetError {
    #[error("deadline passed before the offset store answered")]
    Timeout,
    /// Another claim of the group came first (`fence.rs`): nothing was written.
    #[error("the group was claimed by another coordinator")]
    Superseded,
    #[error(transparent)]
    Backend(Arc<StoreError>),
}

impl OffsetError {
    /// Kafka's answer for it.
    pub fn code(&self) -> ResponseError {
        match self {
            // Java's consumer retries a commit on REQUEST_TIMED_OUT.
            OffsetError::Timeout => ResponseError::RequestTimedOut,
            // The client looks the coordinator up again.
            OffsetError::Superseded => ResponseError::NotCoordinator,
            OffsetError::Backend(e) => e.code(),
        }
    }
}

impl From<StoreError> for OffsetError {
    fn from(e: StoreError) -> Self {
        OffsetError::Backend(Arc::new(e))
    }
}

/// A write of the slot's partitions' offsets, all or none ([`OffsetWrite`]).
#[derive(Message)]
#[rtype(result = "Result<(), OffsetError>")]
pub struct CommitOffsets {
    pub write: OffsetWrite,
    /// Past it, a commit still queued is answered Timeout unwritten.
    pub deadline: Instant,
    /// In the slot's queue until the commit is done.
    pub queued: Queued,
    /// The request's span, entered for the write.
    pub span: tracing::Span,
}

/// A group's committed offsets of these partitions, in their order; `None` where it has
/// none.
#[derive(Message)]
#[rtype(result = "Result<Vec<Option<CommittedOffset>>, OffsetError>")]
pub struct ReadOffsets {
    pub group: Arc<str>,
    pub partitions: Vec<TopicPartition>,
    /// The request's span, entered for the read.
    pub span: tracing::Span,
}

/// Every committed offset of the table (`prefix` of its keys), as stored: the slot's
/// read client scans the whole table, which no slot owns alone.
#[derive(Message)]
#[rtype(result = "Result<Vec<(Arc<str>, TopicPartition)>, OffsetError>")]
pub struct ListCommitted {
    /// Only this group's, or every group's.
    pub group: Option<Arc<str>>,
}

/// The offsets open transactions hold for a group (one producer's, if given), read by
/// the slot's read client: `(producer id, partition, what it holds)`.
#[derive(Message)]
#[rtype(result = "Result<Vec<(i64, TopicPartition, Held)>, OffsetError>")]
pub struct ReadHeld {
    pub group: Arc<str>,
    pub producer_id: Option<i64>,
}

type Reply = oneshot::Sender<Result<(), OffsetError>>;

pub struct OffsetSlot {
    commits: CommitClient,
    reads: ReadClient,
    /// Commits that arrived while one was being written, in arrival order.
    waiting: VecDeque<(CommitOffsets, Reply)>,
    writing: bool,
}

impl OffsetSlot {
    pub fn new(commits: CommitClient, reads: ReadClient) -> Self {
        OffsetSlot {
            commits,
            reads,
            waiting: VecDeque::new(),
            writing: false,
        }
    }

    /// Starts the next queued commit, unless one is being written: the only place a
    /// commit is written, so there is never more than one at a time.
    fn write_next(&mut self, ctx: &mut Context<Self>) {
        if self.writing {
            return;
        }
        while let Some((msg, reply)) = self.waiting.pop_front() {
            if Instant::now() >= msg.deadline {
                let _ = reply.send(Err(OffsetError::Timeout));
                continue;
            }
            self.writing = true;
            let commits = self.commits.clone();
            let span = msg.span.clone();
            let write = async move {
                // In the slot's queue until the write ends.
                let _queued = msg.queued;
                // A refusal is logged by the group's coordinator, told of it.
                let written = match commits.write(&msg.write).await {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(OffsetError::Superseded),
                    Err(e) => Err(OffsetError::from(e)),
                };
                let _ = reply.send(written);
            };
            ctx.spawn(
                write
                    .instrument(span)
                    .into_actor(self)
                    .map(|(), slot, ctx| {
                        slot.writing = false;
                        slot.write_next(ctx);
                    }),
            );
            return;
        }
    }
}

impl Actor for OffsetSlot {
    type Context = Context<Self>;
}

impl Handler<CommitOffsets> for OffsetSlot {
    type Result = ResponseFuture<Result<(), OffsetError>>;

    fn handle(&mut self, msg: CommitOffsets, ctx: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        self.waiting.push_back((msg, reply));
        self.write_next(ctx);
        Box::pin(async move { answer.await.unwrap_or(Err(OffsetError::Timeout)) })
    }
}

impl Handler<ReadOffsets> for OffsetSlot {
    type Result = ResponseFuture<Result<Vec<Option<CommittedOffset>>, OffsetError>>;

    fn handle(&mut self, msg: ReadOffsets, _: &mut Self::Context) -> Self::Result {
        let reads = self.reads.clone();
        let ReadOffsets {
            group,
            partitions,
            span,
        } = msg;
        let read = async move { Ok(reads.read(&group, &partitions).await?) };
        Box::pin(read.instrument(span))
    }
}

impl Handler<ListCommitted> for OffsetSlot {
    type Result = ResponseFuture<Result<Vec<(Arc<str>, TopicPartition)>, OffsetError>>;

    fn handle(&mut self, msg: ListCommitted, _: &mut Self::Context) -> Self::Result {
        let reads = self.reads.clone();
        Box::pin(async move { Ok(reads.list(msg.group.as_deref()).await?) })
    }
}

impl Handler<ReadHeld> for OffsetSlot {
    type Result = ResponseFuture<Result<Vec<(i64, TopicPartition, Held)>, OffsetError>>;

    fn handle(&mut self, msg: ReadHeld, _: &mut Self::Context) -> Self::Result {
        let reads = self.reads.clone();
        Box::pin(async move { Ok(reads.held(&msg.group, msg.producer_id).await?) })
    }
}
