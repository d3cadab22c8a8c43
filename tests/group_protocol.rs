//! Consumer-group semantics a Kafka broker has, over hand-built requests: how committed
//! offsets are stored and read (../shared/docs/BRIEF.md §5), how commits and heartbeats
//! are checked against the group's generation and members, rebalances when members
//! come, go silent or restart (static membership, KIP-345), and what DeleteGroups,
//! OffsetDelete and DeleteTopics do to a group's offsets.
//!
//! Every member has a connection of its own, as a consumer does: a JoinGroup is held
//! until the rebalance completes, and it must not hold up the other members' requests.
//! Requests use the newest versions served; `protocol_versions.rs` covers the others.

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
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::records::Compression;
use support::{batch, call, record, Gateway, RawClient, Store};

/// No first-rebalance delay: a lone member's join completes at once.
const NO_DELAY: &[(&str, &str)] = &[("group_initial_rebalance_delay_ms", "0")];
/// Kafka's `group.min.session.timeout.ms`: the shortest session a member may ask for.
const MIN_SESSION_MS: i32 = 6000;
/// Who commits: (generation, member id, group instance id).
type Committer<'a> = (i32, &'a str, Option<&'a str>);
/// Admin tools and consumers without group management: no generation, no member.
const ADMIN: Committer = (-1, "", None);

// ---- committed offsets --------------------------------------------------------------

fn committed_offsets_are_stored_as_sent(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    // Partition 0 holds offsets 0-2; partition 1 is empty.
    produce(&mut c, "t", 0, 3);
    // A group nobody has joined: an admin tool's commit (generation -1) is accepted on
    // an empty (here: not yet existing) group.
    let g = "stored-as-sent";
    // 0 on an empty partition, and 3, one past the last record: no range check.
    assert_eq!(
        commit(&mut c, g, ADMIN, &[("t", 0, 3), ("t", 1, 0)]),
        [0, 0]
    );
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    assert_eq!(read, [read_as("t", 0, 3), read_as("t", 1, 0)]);
    // Far past the end is stored as sent too: the gateway never checks a position.
    assert_eq!(commit(&mut c, g, ADMIN, &[("t", 0, 1000)]), [0]);
    assert_eq!(committed(&mut c, g, "t", 0), 1000);
    // Metadata and leader epoch come back as sent; null metadata reads as empty.
    let offsets = vec![("t", 0, 2, 9, Some("checkpoint")), ("t", 1, 1, -1, None)];
    assert_eq!(commit_with(&mut c, g, ADMIN, offsets), [0, 0]);
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    let want = [
        ("t".to_string(), 0, 2, 9, "checkpoint".to_string()),
        ("t".to_string(), 1, 1, -1, String::new()),
    ];
    assert_eq!(read, want);
}

fn a_negative_offset_deletes_the_entry_and_a_missing_entry_reads_minus_one(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let g = "negative";
    assert_eq!(
        commit(&mut c, g, ADMIN, &[("t", 0, 5), ("t", 1, 6)]),
        [0, 0]
    );
    assert_eq!(commit(&mut c, g, ADMIN, &[("t", 0, -1)]), [0]);
    // Deleted: -1, no epoch, no metadata and no error (fetch() checks every error code).
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    assert_eq!(read, [missing("t", 0), read_as("t", 1, 6)]);
    // ...and gone from the list of what the group has committed.
    assert_eq!(fetch(&mut c, g, None), [read_as("t", 1, 6)]);
    // A group that never committed reads -1 everywhere, without error either.
    let read = fetch(&mut c, "never-committed", Some(&[("t", &[0, 1])]));
    assert_eq!(read, [missing("t", 0), missing("t", 1)]);
    assert_eq!(fetch(&mut c, "never-committed", None), []);
}

fn offset_fetch_with_a_null_topic_list_returns_every_committed_partition(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for (topic, partitions) in [("a", 3), ("b", 1), ("uncommitted", 2)] {
        create_topic(&mut c, topic, partitions);
    }
    let offsets = [("a", 0, 10), ("a", 2, 12), ("b", 0, 20)];
    assert_eq!(commit(&mut c, "g", ADMIN, &offsets), [0, 0, 0]);
    // Another group's offsets stay its own.
    assert_eq!(commit(&mut c, "other", ADMIN, &[("a", 1, 99)]), [0]);
    // Admin listConsumerGroupOffsets: exactly the partitions with an offset.
    let mut read = fetch(&mut c, "g", None);
    read.sort();
    let want = [
        read_as("a", 0, 10),
        read_as("a", 2, 12),
        read_as("b", 0, 20),
    ];
    assert_eq!(read, want);
}

