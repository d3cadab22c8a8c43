//! The group APIs at each version, from FindCoordinator and JoinGroup to DeleteGroups.

use crate::support;

use bytes::Bytes;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use support::configs::s;
use support::{call, RawClient};

use super::{
    admin_commit, committed, join_at, joined, member, subscription, sync_at, Member, Topic,
    ASSIGNOR, PROTOCOL_TYPE,
};

pub(super) fn find_coordinator(c: &mut RawClient, v: i16) {
    let b = broker(c);
    let this_node = (0, b.node_id, b.host, b.port);
    let keys = ["coordinated-a", "coordinated-b"];
    // Key type 0 (GROUP, the default) and, from v1 where the field exists, 1 (TRANSACTION).
    for key_type in [0, 1].into_iter().filter(|&k| k == 0 || v >= 1) {
        let request = FindCoordinatorRequest::default().with_key_type(key_type);
        // v0-3 ask for one key; v4+ for a batch, answered key by key (KIP-699).
        let answers = if v >= 4 {
            let request = request.with_coordinator_keys(keys.map(s).to_vec());
            let r = call!(c, FindCoordinator, v, request);
            let answered: Vec<&str> = r.coordinators.iter().map(|x| x.key.as_str()).collect();
            assert_eq!(answered, keys);
            let each = r.coordinators.into_iter();
            each.map(|x| (x.error_code, x.node_id, x.host, x.port))
                .collect()
        } else {
            let r = call!(c, FindCoordinator, v, request.with_key(s(keys[0])));
            vec![(r.error_code, r.node_id, r.host, r.port)]
        };
        for answer in answers {
            // This gateway coordinates every group and transactional id: it names itself.
            assert_eq!(answer, this_node, "key type {key_type}");
        }
    }
}

pub(super) fn join_group(c: &mut RawClient, v: i16) {
    let group = format!("join-v{v}");
    let mut r = join_at(c, v, &group, &StrBytes::default(), None);
    if v >= 4 {
        // KIP-394: a member without an id is given one (MEMBER_ID_REQUIRED, 79) and
        // joins again with it.
        assert_eq!(r.error_code, 79, "{r:?}");
        assert!(!r.member_id.is_empty(), "no member id given: {r:?}");
        let id = r.member_id.clone();
        r = join_at(c, v, &group, &id, None);
        assert_eq!(r.member_id, id);
    }
    assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
    assert!(!r.member_id.is_empty());
    // Alone, it leads: it gets every member's metadata to compute the assignment.
    assert_eq!(r.leader, r.member_id);
    assert!(!r.skip_assignment);
    assert_eq!(r.protocol_name, Some(s(ASSIGNOR)));
    assert_eq!(r.protocol_type, (v >= 7).then(|| s(PROTOCOL_TYPE)));
    let members = r
        .members
        .iter()
        .map(|m| (&m.member_id, &m.group_instance_id));
    assert_eq!(members.collect::<Vec<_>>(), [(&r.member_id, &None)]);
    assert_eq!(r.members[0].metadata, subscription());
    if v >= 5 {
        // Static members (KIP-345) join in one step, and the leader sees their instance id.
        let static_group = format!("join-static-v{v}");
        let r = join_at(
            c,
            v,
            &static_group,
            &StrBytes::default(),
            Some("instance-1"),
        );
        assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
        assert_eq!(r.members[0].group_instance_id, Some(s("instance-1")));
        let m = Member {
            group: GroupId(s(&static_group)),
            id: r.member_id,
            generation: r.generation_id,
            assignment: Bytes::from_static(b"static"),
        };
        assert_eq!(sync_at(c, 5, &m).error_code, 0);
        // Restarted (same instance id, no member id) while Stable: a new member id in
        // the same generation, no rebalance. The leader it was learns it from v9 by
        // skip_assignment with the members (KIP-814); before v9 it is named the old
        // leader id, so it follows and keeps its assignment.
        let r = join_at(
            c,
            v,
            &static_group,
            &StrBytes::default(),
            Some("instance-1"),
        );
        assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
        assert_ne!(r.member_id, m.id, "the old member id again");
        let told = (&r.leader, r.skip_assignment, r.members.len());
        let want = if v >= 9 {
            (&r.member_id, true, 1)
        } else {
            (&m.id, false, 0)
        };
        assert_eq!(told, want, "{r:?}");
    }
}

