//! One group's state and its rebalance steps: members, their protocols and
//! assignments, and the answers waiting for the join and sync phases to complete.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::oneshot;

use super::messages::{GroupState, GroupView, Joined, MemberRef, Synced};

use crate::session::Caller;

pub(super) struct Member {
    pub(super) instance_id: Option<String>,
    pub(super) caller: Caller,
    pub(super) session: Duration,
    pub(super) rebalance: Duration,
    pub(super) protocol_type: String,
    pub(super) protocols: Vec<(String, Bytes)>,
    pub(super) assignment: Bytes,
    pub(super) last_seen: Instant,
    /// The token of the timer watching this member's session (`watch_session`).
    pub(super) watch: u64,
    pub(super) awaiting_join: Option<oneshot::Sender<Joined>>,
    pub(super) awaiting_sync: Option<oneshot::Sender<Synced>>,
}

pub(super) struct Group {
    pub(super) state: GroupState,
    pub(super) generation: i32,
    pub(super) protocol_type: Option<String>,
    pub(super) protocol: Option<String>,
    pub(super) leader: Option<String>,
    pub(super) members: IndexMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not joined yet.
    pub(super) pending: HashMap<String, Instant>,
    /// Static members: instance id → member id.
    pub(super) instances: HashMap<String, String>,
    /// When the current phase (join or sync) gives up on missing members.
    pub(super) deadline: Instant,
    /// A rebalance of an empty group waits this long for more members (Kafka's
    /// `group.initial.rebalance.delay.ms`).
    pub(super) not_before: Instant,
    /// Counts every rebalance this group begins (the gateway-wide metric).
    pub(super) rebalances: Counter,
    /// The leader's assignments for this generation have come (they are being stored).
    pub(super) assigned: bool,
    /// The generation and state last written to the store.
    pub(super) stored: Option<(i32, GroupState)>,
    /// The phase whose deadline a timer is set for (`phase_changed`).
    pub(super) armed: Option<Phase>,
}

/// A join or sync phase with its deadline: (generation, state, due).
pub(super) type Phase = (i32, GroupState, Instant);

impl Group {
    pub(super) fn new(rebalances: Counter) -> Self {
        Group {
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: IndexMap::new(),
            pending: HashMap::new(),
            instances: HashMap::new(),
            deadline: Instant::now(),
            not_before: Instant::now(),
            rebalances,
            assigned: false,
            stored: None,
            armed: None,
        }
    }

    pub(super) fn rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    pub(super) fn prepare_rebalance(&mut self, initial_delay: Duration) {
        let now = Instant::now();
        if self.state == GroupState::Empty {
            self.not_before = now + initial_delay;
        }
        if self.state == GroupState::CompletingRebalance {
            // Syncs waiting for the old generation learn it is over.
            for m in self.members.values_mut() {
                if let Some(tx) = m.awaiting_sync.take() {
                    let _ = tx.send(Synced::failed(ResponseError::RebalanceInProgress));
                }
            }
        }
        if self.state != GroupState::PreparingRebalance {
            self.deadline = now + self.rebalance_timeout();
            self.rebalances.inc();
        }
        self.state = GroupState::PreparingRebalance;
        self.assigned = false;
    }