// ---- commits and heartbeats checked against the group -------------------------------

fn commits_and_heartbeats_are_checked_against_generation_and_member(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    assert_eq!(m.commit(&[("t", 0, 1)]), [0]);
    // Like Kafka's validateOffsetCommit: a stale generation is ILLEGAL_GENERATION (22);
    // an unknown member UNKNOWN_MEMBER_ID (25); and so is no member at all while the
    // group has members (admin tools commit only to empty groups).
    let (generation, id) = (m.generation, m.id.clone());
    let stale = (generation - 1, id.as_str(), None);
    assert_eq!(commit(&mut c, "g", stale, &[("t", 0, 2)]), [22]);
    let stranger = (generation, "stranger", None);
    assert_eq!(commit(&mut c, "g", stranger, &[("t", 0, 2)]), [25]);
    assert_eq!(commit(&mut c, "g", ADMIN, &[("t", 0, 2)]), [25]);
    assert_eq!(
        committed(&mut c, "g", "t", 0),
        1,
        "a refused commit was stored"
    );
    // Heartbeats are checked the same way.
    assert_eq!(heartbeat(&mut c, "g", stale), 22);
    assert_eq!(heartbeat(&mut c, "g", stranger), 25);
    assert_eq!(m.heartbeat(), 0);
}

fn while_members_rejoin_commits_of_the_current_generation_are_accepted(store: Store) {
    // Kafka accepts a commit with the current generation while the group prepares a
    // rebalance (the Java consumer commits in onJoinPrepare, before it rejoins), and
    // refuses one between the join and the sync with REBALANCE_IN_PROGRESS (27).
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    let mut b = Member::new(gw.addr, "g", &["t"]);
    b.start_join();
    eventually("the first member hears of the rebalance", || {
        a.heartbeat() == 27
    });
    assert_eq!(
        a.commit(&[("t", 0, 7)]),
        [0],
        "commit while PreparingRebalance"
    );
    assert_eq!(committed(&mut c, "g", "t", 0), 7);
    assert_eq!(a.join().error_code, 0);
    assert_eq!(b.receive_join().error_code, 0);
    // Joined, not synced (CompletingRebalance): heartbeats are fine, commits wait.
    assert_eq!((a.heartbeat(), b.heartbeat()), (0, 0));
    assert_eq!(a.commit(&[("t", 0, 8)]), [27]);
    assert_eq!(b.commit(&[("t", 0, 8)]), [27]);
    sync_both(&mut a, &mut b);
    assert_eq!(b.commit(&[("t", 0, 8)]), [0]);
    assert_eq!(committed(&mut c, "g", "t", 0), 8);
}

fn after_a_restart_members_rejoin_and_resume_from_their_commits(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    let offset = vec![("t", 0, 5, 3, Some("before the crash"))];
    let who = (m.generation, m.id.as_str(), None);
    assert_eq!(commit_with(&mut m.c, "g", who, offset), [0]);

    gw.restart_after_kill();
    // Group membership is not kept across a restart: the old member is unknown...
    m.c = RawClient::connect(gw.addr);
    assert_eq!(
        m.commit(&[("t", 0, 6)]),
        [25],
        "commit from before the restart"
    );
    assert_eq!(m.heartbeat(), 25, "heartbeat from before the restart");
    // ...so it rejoins from scratch.
    m.id.clear();
    m.join_alone();
    assert_eq!(m.generation, 1);
    // ...and resumes from its commit, stored with its epoch and metadata.
    let mut c = RawClient::connect(gw.addr);
    let read = fetch(&mut c, "g", None);
    let want = [("t".to_string(), 0, 5, 3, "before the crash".to_string())];
    assert_eq!(read, want);
    assert_eq!(m.commit(&[("t", 0, 6)]), [0]);
    assert_eq!(committed(&mut c, "g", "t", 0), 6);
}

// ---- rebalances ----------------------------------------------------------------------

