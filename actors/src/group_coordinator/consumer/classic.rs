//! Classic members in a consumer group: Kafka 4's online migration
//! (`group.consumer.migration.policy=bidirectional`). A consumer-protocol member
//! joining a classic group of the consumer protocol type turns it into a consumer
//! group whose members keep their partitions at their generation as epoch; from then
//! on the group's members may use either protocol. A classic member's JoinGroup is its
//! step towards the target (its subscription and the partitions it still owns travel
//! in its metadata), its SyncGroup is answered at once with what it was given, and its
//! Heartbeat answers REBALANCE_IN_PROGRESS while it has a step left to take. When the
//! last consumer-protocol member leaves, the group goes back to a classic one and
//! rebalances.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use prometheus_client::metrics::counter::Counter;

use super::super::group::{Group, Member};
use super::super::messages::{GroupState, Join, MemberRef, Sync};
use super::assignor::Partitions;
use super::error::ConsumerGroupError;
use super::group::{ClassicMember, ConsumerMember};
use super::reconcile::Reconciled;
use super::{ConsumerGroup, ConsumerSettings};
use crate::topic_admin::TopicTable;

/// The protocol type of consumers, the only one a consumer group takes in.
pub const CONSUMER_PROTOCOL: &str = "consumer";

/// The embedded consumer protocol's newest version this gateway reads.
const EMBEDDED_MAX_VERSION: i16 = 3;

impl ClassicMember {
    fn protocol(&self) -> &str {
        self.protocols.first().map_or("", |(name, _)| name)
    }

    /// The embedded protocol's version the member speaks (as its metadata says),
    /// which its assignment is encoded in.
    fn version(&self) -> i16 {
        (self.protocols.first())
            .and_then(|(_, m)| (m.len() >= 2).then(|| i16::from_be_bytes([m[0], m[1]])))
            .unwrap_or(0)
            .clamp(0, EMBEDDED_MAX_VERSION)
    }
}

/// A subscription in the embedded consumer protocol (version first).
fn subscription(metadata: &Bytes) -> Option<ConsumerProtocolSubscription> {
    let mut b = metadata.clone();
    if b.remaining() < 2 {
        return None;
    }
    let version = b.get_i16().clamp(0, EMBEDDED_MAX_VERSION);
    ConsumerProtocolSubscription::decode(&mut b, version).ok()
}

/// Partitions named by topic in the embedded protocol, as topic ids; topics the
/// table no longer holds are left out.
fn by_id<'a>(
    named: impl IntoIterator<Item = (&'a str, &'a [i32])>,
    table: &TopicTable,
) -> Partitions {
    let mut out = Partitions::new();
    for (topic, partitions) in named {
        if let Some(t) = table.get(topic) {
            out.extend(partitions.iter().map(|p| (t.id, *p)));
        }
    }
    out
}

/// The partitions a classic group's assignment bytes give a member.
fn assigned(bytes: &Bytes, table: &TopicTable) -> Option<Partitions> {
    if bytes.is_empty() {
        return Some(Partitions::new());
    }
    let mut b = bytes.clone();
    if b.remaining() < 2 {
        return None;
    }
    let version = b.get_i16().clamp(0, EMBEDDED_MAX_VERSION);
    let assignment = ConsumerProtocolAssignment::decode(&mut b, version).ok()?;
    let named = (assignment.assigned_partitions.iter())
        .map(|t| (t.topic.as_str(), t.partitions.as_slice()));
    Some(by_id(named, table))
}

/// `partitions` as an assignment of the embedded protocol at `version`.
fn assignment_bytes(partitions: &Partitions, table: &TopicTable, version: i16) -> Bytes {
    let mut named: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, p) in partitions {
        if let Some(t) = table.by_id(topic) {
            named.entry(&t.name).or_default().push(*p);
        }
    }
    let topics = named.into_iter().map(|(name, partitions)| {
        AssignedTopic::default()
            .with_topic(StrBytes::from_string(name.to_string()).into())
            .with_partitions(partitions)
    });
    let assignment =
        ConsumerProtocolAssignment::default().with_assigned_partitions(topics.collect());
    let mut out = BytesMut::new();
    out.put_i16(version);
    assignment
        .encode(&mut out, version)
        .expect("an assignment encodes at every version");
    out.freeze()
}

/// What a classic member's JoinGroup to a consumer group is answered with.
pub struct ClassicJoined {
    pub member_id: String,
    pub epoch: i32,
    pub protocol: String,
}

