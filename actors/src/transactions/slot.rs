//! Transaction slots: the actors that coordinate transactional ids. An id always maps
//! to the same slot (`Transactions`), whose handlers are atomic, so one id's requests
//! apply one at a time in arrival order; slots run in parallel.
//!
//! A slot keeps the states of the ids it coordinates, loaded from table
//! `transactions` on first use and forgotten when the live gateways change (another
//! gateway may have coordinated them meanwhile). Every change is stored before it is
//! answered, by a write that expects the bytes the slot read: the write of a gateway
//! that lost the id while its bytes were on the way (a cut link, a paused process)
//! changes nothing, and that gateway answers NOT_COORDINATOR and reads the id again.
//! Ending a transaction stores the decision, writes a marker into each of its
//! partitions through their log slots, moves its held offsets, then stores the end: a
//! gateway that dies in between leaves the decision stored, and whichever gateway
//! coordinates the id next completes it (`Tick`).
//!
//! Handlers only ever wait on the metadata store. Completing an end waits on log
//! slots, whose appends may be waiting on this slot (a transactional batch adding its
//! partition, transactions v2), so it runs beside the handlers (`finish`); the id's
//! own requests answer CONCURRENT_TRANSACTIONS meanwhile, as Kafka answers them while
//! a transition is pending.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::{oneshot, watch};

use super::remote_adds;
use super::state::{EndAsk, Ended, Phase, TxnError, TxnState};
use super::OpenTxns;
use crate::membership::Cluster;
use crate::offsets::Offsets;
use crate::partitions::Partitions;
use crate::producer_ids::ProducerIds;
use crate::store::meta::{Change, Expect};
use crate::store::{Meta, StoreError, TopicPartition};

pub const TABLE: &str = "transactions";
/// How often other gateways' adds, expirations and unfinished ends are looked for.
const TICK: Duration = Duration::from_millis(500);
/// Every this many ticks the whole table is read again, for ids to expire or to take
/// over.
const RESCAN_TICKS: u32 = 20;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What a slot uses; the same for every slot.
#[derive(Clone)]
pub struct Deps {
    pub meta: Meta,
    pub partitions: Partitions,
    pub offsets: Offsets,
    pub producer_ids: Arc<ProducerIds>,
    pub open: OpenTxns,
    pub cluster: watch::Receiver<Arc<Cluster>>,
    /// `transactional.id.expiration.ms`: an id with nothing open is forgotten this long
    /// after its last change.
    pub expiration_ms: i64,
    /// This slot's place among `slots`, to know which ids are its own on a rescan.
    pub index: usize,
    pub slots: usize,
}

pub struct TxnSlot {
    deps: Deps,
    states: HashMap<String, Stored>,
    /// The live gateways the states were loaded under.
    seen: Arc<Cluster>,
    /// Ids whose decided end is being completed (`finish`).
    completing: HashSet<String>,
    /// Ids whose decision this slot stored under the view it holds: completing any
    /// other is a takeover (`complete`).
    decided_here: HashSet<String>,
    /// The open transaction each timeout timer is set for (`watch_timeout`).
    timers: HashMap<String, Opened>,
    ticks: u32,
}

/// An open transaction: its producer id, epoch and start (ms).
type Opened = (i64, i16, i64);

/// A state and the bytes table `transactions` holds for it, which the write of its
/// successor expects to find (`save`).
#[derive(Clone, Debug)]
struct Stored {
    state: TxnState,
    bytes: bytes::Bytes,
}

impl TxnSlot {
    pub fn new(deps: Deps) -> TxnSlot {
        let seen = deps.cluster.borrow().clone();
        TxnSlot {
            deps,
            states: HashMap::new(),
            seen,
            completing: HashSet::new(),
            decided_here: HashSet::new(),
            timers: HashMap::new(),
            ticks: 0,
        }
    }

