//! The coordinator actor's side of KIP-848 groups: heartbeats and describes reach the
//! group here, and each member's deadlines run as actor timers: its session (reset by
//! every heartbeat) and, while it holds partitions it was told to give up, its
//! rebalance timeout. A timer that fires for a member still silent (its token unchanged)
//! removes it, and the group moves on to a new epoch without it.

use std::time::Duration;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

use super::super::stored::StoredGroup;
use super::super::{
    after_load, GroupCoordinator, Join, Joined, Leave, MemberRef, Ready, Sync, Synced,
};
use super::classic::CONSUMER_PROTOCOL;
use super::{
    Beat, ConsumerGroup, ConsumerGroupError, ConsumerGroupView, ConsumerHeartbeat,
    DescribeConsumerGroups,
};
use crate::store::StoreResult;

/// Which of a member's deadlines a timer is for.
#[derive(Clone, Copy, Debug)]
enum Deadline {
    Session,
    Revocation,
}

impl GroupCoordinator {
    /// A group id taken by a classic group: an empty one becomes a consumer group, and
    /// so does one of the consumer protocol type with members, who carry on in it as
    /// classic members (online migration, KIP-848, `classic.rs`); any other is refused.
    fn take_from_classic(
        &mut self,
        name: &str,
        ctx: &mut Context<Self>,
    ) -> Result<(), ConsumerGroupError> {
        let Some(classic) = self.groups.get(name) else {
            return Ok(());
        };
        let refused = || ConsumerGroupError::NotConsumerGroup(name.to_string());
        if classic.members.is_empty() && classic.pending.is_empty() {
            tracing::info!(group = %name, "empty classic group becomes a consumer group");
            self.groups.remove(name);
            self.absent.insert(name.to_string());
            drop(self.persist(name, None, ctx));
            return Ok(());
        }
        if classic.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL)
            || classic.members.len() > self.consumer_settings.max_size
        {
            return Err(refused());
        }
        let table = self.topics.borrow().clone();
        let group = ConsumerGroup::from_classic(classic, &table).ok_or_else(refused)?;
        let mut classic = self.groups.remove(name).expect("checked");
        // Members waiting in a rebalance join the consumer group's instead.
        for id in classic.members.keys().cloned().collect::<Vec<_>>() {
            classic.remove_member(&id, ResponseError::RebalanceInProgress);
        }
        tracing::info!(group = %name, generation = classic.generation, members = group.members.len(), "classic group becomes a consumer group; its members carry on");
        self.loaded(name, group, ctx);
        Ok(())
    }

    /// The last consumer-protocol member of group `name` left: a group of classic
    /// members only goes back to a classic group, which rebalances (Kafka's online
    /// downgrade).
    fn downgrade_if_classic(&mut self, name: &str, ctx: &mut Context<Self>) {
        if !self
            .consumer
            .get(name)
            .is_some_and(ConsumerGroup::all_classic)
        {
            return;
        }
        let group = self.consumer.remove(name).expect("checked");
        for m in group.members.values() {
            for (_, handle) in [&m.session, &m.revocation].into_iter().flatten() {
                ctx.cancel_future(*handle);
            }
        }
        let table = self.topics.borrow().clone();
        let mut classic = group.into_classic(&table, self.metrics.groups.rebalance_counter());
        tracing::info!(group = %name, generation = classic.generation, members = classic.members.len(), "consumer group of classic members only becomes a classic group");
        classic.stored = Some((classic.generation, classic.state));
        let value = StoredGroup::of(&classic).encode();
        drop(self.persist(name, Some(value), ctx));
        classic.prepare_rebalance(self.initial_delay);
        let members: Vec<String> = classic.members.keys().cloned().collect();
        self.groups.insert(name.to_string(), classic);
        for member in members {
            self.watch_session(name, &member, ctx);
        }
        self.phase_changed(name, ctx);
    }

    /// Takes in a group loaded from the store: each member's deadlines start now, as a
    /// loaded group's do in Kafka.
    pub(in super::super) fn loaded(
        &mut self,
        name: &str,
        group: ConsumerGroup,
        ctx: &mut Context<Self>,
    ) {
        let members: Vec<String> = group.members.keys().cloned().collect();
        tracing::info!(group = %name, epoch = group.epoch, members = members.len(), "consumer group loaded from the store");
        self.consumer.insert(name.to_string(), group);
        for member in members {
            self.arm(name, &member, ctx);
        }
    }

    /// Queues a write of group `name`'s state if it changed since the last one; the
    /// answer says when it stands.
    pub(in super::super) fn store_consumer(
        &mut self,
        name: &str,
        ctx: &mut Context<Self>,
    ) -> Option<oneshot::Receiver<StoreResult<()>>> {
        let g = self.consumer.get_mut(name).filter(|g| g.unstored)?;
        g.unstored = false;
        Some(self.persist_consumer(name, ctx))
    }

    /// Arms `member`'s session timer again, and its revocation timer while it holds
    /// partitions it was told to give up.
    fn arm(&mut self, group: &str, member: &str, ctx: &mut Context<Self>) {
        let Some(m) = self
            .consumer
            .get_mut(group)
            .and_then(|g| g.members.get_mut(member))
        else {
            return;
        };
        // A classic member's session is its own, as it asked in its JoinGroup.
        let session =
            (m.classic.as_ref()).map_or(self.consumer_settings.session_timeout, |c| c.session);
        self.timer_tokens += 1;
        let token = self.timer_tokens;
        if let Some((_, old)) = m.session.take() {
            ctx.cancel_future(old);
        }
        let timer = |deadline: Deadline, after: Duration, ctx: &mut Context<Self>| {
            let (group, member) = (group.to_string(), member.to_string());
            ctx.run_later(after, move |act, ctx| {
                act.expire(&group, &member, (deadline, token), ctx)
            })
        };
        m.session = Some((token, timer(Deadline::Session, session, ctx)));
        match (m.state.revoking.is_empty(), m.revocation.is_some()) {
            (false, false) => {
                let after = Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64);
                m.revocation = Some((token, timer(Deadline::Revocation, after, ctx)));
            }
            (true, true) => {
                let (_, old) = m.revocation.take().expect("checked");
                ctx.cancel_future(old);
            }
            _ => {}
        }
    }

    /// A member's deadline passed: it is removed unless the timer is stale.
    fn expire(
        &mut self,
        group: &str,
        member: &str,
        (deadline, token): (Deadline, u64),
        ctx: &mut Context<Self>,
    ) {
        let Some(g) = self.consumer.get_mut(group) else {
            return;
        };
        let Some(m) = g.members.get_mut(member) else {
            return;
        };
        let armed = match deadline {
            Deadline::Session => &m.session,
            Deadline::Revocation => &m.revocation,
        };
        if armed.is_none_or(|(t, _)| t != token) {
            return;
        }
        // The other deadline's timer goes with the member.
        for (_, handle) in [m.session.take(), m.revocation.take()]
            .into_iter()
            .flatten()
        {
            ctx.cancel_future(handle);
        }
        tracing::info!(group = %group, member = %member, ?deadline, "consumer group member removed: deadline passed");
        g.remove(member);
        drop(self.store_consumer(group, ctx));
        self.downgrade_if_classic(group, ctx);
    }
}