fn a_second_member_rebalances_the_group_into_the_next_generation(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    create_topic(&mut c, "u", 1);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    assert_eq!(a.generation, 1);
    // Different subscriptions, so the leader's roster shows whose metadata is whose.
    let mut b = Member::new(gw.addr, "g", &["t", "u"]);
    rebalance(&mut a, &mut b);
    assert_eq!((a.generation, b.generation), (2, 2));
    // One leader, the same for both; only it gets the members, with their metadata.
    assert_eq!(a.leader, b.leader);
    let (leader, follower) = if a.leader == a.id { (&a, &b) } else { (&b, &a) };
    assert_eq!(leader.leader, leader.id, "the leader is one of the members");
    assert_eq!(follower.roster, []);
    let mut roster = leader.roster.clone();
    roster.sort();
    let mut want = vec![
        (a.id.clone(), None, a.metadata()),
        (b.id.clone(), None, b.metadata()),
    ];
    want.sort();
    assert_eq!(roster, want);
    // Each member gets the assignment the leader made for it.
    sync_both(&mut a, &mut b);
    assert_eq!(a.assignment, assignment_of(&a.id, 2));
    assert_eq!(b.assignment, assignment_of(&b.id, 2));
    assert_eq!((a.heartbeat(), b.heartbeat()), (0, 0));
    let described = describe(&mut c, "g");
    assert_eq!(
        (described.group_state.as_str(), described.members.len()),
        ("Stable", 2)
    );
}