pub(super) fn sync_group(c: &mut RawClient, v: i16) {
    let m = joined(c, &format!("sync-v{v}"));
    // The leader sends the assignment and gets its own back; once Stable, a sync
    // answers the same assignment again.
    for _ in 0..2 {
        let r = sync_at(c, v, &m);
        assert_eq!((r.error_code, &r.assignment), (0, &m.assignment), "{r:?}");
        if v >= 5 {
            let names = (r.protocol_type, r.protocol_name);
            assert_eq!(names, (Some(s(PROTOCOL_TYPE)), Some(s(ASSIGNOR))));
        }
    }
    let stale = Member {
        generation: m.generation - 1,
        ..m
    };
    assert_eq!(sync_at(c, v, &stale).error_code, 22, "ILLEGAL_GENERATION");
}

pub(super) fn heartbeat(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("heartbeat-v{v}"));
    let beat = |c: &mut RawClient, generation: i32, id: &StrBytes| {
        let request = HeartbeatRequest::default()
            .with_group_id(m.group.clone())
            .with_generation_id(generation)
            .with_member_id(id.clone());
        call!(c, Heartbeat, v, request).error_code
    };
    assert_eq!(beat(c, m.generation, &m.id), 0);
    assert_eq!(beat(c, m.generation + 1, &m.id), 22, "ILLEGAL_GENERATION");
    assert_eq!(
        beat(c, m.generation, &s("stranger")),
        25,
        "UNKNOWN_MEMBER_ID"
    );
}

pub(super) fn leave_group(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("leave-v{v}"));
    // v0-2 name one member; v3+ a list (KIP-345), answered member by member.
    let leave = |c: &mut RawClient| {
        let request = LeaveGroupRequest::default().with_group_id(m.group.clone());
        if v < 3 {
            return call!(c, LeaveGroup, v, request.with_member_id(m.id.clone())).error_code;
        }
        let mut who = MemberIdentity::default().with_member_id(m.id.clone());
        if v >= 5 {
            who = who.with_reason(Some(s("protocol-versions")));
        }
        let r = call!(c, LeaveGroup, v, request.with_members(vec![who]));
        assert_eq!(r.error_code, 0, "{r:?}");
        let answered = r
            .members
            .iter()
            .map(|x| (&x.member_id, &x.group_instance_id));
        assert_eq!(answered.collect::<Vec<_>>(), [(&m.id, &None)]);
        r.members[0].error_code
    };
    assert_eq!(leave(c), 0);
    // Gone: its heartbeat and a second leave answer UNKNOWN_MEMBER_ID (25).
    assert_eq!(heartbeat_error(c, &m), 25);
    assert_eq!(leave(c), 25);
}

pub(super) fn describe_groups(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("describe-v{v}"));
    let unknown = GroupId(s(&format!("describe-unknown-v{v}")));
    let request = DescribeGroupsRequest::default().with_groups(vec![m.group.clone(), unknown]);
    let r = call!(c, DescribeGroups, v, request);
    let [g, u] = &r.groups[..] else {
        panic!("two groups asked, {} answered", r.groups.len())
    };
    let protocol = (g.protocol_type.as_str(), g.protocol_data.as_str());
    let described = (g.error_code, &g.group_id, g.group_state.as_str(), protocol);
    let want = (0, &m.group, "Stable", (PROTOCOL_TYPE, ASSIGNOR));
    assert_eq!(described, want);
    let members = g.members.iter().map(|x| {
        let ids = (&x.member_id, &x.group_instance_id, x.client_id.as_str());
        (ids, &x.member_metadata, &x.member_assignment)
    });
    let want = ((&m.id, &None, "raw-test"), &subscription(), &m.assignment);
    assert_eq!(members.collect::<Vec<_>>(), [want]);
    assert!(g.members[0].client_host.contains("127.0.0.1"), "{g:?}");
    // An unknown group is Dead; from v6 it is also GROUP_ID_NOT_FOUND (69, KIP-1043).
    let code = if v >= 6 { 69 } else { 0 };
    assert_eq!(
        (u.error_code, u.group_state.as_str()),
        (code, "Dead"),
        "{u:?}"
    );
}