impl ConsumerGroup {
    /// A classic group with members of the consumer protocol type, as a consumer group
    /// (Kafka's `fromClassicGroup`): each member at the generation as its epoch, owning
    /// what the last rebalance gave it, which is also its target. `None` if a member's
    /// embedded protocol cannot be read.
    pub(in crate::group_coordinator) fn from_classic(
        classic: &Group,
        table: &TopicTable,
    ) -> Option<ConsumerGroup> {
        let mut group = ConsumerGroup {
            epoch: classic.generation,
            assignment_epoch: classic.generation,
            unstored: true,
            ..Default::default()
        };
        for (id, m) in &classic.members {
            let chosen = classic.protocol.as_deref().map(|p| m.metadata_for(p));
            let metadata = chosen
                .filter(|b| !b.is_empty())
                .or_else(|| m.protocols.first().map(|(_, b)| b.clone()))?;
            let sub = subscription(&metadata)?;
            let owned = assigned(&m.assignment, table)?;
            if let Some(instance) = &m.instance_id {
                group.instances.insert(instance.clone(), id.clone());
            }
            group.target.insert(id.clone(), owned.clone());
            let member = ConsumerMember {
                instance_id: m.instance_id.clone(),
                rack_id: sub.rack_id.map(|r| r.to_string()),
                caller: m.caller.clone(),
                rebalance_timeout_ms: m.rebalance.as_millis() as i32,
                topic_names: sub.topics.iter().map(|t| t.to_string()).collect(),
                regex: None,
                assignor: None,
                subscribed: Default::default(),
                state: Reconciled {
                    epoch: classic.generation,
                    previous_epoch: classic.generation,
                    assigned: owned,
                    revoking: Partitions::new(),
                },
                sent: None,
                away: false,
                session: None,
                revocation: None,
                classic: Some(ClassicMember {
                    session: m.session,
                    protocols: m.protocols.clone(),
                }),
            };
            group.members.insert(id.clone(), member);
        }
        Some(group)
    }

    /// Every member is a classic one: the group goes back to a classic group.
    pub fn all_classic(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(|m| m.classic.is_some())
    }

