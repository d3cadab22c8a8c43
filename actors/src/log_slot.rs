//! Log slots: the actors that append to partitions.
//!
//! Every partition belongs to exactly one slot ([`crate::partitions::Partitions::append`]), and a
//! slot writes one append at a time, so batches reach a partition in the order the
//! connections sent them and idempotent-producer checks see a settled state. Appends
//! to one partition that queue up behind the one being written go to the store
//! together, in one call (group commit): with several producers on a partition, one
//! Iggy request or one journal write serves several Kafka batches. The
//! slot is idempotence's one owner: it checks each idempotent batch (and each
//! transaction marker's epoch) against the partition's producer state, which it loads
//! from the store's producer history on first use and after an append whose outcome is
//! unknown, and which DescribeProducers reads (`ReadProducers`). Slots
//! share nothing, so a slow append on one never holds up another.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::append_signals::AppendSignals;
use crate::metrics::Queued;
use crate::producer_state::{ActiveProducer, ProducerStates, SequenceError};
use crate::protocol::records::BatchHeader;
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
    /// For a marker of transactions v2 (WriteTxnMarkers v2, KIP-1228): its epoch must
    /// be above the producer's, as the coordinator bumped it to end the transaction.
    pub strict_marker: bool,
    /// In the slot's queue until the append is done.
    pub queued: Queued,
    /// The request's span, entered for the write (the first append's, for a group).
    pub span: tracing::Span,
}

pub struct LogSlot {
    logs: Logs,
    signals: Arc<AppendSignals>,
    txns: TxnIndexes,
    /// Producer state of each idempotently written partition of this slot, loaded on first use.
    producers: HashMap<TopicPartition, ProducerStates>,
    /// Appends waiting for the one being written, in arrival order.
    waiting: VecDeque<Waiting>,
    /// Whether an append (or a group of them) is being written.
    writing: bool,
    /// Producer state to forget once the group being written is done: its checks and
    /// records must see one state throughout.
    forgets: Vec<Forget>,
}

/// Producer state to forget: every partition's, or a deleted topic's.
enum Forget {
    All,
    Topic(Arc<str>),
}

/// An append in the slot's queue, and where its answer goes.
struct Waiting {
    msg: Append,
    answer: oneshot::Sender<Result<Appended, AppendError>>,
}

/// Most batches written together, and about the most bytes: a group is one store call
/// (one Iggy request), so it stays well within what one request should carry.
const GROUP_BATCHES: usize = 16;
const GROUP_BYTES: usize = 8 << 20;

impl LogSlot {
    pub fn new(logs: Logs, signals: Arc<AppendSignals>, txns: TxnIndexes) -> Self {
        LogSlot {
            logs,
            signals,
            txns,
            producers: HashMap::new(),
            waiting: VecDeque::new(),
            writing: false,
            forgets: Vec::new(),
        }
    }

    /// Forgets now, or after the group being written.
    fn forget(&mut self, forget: Forget) {
        if self.writing {
            self.forgets.push(forget);
            return;
        }
        match forget {
            Forget::All => self.producers.clear(),
            Forget::Topic(topic) => self.producers.retain(|tp, _| tp.topic != topic),
        }
    }

    /// Whether `msg` may be written in one store call with other appends to its
    /// partition: a plain batch, or an idempotent one whose partition's producer state
    /// is loaded. Transactional batches (checked by `verify`), markers and a first
    /// idempotent batch go alone, as their checks need the slot's turn to themselves.
    fn joins(&self, msg: &Append) -> bool {
        let h = &msg.batch.header;
        msg.verify.is_none()
            && !h.control
            && (!h.is_idempotent() || self.producers.contains_key(&msg.tp))
    }

    /// The next appends to write: the first waiting, and when it joins, the later ones
    /// to its partition that join too, up to the first that does not (so a partition's
    /// batches keep their order) and each of a producer not in the group yet (so each
    /// idempotence check stands alone: no batch's check needs another's outcome).
    fn next_group(&mut self) -> Vec<Waiting> {
        let Some(first) = self.waiting.pop_front() else {
            return Vec::new();
        };
        if !self.joins(&first.msg) {
            return vec![first];
        }
        let tp = first.msg.tp.clone();
        let producer = |w: &Waiting| {
            let h = &w.msg.batch.header;
            h.is_idempotent().then_some(h.producer_id)
        };
        let mut producers: Vec<i64> = producer(&first).into_iter().collect();
        let mut bytes = first.msg.batch.bytes.len();
        let mut group = vec![first];
        let mut open = true;
        let mut rest = VecDeque::with_capacity(self.waiting.len());
        for w in std::mem::take(&mut self.waiting) {
            if open && w.msg.tp == tp {
                let fits =
                    group.len() < GROUP_BATCHES && bytes + w.msg.batch.bytes.len() <= GROUP_BYTES;
                let own = producer(&w).is_none_or(|id| !producers.contains(&id));
                if fits && own && self.joins(&w.msg) {
                    producers.extend(producer(&w));
                    bytes += w.msg.batch.bytes.len();
                    group.push(w);
                    continue;
                }
                open = false;
            }
            rest.push_back(w);
        }
        self.waiting = rest;
        group
    }

