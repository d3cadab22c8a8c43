//! Log slots: the actors that append to partitions.
//!
//! Every partition belongs to exactly one slot ([`crate::Gateway::append`]), and a
//! slot handles one append at a time, so batches reach a partition in the order the
//! connections sent them and idempotent-producer checks see a settled state. The
//! slot is idempotence's one owner: it checks each idempotent batch (and each
//! transaction marker's epoch) against the partition's producer state, which it loads
//! from the store's producer history on first use and after an append whose outcome is
//! unknown, and which DescribeProducers reads (`ReadProducers`). Slots
//! share nothing, so a slow append on one never holds up another.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;

use crate::append_signals::AppendSignals;
use crate::metrics::Queued;
use crate::producer_state::{ActiveProducer, ProducerStates, SequenceError};
use crate::store::Logs;
use crate::store::{AppendBatch, Appended, ProducerBatch, StoreError, TopicPartition};
use crate::txn_index::TxnIndexes;

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error(transparent)]
    Sequence(#[from] SequenceError),
    /// A transactional batch its transaction does not allow (`Append::verify`).
    #[error("{message}")]
    Transaction {
        code: ResponseError,
        message: String,
    },
    #[error(transparent)]
    Backend(#[from] StoreError),
    #[error("log slot stopped")]
    SlotGone,
}

impl AppendError {
    pub fn code(&self) -> ResponseError {
        match self {
            AppendError::Sequence(e) => e.code(),
            AppendError::Transaction { code, .. } => *code,
            AppendError::Backend(e) => e.code(),
            AppendError::SlotGone => ResponseError::NotLeaderOrFollower,
        }
    }
}

/// Append one validated batch to a partition.
#[derive(Message)]
#[rtype(result = "Result<Appended, AppendError>")]
pub struct Append {
    pub tp: TopicPartition,
    pub batch: AppendBatch,
    /// For a transactional batch: whether its transaction may write here, asked in the
    /// slot's turn so appends keep their order.
    pub verify: Option<Verify>,
    /// In the slot's queue until the append is done.
    pub queued: Queued,
}

pub struct LogSlot {
    logs: Logs,
    signals: Arc<AppendSignals>,
    txns: TxnIndexes,
    /// Producer state of each idempotently written partition of this slot, loaded on first use.
    producers: HashMap<TopicPartition, ProducerStates>,
}

impl LogSlot {
    pub fn new(logs: Logs, signals: Arc<AppendSignals>, txns: TxnIndexes) -> Self {
        LogSlot {
            logs,
            signals,
            txns,
            producers: HashMap::new(),
        }
    }
}

impl Actor for LogSlot {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Connections enqueue appends synchronously, in request order; a bounded mailbox
        // would defer some sends and could reorder them. Connections bound what they have
        // in flight, which bounds this mailbox.
        ctx.set_mailbox_capacity(usize::MAX);
    }
}

/// A check run before an append, failing it with its own error.
pub type Verify = futures_util::future::BoxFuture<'static, Result<(), AppendError>>;

impl Handler<Append> for LogSlot {
    type Result = AtomicResponse<Self, Result<Appended, AppendError>>;