    /// The group as a classic one (Kafka's `fromConsumerGroup`), its generation the
    /// group epoch, each member with the partitions it holds; the caller starts the
    /// rebalance that gives them a classic assignment.
    pub(in crate::group_coordinator) fn into_classic(
        self,
        table: &TopicTable,
        rebalances: Counter,
    ) -> Group {
        let mut group = Group::new(rebalances);
        group.generation = self.epoch;
        group.protocol_type = Some(CONSUMER_PROTOCOL.into());
        group.state = GroupState::Stable;
        let now = Instant::now();
        let mut members = IndexMap::with_capacity(self.members.len());
        for (id, m) in self.members {
            let classic = m.classic.expect("only classic members are left");
            if let Some(instance) = &m.instance_id {
                group.instances.insert(instance.clone(), id.clone());
            }
            let assignment = assignment_bytes(&m.state.assigned, table, classic.version());
            let member = Member {
                instance_id: m.instance_id,
                caller: m.caller,
                session: classic.session,
                rebalance: Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64),
                protocol_type: CONSUMER_PROTOCOL.into(),
                protocols: classic.protocols,
                assignment,
                last_seen: now,
                watch: 0,
                awaiting_join: None,
                awaiting_sync: None,
            };
            members.insert(id, member);
        }
        group.members = members;
        group
    }

    /// A classic member's JoinGroup (Kafka's `classicGroupJoinToConsumerGroup`): a new
    /// member joins, a known one updates its subscription; either takes one step
    /// towards its target, the partitions it says it still owns as reported.
    pub fn join_classic(
        &mut self,
        join: &Join,
        member_id: String,
        table: &Arc<TopicTable>,
        settings: &ConsumerSettings,
    ) -> Result<ClassicJoined, ConsumerGroupError> {
        let inconsistent =
            || ConsumerGroupError::Coordinator(ResponseError::InconsistentGroupProtocol);
        if join.protocol_type != CONSUMER_PROTOCOL || join.protocols.is_empty() {
            return Err(inconsistent());
        }
        let sub = subscription(&join.protocols[0].1).ok_or_else(|| {
            ConsumerGroupError::InvalidRequest("the member's subscription cannot be read".into())
        })?;
        let id = self.classic_member_id(join, member_id, settings)?;
        let member = self.members.get_mut(&id).expect("joined or known");
        let topic_names: Vec<String> = sub.topics.iter().map(|t| t.to_string()).collect();
        let changed = member.topic_names != topic_names || member.assignor.is_some();
        member.topic_names = topic_names;
        member.assignor = None;
        member.rack_id = sub.rack_id.map(|r| r.to_string());
        member.caller = join.caller.clone();
        if join.rebalance_timeout_ms > 0 {
            member.rebalance_timeout_ms = join.rebalance_timeout_ms;
        }
        let classic = ClassicMember {
            session: Duration::from_millis(join.session_timeout_ms.max(0) as u64),
            protocols: join.protocols.clone(),
        };
        if member.classic.as_ref() != Some(&classic) {
            member.classic = Some(classic);
            self.unstored = true;
        }
        self.follow(changed, table, settings);
        let owned =
            (sub.owned_partitions.iter()).map(|t| (t.topic.as_str(), t.partitions.as_slice()));
        let beat = self.step(&id, Some(&by_id(owned, table)));
        Ok(ClassicJoined {
            protocol: join.protocols[0].0.clone(),
            member_id: id,
            epoch: beat.epoch,
        })
    }

    /// The member a classic JoinGroup is for: known, a static member back under a
    /// new id (it takes its old membership over), or new.
    fn classic_member_id(
        &mut self,
        join: &Join,
        member_id: String,
        settings: &ConsumerSettings,
    ) -> Result<String, ConsumerGroupError> {
        let known_instance = (join.instance_id.as_ref()).and_then(|i| self.instances.get(i));
        if let Some(old) = known_instance.cloned() {
            if old == member_id {
                return Ok(old);
            }
            if !join.member_id.is_empty() {
                return Err(ConsumerGroupError::Coordinator(
                    ResponseError::FencedInstanceId,
                ));
            }
            let m = self.members.remove(&old).expect("instances name members");
            if let Some(t) = self.target.remove(&old) {
                self.target.insert(member_id.clone(), t);
            }
            self.members.insert(member_id.clone(), m);
            let instance = join.instance_id.clone().expect("known instance");
            self.instances.insert(instance, member_id.clone());
            self.unstored = true;
            return Ok(member_id);
        }
        if self.members.contains_key(&member_id) {
            return Ok(member_id);
        }
        if self.members.len() >= settings.max_size {
            return Err(ConsumerGroupError::GroupFull(settings.max_size));
        }
        let identity = (join.instance_id.clone(), join.caller.clone());
        self.add_member(&member_id, identity, join.rebalance_timeout_ms);
        // A member coming in: the subscriptions are resolved again at this join.
        self.resolved_for = std::sync::Weak::new();
        self.unstored = true;
        Ok(member_id)
    }

    /// A classic member of this group, checked as Kafka checks one: its instance id
    /// its own, and the classic protocol its protocol.
    fn classic_member(&self, r: &MemberRef) -> Result<&ConsumerMember, ResponseError> {
        if let Some(instance) = &r.instance_id {
            if self
                .instances
                .get(instance)
                .is_some_and(|id| *id != r.member_id)
            {
                return Err(ResponseError::FencedInstanceId);
            }
        }
        (self.members.get(&r.member_id))
            .filter(|m| m.classic.is_some())
            .ok_or(ResponseError::UnknownMemberId)
    }

    /// A classic member's Heartbeat (Kafka's `classicGroupHeartbeatToConsumerGroup`):
    /// REBALANCE_IN_PROGRESS while it has a step to take, so it joins again: the group
    /// moved to a new epoch, it has partitions to give up, or partitions it waits for
    /// were let go by their owners.
    pub fn classic_heartbeat(&self, r: &MemberRef) -> Result<(), ResponseError> {
        let m = self.classic_member(r)?;
        if r.generation != m.state.epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        // Asked last: it looks at every other member.
        let released = || {
            let target = self.target.get(&r.member_id);
            target.is_some_and(|t| {
                t.iter().any(|tp| {
                    !m.state.assigned.contains(tp)
                        && !(self.members.iter())
                            .any(|(id, o)| *id != r.member_id && o.state.owns(tp))
                })
            })
        };
        if m.state.epoch < self.epoch || !m.state.revoking.is_empty() || released() {
            return Err(ResponseError::RebalanceInProgress);
        }
        Ok(())
    }

    /// A classic member's SyncGroup (Kafka's `classicGroupSyncToConsumerGroup`): the
    /// partitions it holds now, in the embedded protocol of its metadata's version.
    pub fn classic_sync(
        &self,
        sync: &Sync,
        table: &TopicTable,
    ) -> Result<(Bytes, String), ResponseError> {
        let r = MemberRef {
            group: sync.group.clone(),
            generation: sync.generation,
            member_id: sync.member_id.clone(),
            instance_id: sync.instance_id.clone(),
        };
        let m = self.classic_member(&r)?;
        let classic = m.classic.as_ref().expect("a classic member");
        if sync.generation != m.state.epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        let mismatch =
            |asked: &Option<String>, ours: &str| asked.as_ref().is_some_and(|a| a != ours);
        if mismatch(&sync.protocol_type, CONSUMER_PROTOCOL)
            || mismatch(&sync.protocol, classic.protocol())
        {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        if self.epoch > m.state.epoch && m.state.revoking.is_empty() {
            return Err(ResponseError::RebalanceInProgress);
        }
        let bytes = assignment_bytes(&m.state.assigned, table, classic.version());
        Ok((bytes, classic.protocol().to_string()))
    }
}
