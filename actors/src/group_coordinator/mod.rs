//! The group coordinator actor: membership of classic consumer groups (JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup), after Kafka's `GroupCoordinator`.
//!
//! A group moves Empty → PreparingRebalance (members (re)join; the join answers wait)
//! → CompletingRebalance (the leader computes assignments; the sync answers wait) →
//! Stable. A join, a leave or an expired session sends it back to PreparingRebalance;
//! other members learn it from REBALANCE_IN_PROGRESS on their next heartbeat.
//! Assignments are relayed unread, so every client assignor works. Waiting answers
//! are oneshot channels kept in the member. Deadlines are actor timers: one per member
//! watches its session (`watch_session`), one per group ends a join or sync phase whose
//! time ran out (`phase_changed`).
//!
//! The actor owns the groups this gateway coordinates and their stored state
//! (`stored.rs`, table `groups`, through a metadata client of its own, one write at a
//! time; KIP-848 groups' in `consumer/stored.rs`): a group is loaded from the store the
//! first time it is touched, so after a restart, or when the group moves here from
//! another gateway, its members carry on in their generation (or epoch). Loading claims
//! the group (`offsets/fence.rs`), so commits this gateway forwarded before another
//! claimed it land refused. It follows the live gateways as they change: a group it no
//! longer coordinates is dropped from memory, and loaded again if it comes back.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use futures_util::stream;
use kafka_protocol::error::ResponseError;
use tokio::sync::{oneshot, watch};

use crate::membership::Cluster;
use crate::metrics::Metrics;
use crate::offsets::fence::{self, Fence};
use crate::store::meta::Change;
use crate::store::{Meta, StoreError, StoreResult};
use crate::topic_admin::TopicTable;

/// Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms` defaults.
const MIN_SESSION: Duration = Duration::from_secs(6);
const MAX_SESSION: Duration = Duration::from_secs(1800);
/// How often the metrics' count of groups per state is taken.
const COUNT_STATES: Duration = Duration::from_secs(1);
/// Kafka's `offsets.retention.check.interval.ms` default: how often groups left empty
/// are dropped. Until then an empty group is described, listed and deletable, as in
/// Kafka, whose cleanup removes an Empty group without offsets at that pass.
const EMPTY_GROUP_CLEANUP: Duration = Duration::from_secs(600);

pub mod consumer;
mod group;
mod messages;
mod stored;

use consumer::{ConsumerGroup, ConsumerSettings, StoredConsumerGroup};
use group::{Group, Member, Phase};
pub use messages::*;
use stored::{Stored, StoredGroup};

pub struct GroupCoordinator {
    groups: HashMap<String, Group>,
    /// Groups this gateway coordinates that the store was seen not to hold.
    absent: HashSet<String>,
    /// Every group the store holds that this gateway coordinates is in `groups`.
    all_loaded: bool,
    /// The claim each group in memory or in `absent` was loaded under: what its
    /// commits expect.
    fences: HashMap<String, Fence>,
    initial_delay: Duration,
    metrics: Arc<Metrics>,
    /// The store's groups table, through this actor's own client.
    store: Meta,
    /// Writes waiting for the one under way: applied one at a time, in order.
    writes: VecDeque<Write>,
    writing: bool,
    cluster: watch::Receiver<Arc<Cluster>>,
    /// KIP-848 groups (`consumer/`); a group id is in this map or in `groups`, not both.
    consumer: HashMap<String, ConsumerGroup>,
    consumer_settings: ConsumerSettings,
    /// Tokens of the member timers (`watch_session`, `consumer/handlers.rs`).
    timer_tokens: u64,
    /// The term of the view the groups were loaded under (`Cluster::term`).
    term: u64,
    /// The topic table as last published: consumer groups' subscriptions resolve
    /// against it, and classic members' partitions are named by it.
    topics: watch::Receiver<Arc<TopicTable>>,
}

/// A write of one group's stored state, and who waits for it.
struct Write {
    group: String,
    value: Value,
    done: Vec<oneshot::Sender<StoreResult<()>>>,
}

/// What a write leaves in the store.
enum Value {
    Put(Bytes),
    Removed,
    /// A consumer group's state as it stands when the write starts: the heartbeats
    /// that change it while the write waits its turn all go in that one write.
    Consumer,
}

/// Whether a message's groups can be served now.
enum Ready {
    Now,
    /// Another gateway coordinates one of them.
    NotMine,
    /// Loading from the store; the message is to be sent again once this says Ok.
    Loading(oneshot::Receiver<Result<(), ResponseError>>),
}

impl GroupCoordinator {
    pub fn new(
        (initial_delay, consumer_settings): (Duration, ConsumerSettings),
        metrics: Arc<Metrics>,
        (store, cluster): (Meta, watch::Receiver<Arc<Cluster>>),
        topics: watch::Receiver<Arc<TopicTable>>,
    ) -> Self {
        let term = cluster.borrow().term;
        GroupCoordinator {
            groups: HashMap::new(),
            absent: HashSet::new(),
            all_loaded: false,
            fences: HashMap::new(),
            initial_delay,
            metrics,
            store,
            writes: VecDeque::new(),
            writing: false,
            term,
            cluster,
            consumer: HashMap::new(),
            consumer_settings,
            timer_tokens: 0,
            topics,
        }
    }

    /// Takes in a change of the live gateways: groups coordinated elsewhere now are
    /// dropped (what waits in them is told NOT_COORDINATOR, and clients look the
    /// coordinator up again), and what was known of the store is forgotten.
    fn follow_cluster(&mut self) {
        if !self.cluster.has_changed().unwrap_or(false) {
            return;
        }
        let cluster = self.cluster.borrow_and_update().clone();
        // After a lapse of the lease others may have changed every group held here.
        let lapsed = std::mem::replace(&mut self.term, cluster.term) != cluster.term;
        self.groups.retain(|name, g| {
            let mine = !lapsed && cluster.coordinates(name);
            if !mine {
                tracing::info!(group = %name, "group coordinated by another gateway now");
                g.release_members();
            }
            mine
        });
        self.consumer
            .retain(|name, _| !lapsed && cluster.coordinates(name));
        self.absent.clear();
        let (groups, consumer) = (&self.groups, &self.consumer);
        (self.fences).retain(|name, _| groups.contains_key(name) || consumer.contains_key(name));
        self.all_loaded = false;
    }