    /// CONCURRENT_TRANSACTIONS while `id`'s end is being completed.
    fn check_idle(&self, id: &str) -> Result<(), TxnError> {
        match self.completing.contains(id) {
            false => Ok(()),
            true => {
                let phase = (self.states.get(id)).map_or(Phase::PrepareAbort, |s| s.state.phase);
                Err(TxnError::Concurrent(phase))
            }
        }
    }

    /// Completes `id`'s stored decision beside the handlers, `own` when this slot has
    /// just stored it; the receiver hears when it is done (or failed, to be completed
    /// on a later tick).
    fn finish(
        &mut self,
        ctx: &mut Context<Self>,
        id: String,
        decided: Stored,
        own: bool,
    ) -> oneshot::Receiver<()> {
        if own {
            self.decided_here.insert(id.clone());
        }
        let (done_tx, done_rx) = oneshot::channel();
        self.completing.insert(id.clone());
        self.states.insert(id.clone(), decided.clone());
        let (deps, seen) = (self.deps.clone(), self.seen.clone());
        let taken_over = !self.decided_here.contains(&id);
        let work = {
            let id = id.clone();
            async move { complete(&deps, &id, decided, taken_over).await }
        };
        ctx.spawn(work.into_actor(self).map(move |result, act, _| {
            act.completing.remove(&id);
            match result {
                // A state of another view of the cluster is not kept.
                Ok(done) if Arc::ptr_eq(&act.seen, &seen) => {
                    act.decided_here.remove(&id);
                    act.states.insert(id, done);
                }
                Ok(_) => {}
                Err(e) => {
                    act.forget_superseded(&id, &e);
                    tracing::warn!(transactional_id = %id, error = %e, "transaction end to be completed later")
                }
            }
            let _ = done_tx.send(());
        }));
        done_rx
    }

    /// Sets the timer that aborts `id`'s transaction at its timeout, when it is open
    /// and has none yet.
    fn watch_timeout(&mut self, id: &str, ctx: &mut Context<Self>) {
        let Some(s) = (self.states.get(id).map(|s| &s.state)).filter(|s| s.phase == Phase::Ongoing)
        else {
            return;
        };
        let open = (s.producer_id, s.epoch, s.started_ms);
        if self.timers.get(id) == Some(&open) {
            return;
        }
        let due = s.started_ms + s.timeout_ms as i64 + 1 - now_ms();
        self.timers.insert(id.to_string(), open);
        let after = Duration::from_millis(due.max(0) as u64);
        ctx.notify_later(TimedOut(id.to_string(), open), after);
    }

    /// Forgets `id`'s state when `e` says the store holds another: the next request
    /// reads it again.
    fn forget_superseded(&mut self, id: &str, e: &TxnError) {
        if matches!(e, TxnError::Superseded) {
            self.states.remove(id);
            self.decided_here.remove(id);
        }
    }

    /// A handler's result, its state forgotten when it was superseded.
    fn kept<T>(&mut self, id: &str, r: Result<T, TxnError>) -> Result<T, TxnError> {
        if let Err(e) = &r {
            self.forget_superseded(id, e);
        }
        r
    }

    /// The live gateways now; every state is forgotten when they changed since the
    /// states were loaded (another gateway may have coordinated their ids meanwhile).
    fn rebase(&mut self) -> Arc<Cluster> {
        let cluster = self.deps.cluster.borrow().clone();
        if !Arc::ptr_eq(&cluster, &self.seen) {
            self.states.clear();
            self.timers.clear();
            self.decided_here.clear();
            self.seen = cluster.clone();
        }
        cluster
    }

    /// The state of `id`: the slot's copy, else the stored one; NOT_COORDINATOR for an
    /// id this gateway does not coordinate.
    fn current(&mut self, id: &str) -> impl Future<Output = Result<Option<Stored>, TxnError>> {
        let coordinating = self.rebase().coordinates(id);
        let cached = self.states.get(id).cloned();
        let meta = self.deps.meta.clone();
        let id = id.to_string();
        async move {
            match (coordinating, cached) {
                (false, _) => Err(TxnError::NotCoordinator),
                (true, Some(s)) => Ok(Some(s)),
                (true, None) => load_stored(&meta, &id).await,
            }
        }
    }