    /// Writes the next group when none is being written.
    fn write_next(&mut self, ctx: &mut Context<Self>) {
        if self.writing {
            return;
        }
        let group = self.next_group();
        if group.is_empty() {
            return;
        }
        self.writing = true;
        ctx.spawn(self.write(group).map(|(), act, ctx| {
            act.writing = false;
            for forget in std::mem::take(&mut act.forgets) {
                act.forget(forget);
            }
            act.write_next(ctx);
        }));
    }

    /// Checks and writes one group (all to one partition) and answers each append.
    fn write(&mut self, group: Vec<Waiting>) -> impl ActorFuture<Self, Output = ()> {
        let tp = group[0].msg.tp.clone();
        // The group's work, down to the store call, is done in its first request's span.
        let span = group[0].msg.span.clone();
        let known = self.producers.contains_key(&tp);
        let mut batches = Vec::with_capacity(group.len());
        let mut strict = Vec::with_capacity(group.len());
        let mut answers = Vec::with_capacity(group.len());
        let mut first_verify = None;
        for (i, w) in group.into_iter().enumerate() {
            let Append {
                batch,
                verify,
                strict_marker,
                queued,
                ..
            } = w.msg;
            strict.push(strict_marker);
            if i == 0 {
                first_verify = verify;
            }
            batches.push(batch);
            answers.push((w.answer, queued));
        }
        // Only a group of one can need its verify or the producer history (`joins`).
        let needs_history = !known && batches.iter().any(|b| b.header.is_idempotent());
        let history = needs_history.then(|| {
            let (logs, tp) = (self.logs.clone(), tp.clone());
            async move { logs.producer_history(tp).await }
        });
        let load = async move {
            if let Some(verify) = first_verify {
                verify.await?;
            }
            match history {
                Some(load) => Ok(Some(load.await?)),
                None => Ok::<_, AppendError>(None),
            }
        };
        let (load_span, store_span) = (span.clone(), span.clone());
        load.instrument(load_span)
            .into_actor(self)
            .then(move |history, act, _| {
                // Each batch's check: already written (its offset), refused, or to write.
                let checked: Vec<Result<Option<i64>, AppendError>> = match history {
                    // Only a group of one loads anything (`joins`).
                    Err(e) => {
                        let mut e = Some(e);
                        (batches.iter())
                            .map(|_| Err(e.take().unwrap_or(AppendError::SlotGone)))
                            .collect()
                    }
                    Ok(history) => {
                        if let Some(history) = history {
                            act.producers
                                .insert(tp.clone(), ProducerStates::from_history(history));
                        }
                        let mut states = act.producers.get_mut(&tp);
                        (batches.iter().zip(&strict))
                            .map(|(b, &strict)| check(states.as_deref_mut(), &b.header, strict))
                            .collect()
                    }
                };
                let mut to_write = Vec::new();
                let outcomes: Vec<Outcome> = (batches.into_iter().zip(checked))
                    .map(|(batch, checked)| match checked {
                        Ok(None) => {
                            to_write.push(batch);
                            Outcome::Written
                        }
                        Ok(Some(base_offset)) => Outcome::Duplicate(base_offset),
                        Err(e) => Outcome::Refused(e),
                    })
                    .collect();
                let duplicates = outcomes.iter().any(|o| matches!(o, Outcome::Duplicate(..)));
                let logs = act.logs.clone();
                async move {
                    // A retry of a batch already written: its offset, nothing written.
                    let watermarks = match duplicates {
                        true => Some(logs.watermarks(tp.clone()).await),
                        false => None,
                    };
                    // Kept for the transaction index: a marker's record says commit or
                    // abort. Cheap: `Bytes` is shared.
                    let written: Vec<(BatchHeader, Bytes)> = (to_write.iter())
                        .map(|b| (b.header, b.bytes.clone()))
                        .collect();
                    let appended = match to_write.is_empty() {
                        true => Ok(Vec::new()),
                        false => logs.append_all(tp.clone(), to_write).await,
                    };
                    (tp, outcomes, watermarks, written, appended)
                }
                .instrument(store_span)
                .into_actor(act)
            })
            .map(
                move |(tp, outcomes, watermarks, written, appended), act, _| {
                    let _in_request = span.enter();
                    let appended = match appended {
                        Ok(appended) if appended.len() == written.len() => Ok(appended),
                        Ok(_) => Err(StoreError::fatal(
                            "the log store answered an append with another number of batches",
                        )),
                        Err(e) => Err(e),
                    };
                    if let Err(StoreError::Unavailable { .. }) = &appended {
                        // Unanswered, the batches may have landed: the partition's producer
                        // state is read again from the store before a retry, which then
                        // finds them if they did.
                        act.producers.remove(&tp);
                    }
                    if let Ok(appended) = &appended {
                        for ((header, bytes), a) in written.iter().zip(appended) {
                            act.recorded(&tp, header, bytes, a);
                        }
                    }
                    let mut appended = appended.map(Vec::into_iter);
                    for (outcome, (answer, queued)) in outcomes.into_iter().zip(answers) {
                        let result = match outcome {
                            Outcome::Refused(e) => Err(e),
                            Outcome::Duplicate(base_offset) => match &watermarks {
                                Some(Ok(w)) => Ok(Appended {
                                    base_offset,
                                    watermarks: *w,
                                }),
                                Some(Err(e)) => Err(AppendError::Backend(e.clone())),
                                None => Err(AppendError::SlotGone),
                            },
                            Outcome::Written => match &mut appended {
                                Ok(each) => each.next().ok_or(AppendError::SlotGone),
                                Err(e) => Err(AppendError::Backend(e.clone())),
                            },
                        };
                        drop(queued);
                        let _ = answer.send(result);
                    }
                },
            )
    }