    /// Whether `groups` can be served now: each coordinated here, and in memory or
    /// known to be absent from the store. Otherwise the missing ones are loaded while
    /// the mailbox waits (`ctx.wait`), and the caller sends its message again.
    fn ready(&mut self, groups: &[String], ctx: &mut Context<Self>) -> Ready {
        self.follow_cluster();
        let cluster = self.cluster.borrow().clone();
        if groups.iter().any(|g| !cluster.coordinates(g)) {
            return Ready::NotMine;
        }
        let missing: Vec<String> = groups
            .iter()
            .filter(|g| {
                !self.groups.contains_key(*g)
                    && !self.consumer.contains_key(*g)
                    && !self.absent.contains(*g)
            })
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ready::Now;
        }
        let store = self.store.clone();
        let read = async move {
            let mut found = Vec::with_capacity(missing.len());
            for name in missing {
                let scan = store.scan(stored::TABLE, &name).await?;
                let value = scan.entries.into_iter().find(|(k, _)| *k == name);
                found.push((name, value.map(|(_, v)| v)));
            }
            Ok(found)
        };
        Ready::Loading(self.load(read, ctx))
    }

    /// Loads every group the store holds that this gateway coordinates and does not
    /// have in memory (ListGroups), as `ready` loads named ones.
    fn ready_all(
        &mut self,
        ctx: &mut Context<Self>,
    ) -> Option<oneshot::Receiver<Result<(), ResponseError>>> {
        self.follow_cluster();
        if self.all_loaded {
            return None;
        }
        let (store, cluster) = (self.store.clone(), self.cluster.borrow().clone());
        let known: HashSet<String> =
            (self.groups.keys().chain(self.consumer.keys()).cloned()).collect();
        let read = async move {
            let scan = store.scan(stored::TABLE, "").await?;
            Ok(scan
                .entries
                .into_iter()
                .filter(|(name, _)| cluster.coordinates(name) && !known.contains(name))
                .map(|(name, value)| (name, Some(value)))
                .collect())
        };
        let loaded = self.load(read, ctx);
        self.all_loaded = true;
        Some(loaded)
    }

    /// Runs `read` with the mailbox waiting and claims the groups it named, then takes
    /// in what it found: stored groups into memory, names without one into `absent`.
    fn load(
        &mut self,
        read: impl Future<Output = StoreResult<Vec<(String, Option<Bytes>)>>> + 'static,
        ctx: &mut Context<Self>,
    ) -> oneshot::Receiver<Result<(), ResponseError>> {
        let (tell, loaded) = oneshot::channel();
        let (store, claim) = (self.store.clone(), Fence::new());
        let fenced = claim.clone();
        let claimed = async move {
            let found = read.await?;
            let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
            let stood = fence::claim(&store, &names, &claim).await?;
            // Claimed by another meanwhile: the client asks again.
            stood.then_some(found).ok_or_else(|| {
                StoreError::unavailable("groups claimed by another coordinator while loading")
            })
        };
        ctx.wait(claimed.into_actor(self).map(move |read, act, ctx| {
            let outcome = read
                .and_then(|found| {
                    let now = Instant::now();
                    for (name, value) in found {
                        act.fences.insert(name.clone(), fenced.clone());
                        match value {
                            None => {
                                act.absent.insert(name);
                            }
                            Some(value) => {
                                let stored = match Stored::decode(&name, &value)? {
                                    Stored::Classic(stored) => stored,
                                    Stored::Consumer(stored) => {
                                        act.loaded(&name, stored.into_group(&name)?, ctx);
                                        continue;
                                    }
                                };
                                let counter = act.metrics.groups.rebalance_counter();
                                let group = stored.into_group(&name, counter, now)?;
                                tracing::info!(group = %name, generation = group.generation, members = group.members.len(), "group loaded from the store");
                                let members: Vec<String> = group.members.keys().cloned().collect();
                                act.groups.insert(name.clone(), group);
                                for member in members {
                                    act.watch_session(&name, &member, ctx);
                                }
                            }
                        }
                    }
                    Ok(())
                })
                .map_err(|e| {
                    tracing::warn!(error = %e, "groups not loaded from the store");
                    act.all_loaded = false;
                    ResponseError::CoordinatorLoadInProgress
                });
            let _ = tell.send(outcome);
        }));
        loaded
    }

    /// Queues a write of `group`'s stored state (`None`: removed); the answer says when
    /// it stands.
    fn persist(
        &mut self,
        group: &str,
        value: Option<Bytes>,
        ctx: &mut Context<Self>,
    ) -> oneshot::Receiver<StoreResult<()>> {
        let value = value.map_or(Value::Removed, Value::Put);
        self.queue_write(group, value, ctx)
    }

    /// Queues a write of a consumer group's state, or joins the one already waiting
    /// its turn, which will write it as it then stands.
    fn persist_consumer(
        &mut self,
        group: &str,
        ctx: &mut Context<Self>,
    ) -> oneshot::Receiver<StoreResult<()>> {
        let waiting = (self.writes.iter_mut().rev()).find(|w| w.group == group);
        if let Some(w) = waiting.filter(|w| matches!(w.value, Value::Consumer)) {
            let (done, stored) = oneshot::channel();
            w.done.push(done);
            return stored;
        }
        self.queue_write(group, Value::Consumer, ctx)
    }

    fn queue_write(
        &mut self,
        group: &str,
        value: Value,
        ctx: &mut Context<Self>,
    ) -> oneshot::Receiver<StoreResult<()>> {
        let (done, stored) = oneshot::channel();
        self.writes.push_back(Write {
            group: group.to_string(),
            value,
            done: vec![done],
        });
        self.write_next(ctx);
        stored
    }

    /// Starts the queued writes unless some are under way: all of them in one write
    /// of the store, each group once (a group queued twice waits for the next).
    fn write_next(&mut self, ctx: &mut Context<Self>) {
        if self.writing || self.writes.is_empty() {
            return;
        }
        let mut batch: Vec<Write> = Vec::new();
        while let Some(w) = self.writes.front() {
            if batch.iter().any(|b| b.group == w.group) {
                break;
            }
            batch.extend(self.writes.pop_front());
        }
        let changes: Vec<Change> = (batch.iter())
            .filter_map(|w| {
                let key = w.group.clone();
                match &w.value {
                    Value::Put(value) => Some(Change::Put {
                        key,
                        value: value.clone(),
                    }),
                    Value::Removed => Some(Change::Delete { key }),
                    // A group gone meanwhile queued its own removal after this.
                    Value::Consumer => (self.consumer.get(&w.group)).map(|g| Change::Put {
                        key,
                        value: StoredConsumerGroup::of(g).encode(),
                    }),
                }
            })
            .collect();
        self.writing = true;
        let store = self.store.clone();
        let stored = async move {
            match changes.is_empty() {
                true => Ok(()),
                false => store.write(stored::TABLE, changes).await.map(drop),
            }
        };
        ctx.spawn(stored.into_actor(self).map(move |stored, act, ctx| {
            for w in batch {
                if let Err(e) = &stored {
                    tracing::warn!(group = %w.group, error = %e, "group state not stored");
                    // A consumer group's is written again at its next heartbeat.
                    if let Some(g) = act.consumer.get_mut(&w.group) {
                        g.unstored = true;
                    }
                }
                for done in w.done {
                    let _ = done.send(stored.clone());
                }
            }
            act.writing = false;
            act.write_next(ctx);
        }));
    }

    /// May this member commit offsets now (the group is ready)?
    fn check_commit(&mut self, r: &MemberRef) -> Result<(), ResponseError> {
        if let Some(g) = self.consumer.get(&r.group) {
            return g.check_commit(r);
        }
        let g = match self.groups.get_mut(&r.group) {
            // Admin tools and simple consumers commit outside any generation.
            None
            | Some(Group {
                state: GroupState::Empty,
                ..
            }) if r.generation < 0 => return Ok(()),
            // A member of a group the store does not know: rejoin first.
            None => return Err(ResponseError::UnknownMemberId),
            Some(g) => g,
        };
        g.check_member(r)?;
        match g.state {
            // As Kafka's doCommitOffsets: a member of the current generation may still
            // commit while the others rejoin (consumers commit as partitions are revoked);
            // only a generation awaiting its assignments refuses.
            GroupState::CompletingRebalance => Err(ResponseError::RebalanceInProgress),
            _ => {
                if let Some(m) = g.members.get_mut(&r.member_id) {
                    m.last_seen = Instant::now();
                }
                Ok(())
            }
        }
    }

    /// Stores `group` if it emptied since it was last stored (the last member left or
    /// expired), so a gateway that takes it over does not bring its members back.
    fn store_emptied(&mut self, group: &str, ctx: &mut Context<Self>) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if g.state == GroupState::Empty && g.stored != Some((g.generation, GroupState::Empty)) {
            g.stored = Some((g.generation, GroupState::Empty));
            let value = StoredGroup::of(g).encode();
            drop(self.persist(group, Some(value), ctx));
        }
    }

    /// Watches `member`'s session from now: it is removed once silent past its session
    /// timeout. One timer per member, moved on lazily: a heartbeat only notes the time,
    /// and the timer, when it fires early, waits again for what is left.
    fn watch_session(&mut self, group: &str, member: &str, ctx: &mut Context<Self>) {
        let Some(m) = self
            .groups
            .get_mut(group)
            .and_then(|g| g.members.get_mut(member))
        else {
            return;
        };
        self.timer_tokens += 1;
        m.watch = self.timer_tokens;
        Self::session_timer(group, member, (m.watch, m.session), ctx);
    }

    fn session_timer(
        group: &str,
        member: &str,
        (token, after): (u64, Duration),
        ctx: &mut Context<Self>,
    ) {
        let (group, member) = (group.to_string(), member.to_string());
        ctx.run_later(after, move |act, ctx| {
            act.session_due(&group, &member, token, ctx)
        });
    }

    fn session_due(&mut self, group: &str, member: &str, token: u64, ctx: &mut Context<Self>) {
        if !self.cluster.borrow().coordinates(group) {
            return; // Not acted on: the view decides the group's fate (`follow_cluster`).
        }
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Some(m) = g.members.get(member).filter(|m| m.watch == token) else {
            return;
        };
        // A member waiting in a join is not expected to heartbeat.
        let silent = match m.awaiting_join {
            Some(_) => Duration::ZERO,
            None => m.last_seen.elapsed(),
        };
        if silent <= m.session {
            let left = (token, m.session - silent);
            return Self::session_timer(group, member, left, ctx);
        }
        tracing::info!(group, member, "session expired");
        g.remove_member(member, ResponseError::UnknownMemberId);
        if g.state != GroupState::Empty {
            g.prepare_rebalance(self.initial_delay);
        }
        self.phase_changed(group, ctx);
    }

    /// After a group's phase may have changed: arms the timer that ends the join or
    /// sync phase at its deadline, and stores the group if it emptied.
    fn phase_changed(&mut self, group: &str, ctx: &mut Context<Self>) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let now = Instant::now();
        g.try_complete_join(now);
        let due = match g.state {
            // Joins wait for the initial delay, then for every member or the deadline.
            GroupState::PreparingRebalance if now < g.not_before => g.not_before,
            GroupState::PreparingRebalance | GroupState::CompletingRebalance => g.deadline,
            _ => {
                g.armed = None;
                return self.store_emptied(group, ctx);
            }
        };
        let phase = (g.generation, g.state, due);
        if g.armed != Some(phase) {
            g.armed = Some(phase);
            let group = group.to_string();
            ctx.run_later(due.saturating_duration_since(now), move |act, ctx| {
                act.phase_due(&group, phase, ctx)
            });
        }
    }

    fn phase_due(&mut self, group: &str, phase: Phase, ctx: &mut Context<Self>) {
        if !self.cluster.borrow().coordinates(group) {
            return;
        }
        let Some(g) = self
            .groups
            .get_mut(group)
            .filter(|g| g.armed == Some(phase))
        else {
            return; // The phase ended before its deadline.
        };
        g.armed = None;
        if g.state == GroupState::CompletingRebalance {
            // The leader never sent its assignments: start over without the silent.
            tracing::info!(group, "sync phase timed out");
            g.prepare_rebalance(self.initial_delay);
        }
        self.phase_changed(group, ctx);
    }

    /// The number of groups in each state, for the metrics.
    fn count_states(&mut self) {
        let mut counts = [0; GroupState::ALL.len()];
        for g in self.groups.values() {
            counts[g.state as usize] += 1;
        }
        self.metrics
            .groups
            .set_counts(GroupState::ALL.map(|state| (state.name(), counts[state as usize])));
    }

    /// Forgets groups with no members and no member ids handed out, and their stored
    /// state. One with committed offsets is still known by them (listed and described
    /// Empty, deletable).
    fn drop_empty_groups(&mut self, ctx: &mut Context<Self>) {
        for g in self.groups.values_mut() {
            g.pending
                .retain(|_, handed_out| handed_out.elapsed() < MAX_SESSION);
        }
        let classic = (self.groups.iter()).filter(|(_, g)| {
            g.state == GroupState::Empty && g.members.is_empty() && g.pending.is_empty()
        });
        let consumer = (self.consumer.iter()).filter(|(_, g)| g.members.is_empty());
        let dropped: Vec<String> = (classic.map(|(name, _)| name))
            .chain(consumer.map(|(name, _)| name))
            .cloned()
            .collect();
        for name in dropped {
            self.groups.remove(&name);
            self.consumer.remove(&name);
            self.absent.insert(name.clone());
            drop(self.persist(&name, None, ctx));
        }
    }
}