    /// `current`, which must exist and be the request's producer at its epoch.
    fn of_producer(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> impl Future<Output = Result<Stored, TxnError>> {
        let current = self.current(id);
        let id = id.to_string();
        async move {
            let held = current.await?.ok_or(TxnError::NoProducer(id))?;
            held.state.check_producer(producer_id, epoch)?;
            Ok(held)
        }
    }
}

impl Actor for TxnSlot {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(TICK, |_, ctx| ctx.notify(Tick));
        ctx.notify(Tick);
    }
}

/// The stored state of `id`, if any.
pub(super) async fn load(meta: &Meta, id: &str) -> Result<Option<TxnState>, TxnError> {
    Ok(load_stored(meta, id).await?.map(|held| held.state))
}

async fn load_stored(meta: &Meta, id: &str) -> Result<Option<Stored>, TxnError> {
    let scan = meta.scan(TABLE, id).await?;
    let found = scan.entries.into_iter().find(|(key, _)| key == id);
    found.map(|(_, bytes)| Stored::read(bytes)).transpose()
}

impl Stored {
    fn read(bytes: bytes::Bytes) -> Result<Stored, TxnError> {
        let state = TxnState::decode(&bytes)?;
        Ok(Stored { state, bytes })
    }
}

/// Stores `next` as `id`'s state where the table still holds `held` (`None`: no
/// state), else answers [`TxnError::Superseded`].
async fn save(
    meta: &Meta,
    id: &str,
    held: Option<&Stored>,
    next: TxnState,
) -> Result<Stored, TxnError> {
    let bytes = next.encode();
    let put = Change::Put {
        key: id.to_string(),
        value: bytes.clone(),
    };
    replace(meta, id, held, put).await?;
    Ok(Stored { state: next, bytes })
}

/// Writes `change` to `id`'s entry where the table still holds `held`, else answers
/// [`TxnError::Superseded`]: another gateway changed the state meanwhile.
async fn replace(
    meta: &Meta,
    id: &str,
    held: Option<&Stored>,
    change: Change,
) -> Result<(), TxnError> {
    let expect = vec![Expect {
        key: id.to_string(),
        value: held.map(|h| h.bytes.clone()),
    }];
    match meta.write_if(TABLE, expect, vec![change]).await? {
        Some(_) => Ok(()),
        None => Err(TxnError::Superseded),
    }
}

/// What other gateways added to `state`'s transaction at `epoch` (none on a store no
/// other gateway shares).
async fn adds_of(
    deps: &Deps,
    id: &str,
    state: &TxnState,
    epoch: i16,
) -> Result<remote_adds::Adds, TxnError> {
    match deps.meta.shared() {
        false => Ok(remote_adds::Adds::default()),
        true => Ok(remote_adds::of(&deps.meta, id, (state.producer_id, epoch)).await?),
    }
}

/// `state` with what other gateways added to its transaction, read before a decision
/// is taken on it.
async fn merged(deps: &Deps, id: &str, state: TxnState) -> Result<TxnState, TxnError> {
    let adds = adds_of(deps, id, &state, state.epoch).await?;
    Ok(state.with_adds(&adds, now_ms()))
}