fn a_leader_joining_again_before_it_syncs_gets_its_answer_again(store: Store) {
    // Kafka's GroupCoordinator (CompletingRebalance, metadata unchanged): a member that
    // joins again while the leader owes the assignment only missed its answer. The
    // leader gets the same generation and the members again, and nobody rebalances.
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    let mut b = Member::new(gw.addr, "g", &["t"]);
    rebalance(&mut a, &mut b);
    let generation = a.generation;
    let (leader, follower) = if a.leader == a.id {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let roster = leader.roster.clone();
    let r = leader.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(leader.generation, generation, "a new rebalance");
    assert_eq!(leader.leader, leader.id);
    assert_eq!(leader.roster, roster, "the members again");
    assert_eq!(
        follower.heartbeat(),
        0,
        "the follower was sent into a rebalance"
    );
    let state = describe(&mut c, "g").group_state.to_string();
    assert_eq!(state, "CompletingRebalance");
    // The generation completes as if the first answer had arrived.
    sync_both(leader, follower);
    assert_eq!(a.assignment, assignment_of(&a.id, generation));
    assert_eq!(b.assignment, assignment_of(&b.id, generation));
}

fn a_static_member_rejoining_keeps_the_generation_and_fences_its_old_id(store: Store) {
    // KIP-345: a consumer restarted with the same group.instance.id joins with no member
    // id; while the group is Stable it gets a new id in the same generation, with no
    // rebalance, and the id it had before is fenced (FENCED_INSTANCE_ID, 82).
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let mut a = Member::new(gw.addr, "g", &["t"]).instance("a");
    a.join_alone(); // static members join in one step: no MEMBER_ID_REQUIRED
    let mut b = Member::new(gw.addr, "g", &["t"]).instance("b");
    rebalance(&mut a, &mut b);
    sync_both(&mut a, &mut b);
    let generation = a.generation;
    let (leader, follower) = if a.leader == a.id { (a, b) } else { (b, a) };

    // The follower restarts.
    let mut follower2 = follower.restarted(gw.addr);
    let r = follower2.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_ne!(follower2.id, follower.id, "a new member id");
    assert_eq!(follower2.generation, generation, "no rebalance");
    assert_eq!(r.leader.as_str(), leader.id);
    let mut leader = leader;
    assert_eq!(
        leader.heartbeat(),
        0,
        "the leader was sent into a rebalance"
    );
    // It syncs into its old assignment, and no one else was asked to move.
    follower2.sync();
    assert_eq!(follower2.assignment, follower.assignment);
    assert_eq!(follower2.heartbeat(), 0);
    // Its old id is fenced wherever it shows up with the instance id.
    let mut follower = follower;
    assert_eq!(follower.heartbeat(), 82, "heartbeat from the old id");
    assert_eq!(
        follower.commit(&[("t", 0, 1)]),
        [82],
        "commit from the old id"
    );
    assert_eq!(follower.join().error_code, 82, "join from the old id");

    // The leader restarts: the same, and at JoinGroup v9 it is told to skip the
    // assignment (KIP-814) but still gets the members.
    let mut leader2 = leader.restarted(gw.addr);
    let r = leader2.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_ne!(leader2.id, leader.id, "a new member id");
    assert_eq!(leader2.generation, generation, "no rebalance");
    assert_eq!(
        (r.leader.as_str(), r.skip_assignment),
        (leader2.id.as_str(), true)
    );
    let mut roster: Vec<_> = leader2.roster.iter().map(|m| m.0.clone()).collect();
    roster.sort();
    let mut want = vec![leader2.id.clone(), follower2.id.clone()];
    want.sort();
    assert_eq!(roster, want);
    assert_eq!(
        follower2.heartbeat(),
        0,
        "the follower was sent into a rebalance"
    );
    leader2.sync();
    assert_eq!(leader2.assignment, leader.assignment);
    assert_eq!(leader.heartbeat(), 82, "heartbeat from the old leader id");
}

fn a_silent_member_is_removed_after_its_session_timeout(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    let mut b = Member::new(gw.addr, "g", &["t"]);
    rebalance(&mut a, &mut b);
    sync_both(&mut a, &mut b);
    // From here `a` says nothing; `b` heartbeats as a consumer does. Going silent does
    // not remove `a` at once: its session has to run out first.
    let members = describe(&mut c, "g").members.len();
    assert_eq!(members, 2, "a member removed as soon as it went silent");
    // Bounded only so that a member never removed fails instead of hanging.
    let limit = Instant::now() + Duration::from_millis(MIN_SESSION_MS as u64 * 5);
    loop {
        let error = b.heartbeat();
        if error == 27 {
            break;
        }
        assert_eq!(error, 0, "heartbeat of the live member");
        assert!(
            Instant::now() < limit,
            "the silent member was never removed"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(a.heartbeat(), 25, "the silent member is still known");
    // The live member rejoins alone into the next generation.
    assert_eq!(b.join().error_code, 0);
    assert_eq!((b.generation, &b.leader), (3, &b.id));
    assert_eq!(b.roster.len(), 1);
}

// ---- deleting groups, offsets and topics ---------------------------------------------

fn delete_groups_refuses_groups_with_members_and_unknown_groups(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    assert_eq!(m.commit(&[("t", 0, 4)]), [0]);
    // NON_EMPTY_GROUP (68) while it has a member; GROUP_ID_NOT_FOUND (69) if unknown.
    assert_eq!(delete_groups(&mut c, &["g", "never-seen"]), [68, 69]);
    assert_eq!(
        committed(&mut c, "g", "t", 0),
        4,
        "offsets of a refused delete"
    );
    // Once the member has left, the group goes, with its offsets.
    assert_eq!(m.leave(), 0);
    assert_eq!(delete_groups(&mut c, &["g"]), [0]);
    assert_eq!(fetch(&mut c, "g", None), []);
    assert_eq!(committed(&mut c, "g", "t", 0), -1);
    assert_eq!(delete_groups(&mut c, &["g"]), [69]);
}

fn an_empty_group_without_offsets_stays_until_deleted(store: Store) {
    // Kafka keeps a group that lost its last member (Empty) until DeleteGroups or its
    // periodic cleanup (`offsets.retention.check.interval.ms`, 10 min), offsets or not.
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    assert_eq!(m.leave(), 0);
    // Several of the coordinator's 100 ms ticks.
    std::thread::sleep(Duration::from_millis(500));
    let described = describe(&mut c, "g");
    let shown = (
        described.group_state.as_str(),
        described.protocol_type.as_str(),
    );
    assert_eq!(shown, ("Empty", "consumer"));
    assert_eq!(delete_groups(&mut c, &["g"]), [0]);
    assert_eq!(delete_groups(&mut c, &["g"]), [69]);
}

fn offset_delete_refuses_topics_a_live_member_subscribes_to(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "subscribed", 1);
    create_topic(&mut c, "other", 1);
    let mut m = Member::new(gw.addr, "g", &["subscribed"]);
    m.join_alone();
    let offsets = [("subscribed", 0, 4), ("other", 0, 4)];
    assert_eq!(m.commit(&offsets), [0, 0]);
    // GROUP_SUBSCRIBED_TO_TOPIC (86) for the topic its member reads; the other goes.
    let (error, partitions) = delete_offsets(&mut c, "g", &[("subscribed", 0), ("other", 0)]);
    assert_eq!(error, 0);
    let want = [
        ("subscribed".to_string(), 0, 86),
        ("other".to_string(), 0, 0),
    ];
    assert_eq!(partitions, want);
    assert_eq!(fetch(&mut c, "g", None), [read_as("subscribed", 0, 4)]);
    // Once the member has left, nothing protects the topic.
    assert_eq!(m.leave(), 0);
    let (error, partitions) = delete_offsets(&mut c, "g", &[("subscribed", 0)]);
    assert_eq!(
        (error, partitions),
        (0, vec![("subscribed".to_string(), 0, 0)])
    );
    assert_eq!(fetch(&mut c, "g", None), []);
}

fn deleting_a_topic_removes_its_committed_offsets(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "doomed", 2);
    create_topic(&mut c, "kept", 1);
    let offsets = [("doomed", 0, 3), ("doomed", 1, 4), ("kept", 0, 5)];
    assert_eq!(commit(&mut c, "g", ADMIN, &offsets), [0, 0, 0]);
    assert_eq!(commit(&mut c, "g2", ADMIN, &[("doomed", 0, 6)]), [0]);
    delete_topic(&mut c, "doomed");
    // Every group's offsets of the topic go; the other topic's stay.
    assert_eq!(fetch(&mut c, "g", None), [read_as("kept", 0, 5)]);
    assert_eq!(fetch(&mut c, "g2", None), []);
    // A new topic of the same name does not inherit them.
    create_topic(&mut c, "doomed", 2);
    let read = fetch(&mut c, "g", Some(&[("doomed", &[0, 1])]));
    assert_eq!(read, [missing("doomed", 0), missing("doomed", 1)]);
}

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

/// `a` alone and Stable, then `b` joins: `a` learns of the rebalance from its
/// heartbeat and rejoins, and both are answered with the next generation.
fn rebalance(a: &mut Member, b: &mut Member) {
    b.start_join();
    // b's join is held until a rejoins; a hears of it once the gateway has b's join.
    eventually("the first member hears of the rebalance", || {
        a.heartbeat() == 27
    });
    let r = a.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    let r = b.receive_join();
    assert_eq!(r.error_code, 0, "{r:?}");
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

/// OffsetDelete v0: the top-level error code and (topic, partition, error code)s.
fn delete_offsets(
    c: &mut RawClient,
    group: &str,
    partitions: &[(&str, i32)],
) -> (i16, Vec<(String, i32, i16)>) {
    let topics = partitions.iter().map(|&(topic, partition)| {
        let p = OffsetDeleteRequestPartition::default().with_partition_index(partition);
        let t = OffsetDeleteRequestTopic::default().with_name(TopicName(s(topic)));
        t.with_partitions(vec![p])
    });
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(topics.collect());
    let r = call!(c, OffsetDelete, 0, request);
    let answered = r.topics.iter().flat_map(|t| {
        let each = t.partitions.iter();
        each.map(|p| (t.name.to_string(), p.partition_index, p.error_code))
    });
    (r.error_code, answered.collect())
}

/// DeleteGroups v2: the groups' error codes in order.
fn delete_groups(c: &mut RawClient, groups: &[&str]) -> Vec<i16> {
    let names = groups.iter().map(|g| GroupId(s(g))).collect();
    let r = call!(
        c,
        DeleteGroups,
        2,
        DeleteGroupsRequest::default().with_groups_names(names)
    );
    let answered: Vec<&str> = r.results.iter().map(|x| x.group_id.as_str()).collect();
    assert_eq!(answered, groups);
    r.results.iter().map(|x| x.error_code).collect()
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

fn delete_topic(c: &mut RawClient, name: &str) {
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(s(name))])
        .with_timeout_ms(5000);
    let r = call!(c, DeleteTopics, 5, request);
    assert_eq!(r.responses[0].error_code, 0, "delete {name}: {r:?}");
}

/// Produces `count` one-record batches to a partition (Produce v9, acks=all).
fn produce(c: &mut RawClient, topic: &str, partition: i32, count: usize) {
    for _ in 0..count {
        let record = record(None, b"v", 1_700_000_000_000);
        let data = PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(batch(&[record], Compression::None)));
        let t = TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![data]);
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![t]);
        let r = call!(c, Produce, 9, request);
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0, "{p:?}");
    }
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

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

support::on_every_store!(
    committed_offsets_are_stored_as_sent,
    a_negative_offset_deletes_the_entry_and_a_missing_entry_reads_minus_one,
    offset_fetch_with_a_null_topic_list_returns_every_committed_partition,
    commits_and_heartbeats_are_checked_against_generation_and_member,
    while_members_rejoin_commits_of_the_current_generation_are_accepted,
    after_a_restart_members_rejoin_and_resume_from_their_commits,
    a_second_member_rebalances_the_group_into_the_next_generation,
    a_leader_joining_again_before_it_syncs_gets_its_answer_again,
    a_static_member_rejoining_keeps_the_generation_and_fences_its_old_id,
    a_silent_member_is_removed_after_its_session_timeout,
    delete_groups_refuses_groups_with_members_and_unknown_groups,
    an_empty_group_without_offsets_stays_until_deleted,
    offset_delete_refuses_topics_a_live_member_subscribes_to,
    deleting_a_topic_removes_its_committed_offsets,
);