    /// Takes a written batch into the partition's transaction index and producer
    /// state, and tells waiting fetches.
    fn recorded(&mut self, tp: &TopicPartition, header: &BatchHeader, bytes: &Bytes, a: &Appended) {
        self.txns.appended(tp, a.base_offset, header, bytes);
        if header.is_idempotent() && !header.control {
            // Absent when forgotten meanwhile: the next use reads the history again.
            if let Some(states) = self.producers.get_mut(tp) {
                states.record(
                    ProducerBatch {
                        producer_id: header.producer_id,
                        producer_epoch: header.producer_epoch,
                        first_sequence: header.base_sequence,
                        last_sequence: header.last_sequence(),
                        base_offset: a.base_offset,
                        last_offset: a.base_offset + header.last_offset_delta() as i64,
                    },
                    Some(header.max_timestamp),
                );
            }
        } else if header.is_idempotent() {
            if let Some(states) = self.producers.get_mut(tp) {
                states.record_marker(header);
            }
        }
        self.signals.appended(tp, a.watermarks.high);
    }
}

/// What became of one append of a group.
enum Outcome {
    Written,
    /// A retry of a batch already written at this offset.
    Duplicate(i64),
    Refused(AppendError),
}

/// A batch's idempotence check against its partition's producer state: `Some` offset
/// for a retry of a batch already written. Markers carry the producer's id but no
/// sequence: only their epoch is checked (strictly above the producer's for a
/// transactions v2 marker, `Append::strict_marker`).
fn check(
    states: Option<&mut ProducerStates>,
    h: &BatchHeader,
    strict_marker: bool,
) -> Result<Option<i64>, AppendError> {
    match states {
        Some(states) if h.is_idempotent() && !h.control => Ok(states.check(h)?),
        Some(states) if h.is_idempotent() => {
            states.check_marker(h, strict_marker)?;
            Ok(None)
        }
        _ => Ok(None),
    }
}

impl Actor for LogSlot {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Connections enqueue appends synchronously, in request order; a bounded mailbox
        // would defer some sends and could reorder them. Connections bound what they have
        // in flight, which bounds this mailbox and the queue behind it.
        ctx.set_mailbox_capacity(usize::MAX);
    }
}

/// A check run before an append, failing it with its own error.
pub type Verify = futures_util::future::BoxFuture<'static, Result<(), AppendError>>;

/// Queued in arrival order; written one group at a time (`next_group`): the next
/// starts only after the last is written, and appends that arrive meanwhile to the
/// same partition are written together (group commit).
impl Handler<Append> for LogSlot {
    type Result = ResponseFuture<Result<Appended, AppendError>>;