impl Actor for GroupCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(COUNT_STATES, |act, _| act.count_states());
        ctx.run_interval(EMPTY_GROUP_CLEANUP, |act, ctx| act.drop_empty_groups(ctx));
        // Groups coordinated elsewhere now go as soon as the live gateways change.
        let changes = stream::unfold(self.cluster.clone(), |mut cluster| async move {
            cluster
                .changed()
                .await
                .ok()
                .map(|()| (ClusterChanged, cluster))
        });
        ctx.add_stream(changes);
    }
}

/// The live gateways changed (`membership.rs`).
struct ClusterChanged;

impl StreamHandler<ClusterChanged> for GroupCoordinator {
    fn handle(&mut self, _: ClusterChanged, _: &mut Self::Context) {
        self.follow_cluster();
    }

    /// The membership actor stopped: the view stays as it was, and groups are served.
    fn finished(&mut self, _: &mut Self::Context) {}
}

/// What a handler answers while its groups load: the message, sent again to the
/// actor once they are in memory, or `failed` if they could not be loaded.
fn after_load<M, T>(
    loading: oneshot::Receiver<Result<(), ResponseError>>,
    addr: Addr<GroupCoordinator>,
    msg: M,
    failed: impl FnOnce(ResponseError) -> T + 'static,
) -> ResponseFuture<T>
where
    M: Message<Result = T> + Send + 'static,
    T: Send + 'static,
    GroupCoordinator: Handler<M>,
{
    Box::pin(async move {
        match loading.await {
            Ok(Ok(())) => match addr.send(msg).await {
                Ok(answer) => answer,
                Err(_) => failed(ResponseError::CoordinatorNotAvailable),
            },
            Ok(Err(e)) => failed(e),
            Err(_) => failed(ResponseError::CoordinatorNotAvailable),
        }
    })
}

