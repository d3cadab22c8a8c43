//! Consumer-group semantics a Kafka broker has, over hand-built requests: how committed
//! offsets are stored and read (../shared/docs/BRIEF.md §5), how commits and heartbeats
//! are checked against the group's generation and members, rebalances when members
//! come, go silent or restart (static membership, KIP-345), and what DeleteGroups,
//! OffsetDelete and DeleteTopics do to a group's offsets.
//!
//! Every member has a connection of its own, as a consumer does: a JoinGroup is held
//! until the rebalance completes, and it must not hold up the other members' requests.
//! Requests use the newest versions served; `protocol_versions/` covers the others.

mod committed_offsets;
mod deletion;
mod generation_checks;
mod rebalances;

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Encodable;
use support::configs::s;
use support::{call, RawClient};

/// No first-rebalance delay: a lone member's join completes at once.
const NO_DELAY: &[(&str, &str)] = &[("group_initial_rebalance_delay_ms", "0")];
/// Kafka's `group.min.session.timeout.ms`: the shortest session a member may ask for.
const MIN_SESSION_MS: i32 = 6000;
/// Who commits: (generation, member id, group instance id).
type Committer<'a> = (i32, &'a str, Option<&'a str>);
/// Admin tools and consumers without group management: no generation, no member.
const ADMIN: Committer = (-1, "", None);

// ---- a member: one connection, its identity, what the last join and sync said -------

struct Member {
    c: RawClient,
    group: String,
    instance: Option<String>,
    topics: Vec<String>,
    session_ms: i32,
    id: String,
    generation: i32,
    leader: String,
    /// What the leader gets from its join: (member id, instance id, metadata).
    roster: Vec<(String, Option<String>, Bytes)>,
    skip_assignment: bool,
    assignment: Bytes,
}

impl Member {
    /// A consumer of `topics` in `group`, connected, not joined yet.
    fn new(addr: SocketAddr, group: &str, topics: &[&str]) -> Member {
        Member {
            c: RawClient::connect(addr),
            group: group.to_string(),
            instance: None,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            session_ms: MIN_SESSION_MS,
            id: String::new(),
            generation: -1,
            leader: String::new(),
            roster: Vec::new(),
            skip_assignment: false,
            assignment: Bytes::new(),
        }
    }

    /// A static member (KIP-345).
    fn instance(mut self, id: &str) -> Member {
        self.instance = Some(id.to_string());
        self
    }

    /// The same consumer after a restart: a new connection and no member id.
    fn restarted(&self, addr: SocketAddr) -> Member {
        let fresh = Member::new(addr, &self.group, &[]);
        Member {
            instance: self.instance.clone(),
            topics: self.topics.clone(),
            ..fresh
        }
    }

