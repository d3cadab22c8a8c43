//! KIP-848's group APIs at each version: ConsumerGroupHeartbeat (joining, the
//! assignment, fencing, assignors, regex from v1, leaving) and ConsumerGroupDescribe.

use crate::support;

use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, RawClient};

use super::Topic;

/// A heartbeat of member `id` at `epoch` in `group`, subscribed to `topic`.
fn beat(group: &str, id: &str, epoch: i32, topic: &Topic) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(id))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![topic.name.clone()]))
        .with_topic_partitions(Some(Vec::new()))
}

pub(super) fn consumer_group_heartbeat(c: &mut RawClient, v: i16, t: &Topic) {
    let group = format!("cg-heartbeat-v{v}");
    let joined = call!(c, ConsumerGroupHeartbeat, v, beat(&group, "m1", 0, t));
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert!(
        joined.member_epoch >= 1 && joined.heartbeat_interval_ms > 0,
        "{joined:?}"
    );
    // A lone member gets every partition of its topic at once.
    let assignment = joined.assignment.expect("an assignment");
    let topics: Vec<_> = assignment
        .topic_partitions
        .iter()
        .map(|x| x.topic_id)
        .collect();
    assert_eq!(topics, [t.id]);
    // Another epoch than its own: FENCED_MEMBER_EPOCH (110).
    let wrong = beat(&group, "m1", joined.member_epoch + 5, t);
    assert_eq!(call!(c, ConsumerGroupHeartbeat, v, wrong).error_code, 110);
    // An unknown member: UNKNOWN_MEMBER_ID (25); an unknown assignor: 112.
    let unknown = beat(&group, "nobody", 3, t);
    assert_eq!(call!(c, ConsumerGroupHeartbeat, v, unknown).error_code, 25);
    let assignor = beat(&group, "m2", 0, t).with_server_assignor(Some(s("sticky")));
    assert_eq!(
        call!(c, ConsumerGroupHeartbeat, v, assignor).error_code,
        112
    );
    if v >= 1 {
        let by_regex = |re: &str| {
            beat(&format!("{group}-re"), "r1", 0, t)
                .with_subscribed_topic_names(None)
                .with_subscribed_topic_regex(Some(s(re)))
        };
        // A regex that does not compile: INVALID_REGULAR_EXPRESSION (128).
        assert_eq!(
            call!(c, ConsumerGroupHeartbeat, v, by_regex("(")).error_code,
            128
        );
        let r = call!(
            c,
            ConsumerGroupHeartbeat,
            v,
            by_regex(&format!("{}.*", t.name.as_str()))
        );
        let assigned = r
            .assignment
            .as_ref()
            .map(|a| a.topic_partitions.iter().any(|x| x.topic_id == t.id));
        assert_eq!((r.error_code, assigned), (0, Some(true)), "{r:?}");
    }
    offsets_read_at_the_member_epoch(c, &group, joined.member_epoch);
    let leave = beat(&group, "m1", -1, t);
    let left = call!(c, ConsumerGroupHeartbeat, v, leave);
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
}

/// OffsetFetch v9 names the member and its epoch (KIP-848's validateOffsetFetch): member
/// m1 reads at its epoch; another epoch is STALE_MEMBER_EPOCH (113), an unknown member
/// UNKNOWN_MEMBER_ID (25); no member at epoch -1 (an admin client) reads.
fn offsets_read_at_the_member_epoch(c: &mut RawClient, group: &str, epoch: i32) {
    let cases = [
        (Some("m1"), epoch, 0),
        (Some("m1"), epoch - 1, 113),
        (Some("nobody"), epoch, 25),
        (None, -1, 0),
    ];
    for (member, member_epoch, code) in cases {
        let asked = OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_member_id(member.map(s))
            .with_member_epoch(member_epoch);
        let request = OffsetFetchRequest::default().with_groups(vec![asked]);
        let r = call!(c, OffsetFetch, 9, request);
        assert_eq!(
            r.groups[0].error_code, code,
            "{member:?} at {member_epoch}: {r:?}"
        );
    }
}

pub(super) fn consumer_group_describe(c: &mut RawClient, v: i16, t: &Topic) {
    let group = format!("cg-describe-v{v}");
    let joined = call!(c, ConsumerGroupHeartbeat, 0, beat(&group, "d1", 0, t));
    let unknown = GroupId(s(&format!("{group}-unknown")));
    let request =
        ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(&group)), unknown]);
    let r = call!(c, ConsumerGroupDescribe, v, request);
    let [g, u] = &r.groups[..] else {
        panic!("two groups asked, {} answered", r.groups.len())
    };
    let described = (g.error_code, g.assignor_name.as_str(), g.members.len());
    assert_eq!(described, (0, "uniform", 1), "{g:?}");
    let m = &g.members[0];
    assert_eq!(
        (m.member_id.as_str(), m.member_epoch),
        ("d1", joined.member_epoch)
    );
    let names: Vec<_> = (m.assignment.topic_partitions.iter())
        .map(|x| x.topic_name.clone())
        .collect();
    assert_eq!(names, std::slice::from_ref(&t.name));
    // An unknown group: GROUP_ID_NOT_FOUND (69).
    assert_eq!(u.error_code, 69, "{u:?}");
}
