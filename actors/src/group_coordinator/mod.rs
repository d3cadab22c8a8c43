//! The group coordinator actor: membership of classic consumer groups (JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup), after Kafka's `GroupCoordinator`.
//!
//! A group moves Empty → PreparingRebalance (members (re)join; the join answers wait)
//! → CompletingRebalance (the leader computes assignments; the sync answers wait) →
//! Stable. A join, a leave or an expired session sends it back to PreparingRebalance;
//! other members learn it from REBALANCE_IN_PROGRESS on their next heartbeat.
//! Assignments are relayed unread, so every client assignor works. Waiting answers
//! are oneshot channels kept in the member; a tick every 100 ms completes rebalances
//! whose members have all joined or whose time ran out, and expires silent members.
//! Group state lives in memory only: after a restart members get UNKNOWN_MEMBER_ID
//! and rejoin; committed offsets are in the backend.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

use crate::metrics::Metrics;

/// Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms` defaults.
const MIN_SESSION: Duration = Duration::from_secs(6);
const MAX_SESSION: Duration = Duration::from_secs(1800);
const TICK: Duration = Duration::from_millis(100);
/// Kafka's `offsets.retention.check.interval.ms` default: how often groups left empty
/// are dropped. Until then an empty group is described, listed and deletable, as in
/// Kafka, whose cleanup removes an Empty group without offsets at that pass.
const EMPTY_GROUP_CLEANUP: Duration = Duration::from_secs(600);

mod group;
mod messages;

use group::{Group, Member};
pub use messages::*;

pub struct GroupCoordinator {
    groups: HashMap<String, Group>,
    initial_delay: Duration,
    metrics: Arc<Metrics>,
}

impl GroupCoordinator {
    pub fn new(initial_delay: Duration, metrics: Arc<Metrics>) -> Self {
        GroupCoordinator {
            groups: HashMap::new(),
            initial_delay,
            metrics,
        }
    }

    fn tick(&mut self) {
        let now = Instant::now();
        let delay = self.initial_delay;
        for (name, g) in self.groups.iter_mut() {
            // Members that stopped heartbeating (those waiting in a join are not expected to).
            let expired: Vec<String> = g
                .members
                .iter()
                .filter(|(_, m)| {
                    m.awaiting_join.is_none() && now.duration_since(m.last_seen) > m.session
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                tracing::info!(group = %name, member = %id, "session expired");
                g.remove_member(id, ResponseError::UnknownMemberId);
            }
            if !expired.is_empty() && g.state != GroupState::Empty {
                g.prepare_rebalance(delay);
            }
            if g.state == GroupState::CompletingRebalance && now >= g.deadline {
                // The leader never sent its assignments: start over without the silent.
                tracing::info!(group = %name, "sync phase timed out");
                g.prepare_rebalance(delay);
            }
            g.pending
                .retain(|_, handed_out| now.duration_since(*handed_out) < MAX_SESSION);
            g.try_complete_join(now);
        }
        let mut counts = [0; GroupState::ALL.len()];
        for g in self.groups.values() {
            counts[g.state as usize] += 1;
        }
        self.metrics
            .groups
            .set_counts(GroupState::ALL.map(|state| (state.name(), counts[state as usize])));
    }

    /// Forgets groups with no members and no member ids handed out. One with committed
    /// offsets is still known by them (listed and described Empty, deletable).
    fn drop_empty_groups(&mut self) {
        self.groups.retain(|_, g| {
            g.state != GroupState::Empty || !g.members.is_empty() || !g.pending.is_empty()
        });
    }
}

impl Actor for GroupCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(TICK, |act, _| act.tick());
        ctx.run_interval(EMPTY_GROUP_CLEANUP, |act, _| act.drop_empty_groups());
    }
}

impl Handler<Join> for GroupCoordinator {
    type Result = ResponseFuture<Joined>;

    fn handle(&mut self, msg: Join, _: &mut Self::Context) -> Self::Result {
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
                awaiting_join: None,
                awaiting_sync: None,
            });
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
                g.try_complete_join(now);
            }
        }
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Joined::failed(ResponseError::CoordinatorNotAvailable, ""))
        })
    }
}

impl Handler<Sync> for GroupCoordinator {
    type Result = ResponseFuture<Synced>;