    /// Consumer-protocol metadata: a version prefix, then the subscription at that
    /// version (what the Java consumer sends, and what OffsetDelete reads).
    fn metadata(&self) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_i16(3);
        let topics = self.topics.iter().map(|t| s(t)).collect();
        let sub = ConsumerProtocolSubscription::default().with_topics(topics);
        sub.encode(&mut buf, 3).unwrap();
        buf.freeze()
    }

    fn send_join(&mut self) {
        let protocol = JoinGroupRequestProtocol::default().with_name(s("range"));
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_session_timeout_ms(self.session_ms)
            .with_rebalance_timeout_ms(self.session_ms)
            .with_member_id(s(&self.id))
            .with_group_instance_id(self.instance.as_deref().map(s))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![protocol.with_metadata(self.metadata())]);
        self.c
            .send(ApiKey::JoinGroup, 9, &RequestKind::JoinGroup(request));
    }

    /// The answer to the join sent last; the member keeps what it says.
    fn receive_join(&mut self) -> JoinGroupResponse {
        let ResponseKind::JoinGroup(r) = self.c.receive(ApiKey::JoinGroup, 9) else {
            panic!("not a JoinGroup answer")
        };
        if !r.member_id.is_empty() {
            self.id = r.member_id.to_string();
        }
        if r.error_code == 0 {
            self.generation = r.generation_id;
            self.leader = r.leader.to_string();
            self.skip_assignment = r.skip_assignment;
            let roster = r.members.iter().map(|m| {
                let instance = m.group_instance_id.as_ref().map(|i| i.to_string());
                (m.member_id.to_string(), instance, m.metadata.clone())
            });
            self.roster = roster.collect();
        }
        r
    }

    /// Sends the join that gets the member in, without waiting for its answer (it
    /// comes once every member has joined). A new dynamic member first asks for an id
    /// (KIP-394: MEMBER_ID_REQUIRED, 79), as every client does.
    fn start_join(&mut self) {
        if self.id.is_empty() && self.instance.is_none() {
            self.send_join();
            let r = self.receive_join();
            assert_eq!(r.error_code, 79, "first join of a new member: {r:?}");
        }
        self.send_join();
    }

    fn join(&mut self) -> JoinGroupResponse {
        self.start_join();
        self.receive_join()
    }

    /// Joins a group of which it is (or becomes) the only member, and syncs.
    fn join_alone(&mut self) {
        let r = self.join();
        assert_eq!(r.error_code, 0, "{r:?}");
        assert_eq!(self.leader, self.id, "a lone member leads");
        let r = self.sync();
        assert_eq!(r.error_code, 0, "{r:?}");
    }

    /// A leader (unless told to skip it) assigns every member its own blob.
    fn send_sync(&mut self) {
        let assignments = if self.leader == self.id && !self.skip_assignment {
            let each = self.roster.iter().map(|(id, _, _)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(s(id))
                    .with_assignment(assignment_of(id, self.generation))
            });
            each.collect()
        } else {
            Vec::new()
        };
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(s(&self.id))
            .with_group_instance_id(self.instance.as_deref().map(s))
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
            .with_assignments(assignments);
        self.c
            .send(ApiKey::SyncGroup, 5, &RequestKind::SyncGroup(request));
    }

    fn receive_sync(&mut self) -> SyncGroupResponse {
        let ResponseKind::SyncGroup(r) = self.c.receive(ApiKey::SyncGroup, 5) else {
            panic!("not a SyncGroup answer")
        };
        if r.error_code == 0 {
            self.assignment = r.assignment.clone();
        }
        r
    }

    fn sync(&mut self) -> SyncGroupResponse {
        self.send_sync();
        self.receive_sync()
    }

    fn heartbeat(&mut self) -> i16 {
        let who = (self.generation, self.id.as_str(), self.instance.as_deref());
        heartbeat(&mut self.c, &self.group, who)
    }

    fn commit(&mut self, offsets: &[(&str, i32, i64)]) -> Vec<i16> {
        let who = (self.generation, self.id.as_str(), self.instance.as_deref());
        commit(&mut self.c, &self.group, who, offsets)
    }

    /// LeaveGroup v5 by member id; the member's error code.
    fn leave(&mut self) -> i16 {
        let who = MemberIdentity::default()
            .with_member_id(s(&self.id))
            .with_group_instance_id(self.instance.as_deref().map(s));
        let request = LeaveGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_members(vec![who]);
        let r = call!(self.c, LeaveGroup, 5, request);
        assert_eq!(r.error_code, 0, "{r:?}");
        r.members[0].error_code
    }
}

/// Both members sync; the follower's sync is sent first and held until the leader's.
fn sync_both(a: &mut Member, b: &mut Member) {
    let (leader, follower) = if a.leader == a.id { (a, b) } else { (b, a) };
    follower.send_sync();
    let r = leader.sync();
    assert_eq!(r.error_code, 0, "leader's sync: {r:?}");
    let r = follower.receive_sync();
    assert_eq!(r.error_code, 0, "follower's sync: {r:?}");
}

/// What a test leader assigns a member: opaque to the gateway, which relays it.
fn assignment_of(member: &str, generation: i32) -> Bytes {
    Bytes::from(format!("{member} in generation {generation}"))
}

// ---- requests --------------------------------------------------------------------------

fn heartbeat(c: &mut RawClient, group: &str, (generation, id, instance): Committer) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(id))
        .with_group_instance_id(instance.map(s));
    call!(c, Heartbeat, 4, request).error_code
}