/// Writes the decided transaction's markers and moves its offsets, then stores its
/// end. A partition whose topic is gone needs no marker; any other failure leaves the
/// decision stored, to be completed on a later tick.
///
/// A decision this slot did not store itself (`taken_over`) may, on a store other
/// gateways share, have markers of the gateway that did still on their way: landing
/// after the producer's next transaction began, one would end it. So its end bumps the
/// epoch, fencing the producer: what it writes after it has initialized again carries
/// a later epoch than any such marker, and readers drop a marker older than the
/// transaction it would end (`txn_index.rs`), as a Kafka partition refuses one.
async fn complete(
    deps: &Deps,
    id: &str,
    held: Stored,
    taken_over: bool,
) -> Result<Stored, TxnError> {
    let decided = &held.state;
    let marker = decided.phase.marker().expect("a decided transaction");
    let (producer, now) = ((decided.producer_id, decided.epoch), now_ms());
    // Adds another gateway made before the decision was stored, read after it: every
    // batch they let in gets its marker.
    let adds = adds_of(deps, id, decided, decided.batch_epoch()).await?;
    let partitions = decided.partitions.union(&adds.partitions);
    let groups: std::collections::BTreeSet<&String> = decided.groups.union(&adds.groups).collect();
    let appends: Vec<_> = partitions
        .map(|(topic, partition)| {
            let tp = TopicPartition {
                topic: topic.as_str().into(),
                partition: *partition,
            };
            let append =
                deps.partitions
                    .append_marker(tp.clone(), marker, producer, (0, false), now);
            (tp, append)
        })
        .collect();
    for (tp, append) in appends {
        match append.await {
            Ok(Ok(_)) => {}
            Ok(Err(crate::log_slot::AppendError::Backend(
                StoreError::UnknownTopic(_) | StoreError::UnknownPartition { .. },
            ))) => tracing::info!(partition = %tp, "no marker for a deleted partition"),
            Ok(Err(cause)) => {
                let partition = tp.to_string();
                return Err(TxnError::Marker { partition, cause });
            }
            Err(e) => return Err(TxnError::Gone(e.into())),
        }
    }
    let commit = decided.phase == Phase::PrepareCommit;
    for group in groups {
        let group: Arc<str> = group.as_str().into();
        (deps
            .offsets
            .settle(&group, decided.producer_id, commit)
            .await)
            .map_err(|cause| TxnError::Offsets {
                group: group.to_string(),
                cause,
            })?;
    }
    let mut done = decided.complete(now_ms());
    let strays_possible = taken_over && deps.meta.shared();
    if strays_possible && done.producer_id == decided.producer_id && !done.epoch_exhausted() {
        done.last_epoch = done.epoch;
        done.epoch += 1;
        tracing::info!(
            transactional_id = id,
            epoch = done.epoch,
            "a decision taken over completed: its producer fenced"
        );
    }
    let done = save(&deps.meta, id, Some(&held), done).await?;
    if let Err(e) = remote_adds::clear(&deps.meta, adds).await {
        tracing::debug!(transactional_id = id, error = %e, "adds of an ended transaction left in the table");
    }
    tracing::debug!(transactional_id = id, phase = ?done.state.phase, "transaction completed");
    Ok(done)
}

/// Whether adds made for `producer`'s transaction of `id` can no longer be used: the
/// id is gone (expired) or has another producer id, or its stored state is past that
/// epoch (a decision still to complete uses its batches' epoch). Such adds are left by
/// a gateway that died between an add refused and its withdrawal. The state is read
/// from the store, so an id initialized after the tick began counts.
async fn stale(deps: &Deps, id: &str, (producer_id, epoch): (i64, i16)) -> bool {
    match load(&deps.meta, id).await {
        Ok(None) => true,
        Ok(Some(s)) => {
            let used = match s.phase.marker() {
                Some(_) => s.batch_epoch(),
                None => s.epoch,
            };
            s.producer_id != producer_id || epoch < used
        }
        Err(_) => false,
    }
}