    fn handle(&mut self, msg: Append, _: &mut Self::Context) -> Self::Result {
        let Append {
            tp,
            batch,
            verify,
            queued,
        } = msg;
        let header = batch.header;
        // Markers carry the producer's id but no sequence: no idempotence check, only
        // their epoch's.
        let idempotent = header.is_idempotent() && !header.control;
        let marker = header.is_idempotent() && header.control;
        let retry_tp = tp.clone();
        let known = self.producers.contains_key(&tp);
        let history = ((idempotent || marker) && !known).then(|| {
            let (logs, tp) = (self.logs.clone(), tp.clone());
            async move { logs.producer_history(tp).await }
        });
        let load = async move {
            if let Some(verify) = verify {
                verify.await?;
            }
            match history {
                Some(load) => Ok(Some(load.await?)),
                None => Ok::<_, AppendError>(None),
            }
        };
        // Atomic: the next append on this slot starts only after this one is written.
        AtomicResponse::new(Box::pin(
            load.into_actor(self)
                .then(move |history, act, _| {
                    let checked = history.and_then(|history| {
                        if let Some(history) = history {
                            act.producers
                                .insert(tp.clone(), ProducerStates::from_history(history));
                        }
                        match act.producers.get(&tp) {
                            Some(states) if idempotent => Ok(states.check(&header)?),
                            Some(states) if marker => {
                                states.check_marker(&header)?;
                                Ok(None)
                            }
                            _ => Ok(None),
                        }
                    });
                    let logs = act.logs.clone();
                    async move {
                        match checked? {
                            Some(base_offset) => {
                                // A retry of a batch already written: its offset, nothing written.
                                let watermarks = logs.watermarks(tp.clone()).await?;
                                Ok((
                                    tp,
                                    base_offset,
                                    Appended {
                                        base_offset,
                                        watermarks,
                                    },
                                    false,
                                    bytes::Bytes::new(),
                                ))
                            }
                            None => {
                                // Kept for the transaction index: a marker's record
                                // says commit or abort. Cheap: `Bytes` is shared.
                                let bytes = batch.bytes.clone();
                                let appended = logs.append(tp.clone(), batch).await?;
                                Ok((tp, appended.base_offset, appended, true, bytes))
                            }
                        }
                    }
                    .into_actor(act)
                })
                .map(move |result: Result<_, AppendError>, act, _| {
                    drop(queued);
                    if let Err(AppendError::Backend(StoreError::Unavailable(_))) = &result {
                        // Unanswered, the batch may have landed: the partition's
                        // producer state is read again from the store before the
                        // retry, which then finds it if it did.
                        act.producers.remove(&retry_tp);
                    }
                    let (tp, base_offset, appended, written, bytes) = result?;
                    if written {
                        act.txns.appended(&tp, base_offset, &header, &bytes);
                        if idempotent {
                            act.producers.entry(tp.clone()).or_default().record(
                                ProducerBatch {
                                    producer_id: header.producer_id,
                                    producer_epoch: header.producer_epoch,
                                    first_sequence: header.base_sequence,
                                    last_sequence: header.last_sequence(),
                                    base_offset,
                                    last_offset: base_offset + header.last_offset_delta() as i64,
                                },
                                Some(header.max_timestamp),
                            );
                        } else if marker {
                            if let Some(states) = act.producers.get_mut(&tp) {
                                states.record_marker(&header);
                            }
                        }
                        act.signals.appended(&tp, appended.watermarks.high);
                    }
                    Ok(appended)
                }),
        ))
    }
}

/// The producers a partition knows (DescribeProducers): the slot's state, or read
/// from the store's history when the slot has none, which is then not kept: the read
/// does not wait for appends in flight, nor they for it.
#[derive(Message)]
#[rtype(result = "Result<Vec<ActiveProducer>, StoreError>")]
pub struct ReadProducers(pub TopicPartition);

impl Handler<ReadProducers> for LogSlot {
    type Result = ResponseFuture<Result<Vec<ActiveProducer>, StoreError>>;

    fn handle(&mut self, msg: ReadProducers, _: &mut Self::Context) -> Self::Result {
        if let Some(states) = self.producers.get(&msg.0) {
            let active = states.active();
            return Box::pin(async move { Ok(active) });
        }
        let logs = self.logs.clone();
        Box::pin(async move {
            let history = logs.producer_history(msg.0).await?;
            Ok(ProducerStates::from_history(history).active())
        })
    }
}

/// Forget every partition's producer state: other gateways may have appended since,
/// so it is read again from the backend before its next use.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetProducers;

impl Handler<ForgetProducers> for LogSlot {
    type Result = ();

    fn handle(&mut self, _: ForgetProducers, _: &mut Self::Context) {
        self.producers.clear();
    }
}

/// Forget a deleted topic's producer state.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetTopic(pub Arc<str>);

impl Handler<ForgetTopic> for LogSlot {
    type Result = ();

    fn handle(&mut self, msg: ForgetTopic, _: &mut Self::Context) {
        self.producers.retain(|tp, _| tp.topic != msg.0);
    }
}