impl Handler<Join> for GroupCoordinator {
    type Result = ResponseFuture<Joined>;

    fn handle(&mut self, msg: Join, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        let now = Instant::now();
        let session = Duration::from_millis(msg.session_timeout_ms.max(0) as u64);
        let answer = |j: Joined| -> ResponseFuture<Joined> { Box::pin(async move { j }) };
        if !(MIN_SESSION..=MAX_SESSION).contains(&session) {
            return answer(Joined::failed(
                ResponseError::InvalidSessionTimeout,
                &msg.member_id,
            ));
        }
        if msg.group.is_empty() {
            return answer(Joined::failed(
                ResponseError::InvalidGroupId,
                &msg.member_id,
            ));
        }
        match self.ready(std::slice::from_ref(&msg.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => {
                return answer(Joined::failed(
                    ResponseError::NotCoordinator,
                    &msg.member_id,
                ))
            }
            Ready::Loading(loading) => {
                let id = msg.member_id.clone();
                return after_load(loading, ctx.address(), msg, move |e| Joined::failed(e, &id));
            }
        }
        match self.consumer.get(&msg.group) {
            // Classic members join a consumer group as such (online migration).
            Some(g) if !g.members.is_empty() => return self.classic_join(msg, ctx),
            // An empty consumer group becomes a classic one (online migration, KIP-848).
            Some(_) => {
                tracing::info!(group = %msg.group, "empty consumer group becomes a classic group");
                self.consumer.remove(&msg.group);
                drop(self.persist(&msg.group, None, ctx));
            }
            None => {}
        }
        self.absent.remove(&msg.group);
        let delay = self.initial_delay;
        let rebalances = &self.metrics.groups;
        let g = self
            .groups
            .entry(msg.group.clone())
            .or_insert_with(|| Group::new(rebalances.rebalance_counter()));
        if msg.protocols.is_empty()
            || g.protocol_type
                .as_ref()
                .is_some_and(|t| *t != msg.protocol_type && !g.members.is_empty())
        {
            return answer(Joined::failed(
                ResponseError::InconsistentGroupProtocol,
                &msg.member_id,
            ));
        }
        let known_instance = msg
            .instance_id
            .as_ref()
            .and_then(|i| g.instances.get(i))
            .cloned();
        let previous_leader = g.leader.clone();
        let mut replaced_static = false;
        let member_id = match (&known_instance, msg.member_id.is_empty()) {
            // A static member coming back (KIP-345) takes over its old membership.
            (Some(old), true) => {
                replaced_static = true;
                let new_id = format!(
                    "{}-{}",
                    msg.instance_id.clone().unwrap_or_default(),
                    uuid::Uuid::new_v4()
                );
                if let Some(mut m) = g.members.shift_remove(old) {
                    if let Some(tx) = m.awaiting_join.take() {
                        let _ = tx.send(Joined::failed(ResponseError::FencedInstanceId, old));
                    }
                    g.members.insert(new_id.clone(), m);
                }
                if g.leader.as_deref() == Some(old.as_str()) {
                    g.leader = Some(new_id.clone());
                }
                g.instances
                    .insert(msg.instance_id.clone().unwrap_or_default(), new_id.clone());
                new_id
            }
            (Some(current), false) if *current != msg.member_id => {
                return answer(Joined::failed(
                    ResponseError::FencedInstanceId,
                    &msg.member_id,
                ));
            }
            (None, true) => {
                let id = format!("{}-{}", msg.caller.client_id, uuid::Uuid::new_v4());
                if msg.require_member_id && msg.instance_id.is_none() {
                    g.pending.insert(id.clone(), now);
                    return answer(Joined::failed(ResponseError::MemberIdRequired, &id));
                }
                id
            }
            _ => {
                let id = msg.member_id.clone();
                if !g.members.contains_key(&id) && g.pending.remove(&id).is_none() {
                    return answer(Joined::failed(ResponseError::UnknownMemberId, &id));
                }
                id
            }
        };
        if let Some(instance) = &msg.instance_id {
            g.instances.insert(instance.clone(), member_id.clone());
        }
        let unchanged = g
            .members
            .get(&member_id)
            .is_some_and(|m| m.protocols == msg.protocols && m.protocol_type == msg.protocol_type);
        let new_member = !g.members.contains_key(&member_id);
        let member = g
            .members
            .entry(member_id.clone())
            .or_insert_with(|| Member {
                instance_id: msg.instance_id.clone(),
                caller: msg.caller.clone(),
                session,
                rebalance: Duration::ZERO,
                protocol_type: msg.protocol_type.clone(),
                protocols: Vec::new(),
                assignment: Bytes::new(),
                last_seen: now,
                watch: 0,
                awaiting_join: None,
                awaiting_sync: None,
            });
        if new_member || replaced_static {
            // A member under a new id: the old id's timer finds nobody and ends.
            self.timer_tokens += 1;
            member.watch = self.timer_tokens;
            Self::session_timer(&msg.group, &member_id, (member.watch, session), ctx);
        }
        member.session = session;
        member.rebalance =
            Duration::from_millis(msg.rebalance_timeout_ms.max(0) as u64).max(session);
        member.protocols = msg.protocols;
        member.protocol_type = msg.protocol_type.clone();
        member.last_seen = now;
        g.protocol_type = Some(msg.protocol_type);
        let is_leader = g.leader.as_deref() == Some(member_id.as_str());
        match g.state {
            // A static member back under a new id (KIP-345), in a Stable group whose
            // protocol it does not change: no rebalance; it keeps its assignment. As in
            // Kafka's updateStaticMemberThenRebalanceOrCompleteJoin, from v9 a returning
            // leader gets the members and is told to skip the assignment (KIP-814);
            // before v9 every returning member is named the old leader, so it follows.
            GroupState::Stable if replaced_static && g.choose_protocol() == g.protocol => {
                let v9 = msg.supports_skip_assignment;
                let joined = Joined {
                    error: None,
                    generation: g.generation,
                    protocol_type: g.protocol_type.clone(),
                    protocol: g.protocol.clone(),
                    leader: if v9 {
                        g.leader.clone()
                    } else {
                        previous_leader
                    }
                    .unwrap_or_default(),
                    member_id,
                    members: if v9 && is_leader {
                        g.roster()
                    } else {
                        Vec::new()
                    },
                    skip_assignment: v9 && is_leader,
                };
                // The member's new id is stored, or a gateway taking the group over
                // would not know it.
                g.stored = Some((g.generation, GroupState::Stable));
                let value = StoredGroup::of(g).encode();
                drop(self.persist(&msg.group, Some(value), ctx));
                return answer(joined);
            }
            // A member joining again unchanged only missed its answer: it gets the
            // current one, no rebalance; while the assignment is still owed, the leader
            // gets the members again. A leader rejoining a Stable group rebalances it
            // (Kafka's doCurrentMemberJoinGroup: how a leader asks for a new assignment).
            GroupState::Stable | GroupState::CompletingRebalance
                if unchanged && !(is_leader && g.state == GroupState::Stable) =>
            {
                let joined = Joined {
                    error: None,
                    generation: g.generation,
                    protocol_type: g.protocol_type.clone(),
                    protocol: g.protocol.clone(),
                    leader: g.leader.clone().unwrap_or_default(),
                    members: if is_leader { g.roster() } else { Vec::new() },
                    member_id,
                    skip_assignment: false,
                };
                return answer(joined);
            }
            _ => {
                if let Some(m) = g.members.get_mut(&member_id) {
                    if let Some(old) = m.awaiting_join.replace(tx) {
                        let _ =
                            old.send(Joined::failed(ResponseError::UnknownMemberId, &member_id));
                    }
                }
                g.prepare_rebalance(delay);
            }
        }
        self.phase_changed(&msg.group, ctx);
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Joined::failed(ResponseError::CoordinatorNotAvailable, ""))
        })
    }
}