/// Decides the abort of what `state` (`held`, with the adds of other gateways) has
/// open, with the epoch bumped (fencing its producer, Kafka's
/// `prepareAbortOrRecover`): the decision to complete.
async fn fence(deps: &Deps, id: &str, held: &Stored, state: TxnState) -> Result<Stored, TxnError> {
    let mut state = state;
    state.last_epoch = state.epoch;
    state.epoch = state.epoch.saturating_add(1);
    let ask = EndAsk {
        commit: false,
        producer_id: state.producer_id,
        epoch: state.epoch,
        bump: false,
    };
    let Ended::Decided(decided) = state.end(ask, -1, now_ms())? else {
        unreachable!("an open transaction is decided")
    };
    let decided = save(&deps.meta, id, Some(held), decided).await?;
    deps.open.close(decided.state.producer_id);
    Ok(decided)
}

/// InitProducerId with a transactional id: the producer id and epoch to use.
#[derive(Message)]
#[rtype(result = "Result<(i64, i16), TxnError>")]
pub struct Init {
    pub id: String,
    pub timeout_ms: i32,
    /// The producer's id and epoch when it has them (KIP-360 recovery).
    pub known: Option<(i64, i16)>,
}

/// What an InitProducerId finds: its producer's next epoch, or a previous end that
/// must be completed first (the client asks again, as Kafka has it).
enum Initiated {
    Ready(Stored),
    /// An end to complete, and whether this call decided it (fencing an open one).
    Ending(Stored, bool),
}

impl Handler<Init> for TxnSlot {
    type Result = AtomicResponse<Self, Result<(i64, i16), TxnError>>;

    fn handle(&mut self, msg: Init, _: &mut Self::Context) -> Self::Result {
        if let Err(e) = self.check_idle(&msg.id) {
            return AtomicResponse::new(Box::pin(fut::ready(Err(e))));
        }
        let current = self.current(&msg.id);
        let deps = self.deps.clone();
        let id = msg.id.clone();
        let work = async move {
            let held = current.await?;
            let state = match &held {
                Some(held) => {
                    let state = merged(&deps, &id, held.state.clone()).await?;
                    if let Some((pid, epoch)) = msg.known {
                        let recovering = epoch == state.epoch || epoch == state.last_epoch;
                        if pid != state.producer_id || !recovering {
                            return Err(TxnError::Fenced {
                                got: epoch,
                                current: state.epoch,
                            });
                        }
                    }
                    match state.phase {
                        Phase::Ongoing => {
                            let fenced = fence(&deps, &id, held, state).await?;
                            return Ok(Initiated::Ending(fenced, true));
                        }
                        // Completing merges the adds itself.
                        phase if phase.marker().is_some() => {
                            return Ok(Initiated::Ending(held.clone(), false))
                        }
                        _ => state,
                    }
                }
                None => {
                    let pid = deps.producer_ids.allocate().await?;
                    TxnState::new(pid, msg.timeout_ms, now_ms())
                }
            };
            let mut next = state;
            if next.epoch_exhausted() {
                // Epochs exhausted: a new producer id starts again from 0.
                next.producer_id = deps.producer_ids.allocate().await?;
                next.epoch = -1;
            }
            next.epoch += 1;
            next.last_epoch = -1;
            next.phase = Phase::Empty;
            next.timeout_ms = msg.timeout_ms;
            next.updated_ms = now_ms();
            let next = save(&deps.meta, &id, held.as_ref(), next).await?;
            Ok(Initiated::Ready(next))
        };
        AtomicResponse::new(Box::pin(work.into_actor(self).map(move |r, act, ctx| {
            match act.kept(&msg.id, r)? {
                Initiated::Ready(held) => {
                    let answer = (held.state.producer_id, held.state.epoch);
                    act.states.insert(msg.id, held);
                    Ok(answer)
                }
                Initiated::Ending(decided, own) => {
                    let phase = decided.state.phase;
                    act.finish(ctx, msg.id, decided, own);
                    Err(TxnError::Concurrent(phase))
                }
            }
        })))
    }
}

/// AddPartitionsToTxn and AddOffsetsToTxn: the transaction opens or grows.
#[derive(Message)]
#[rtype(result = "Result<(), TxnError>")]
pub struct Add {
    pub id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub partitions: Vec<(String, i32)>,
    pub group: Option<String>,
}