    fn handle(&mut self, msg: Sync, _: &mut Self::Context) -> Self::Result {
        let answer = |s: Synced| -> ResponseFuture<Synced> { Box::pin(async move { s }) };
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
        let done = |g: &Group, member: &Member| Synced {
            error: None,
            protocol_type: g.protocol_type.clone(),
            protocol: g.protocol.clone(),
            assignment: member.assignment.clone(),
        };
        match g.state {
            GroupState::PreparingRebalance | GroupState::Empty => {
                answer(Synced::failed(ResponseError::RebalanceInProgress))
            }
            GroupState::Stable => {
                let m = &g.members[&msg.member_id];
                answer(done(g, m))
            }
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                let now = Instant::now();
                if let Some(m) = g.members.get_mut(&msg.member_id) {
                    m.awaiting_sync = Some(tx);
                    m.last_seen = now;
                }
                if g.leader.as_deref() == Some(msg.member_id.as_str()) {
                    let mut assignments: HashMap<String, Bytes> =
                        msg.assignments.into_iter().collect();
                    for (id, m) in g.members.iter_mut() {
                        m.assignment = assignments.remove(id).unwrap_or_default();
                    }
                    g.state = GroupState::Stable;
                    let answers: Vec<(oneshot::Sender<Synced>, Synced)> = g
                        .members
                        .values_mut()
                        .filter_map(|m| m.awaiting_sync.take().map(|tx| (tx, m.assignment.clone())))
                        .map(|(tx, assignment)| {
                            (
                                tx,
                                Synced {
                                    error: None,
                                    protocol_type: g.protocol_type.clone(),
                                    protocol: g.protocol.clone(),
                                    assignment,
                                },
                            )
                        })
                        .collect();
                    for (tx, s) in answers {
                        let _ = tx.send(s);
                    }
                }
                Box::pin(async move {
                    rx.await
                        .unwrap_or_else(|_| Synced::failed(ResponseError::RebalanceInProgress))
                })
            }
        }
    }
}

impl Handler<Heartbeat> for GroupCoordinator {
    type Result = Option<ResponseError>;

    fn handle(&mut self, Heartbeat(r): Heartbeat, _: &mut Self::Context) -> Self::Result {
        let Some(g) = self.groups.get_mut(&r.group) else {
            return Some(ResponseError::UnknownMemberId);
        };
        if let Err(e) = g.check_member(&r) {
            return Some(e);
        }
        if let Some(m) = g.members.get_mut(&r.member_id) {
            m.last_seen = Instant::now();
        }
        (g.state == GroupState::PreparingRebalance).then_some(ResponseError::RebalanceInProgress)
    }
}

impl Handler<CheckCommit> for GroupCoordinator {
    type Result = Result<(), ResponseError>;

    fn handle(&mut self, CheckCommit(r): CheckCommit, _: &mut Self::Context) -> Self::Result {
        let g = match self.groups.get_mut(&r.group) {
            // Admin tools and simple consumers commit outside any generation.
            None
            | Some(Group {
                state: GroupState::Empty,
                ..
            }) if r.generation < 0 => return Ok(()),
            // A generation from before a restart: rejoin first.
            None => return Err(ResponseError::UnknownMemberId),
            Some(g) => g,
        };
        g.check_member(&r)?;
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
}

impl Handler<Leave> for GroupCoordinator {
    type Result = Vec<Option<ResponseError>>;

    fn handle(&mut self, msg: Leave, _: &mut Self::Context) -> Self::Result {
        let delay = self.initial_delay;
        let Some(g) = self.groups.get_mut(&msg.group) else {
            return msg
                .members
                .iter()
                .map(|_| Some(ResponseError::UnknownMemberId))
                .collect();
        };
        let mut left = false;
        let out = msg
            .members
            .iter()
            .map(|(member_id, instance_id)| {
                let id = match instance_id.as_ref().and_then(|i| g.instances.get(i)) {
                    Some(current) if !member_id.is_empty() && current != member_id => {
                        return Some(ResponseError::FencedInstanceId);
                    }
                    Some(current) => current.clone(),
                    None => member_id.clone(),
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
            g.try_complete_join(Instant::now());
        }
        out
    }
}

impl Handler<Describe> for GroupCoordinator {
    type Result = MessageResult<Describe>;

    fn handle(&mut self, Describe(names): Describe, _: &mut Self::Context) -> Self::Result {
        let views = self
            .groups
            .iter()
            .filter(|(name, _)| names.as_ref().is_none_or(|n| n.contains(name)))
            .map(|(name, g)| (name.clone(), g.view()))
            .collect();
        MessageResult(views)
    }
}

impl Handler<Forget> for GroupCoordinator {
    type Result = Result<(), ResponseError>;

    fn handle(&mut self, Forget(name): Forget, _: &mut Self::Context) -> Self::Result {
        match self.groups.get(&name) {
            Some(g) if !g.members.is_empty() => Err(ResponseError::NonEmptyGroup),
            _ => {
                self.groups.remove(&name);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn empty_groups_outlive_the_tick_and_go_at_the_cleanup() {
        let mut coordinator = GroupCoordinator::new(Duration::ZERO, crate::metrics::Metrics::new());
        coordinator
            .groups
            .insert("left".into(), Group::new(Counter::default()));
        let mut pending = Group::new(Counter::default());
        pending.pending.insert("member-1".into(), Instant::now());
        coordinator.groups.insert("joining".into(), pending);
        coordinator.tick();
        assert_eq!(coordinator.groups.len(), 2, "dropped by the tick");
        coordinator.drop_empty_groups();
        let kept: Vec<&String> = coordinator.groups.keys().collect();
        assert_eq!(kept, ["joining"]);
    }
}