impl Handler<Sync> for GroupCoordinator {
    type Result = ResponseFuture<Synced>;

    fn handle(&mut self, msg: Sync, ctx: &mut Self::Context) -> Self::Result {
        let answer = |s: Synced| -> ResponseFuture<Synced> { Box::pin(async move { s }) };
        match self.ready(std::slice::from_ref(&msg.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => return answer(Synced::failed(ResponseError::NotCoordinator)),
            Ready::Loading(loading) => {
                return after_load(loading, ctx.address(), msg, Synced::failed)
            }
        }
        if self.consumer.contains_key(&msg.group) {
            return answer(self.classic_sync(&msg, ctx));
        }
        let Some(g) = self.groups.get_mut(&msg.group) else {
            return answer(Synced::failed(ResponseError::UnknownMemberId));
        };
        let member_ref = MemberRef {
            group: msg.group.clone(),
            generation: msg.generation,
            member_id: msg.member_id.clone(),
            instance_id: msg.instance_id.clone(),
        };
        if let Err(e) = g.check_member(&member_ref) {
            return answer(Synced::failed(e));
        }
        let mismatch =
            |asked: &Option<String>, chosen: &Option<String>| asked.is_some() && asked != chosen;
        if mismatch(&msg.protocol_type, &g.protocol_type) || mismatch(&msg.protocol, &g.protocol) {
            return answer(Synced::failed(ResponseError::InconsistentGroupProtocol));
        }
        match g.state {
            GroupState::PreparingRebalance | GroupState::Empty => {
                answer(Synced::failed(ResponseError::RebalanceInProgress))
            }
            GroupState::Stable => answer(g.synced(&g.members[&msg.member_id])),
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                if let Some(m) = g.members.get_mut(&msg.member_id) {
                    m.awaiting_sync = Some(tx);
                    m.last_seen = Instant::now();
                }
                let leads = g.leader.as_deref() == Some(msg.member_id.as_str());
                if leads && !g.assigned {
                    // As Kafka: the assignments are stored before any member gets its
                    // own; the group stays CompletingRebalance until then.
                    let mut assignments: HashMap<String, Bytes> =
                        msg.assignments.into_iter().collect();
                    for (id, m) in g.members.iter_mut() {
                        m.assignment = assignments.remove(id).unwrap_or_default();
                    }
                    g.assigned = true;
                    let generation = g.generation;
                    let value = StoredGroup::of(g).encode();
                    let stored = self.persist(&msg.group, Some(value), ctx);
                    let group = msg.group.clone();
                    ctx.spawn(stored.into_actor(self).map(move |stored, act, ctx| {
                        let stored = stored.unwrap_or_else(|_| {
                            Err(crate::store::StoreError::unavailable("group writer gone"))
                        });
                        act.assignments_stored(&group, generation, stored, ctx)
                    }));
                }
                Box::pin(async move {
                    rx.await
                        .unwrap_or_else(|_| Synced::failed(ResponseError::RebalanceInProgress))
                })
            }
        }
    }
}