/// OffsetCommit v9 of `(topic, partition, offset)`s as `who`, each with leader epoch
/// 1 and metadata "at {offset}"; the partitions' error codes in order.
fn commit(
    c: &mut RawClient,
    group: &str,
    who: Committer,
    offsets: &[(&str, i32, i64)],
) -> Vec<i16> {
    let offsets = offsets
        .iter()
        .map(|&(t, p, offset)| (t, p, offset, 1, Some(format!("at {offset}"))));
    let offsets: Vec<_> = offsets.collect();
    let offsets = offsets
        .iter()
        .map(|(t, p, o, e, m)| (*t, *p, *o, *e, m.as_deref()));
    commit_with(c, group, who, offsets.collect())
}

/// OffsetCommit v9 of `(topic, partition, offset, leader epoch, metadata)`s as `who`;
/// the partitions' error codes in order.
fn commit_with(
    c: &mut RawClient,
    group: &str,
    (generation, id, instance): Committer,
    offsets: Vec<(&str, i32, i64, i32, Option<&str>)>,
) -> Vec<i16> {
    // Consecutive partitions of one topic go in one topic entry, as clients send them.
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (topic, partition, offset, epoch, metadata) in offsets {
        let p = OffsetCommitRequestPartition::default()
            .with_partition_index(partition)
            .with_committed_offset(offset)
            .with_committed_leader_epoch(epoch)
            .with_committed_metadata(metadata.map(s));
        match topics.last_mut() {
            Some(t) if t.name.as_str() == topic => t.partitions.push(p),
            _ => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(id))
        .with_group_instance_id(instance.map(s))
        .with_topics(topics);
    let r = call!(c, OffsetCommit, 9, request);
    let each = r.topics.iter().flat_map(|t| t.partitions.iter());
    each.map(|p| p.error_code).collect()
}

/// What OffsetFetch reads of a partition: (topic, partition, offset, leader epoch, metadata).
type Read = (String, i32, i64, i32, String);

/// What `commit` stores, read back.
fn read_as(topic: &str, partition: i32, offset: i64) -> Read {
    (
        topic.to_string(),
        partition,
        offset,
        1,
        format!("at {offset}"),
    )
}

/// A partition with no committed offset: -1, no leader epoch, no metadata.
fn missing(topic: &str, partition: i32) -> Read {
    (topic.to_string(), partition, -1, -1, String::new())
}

/// OffsetFetch v9 of one group: the partitions asked, or with `None` every partition
/// the group has an offset for. Every error code, group and partition, must be 0.
fn fetch(c: &mut RawClient, group: &str, topics: Option<&[(&str, &[i32])]>) -> Vec<Read> {
    let topics = topics.map(|ts| {
        let ts = ts.iter().map(|(name, partitions)| {
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(s(name)))
                .with_partition_indexes(partitions.to_vec())
        });
        ts.collect()
    });
    let wanted = OffsetFetchRequestGroup::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(topics);
    let request = OffsetFetchRequest::default().with_groups(vec![wanted]);
    let r = call!(c, OffsetFetch, 9, request);
    let [g] = &r.groups[..] else {
        panic!("one group asked, {} answered", r.groups.len())
    };
    assert_eq!((g.group_id.as_str(), g.error_code), (group, 0), "{g:?}");
    let read = g.topics.iter().flat_map(|t| {
        t.partitions.iter().map(move |p| {
            assert_eq!(p.error_code, 0, "{t:?}");
            let metadata = p.metadata.as_deref().unwrap_or_default().to_string();
            let (offset, epoch) = (p.committed_offset, p.committed_leader_epoch);
            (
                t.name.to_string(),
                p.partition_index,
                offset,
                epoch,
                metadata,
            )
        })
    });
    read.collect()
}

fn committed(c: &mut RawClient, group: &str, topic: &str, partition: i32) -> i64 {
    fetch(c, group, Some(&[(topic, &[partition])]))[0].2
}

fn describe(c: &mut RawClient, group: &str) -> DescribedGroup {
    let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(s(group))]);
    let r = call!(c, DescribeGroups, 5, request);
    r.groups.into_iter().next().expect("one group")
}

fn create_topic(c: &mut RawClient, name: &str, partitions: i32) {
    let topic = CreatableTopic::default()
        .with_name(TopicName(s(name)))
        .with_num_partitions(partitions)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default()
        .with_topics(vec![topic])
        .with_timeout_ms(5000);
    let r = call!(c, CreateTopics, 7, request);
    assert_eq!(r.topics[0].error_code, 0, "create {name}: {r:?}");
}

/// Polls `done` every 100 ms until it holds; fails after 10 s.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: not within 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