    pub(super) fn remove_member(&mut self, id: &str, error: ResponseError) {
        if let Some(mut m) = self.members.shift_remove(id) {
            if let Some(instance) = &m.instance_id {
                self.instances.remove(instance);
            }
            if let Some(tx) = m.awaiting_join.take() {
                let _ = tx.send(Joined::failed(error, id));
            }
            if let Some(tx) = m.awaiting_sync.take() {
                let _ = tx.send(Synced::failed(error));
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
    }

    /// Ends the join phase when every member has rejoined or time is up.
    pub(super) fn try_complete_join(&mut self, now: Instant) {
        if self.state != GroupState::PreparingRebalance || now < self.not_before {
            return;
        }
        let all_joined = self.members.values().all(|m| m.awaiting_join.is_some());
        if !all_joined && now < self.deadline {
            return;
        }
        let stragglers: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.awaiting_join.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in stragglers {
            self.remove_member(&id, ResponseError::UnknownMemberId);
        }
        self.generation += 1;
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.protocol = None;
            self.leader = None;
            return;
        }
        self.protocol = self.choose_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        self.state = GroupState::CompletingRebalance;
        self.assigned = false;
        self.deadline = now + self.rebalance_timeout();
        let leader = self.leader.clone().unwrap_or_default();
        let roster = self.roster();
        for (id, m) in self.members.iter_mut() {
            m.assignment = Bytes::new();
            m.last_seen = now;
            if let Some(tx) = m.awaiting_join.take() {
                let _ = tx.send(Joined {
                    error: None,
                    generation: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol: self.protocol.clone(),
                    leader: leader.clone(),
                    member_id: id.clone(),
                    members: if *id == leader {
                        roster.clone()
                    } else {
                        Vec::new()
                    },
                    skip_assignment: false,
                });
            }
        }
    }

    /// What a SyncGroup of `member` gets once the group is Stable.
    pub(super) fn synced(&self, member: &Member) -> Synced {
        Synced {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            assignment: member.assignment.clone(),
        }
    }

    /// Every member with its metadata for the chosen protocol: what the leader gets.
    pub(super) fn roster(&self) -> Vec<(String, Option<String>, Bytes)> {
        let protocol = self.protocol.clone().unwrap_or_default();
        self.members
            .iter()
            .map(|(id, m)| (id.clone(), m.instance_id.clone(), m.metadata_for(&protocol)))
            .collect()
    }

    /// The protocol every member supports that most members prefer (Kafka's vote).
    pub(super) fn choose_protocol(&self) -> Option<String> {
        let mut candidates: Vec<&str> = self
            .members
            .values()
            .next()?
            .protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        candidates.retain(|c| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == c))
        });
        let mut votes: IndexMap<&str, usize> = candidates.iter().map(|c| (*c, 0)).collect();
        for m in self.members.values() {
            if let Some((n, _)) = m
                .protocols
                .iter()
                .find(|(n, _)| votes.contains_key(n.as_str()))
            {
                *votes.entry(n.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(n, _)| n.to_string())
    }

    /// Lets go of every member, as the group moves away from this coordinator: what
    /// waits in them is told NOT_COORDINATOR, and clients look the coordinator up again.
    pub(super) fn release_members(&mut self) {
        for id in self.members.keys().cloned().collect::<Vec<_>>() {
            self.remove_member(&id, ResponseError::NotCoordinator);
        }
    }

    /// Checks generation and member like Kafka's `validateOffsetCommit` / heartbeat.
    pub(super) fn check_member(&self, r: &MemberRef) -> Result<&Member, ResponseError> {
        if let Some(instance) = &r.instance_id {
            if let Some(current) = self.instances.get(instance) {
                if *current != r.member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
            }
        }
        let m = self
            .members
            .get(&r.member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if r.generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        Ok(m)
    }

    pub(super) fn view(&self) -> GroupView {
        let protocol = self.protocol.clone().unwrap_or_default();
        GroupView {
            state: self.state.name(),
            group_type: "classic",
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: self
                .members
                .iter()
                .map(|(id, m)| {
                    (
                        id.clone(),
                        m.instance_id.clone(),
                        m.caller.client_id.clone(),
                        m.caller.host.clone(),
                        m.metadata_for(&protocol),
                        m.assignment.clone(),
                    )
                })
                .collect(),
        }
    }
}

/// The member a LeaveGroup entry names (KIP-345): by its instance id when it has one,
/// which another member id than the one sent holds (FENCED_INSTANCE_ID); otherwise by
/// its member id. Shared by classic and consumer groups, which both map instance ids
/// to member ids.
pub(super) fn leaving(
    instances: &HashMap<String, String>,
    (member_id, instance_id): &(String, Option<String>),
) -> Result<String, ResponseError> {
    match instance_id.as_ref().and_then(|i| instances.get(i)) {
        Some(current) if !member_id.is_empty() && current != member_id => {
            Err(ResponseError::FencedInstanceId)
        }
        Some(current) => Ok(current.clone()),
        None => Ok(member_id.clone()),
    }
}

impl Member {
    pub(super) fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}
