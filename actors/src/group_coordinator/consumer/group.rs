//! One KIP-848 group: its members, the group epoch (bumped when membership,
//! subscriptions or the subscribed topics change), the target assignment computed at
//! that epoch, and each member's reconciliation towards it. Pure state: the actor
//! (`handlers.rs`) owns the groups and runs the timers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};

use actix::SpawnHandle;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::{Encodable, StrBytes};
use regex::Regex;
use uuid::Uuid;

use super::super::messages::GroupView;
use super::assignor::{Assignor, MemberSpec, Partitions};
use super::error::ConsumerGroupError;
use super::reconcile::Reconciled;
use super::{
    Beat, BeatRequest, ConsumerGroupView, ConsumerMemberView, ConsumerSettings, MemberRef,
};
use crate::session::Caller;
use crate::topic_admin::TopicTable;

/// Member epochs with a meaning of their own in a heartbeat.
const JOINING: i32 = 0;
const LEAVING: i32 = -1;
const LEAVING_STATIC: i32 = -2;

/// A subscription regex matches whole topic names (RE2J's `matches`).
const ANCHOR_OPEN: &str = "^(?:";
const ANCHOR_CLOSE: &str = ")$";

/// The regex as the member sent it.
pub(super) fn regex_source(r: &Regex) -> &str {
    let s = r.as_str();
    &s[ANCHOR_OPEN.len()..s.len() - ANCHOR_CLOSE.len()]
}

/// A member's subscription regex, from its source as the member sent it.
pub(super) fn subscription_regex(source: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("{ANCHOR_OPEN}{source}{ANCHOR_CLOSE}"))
}

pub struct ConsumerMember {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub caller: Caller,
    pub rebalance_timeout_ms: i32,
    pub topic_names: Vec<String>,
    pub regex: Option<Regex>,
    pub assignor: Option<Assignor>,
    /// The topics its names and regex resolve to now.
    pub subscribed: BTreeSet<Uuid>,
    pub state: Reconciled,
    /// What it was last sent, so an unchanged assignment is not sent again.
    pub sent: Option<Partitions>,
    /// A static member that left for a while (epoch -2): its partitions wait for it.
    pub away: bool,
    /// Its session's and its revocation's deadlines, each a timer of the actor and the
    /// token it fires with (a timer whose token is no longer here does nothing).
    pub session: Option<(u64, SpawnHandle)>,
    pub revocation: Option<(u64, SpawnHandle)>,
    /// A member of the classic protocol (JoinGroup, SyncGroup, Heartbeat) in this
    /// group: its session and protocols (`classic.rs`).
    pub classic: Option<ClassicMember>,
}

/// What a classic member (`classic.rs`) brings besides what every member has.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassicMember {
    pub session: std::time::Duration,
    /// Its assignors with their metadata, in its order of preference: the first is
    /// the protocol its JoinGroup and SyncGroup are answered with.
    pub protocols: Vec<(String, Bytes)>,
}

#[derive(Default)]
pub struct ConsumerGroup {
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: Option<Assignor>,
    pub members: BTreeMap<String, ConsumerMember>,
    /// Static members: instance id → member id.
    pub instances: HashMap<String, String>,
    pub target: BTreeMap<String, Partitions>,
    /// The subscribed topics and their partition counts at `epoch`.
    pub topics: BTreeMap<Uuid, i32>,
    /// Changed since its state was last handed to the store (`stored.rs`): its epochs,
    /// its target, a member joined, left or moved in its reconciliation.
    pub unstored: bool,
    /// The topic table (published whole at each change) the subscriptions were last
    /// resolved against: a heartbeat resolves them again only when it moved or the
    /// members or their subscriptions changed, not at every beat.
    pub(super) resolved_for: Weak<TopicTable>,
}

/// The consumer group states Kafka's describes and lists name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