impl GroupCoordinator {
    /// The leader's assignments for `generation` are stored (or not): the members
    /// waiting get theirs and the group is Stable, or they are told to rejoin.
    fn assignments_stored(
        &mut self,
        name: &str,
        generation: i32,
        stored: StoreResult<()>,
        ctx: &mut Context<Self>,
    ) {
        let Some(g) = self.groups.get_mut(name) else {
            return;
        };
        if g.state != GroupState::CompletingRebalance || g.generation != generation {
            return; // The rebalance was given up meanwhile.
        }
        match stored {
            Ok(()) => {
                g.state = GroupState::Stable;
                g.stored = Some((generation, GroupState::Stable));
                let answers: Vec<Synced> = g.members.values().map(|m| g.synced(m)).collect();
                for (m, synced) in g.members.values_mut().zip(answers) {
                    if let Some(tx) = m.awaiting_sync.take() {
                        let _ = tx.send(synced);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(group = %name, error = %e, "assignments not stored; the group rebalances");
                for m in g.members.values_mut() {
                    if let Some(tx) = m.awaiting_sync.take() {
                        let _ = tx.send(Synced::failed(ResponseError::CoordinatorNotAvailable));
                    }
                }
                g.prepare_rebalance(self.initial_delay);
                self.phase_changed(name, ctx);
            }
        }
    }
}

impl Handler<Heartbeat> for GroupCoordinator {
    type Result = ResponseFuture<Option<ResponseError>>;

    fn handle(&mut self, msg: Heartbeat, ctx: &mut Self::Context) -> Self::Result {
        let answer = |e: Option<ResponseError>| -> Self::Result { Box::pin(async move { e }) };
        match self.ready(std::slice::from_ref(&msg.0.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => return answer(Some(ResponseError::NotCoordinator)),
            Ready::Loading(loading) => return after_load(loading, ctx.address(), msg, Some),
        }
        let r = msg.0;
        if self.consumer.contains_key(&r.group) {
            return answer(self.classic_heartbeat(&r, ctx));
        }
        let Some(g) = self.groups.get_mut(&r.group) else {
            return answer(Some(ResponseError::UnknownMemberId));
        };
        if let Err(e) = g.check_member(&r) {
            return answer(Some(e));
        }
        if let Some(m) = g.members.get_mut(&r.member_id) {
            m.last_seen = Instant::now();
        }
        answer(
            (g.state == GroupState::PreparingRebalance)
                .then_some(ResponseError::RebalanceInProgress),
        )
    }
}

impl Handler<CheckCommit> for GroupCoordinator {
    type Result = ResponseFuture<Result<Fence, ResponseError>>;

    fn handle(&mut self, msg: CheckCommit, ctx: &mut Self::Context) -> Self::Result {
        let answer =
            |r: Result<Fence, ResponseError>| -> Self::Result { Box::pin(async move { r }) };
        match self.ready(std::slice::from_ref(&msg.0.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => return answer(Err(ResponseError::NotCoordinator)),
            Ready::Loading(loading) => return after_load(loading, ctx.address(), msg, Err),
        }
        let r = msg.0;
        // Every group `ready` has is claimed (`load`).
        let fence = self.fences.get(&r.group).cloned();
        let fence = fence.ok_or(ResponseError::CoordinatorLoadInProgress);
        answer(self.check_commit(&r).and(fence))
    }
}

impl Handler<CheckFetch> for GroupCoordinator {
    type Result = ResponseFuture<Result<(), ResponseError>>;

    fn handle(&mut self, msg: CheckFetch, ctx: &mut Self::Context) -> Self::Result {
        let answer = |r: Result<(), ResponseError>| -> Self::Result { Box::pin(async move { r }) };
        match self.ready(std::slice::from_ref(&msg.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => return answer(Err(ResponseError::NotCoordinator)),
            Ready::Loading(loading) => return after_load(loading, ctx.address(), msg, Err),
        }
        // A classic group's offsets are read by anyone allowed to (Kafka checks only
        // that it is not Dead).
        answer(match self.consumer.get(&msg.group) {
            Some(g) => g.check_fetch(msg.member_id.as_deref(), msg.member_epoch),
            None => Ok(()),
        })
    }
}

impl Handler<Leave> for GroupCoordinator {
    type Result = ResponseFuture<Vec<Option<ResponseError>>>;

    fn handle(&mut self, msg: Leave, ctx: &mut Self::Context) -> Self::Result {
        let each = |e: ResponseError, n: usize| vec![Some(e); n];
        let n = msg.members.len();
        match self.ready(std::slice::from_ref(&msg.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => {
                let out = each(ResponseError::NotCoordinator, n);
                return Box::pin(async move { out });
            }
            Ready::Loading(loading) => {
                return after_load(loading, ctx.address(), msg, move |e| each(e, n))
            }
        }
        if self.consumer.contains_key(&msg.group) {
            let out = self.classic_leave(&msg, ctx);
            return Box::pin(async move { out });
        }
        let delay = self.initial_delay;
        let Some(g) = self.groups.get_mut(&msg.group) else {
            let out = each(ResponseError::UnknownMemberId, n);
            return Box::pin(async move { out });
        };
        let mut left = false;
        let out = msg
            .members
            .iter()
            .map(|leaving| {
                let id = match group::leaving(&g.instances, leaving) {
                    Ok(id) => id,
                    Err(e) => return Some(e),
                };
                if !g.members.contains_key(&id) {
                    return Some(ResponseError::UnknownMemberId);
                }
                g.remove_member(&id, ResponseError::UnknownMemberId);
                left = true;
                None
            })
            .collect();
        if left {
            tracing::info!(group = %msg.group, "member left; rebalancing");
            g.prepare_rebalance(delay);
            self.phase_changed(&msg.group, ctx);
        }
        Box::pin(async move { out })
    }
}

impl Handler<Describe> for GroupCoordinator {
    type Result = ResponseFuture<HashMap<String, GroupView>>;

    fn handle(&mut self, msg: Describe, ctx: &mut Self::Context) -> Self::Result {
        let loading = match &msg.0 {
            None => self.ready_all(ctx),
            Some(names) => {
                // Only those coordinated here are described.
                self.follow_cluster();
                let cluster = self.cluster.borrow().clone();
                let mine: Vec<String> = (names.iter())
                    .filter(|n| cluster.coordinates(n))
                    .cloned()
                    .collect();
                match self.ready(&mine, ctx) {
                    Ready::Loading(loading) => Some(loading),
                    Ready::Now | Ready::NotMine => None,
                }
            }
        };
        if let Some(loading) = loading {
            return after_load(loading, ctx.address(), msg, |_| HashMap::new());
        }
        let views = self
            .groups
            .iter()
            .filter(|(name, _)| msg.0.as_ref().is_none_or(|n| n.contains(name)))
            .map(|(name, g)| (name.clone(), g.view()))
            .chain(
                (self.consumer.iter())
                    .filter(|(name, _)| msg.0.as_ref().is_none_or(|n| n.contains(name)))
                    .map(|(name, g)| (name.clone(), g.classic_view())),
            )
            .collect();
        Box::pin(async move { views })
    }
}

impl Handler<Superseded> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: Superseded, _: &mut Self::Context) {
        tracing::warn!(group = %msg.group, "offset commit refused: another coordinator claimed the group since");
        if self.fences.get(&msg.group) != Some(&msg.fence) {
            return; // Claimed here again meanwhile.
        }
        self.fences.remove(&msg.group);
        self.absent.remove(&msg.group);
        self.consumer.remove(&msg.group);
        if let Some(mut g) = self.groups.remove(&msg.group) {
            g.release_members();
        }
    }
}

impl Handler<Forget> for GroupCoordinator {
    type Result = ResponseFuture<Result<(), ResponseError>>;

    fn handle(&mut self, msg: Forget, ctx: &mut Self::Context) -> Self::Result {
        let answer = |r: Result<(), ResponseError>| -> Self::Result { Box::pin(async move { r }) };
        match self.ready(std::slice::from_ref(&msg.0), ctx) {
            Ready::Now => {}
            Ready::NotMine => return answer(Err(ResponseError::NotCoordinator)),
            Ready::Loading(loading) => return after_load(loading, ctx.address(), msg, Err),
        }
        let name = msg.0;
        if self
            .groups
            .get(&name)
            .is_some_and(|g| !g.members.is_empty())
            || self
                .consumer
                .get(&name)
                .is_some_and(|g| !g.members.is_empty())
        {
            return answer(Err(ResponseError::NonEmptyGroup));
        }
        self.groups.remove(&name);
        self.consumer.remove(&name);
        self.absent.insert(name.clone());
        let removed = self.persist(&name, None, ctx);
        Box::pin(async move {
            match removed.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.code()),
                Err(_) => Err(ResponseError::CoordinatorNotAvailable),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    //! The coordinator over a store in memory: what it stores, and a second
    //! coordinator on the same store carrying a group on, as a gateway taking it over
    //! (or the same one restarted) does.

    use super::consumer::DescribeConsumerGroups;
    use super::*;
    use crate::session::{Caller, Principal};
    use crate::store::{Endpoint, Node};
    use crate::test_store::MemoryMeta;

    fn coordinator(store: &Meta) -> Addr<GroupCoordinator> {
        let me = Node {
            id: 1,
            endpoints: vec![Endpoint {
                listener: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
            }],
        };
        let (_, cluster) = watch::channel(Arc::new(Cluster::single(me)));
        let metrics = crate::metrics::Metrics::new();
        let consumer = crate::settings::ConsumerGroupSettings::default();
        let (_, topics) = watch::channel(Arc::new(TopicTable::default()));
        GroupCoordinator::new(
            (Duration::ZERO, consumer),
            metrics,
            (store.clone(), cluster),
            topics,
        )
        .start()
    }

    fn join(member_id: &str) -> Join {
        Join {
            group: "g".into(),
            member_id: member_id.into(),
            instance_id: None,
            caller: Caller {
                client_id: "c".into(),
                host: "/127.0.0.1".into(),
                principal: Principal::anonymous(),
                listener: Arc::from("PLAINTEXT"),
            },
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), Bytes::from_static(b"sub"))],
            require_member_id: false,
            supports_skip_assignment: true,
        }
    }

    fn member(joined: &Joined) -> MemberRef {
        MemberRef {
            group: "g".into(),
            generation: joined.generation,
            member_id: joined.member_id.clone(),
            instance_id: None,
        }
    }

    async fn stored(store: &Meta) -> Vec<String> {
        let scan = store.scan(stored::TABLE, "").await.unwrap();
        scan.entries.into_iter().map(|(k, _)| k).collect()
    }

    /// A member joins and syncs as leader with coordinator `a`: its assignment is
    /// answered only once stored.
    async fn settled(a: &Addr<GroupCoordinator>) -> Joined {
        let joined = a.send(join("")).await.unwrap();
        assert_eq!(joined.error, None);
        let sync = Sync {
            group: "g".into(),
            generation: joined.generation,
            member_id: joined.member_id.clone(),
            instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol: Some("range".into()),
            assignments: vec![(joined.member_id.clone(), Bytes::from_static(b"p0"))],
        };
        let synced = a.send(sync).await.unwrap();
        assert_eq!(
            (synced.error, synced.assignment),
            (None, Bytes::from_static(b"p0"))
        );
        joined
    }

    #[actix_rt::test]
    async fn a_group_is_stored_when_it_settles_and_another_coordinator_carries_it_on() {
        let store = Meta::new(Arc::new(MemoryMeta::default()));
        let a = coordinator(&store);
        let joined = settled(&a).await;
        assert_eq!(stored(&store).await, ["g"]);
        let first = a.send(CheckCommit(member(&joined))).await.unwrap().unwrap();

        // A second coordinator on the store, as after a restart or a takeover: the
        // member goes on in its generation, with its assignment, and may commit, under
        // a claim of its own that refuses what the first one still sends.
        let b = coordinator(&store);
        assert_eq!(b.send(Heartbeat(member(&joined))).await.unwrap(), None);
        let second = b.send(CheckCommit(member(&joined))).await.unwrap().unwrap();
        let under = |fence: &Fence| {
            let expect = vec![fence.expect("g")];
            store.write_if(crate::offsets::table::TABLE, expect, Vec::new())
        };
        assert_eq!(under(&first).await.unwrap(), None, "the first claim stands");
        assert!(under(&second).await.unwrap().is_some());

        // Told its claim was taken, the first coordinator loads and claims the group
        // again on its next request (were the views to agree it still coordinates it),
        // and its member carries on under the new claim.
        let superseded = Superseded {
            group: "g".into(),
            fence: first.clone(),
        };
        a.send(superseded).await.unwrap();
        let again = a.send(CheckCommit(member(&joined))).await.unwrap().unwrap();
        assert_ne!(again, first);
        assert!(under(&again).await.unwrap().is_some());
        assert_eq!(under(&second).await.unwrap(), None);
        let view = &b.send(Describe(Some(vec!["g".into()]))).await.unwrap()["g"];
        assert_eq!(view.state, GroupState::Stable.name());
        assert_eq!(view.members[0].0, joined.member_id);
        assert_eq!(view.members[0].5, Bytes::from_static(b"p0"));
        // A member of another generation is still refused, as before.
        let stale = MemberRef {
            generation: joined.generation - 1,
            ..member(&joined)
        };
        assert_eq!(
            b.send(Heartbeat(stale)).await.unwrap(),
            Some(ResponseError::IllegalGeneration)
        );
    }

    /// A ConsumerGroupHeartbeat of member `id` at `epoch`, owning nothing.
    fn beat(id: &str, epoch: i32) -> consumer::ConsumerHeartbeat {
        consumer::ConsumerHeartbeat(consumer::BeatRequest {
            group: "g".into(),
            member_id: id.into(),
            member_epoch: epoch,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: 30_000,
            topic_names: Some(vec!["t".into()]),
            regex: None,
            assignor: None,
            owned: Some(Default::default()),
            caller: join("").caller,
        })
    }

    #[actix_rt::test]
    async fn a_consumer_group_is_stored_before_its_heartbeats_are_answered_and_carried_on() {
        let store = Meta::new(Arc::new(MemoryMeta::default()));
        let a = coordinator(&store);
        let m1 = a.send(beat("m1", 0)).await.unwrap().unwrap();
        let m2 = a.send(beat("m2", 0)).await.unwrap().unwrap();
        // m1 reaches the epoch m2's joining made.
        let m1 = a.send(beat("m1", m1.epoch)).await.unwrap().unwrap();
        assert_eq!((m1.epoch, m2.epoch), (2, 2));
        assert_eq!(stored(&store).await, ["g"]);
        // Another coordinator on the store: both go on at their epochs.
        let b = coordinator(&store);
        for m in [&m1, &m2] {
            let again = b.send(beat(&m.member_id, m.epoch)).await.unwrap().unwrap();
            assert_eq!(again.epoch, m.epoch, "{}", m.member_id);
        }
        let views = b
            .send(DescribeConsumerGroups(vec!["g".into()]))
            .await
            .unwrap();
        let view = views[0].as_ref().unwrap();
        assert_eq!((view.epoch, view.members.len()), (2, 2));
        // Both leave: the group is stored empty, then deleted and removed.
        for m in [&m1, &m2] {
            b.send(beat(&m.member_id, -1)).await.unwrap().unwrap();
        }
        let c = coordinator(&store);
        let views = c
            .send(DescribeConsumerGroups(vec!["g".into()]))
            .await
            .unwrap();
        assert!(views[0].as_ref().unwrap().members.is_empty());
        assert!(c.send(beat("m1", m1.epoch)).await.unwrap().is_err());
        assert_eq!(c.send(Forget("g".into())).await.unwrap(), Ok(()));
        assert!(stored(&store).await.is_empty());
    }

    #[actix_rt::test]
    async fn a_group_left_empty_is_stored_empty_and_a_deleted_one_is_removed() {
        let store = Meta::new(Arc::new(MemoryMeta::default()));
        let a = coordinator(&store);
        let joined = settled(&a).await;
        let leave = Leave {
            group: "g".into(),
            members: vec![(joined.member_id.clone(), None)],
        };
        assert_eq!(a.send(leave).await.unwrap(), [None]);
        // The member is gone for a coordinator that loads the group now.
        let b = coordinator(&store);
        assert_eq!(
            b.send(Heartbeat(member(&joined))).await.unwrap(),
            Some(ResponseError::UnknownMemberId)
        );
        let views = b.send(Describe(None)).await.unwrap();
        assert_eq!(views["g"].state, GroupState::Empty.name());
        assert_eq!(b.send(Forget("g".into())).await.unwrap(), Ok(()));
        assert!(stored(&store).await.is_empty());
        // Never stored: described by nobody (DescribeGroups answers Dead).
        assert!(b
            .send(Describe(Some(vec!["other".into()])))
            .await
            .unwrap()
            .is_empty());
    }
}