impl Handler<Add> for TxnSlot {
    type Result = AtomicResponse<Self, Result<(), TxnError>>;

    fn handle(&mut self, msg: Add, _: &mut Self::Context) -> Self::Result {
        if let Err(e) = self.check_idle(&msg.id) {
            return AtomicResponse::new(Box::pin(fut::ready(Err(e))));
        }
        let current = self.of_producer(&msg.id, msg.producer_id, msg.epoch);
        let meta = self.deps.meta.clone();
        let id = msg.id.clone();
        let work = async move {
            let held = current.await?;
            let next = held.state.add(msg.partitions, msg.group, now_ms())?;
            match next == held.state {
                true => Ok(held),
                false => save(&meta, &id, Some(&held), next).await,
            }
        };
        AtomicResponse::new(Box::pin(work.into_actor(self).map(move |r, act, ctx| {
            let held = act.kept(&msg.id, r)?;
            act.deps.open.opened(&held.state);
            act.states.insert(msg.id.clone(), held);
            act.watch_timeout(&msg.id, ctx);
            Ok(())
        })))
    }
}

/// EndTxn: commit or abort. Answered with the producer id and epoch to carry on
/// with, and, for a new decision, when its completion is over (the caller answers
/// the client then: what it reads next sees the end).
#[derive(Message)]
#[rtype(result = "Result<EndAnswer, TxnError>")]
pub struct End {
    pub id: String,
    pub ask: EndAsk,
}

pub struct EndAnswer {
    pub producer: (i64, i16),
    pub completed: Option<oneshot::Receiver<()>>,
}

impl Handler<End> for TxnSlot {
    type Result = AtomicResponse<Self, Result<EndAnswer, TxnError>>;

    fn handle(&mut self, msg: End, _: &mut Self::Context) -> Self::Result {
        if let Err(e) = self.check_idle(&msg.id) {
            return AtomicResponse::new(Box::pin(fut::ready(Err(e))));
        }
        let current = self.current(&msg.id);
        let deps = self.deps.clone();
        let id = msg.id.clone();
        let ask = msg.ask;
        let work = async move {
            let held = current
                .await?
                .ok_or_else(|| TxnError::NoProducer(id.clone()))?;
            let state = merged(&deps, &id, held.state.clone()).await?;
            let next_producer_id = match ask.bump && state.epoch_exhausted() {
                true => deps.producer_ids.allocate().await?,
                false => -1,
            };
            let decided = match state.end(ask, next_producer_id, now_ms())? {
                Ended::Again => None,
                Ended::Decided(decided) => {
                    let decided = save(&deps.meta, &id, Some(&held), decided).await?;
                    deps.open.close(decided.state.producer_id);
                    Some(decided)
                }
            };
            Ok::<_, TxnError>((state, decided))
        };
        AtomicResponse::new(Box::pin(work.into_actor(self).map(move |r, act, ctx| {
            let (state, decided) = act.kept(&msg.id, r)?;
            Ok(match decided {
                None => EndAnswer {
                    producer: (state.producer_id, state.epoch),
                    completed: None,
                },
                Some(decided) => {
                    let producer = match decided.state.next_producer_id {
                        next if next >= 0 => (next, 0),
                        _ => (decided.state.producer_id, decided.state.epoch),
                    };
                    let completed = Some(act.finish(ctx, msg.id, decided, true));
                    EndAnswer {
                        producer,
                        completed,
                    }
                }
            })
        })))
    }
}

/// The state of a transactional id this gateway coordinates (DescribeTransactions,
/// the verify-only form of AddPartitionsToTxn), with what other gateways added to its
/// transaction (a Produce of transactions v2 that reached another gateway).
#[derive(Message)]
#[rtype(result = "Result<Option<TxnState>, TxnError>")]
pub struct Describe(pub String);