pub(super) fn list_groups(c: &mut RawClient, v: i16, t: &Topic) {
    let live = format!("list-v{v}");
    member(c, &live);
    // A group known only by its committed offsets is listed too, Empty.
    let idle = format!("list-idle-v{v}");
    admin_commit(c, &idle, t, 1);
    // (group, protocol type, state from v4, type from v5) of these two groups only.
    let list = |c: &mut RawClient, states: &[&str], types: &[&str]| {
        let mut request = ListGroupsRequest::default();
        if v >= 4 {
            request = request.with_states_filter(states.iter().map(|x| s(x)).collect());
        }
        if v >= 5 {
            request = request.with_types_filter(types.iter().map(|x| s(x)).collect());
        }
        let r = call!(c, ListGroups, v, request);
        assert_eq!(r.error_code, 0);
        let mut listed: Vec<_> = (r.groups.into_iter())
            .filter(|g| [&live, &idle].contains(&&g.group_id.to_string()))
            .map(|g| {
                let group = (g.group_id.to_string(), g.protocol_type.to_string());
                (group, g.group_state.to_string(), g.group_type.to_string())
            })
            .collect();
        listed.sort();
        listed
    };
    let from = |since: i16, value: &str| if v >= since { value } else { "" }.to_string();
    let idle_listed = (
        (idle.clone(), String::new()),
        from(4, "Empty"),
        from(5, "classic"),
    );
    let live_group = (live.clone(), PROTOCOL_TYPE.to_string());
    let live_listed = (live_group, from(4, "Stable"), from(5, "classic"));
    let both = vec![idle_listed.clone(), live_listed.clone()];
    assert_eq!(list(c, &[], &[]), both);
    if v >= 4 {
        assert_eq!(
            list(c, &["Stable"], &[]),
            std::slice::from_ref(&live_listed)
        );
        assert_eq!(list(c, &["Empty"], &[]), [idle_listed]);
        assert!(list(c, &["Dead"], &[]).is_empty());
    }
    if v >= 5 {
        // Every group here is a classic group; none uses the KIP-848 consumer protocol.
        assert_eq!(list(c, &[], &["classic"]), both);
        assert!(list(c, &[], &["consumer"]).is_empty());
    }
}

pub(super) fn delete_groups(c: &mut RawClient, v: i16, t: &Topic) {
    let idle = GroupId(s(&format!("delete-v{v}")));
    admin_commit(c, &idle, t, 3);
    let busy = member(c, &format!("delete-busy-v{v}")).group;
    let unknown = GroupId(s(&format!("delete-unknown-v{v}")));
    let delete = |c: &mut RawClient, names: Vec<GroupId>| {
        let r = call!(
            c,
            DeleteGroups,
            v,
            DeleteGroupsRequest::default().with_groups_names(names)
        );
        let results = r.results.into_iter();
        results
            .map(|x| {
                // v3+: a message says why a group stays; none when it goes (older
                // versions carry no message).
                let said = x.error_message.as_deref().unwrap_or_default();
                match (v >= 3, x.error_code) {
                    (true, 0) | (false, _) => assert_eq!(x.error_message, None, "{x:?}"),
                    (true, _) => assert!(!said.is_empty(), "no message: {x:?}"),
                }
                (x.group_id, x.error_code)
            })
            .collect::<Vec<_>>()
    };
    // An empty group goes, with its offsets; one with members stays (NON_EMPTY_GROUP,
    // 68); an unknown one is GROUP_ID_NOT_FOUND (69).
    let names = vec![idle.clone(), busy.clone(), unknown.clone()];
    let want = [(idle.clone(), 0), (busy, 68), (unknown, 69)];
    assert_eq!(delete(c, names), want);
    assert_eq!(
        committed(c, &idle, t),
        (-1, -1, String::new()),
        "offsets kept"
    );
    assert_eq!(delete(c, vec![idle.clone()]), [(idle, 69)]);
}

/// The gateway's address as Metadata lists it: what FindCoordinator must answer.
struct Broker {
    node_id: BrokerId,
    host: StrBytes,
    port: i32,
}

fn broker(c: &mut RawClient) -> Broker {
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(Some(Vec::new()))
    );
    let b = r.brokers.into_iter().next().expect("one broker");
    Broker {
        node_id: b.node_id,
        host: b.host,
        port: b.port,
    }
}

/// Heartbeat v4 of `m`: its error code.
fn heartbeat_error(c: &mut RawClient, m: &Member) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(m.group.clone())
        .with_generation_id(m.generation)
        .with_member_id(m.id.clone());
    call!(c, Heartbeat, 4, request).error_code
}