impl ConsumerGroup {
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.reconciled() {
            ConsumerGroupState::Stable
        } else {
            ConsumerGroupState::Reconciling
        }
    }

    pub fn view(&self) -> ConsumerGroupView {
        let members = self
            .members
            .iter()
            .map(|(id, m)| ConsumerMemberView {
                member_id: id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                epoch: m.state.epoch,
                client_id: m.caller.client_id.clone(),
                host: m.caller.host.clone(),
                topic_names: m.topic_names.clone(),
                regex: m.regex.as_ref().map(|r| regex_source(r).to_string()),
                assigned: m.state.assigned.clone(),
                target: self.target.get(id).cloned().unwrap_or_default(),
            })
            .collect();
        ConsumerGroupView {
            state: self.state(),
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor.map_or("", |a| a.name()).to_string(),
            members,
        }
    }

    /// The group as DescribeGroups and ListGroups show it: each member's subscription
    /// in the classic consumer protocol's encoding (so OffsetDelete sees its topics),
    /// its partitions, no assignment bytes.
    pub fn classic_view(&self) -> GroupView {
        let members = self
            .members
            .iter()
            .map(|(id, m)| {
                let topics = m
                    .topic_names
                    .iter()
                    .map(|t| StrBytes::from_string(t.clone()));
                let sub = ConsumerProtocolSubscription::default().with_topics(topics.collect());
                let mut metadata = BytesMut::new();
                metadata.put_i16(0);
                sub.encode(&mut metadata, 0)
                    .expect("a subscription encodes at v0");
                let client = (m.caller.client_id.clone(), m.caller.host.clone());
                (
                    id.clone(),
                    m.instance_id.clone(),
                    client.0,
                    client.1,
                    metadata.freeze(),
                    Bytes::new(),
                )
            })
            .collect();
        GroupView {
            state: self.state().name(),
            group_type: "consumer",
            protocol_type: "consumer".into(),
            protocol: String::new(),
            members,
        }
    }

    /// Every member holds exactly its target, at the target's epoch.
    fn reconciled(&self) -> bool {
        self.members.iter().all(|(id, m)| {
            m.state.epoch == self.assignment_epoch
                && m.state.revoking.is_empty()
                && self.target.get(id).unwrap_or(&Partitions::new()) == &m.state.assigned
        })
    }

    /// One heartbeat: joins, leaves, checks the member's epoch, takes in its
    /// subscription, moves the group to a new epoch and target if anything changed,
    /// and takes the member one step towards its target.
    pub fn heartbeat(
        &mut self,
        req: BeatRequest,
        table: &Arc<TopicTable>,
        settings: &ConsumerSettings,
    ) -> Result<Beat, ConsumerGroupError> {
        let assignor = match &req.assignor {
            None => None,
            Some(name) => Some(
                Assignor::from_name(name)
                    .filter(|a| settings.assignors.iter().any(|n| n == a.name()))
                    .ok_or_else(|| ConsumerGroupError::UnsupportedAssignor(name.clone()))?,
            ),
        };
        let regex = match &req.regex {
            None => None,
            Some(r) => Some(
                subscription_regex(r)
                    .map_err(|e| ConsumerGroupError::InvalidRegex(r.clone(), e))?,
            ),
        };
        let id = match req.member_epoch {
            LEAVING | LEAVING_STATIC => return Ok(self.leave(&req)),
            JOINING => {
                let id = self.join(&req, settings)?;
                self.unstored = true;
                id
            }
            _ => self.check_epoch(&req)?,
        };
        let member = self.members.get_mut(&id).expect("joined or checked");
        let mut changed = false;
        if let Some(names) = req.topic_names {
            changed |= member.topic_names != names;
            member.topic_names = names;
        }
        if let Some(r) = regex {
            changed |= member.regex.as_ref().map(Regex::as_str) != Some(r.as_str());
            member.regex = Some(r);
        }
        changed |= member.assignor != assignor;
        member.assignor = assignor;
        member.rack_id = req.rack_id;
        member.caller = req.caller;
        if req.rebalance_timeout_ms > 0 && req.rebalance_timeout_ms != member.rebalance_timeout_ms {
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
            self.unstored = true;
        }
        self.follow(changed, table, settings);
        Ok(self.step(&id, req.owned.as_ref()))
    }

    /// A new epoch and target when a member's subscription `changed`, or when the
    /// topic table moved and the subscriptions resolve to other topics or partitions.
    pub(super) fn follow(
        &mut self,
        changed: bool,
        table: &Arc<TopicTable>,
        settings: &ConsumerSettings,
    ) {
        let table_moved = !Weak::ptr_eq(&self.resolved_for, &Arc::downgrade(table));
        let resolved = (changed || table_moved) && self.resolve(table);
        if resolved || changed {
            self.bump(settings);
        }
    }

    /// A member with epoch 0: new, a static member back under a new id, or one that
    /// gave up its partitions (fenced) and starts over.
    fn join(
        &mut self,
        req: &BeatRequest,
        settings: &ConsumerSettings,
    ) -> Result<String, ConsumerGroupError> {
        // A member coming in: its subscription is resolved at this beat.
        self.resolved_for = Weak::new();
        if req.topic_names.is_none() && req.regex.is_none() {
            return Err(ConsumerGroupError::InvalidRequest(
                "subscribed_topic_names or subscribed_topic_regex must be set when joining".into(),
            ));
        }
        if req.member_id.is_empty() {
            return Err(ConsumerGroupError::InvalidRequest(
                "member_id must be set".into(),
            ));
        }
        if let Some(instance) = &req.instance_id {
            if let Some(old) = self.instances.get(instance).cloned() {
                if old != req.member_id {
                    let away = self.members.get(&old).is_some_and(|m| m.away);
                    if !away {
                        return Err(ConsumerGroupError::UnreleasedInstance(instance.clone()));
                    }
                    // The static member is back: it takes its partitions over.
                    let mut m = self.members.remove(&old).expect("instances name members");
                    m.away = false;
                    m.sent = None;
                    if let Some(t) = self.target.remove(&old) {
                        self.target.insert(req.member_id.clone(), t);
                    }
                    self.members.insert(req.member_id.clone(), m);
                    self.instances
                        .insert(instance.clone(), req.member_id.clone());
                    return Ok(req.member_id.clone());
                }
            }
        }
        if let Some(m) = self.members.get_mut(&req.member_id) {
            // A member that starts over owns nothing.
            m.state = Reconciled::default();
            m.sent = None;
            return Ok(req.member_id.clone());
        }
        if self.members.len() >= settings.max_size {
            return Err(ConsumerGroupError::GroupFull(settings.max_size));
        }
        let identity = (req.instance_id.clone(), req.caller.clone());
        self.add_member(&req.member_id, identity, req.rebalance_timeout_ms);
        Ok(req.member_id.clone())
    }

    /// A new member, owning nothing, subscribed to nothing yet.
    pub(super) fn add_member(
        &mut self,
        id: &str,
        (instance_id, caller): (Option<String>, Caller),
        rebalance_timeout_ms: i32,
    ) {
        if let Some(instance) = &instance_id {
            self.instances.insert(instance.clone(), id.to_string());
        }
        let member = ConsumerMember {
            instance_id,
            rack_id: None,
            caller,
            rebalance_timeout_ms,
            topic_names: Vec::new(),
            regex: None,
            assignor: None,
            subscribed: BTreeSet::new(),
            state: Reconciled::default(),
            sent: None,
            away: false,
            session: None,
            revocation: None,
            classic: None,
        };
        self.members.insert(id.to_string(), member);
    }

    /// A member heartbeating in its epoch, or in the one before if its answer was lost
    /// and it owns nothing it was not given since.
    fn check_epoch(&self, req: &BeatRequest) -> Result<String, ConsumerGroupError> {
        let Some(m) = self.members.get(&req.member_id) else {
            return Err(ConsumerGroupError::UnknownMember(req.member_id.clone()));
        };
        if let Some(instance) = &req.instance_id {
            if self.instances.get(instance) != Some(&req.member_id) {
                return Err(ConsumerGroupError::FencedInstance(instance.clone()));
            }
        }
        let current = m.state.epoch;
        let lost_answer = req.member_epoch == m.state.previous_epoch
            && req
                .owned
                .as_ref()
                .is_some_and(|owned| owned.is_subset(&m.state.assigned));
        if req.member_epoch != current && !lost_answer {
            return Err(ConsumerGroupError::FencedMemberEpoch {
                received: req.member_epoch,
                current,
            });
        }
        Ok(req.member_id.clone())
    }

    fn leave(&mut self, req: &BeatRequest) -> Beat {
        let answer = Beat {
            member_id: req.member_id.clone(),
            epoch: req.member_epoch,
            assignment: None,
        };
        match req.member_epoch {
            LEAVING_STATIC if req.instance_id.is_some() => {
                if let Some(m) = self.members.get_mut(&req.member_id) {
                    m.away = true;
                    self.unstored = true;
                }
            }
            _ => {
                self.remove(&req.member_id);
            }
        }
        answer
    }

    /// May this member commit offsets now (KIP-848: its member id, and its member
    /// epoch as the generation)? Admin tools commit with no member while none is left.
    pub fn check_commit(&self, r: &MemberRef) -> Result<(), ResponseError> {
        if r.generation < 0 && r.member_id.is_empty() && self.members.is_empty() {
            return Ok(());
        }
        self.check_member_epoch(&r.member_id, r.generation)
    }

    /// May this member read the group's offsets (KIP-848's `validateOffsetFetch`)? A
    /// fetch naming no member, at a negative epoch, comes from an admin client.
    pub fn check_fetch(&self, member_id: Option<&str>, epoch: i32) -> Result<(), ResponseError> {
        match member_id {
            None if epoch < 0 => Ok(()),
            id => self.check_member_epoch(id.unwrap_or_default(), epoch),
        }
    }

    /// The member is in the group at this epoch: a classic member's stale generation is
    /// ILLEGAL_GENERATION, as its protocol names it; another's STALE_MEMBER_EPOCH.
    fn check_member_epoch(&self, id: &str, epoch: i32) -> Result<(), ResponseError> {
        let m = (self.members.get(id)).ok_or(ResponseError::UnknownMemberId)?;
        match (epoch == m.state.epoch, m.classic.is_some()) {
            (true, _) => Ok(()),
            (false, true) => Err(ResponseError::IllegalGeneration),
            (false, false) => Err(ResponseError::StaleMemberEpoch),
        }
    }

    /// Removes a member (left, silent past its session, or too slow to revoke); the
    /// group moves to a new epoch without it. Whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(m) = self.members.remove(id) else {
            return false;
        };
        if let Some(instance) = &m.instance_id {
            if self.instances.get(instance).is_some_and(|i| i == id) {
                self.instances.remove(instance);
            }
        }
        self.target.remove(id);
        self.resolved_for = Weak::new();
        self.epoch += 1;
        self.assign();
        true
    }

    /// Resolves every member's subscription against the topic table; whether a
    /// subscription or the subscribed topics' partitions changed.
    fn resolve(&mut self, table: &Arc<TopicTable>) -> bool {
        self.resolved_for = Arc::downgrade(table);
        let mut topics = BTreeMap::new();
        let mut changed = false;
        for m in self.members.values_mut() {
            let mut ids = BTreeSet::new();
            for name in &m.topic_names {
                if let Some(t) = table.get(name) {
                    ids.insert(t.id);
                    topics.insert(t.id, t.partitions);
                }
            }
            if let Some(r) = &m.regex {
                for t in table.all() {
                    // Internal topics too, as Kafka's coordinator resolves a regex.
                    if r.is_match(&t.name) {
                        ids.insert(t.id);
                        topics.insert(t.id, t.partitions);
                    }
                }
            }
            changed |= m.subscribed != ids;
            m.subscribed = ids;
        }
        changed |= topics != self.topics;
        self.topics = topics;
        changed
    }

    /// A new group epoch and its target assignment.
    fn bump(&mut self, settings: &ConsumerSettings) {
        self.epoch += 1;
        // The assignor most members ask for, else the first configured.
        let mut votes: HashMap<Assignor, usize> = HashMap::new();
        for a in self.members.values().filter_map(|m| m.assignor) {
            *votes.entry(a).or_default() += 1;
        }
        self.assignor = votes
            .into_iter()
            .max_by_key(|(a, n)| (*n, std::cmp::Reverse(a.name())))
            .map(|(a, _)| a)
            .or_else(|| {
                settings
                    .assignors
                    .first()
                    .and_then(|n| Assignor::from_name(n))
            });
        self.assign();
    }

    fn assign(&mut self) {
        let empty = Partitions::new();
        let specs: Vec<MemberSpec> = self
            .members
            .iter()
            .map(|(id, m)| MemberSpec {
                id,
                topics: &m.subscribed,
                current: self.target.get(id).unwrap_or(&empty),
            })
            .collect();
        let assignor = self.assignor.unwrap_or(Assignor::Uniform);
        self.target = assignor.assign(&specs, &self.topics);
        self.assignment_epoch = self.epoch;
        self.unstored = true;
    }

    /// Takes member `id` one step towards its target, and answers it.
    pub(super) fn step(&mut self, id: &str, reported: Option<&Partitions>) -> Beat {
        let target = self.target.get(id).cloned().unwrap_or_default();
        let others: Vec<&Reconciled> = self
            .members
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .map(|(_, m)| &m.state)
            .collect();
        let mut state = self.members[id].state.clone();
        state.step((&target, self.assignment_epoch), reported, |tp| {
            others.iter().any(|o| o.owns(tp))
        });
        let m = self.members.get_mut(id).expect("stepped member");
        self.unstored |= m.state != state;
        m.state = state;
        let fresh = reported.is_some() || m.sent.as_ref() != Some(&m.state.assigned);
        let assignment = fresh.then(|| m.state.assigned.clone());
        if assignment.is_some() {
            m.sent = assignment.clone();
        }
        Beat {
            member_id: id.to_string(),
            epoch: m.state.epoch,
            assignment,
        }
    }
}