    fn handle(&mut self, msg: Append, ctx: &mut Self::Context) -> Self::Result {
        let (answer, answered) = oneshot::channel();
        self.waiting.push_back(Waiting { msg, answer });
        self.write_next(ctx);
        Box::pin(async move { answered.await.unwrap_or(Err(AppendError::SlotGone)) })
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
        self.forget(Forget::All);
    }
}

/// Forget a deleted topic's producer state.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetTopic(pub Arc<str>);

impl Handler<ForgetTopic> for LogSlot {
    type Result = ();

    fn handle(&mut self, msg: ForgetTopic, _: &mut Self::Context) {
        self.forget(Forget::Topic(msg.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{LogAnswer, LogCall, LogStore, StoreFuture, Watermarks};
    use crate::Metrics;
    use parking_lot::Mutex;
    use tokio::sync::Semaphore;

    /// A log that holds each append until `gate` lets it through, and keeps how many
    /// batches each append call carried.
    struct GatedLog {
        gate: Arc<Semaphore>,
        calls: Mutex<Vec<usize>>,
        high: Mutex<i64>,
    }

    impl LogStore for GatedLog {
        fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer> {
            match call {
                LogCall::Append { batches, .. } => Box::pin(async move {
                    self.gate.acquire().await.unwrap().forget();
                    self.calls.lock().push(batches.len());
                    let mut high = self.high.lock();
                    let appended = batches.iter().map(|b| {
                        let base_offset = *high;
                        *high += i64::from(b.header.record_count);
                        Appended {
                            base_offset,
                            watermarks: Watermarks {
                                log_start: 0,
                                high: *high,
                            },
                        }
                    });
                    Ok(LogAnswer::Appended(appended.collect()))
                }),
                LogCall::ProducerHistory(_) => {
                    Box::pin(async { Ok(LogAnswer::ProducerHistory(Vec::new())) })
                }
                _ => Box::pin(async { Err(StoreError::fatal("not used here")) }),
            }
        }

        fn log_dir(&self) -> String {
            "gated".into()
        }
    }

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition,
        }
    }

    /// A batch of one record; idempotent with `producer` = (id, sequence).
    fn batch(producer: Option<(i64, i32)>) -> AppendBatch {
        let (producer_id, base_sequence) = producer.unwrap_or((-1, -1));
        AppendBatch {
            header: BatchHeader {
                record_count: 1,
                base_timestamp: 0,
                max_timestamp: 0,
                log_append_time: false,
                transactional: false,
                control: false,
                producer_id,
                producer_epoch: if producer.is_some() { 0 } else { -1 },
                base_sequence,
            },
            bytes: Bytes::new(),
            records: Bytes::new(),
            whole: false,
        }
    }

    /// Appends to one partition that queue behind the one being written go to the
    /// store in one call, in order; another partition's wait their own turn, and a
    /// producer's next batch waits for its last, so each check stands alone.
    #[actix_rt::test]
    async fn appends_queued_behind_a_write_are_written_together() {
        let gate = Arc::new(Semaphore::new(0));
        let log = Arc::new(GatedLog {
            gate: gate.clone(),
            calls: Mutex::new(Vec::new()),
            high: Mutex::new(0),
        });
        let metrics = Metrics::new();
        let slot = LogSlot::new(
            Logs::new(log.clone()),
            Arc::default(),
            TxnIndexes::default(),
        )
        .start();
        let send = |partition, producer| {
            slot.send(Append {
                strict_marker: false,
                tp: tp(partition),
                batch: batch(producer),
                verify: None,
                queued: metrics.log_slots.enter(0),
                span: tracing::Span::none(),
            })
        };
        // The first idempotent batch loads the producer state and goes alone.
        let sent = vec![
            send(0, Some((1, 0))),
            send(0, Some((1, 1))),
            send(0, Some((2, 0))),
            send(1, None),
            send(0, None),
            send(0, Some((1, 2))),
        ];
        // The slot takes in every message while the first write waits at the gate.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        gate.add_permits(sent.len());
        let mut offsets = Vec::new();
        for answer in sent {
            offsets.push(answer.await.unwrap().unwrap().base_offset);
        }
        // (1,0) alone; then (1,1), (2,0) and the plain batch behind partition 1's in
        // one call, which stops at (1,2), producer 1's second; then partition 1's
        // batch; then (1,2). The log numbers offsets across partitions.
        assert_eq!(*log.calls.lock(), vec![1, 3, 1, 1]);
        assert_eq!(offsets, vec![0, 1, 2, 4, 3, 5]);
    }
}