impl Handler<Describe> for TxnSlot {
    type Result = AtomicResponse<Self, Result<Option<TxnState>, TxnError>>;

    fn handle(&mut self, Describe(id): Describe, _: &mut Self::Context) -> Self::Result {
        let current = self.current(&id);
        let deps = self.deps.clone();
        let work = async move {
            match current.await? {
                Some(held) => merged(&deps, &id, held.state).await.map(Some),
                None => Ok(None),
            }
        };
        AtomicResponse::new(Box::pin(work.into_actor(self)))
    }
}

/// Takes in what other gateways added and completes stored decisions; now and then
/// reads the whole table for this slot's ids (taken over from a gateway gone, or
/// left by this one before a restart) and forgets those unused past
/// `transactional.id.expiration.ms`.
#[derive(Message)]
#[rtype(result = "()")]
struct Tick;

impl Handler<Tick> for TxnSlot {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Tick, _: &mut Self::Context) -> Self::Result {
        let moved = !Arc::ptr_eq(&self.deps.cluster.borrow(), &self.seen);
        let rescan = moved || self.ticks.is_multiple_of(RESCAN_TICKS);
        self.ticks = self.ticks.wrapping_add(1);
        let cluster = self.rebase();
        if !cluster.held() {
            // Others may be completing these transactions (`Cluster::held`).
            return AtomicResponse::new(Box::pin(fut::ready(())));
        }
        let known = self.states.clone();
        let busy = self.completing.clone();
        let deps = self.deps.clone();
        let expiration_ms = self.deps.expiration_ms;
        let work = async move {
            let mut states = known;
            let mut found = Vec::new();
            if rescan {
                match deps.meta.scan(TABLE, "").await {
                    Ok(scan) => {
                        for (id, value) in scan.entries {
                            let mine = super::slot_of(&id, deps.slots) == deps.index
                                && cluster.coordinates(&id);
                            match Stored::read(value) {
                                Ok(held) if mine && !states.contains_key(&id) => {
                                    states.insert(id.clone(), held.clone());
                                    found.push((id, held));
                                }
                                Ok(_) => {}
                                Err(e) => {
                                    tracing::warn!(transactional_id = %id, error = %e, "unreadable transaction state")
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "transaction states not read"),
                }
            }
            // Transactions other gateways added to are open here too, so they time
            // out and DescribeTransactions lists what they hold.
            let (mut absorbed, mut superseded) = (Vec::new(), Vec::new());
            if deps.meta.shared() {
                match remote_adds::all(&deps.meta).await {
                    Ok(all) => {
                        for (id, (producer_id, epoch), adds) in all {
                            let mine = super::slot_of(&id, deps.slots) == deps.index
                                && cluster.coordinates(&id)
                                && !busy.contains(&id);
                            if !mine {
                                continue;
                            }
                            let current = (states.get(&id)).filter(|s| {
                                (s.state.producer_id, s.state.epoch) == (producer_id, epoch)
                            });
                            let Some(held) = current else {
                                if rescan && stale(&deps, &id, (producer_id, epoch)).await {
                                    tracing::info!(transactional_id = %id, producer_id, epoch, "adds to an ended transaction swept");
                                    if let Err(e) = remote_adds::clear(&deps.meta, adds).await {
                                        tracing::warn!(transactional_id = %id, error = %e, "stale adds not swept yet");
                                    }
                                }
                                continue;
                            };
                            let next = held.state.with_adds(&adds, now_ms());
                            if next == held.state {
                                continue;
                            }
                            match save(&deps.meta, &id, Some(held), next).await {
                                Ok(next) => {
                                    states.insert(id.clone(), next.clone());
                                    absorbed.push((id, next));
                                }
                                Err(e) => {
                                    tracing::warn!(transactional_id = %id, error = %e, "adds of another gateway not taken in yet");
                                    superseded.push((id, e));
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "transaction adds not read"),
                }
            }
            let now = now_ms();
            let (mut decided, mut expired) = (Vec::new(), Vec::new());
            for (id, held) in states.iter().filter(|(id, _)| !busy.contains(*id)) {
                if held.state.phase.marker().is_some() {
                    decided.push((id.clone(), held.clone()));
                } else if rescan && held.state.expired(now, expiration_ms) {
                    let gone = Change::Delete { key: id.clone() };
                    match replace(&deps.meta, id, Some(held), gone).await {
                        Ok(()) => {
                            tracing::info!(transactional_id = %id, "transactional id expired");
                            expired.push(id.clone());
                        }
                        Err(e) => {
                            tracing::warn!(transactional_id = %id, error = %e, "transactional id not expired yet");
                            superseded.push((id.clone(), e));
                        }
                    }
                }
            }
            (found, absorbed, decided, expired, superseded)
        };
        // Merged into what the slot holds now: an end completed meanwhile stays so.
        AtomicResponse::new(Box::pin(work.into_actor(self).map(
            |(found, absorbed, decided, expired, superseded), act, ctx| {
                for (id, e) in superseded {
                    act.forget_superseded(&id, &e);
                }
                for (id, state) in found {
                    act.states.entry(id.clone()).or_insert(state);
                    act.watch_timeout(&id, ctx);
                }
                for (id, state) in absorbed {
                    act.deps.open.opened(&state.state);
                    act.states.insert(id.clone(), state);
                    act.watch_timeout(&id, ctx);
                }
                for id in expired {
                    act.states.remove(&id);
                }
                for (id, state) in decided {
                    if !act.completing.contains(&id) {
                        act.finish(ctx, id, state, false);
                    }
                }
            },
        )))
    }
}

/// `id`'s transaction reached its timeout, if it is still the one opened then: it is
/// aborted with the epoch bumped, fencing its producer (Kafka's timed-out transaction
/// abort).
#[derive(Message)]
#[rtype(result = "()")]
struct TimedOut(String, Opened);

/// A timed-out transaction whose abort could not be stored is tried again this late.
const ABORT_RETRY: Duration = Duration::from_secs(1);

impl Handler<TimedOut> for TxnSlot {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, TimedOut(id, open): TimedOut, ctx: &mut Self::Context) -> Self::Result {
        let done = || AtomicResponse::new(Box::pin(fut::ready(())));
        if self.timers.get(&id) == Some(&open) {
            self.timers.remove(&id);
        }
        if !self.rebase().coordinates(&id) {
            return done(); // Another gateway may have it now (`Cluster::held`).
        }
        let held = match self.states.get(&id) {
            Some(s) if (s.state.producer_id, s.state.epoch, s.state.started_ms) == open => {
                s.clone()
            }
            _ => return done(), // ended, or another transaction since
        };
        if self.completing.contains(&id) || !held.state.timed_out(now_ms()) {
            self.watch_timeout(&id, ctx);
            return done();
        }
        tracing::info!(transactional_id = %id, timeout_ms = held.state.timeout_ms, "transaction timed out: aborting");
        let deps = self.deps.clone();
        let work = {
            let id = id.clone();
            async move { fence(&deps, &id, &held, held.state.clone()).await }
        };
        AtomicResponse::new(Box::pin(work.into_actor(self).map(
            move |fenced, act, ctx| match fenced {
                Ok(fenced) if !act.completing.contains(&id) => {
                    drop(act.finish(ctx, id, fenced, true))
                }
                Ok(_) => {}
                Err(e @ TxnError::Superseded) => {
                    tracing::info!(transactional_id = %id, error = %e, "timed-out transaction changed meanwhile");
                    act.forget_superseded(&id, &e);
                }
                Err(e) => {
                    tracing::warn!(transactional_id = %id, error = %e, "timed-out transaction not aborted yet");
                    act.timers.insert(id.clone(), open);
                    ctx.notify_later(TimedOut(id, open), ABORT_RETRY);
                }
            },
        )))
    }
}