impl Handler<ConsumerHeartbeat> for GroupCoordinator {
    type Result = ResponseFuture<Result<Beat, ConsumerGroupError>>;

    fn handle(&mut self, msg: ConsumerHeartbeat, ctx: &mut Self::Context) -> Self::Result {
        let answer =
            |r: Result<Beat, ConsumerGroupError>| -> Self::Result { Box::pin(async move { r }) };
        match self.ready(std::slice::from_ref(&msg.0.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => {
                return answer(Err(ConsumerGroupError::Coordinator(
                    ResponseError::NotCoordinator,
                )))
            }
            Ready::Loading(loading) => {
                return after_load(loading, ctx.address(), msg, |e| {
                    Err(ConsumerGroupError::Coordinator(e))
                })
            }
        }
        let name = msg.0.group.clone();
        if let Err(e) = self.take_from_classic(&name, ctx) {
            return answer(Err(e));
        }
        let table = self.topics.borrow().clone();
        let group = self.consumer.entry(name.clone()).or_default();
        let beat = group.heartbeat(msg.0, &table, &self.consumer_settings);
        if let Ok(b) = &beat {
            self.arm(&name, &b.member_id, ctx);
        }
        // What the answer tells the member stands in the store first.
        let stored = self.store_consumer(&name, ctx);
        self.downgrade_if_classic(&name, ctx);
        let Some(stored) = stored else {
            return answer(beat);
        };
        after_write(stored, beat, |e| Err(ConsumerGroupError::Coordinator(e)))
    }
}

/// Classic members' requests to a consumer group (`classic.rs`).
impl GroupCoordinator {
    /// A JoinGroup: answered at once with the member's epoch as its generation and no
    /// leader (the coordinator assigns), once what it changed is stored.
    pub(in super::super) fn classic_join(
        &mut self,
        msg: Join,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Joined> {
        let answer = |j: Joined| -> ResponseFuture<Joined> { Box::pin(async move { j }) };
        let member_id = match msg.member_id.is_empty() {
            true => format!("{}-{}", msg.caller.client_id, uuid::Uuid::new_v4()),
            false => msg.member_id.clone(),
        };
        if msg.member_id.is_empty() && msg.require_member_id && msg.instance_id.is_none() {
            return answer(Joined::failed(ResponseError::MemberIdRequired, &member_id));
        }
        let table = self.topics.borrow().clone();
        let group = self.consumer.get_mut(&msg.group).expect("a consumer group");
        let joined = match group.join_classic(&msg, member_id, &table, &self.consumer_settings) {
            Ok(joined) => joined,
            Err(e) => {
                tracing::info!(group = %msg.group, member = %msg.member_id, error = %e, "classic member refused by a consumer group");
                return answer(Joined::failed(e.code(), &msg.member_id));
            }
        };
        self.arm(&msg.group, &joined.member_id, ctx);
        let id = joined.member_id.clone();
        let answer = Joined {
            error: None,
            generation: joined.epoch,
            protocol_type: Some(CONSUMER_PROTOCOL.into()),
            protocol: Some(joined.protocol),
            leader: String::new(),
            member_id: joined.member_id,
            members: Vec::new(),
            skip_assignment: false,
        };
        match self.store_consumer(&msg.group, ctx) {
            Some(stored) => after_write(stored, answer, move |e| Joined::failed(e, &id)),
            None => Box::pin(async move { answer }),
        }
    }

    /// A SyncGroup: the partitions the member holds now.
    pub(in super::super) fn classic_sync(&mut self, msg: &Sync, ctx: &mut Context<Self>) -> Synced {
        let table = self.topics.borrow().clone();
        let group = &self.consumer[&msg.group];
        match group.classic_sync(msg, &table) {
            Ok((assignment, protocol)) => {
                self.arm(&msg.group, &msg.member_id, ctx);
                Synced {
                    error: None,
                    protocol_type: Some(CONSUMER_PROTOCOL.into()),
                    protocol: Some(protocol),
                    assignment,
                }
            }
            Err(e) => Synced::failed(e),
        }
    }

    /// A Heartbeat: keeps the member's session, and tells it when to join again.
    pub(in super::super) fn classic_heartbeat(
        &mut self,
        r: &MemberRef,
        ctx: &mut Context<Self>,
    ) -> Option<ResponseError> {
        let beat = self.consumer[&r.group].classic_heartbeat(r);
        if matches!(beat, Ok(()) | Err(ResponseError::RebalanceInProgress)) {
            self.arm(&r.group, &r.member_id, ctx);
        }
        beat.err()
    }

    /// A LeaveGroup: each classic member named leaves (a static one by its instance id
    /// too); the group moves on without them.
    pub(in super::super) fn classic_leave(
        &mut self,
        msg: &Leave,
        ctx: &mut Context<Self>,
    ) -> Vec<Option<ResponseError>> {
        let group = self.consumer.get_mut(&msg.group).expect("a consumer group");
        let mut left = Vec::new();
        let out = (msg.members.iter())
            .map(|leaving| {
                let id = match super::super::group::leaving(&group.instances, leaving) {
                    Ok(id) => id,
                    Err(e) => return Some(e),
                };
                if group.members.get(&id).is_none_or(|m| m.classic.is_none()) {
                    return Some(ResponseError::UnknownMemberId);
                }
                group.remove(&id);
                left.push(id);
                None
            })
            .collect();
        // Their timers find nobody when they fire.
        tracing::info!(group = %msg.group, members = ?left, "classic members left a consumer group");
        drop(self.store_consumer(&msg.group, ctx));
        out
    }
}

/// `answer` once the write it depends on stands, or `failed` with why the write did not.
fn after_write<T: 'static>(
    stored: oneshot::Receiver<StoreResult<()>>,
    answer: T,
    failed: impl FnOnce(ResponseError) -> T + 'static,
) -> ResponseFuture<T> {
    Box::pin(async move {
        match stored.await {
            Ok(Ok(())) => answer,
            Ok(Err(e)) => failed(e.code()),
            Err(_) => failed(ResponseError::CoordinatorNotAvailable),
        }
    })
}

impl Handler<DescribeConsumerGroups> for GroupCoordinator {
    type Result = ResponseFuture<Vec<Result<ConsumerGroupView, ConsumerGroupError>>>;

    fn handle(&mut self, msg: DescribeConsumerGroups, ctx: &mut Self::Context) -> Self::Result {
        self.follow_cluster();
        let cluster = self.cluster.borrow().clone();
        let mine: Vec<String> = (msg.0.iter())
            .filter(|n| cluster.coordinates(n))
            .cloned()
            .collect();
        if let Ready::Loading(loading) = self.ready(&mine, ctx) {
            let n = msg.0.len();
            return after_load(loading, ctx.address(), msg, move |e| {
                (0..n)
                    .map(|_| Err(ConsumerGroupError::Coordinator(e)))
                    .collect()
            });
        }
        let views = (msg.0.iter())
            .map(|name| {
                if !cluster.coordinates(name) {
                    return Err(ConsumerGroupError::Coordinator(
                        ResponseError::NotCoordinator,
                    ));
                }
                match (self.consumer.get(name), self.groups.contains_key(name)) {
                    (Some(g), _) => Ok(g.view()),
                    (None, true) => Err(ConsumerGroupError::NotConsumerGroup(name.clone())),
                    (None, false) => Err(ConsumerGroupError::UnknownGroup(name.clone())),
                }
            })
            .collect();
        Box::pin(async move { views })
    }
}
