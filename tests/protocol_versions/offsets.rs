//! Committed offsets at each version: OffsetCommit, OffsetFetch and OffsetDelete.

use crate::support;

use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use support::configs::s;
use support::{call, topic_name as name, RawClient};
use uuid::Uuid;

use super::{admin_commit, commit_at, committed, member, Topic};

pub(super) fn offset_commit(c: &mut RawClient, v: i16, t: &Topic) {
    let m = member(c, &format!("commit-v{v}"));
    let commit = |c: &mut RawClient, generation: i32, id: &StrBytes, topic: (&TopicName, Uuid)| {
        let metadata = format!("committed at v{v}");
        commit_at(
            c,
            v,
            &m.group,
            (generation, id),
            topic,
            (100 + v as i64, 7),
            &metadata,
        )
    };
    let topic = (&t.name, t.id);
    assert_eq!(commit(c, m.generation, &m.id, topic), 0);
    // Stored as sent; the leader epoch only from v6, where the request has one.
    let epoch = if v >= 6 { 7 } else { -1 };
    let want = (100 + v as i64, epoch, format!("committed at v{v}"));
    assert_eq!(committed(c, &m.group, t), want);
    // Checked like Kafka's validateOffsetCommit: a stale generation is ILLEGAL_GENERATION
    // (22); an unknown member, or none while the group has members, UNKNOWN_MEMBER_ID (25).
    assert_eq!(commit(c, m.generation - 1, &m.id, topic), 22);
    assert_eq!(commit(c, m.generation, &s("stranger"), topic), 25);
    assert_eq!(commit(c, -1, &StrBytes::default(), topic), 25);
    // A topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (3); from v10, named by
    // an id no topic has, UNKNOWN_TOPIC_ID (100).
    let missing = (&name("missing"), Uuid::from_u128(0x5eed));
    let unknown = if v >= 10 { 100 } else { 3 };
    assert_eq!(commit(c, m.generation, &m.id, missing), unknown);
}

pub(super) fn offset_fetch(c: &mut RawClient, v: i16, t: &Topic) {
    let (group, nothing) = (format!("fetch-v{v}"), format!("fetch-nothing-v{v}"));
    let admin = (-1, &StrBytes::default());
    let code = commit_at(
        c,
        9,
        &GroupId(s(&group)),
        admin,
        (&t.name, t.id),
        (42, 4),
        "fetched",
    );
    assert_eq!(code, 0);
    // (topic, partition, offset, leader epoch from v5, metadata, error code)
    let stored = (
        t.name.clone(),
        0,
        42,
        if v >= 5 { 4 } else { -1 },
        s("fetched"),
        0,
    );
    let missing = (t.name.clone(), 0, -1, -1, s(""), 0); // no entry: -1, no error
    let partition_0 = Some(vec![(t.name.clone(), vec![0])]);
    // (group, topics asked, what it reads): partition 0 by name; from v2 a null list,
    // which reads every partition the group has an offset for.
    let mut cases = vec![
        (&group, partition_0.clone(), vec![stored.clone()]),
        (&nothing, partition_0, vec![missing]),
    ];
    if v >= 2 {
        cases.push((&group, None, vec![stored]));
        cases.push((&nothing, None, vec![]));
    }
    if v >= 8 {
        // v8+: all groups in one request, answered group by group in order.
        let groups = cases.iter().map(|(g, topics, _)| {
            let topics = topics.clone().map(|ts| {
                let ts = ts.into_iter().map(|(name, ps)| {
                    // v10+ names topics by id (KIP-848).
                    let asked = OffsetFetchRequestTopics::default();
                    let asked = match v >= 10 {
                        true => asked.with_topic_id(t.id),
                        false => asked.with_name(name),
                    };
                    asked.with_partition_indexes(ps)
                });
                ts.collect()
            });
            let group = OffsetFetchRequestGroup::default().with_group_id(GroupId(s(g)));
            group.with_topics(topics)
        });
        let request = OffsetFetchRequest::default().with_groups(groups.collect());
        let r = call!(c, OffsetFetch, v, request.with_require_stable(true));
        assert_eq!(r.groups.len(), cases.len(), "{r:?}");
        for (answer, (g, _, want)) in r.groups.iter().zip(&cases) {
            assert_eq!(
                (answer.group_id.as_str(), answer.error_code),
                (g.as_str(), 0)
            );
            let read = answer.topics.iter().flat_map(|topic| {
                // v10+ answers by id: the test topic's, and no name.
                let named = match v >= 10 {
                    true => {
                        (topic.topic_id == t.id && topic.name.is_empty()).then(|| t.name.clone())
                    }
                    false => (topic.topic_id.is_nil()).then(|| topic.name.clone()),
                };
                let named = named.unwrap_or_else(|| panic!("{topic:?}"));
                topic.partitions.iter().map(move |p| {
                    let metadata = p.metadata.clone().unwrap_or_default();
                    let offset = (p.committed_offset, p.committed_leader_epoch);
                    (
                        named.clone(),
                        p.partition_index,
                        offset.0,
                        offset.1,
                        metadata,
                        p.error_code,
                    )
                })
            });
            assert_eq!(&read.collect::<Vec<_>>(), want, "group {g}");
        }
        if v >= 10 {
            // An id no topic has: UNKNOWN_TOPIC_ID (100) for its partitions.
            let unknown = Uuid::from_u128(0x5eed);
            let asked = OffsetFetchRequestTopics::default().with_topic_id(unknown);
            let asked = asked.with_partition_indexes(vec![0]);
            let group = OffsetFetchRequestGroup::default().with_group_id(GroupId(s(&group)));
            let request = OffsetFetchRequest::default()
                .with_groups(vec![group.with_topics(Some(vec![asked]))]);
            let r = call!(c, OffsetFetch, v, request);
            let topic = &r.groups[0].topics[0];
            let p = &topic.partitions[0];
            let read = (
                topic.topic_id,
                p.partition_index,
                p.committed_offset,
                p.error_code,
            );
            assert_eq!(read, (unknown, 0, -1, 100), "{r:?}");
        }
        return;
    }
    for (g, topics, want) in &cases {
        let topics = topics.clone().map(|ts| {
            let ts = ts.into_iter().map(|(name, ps)| {
                let t = OffsetFetchRequestTopic::default().with_name(name);
                t.with_partition_indexes(ps)
            });
            ts.collect()
        });
        let request = OffsetFetchRequest::default().with_group_id(GroupId(s(g)));
        let mut request = request.with_topics(topics);
        if v >= 7 {
            request = request.with_require_stable(true);
        }
        let r = call!(c, OffsetFetch, v, request);
        assert_eq!(r.error_code, 0, "{r:?}");
        let read = r.topics.iter().flat_map(|t| {
            t.partitions.iter().map(|p| {
                let metadata = p.metadata.clone().unwrap_or_default();
                let offset = (p.committed_offset, p.committed_leader_epoch);
                (
                    t.name.clone(),
                    p.partition_index,
                    offset.0,
                    offset.1,
                    metadata,
                    p.error_code,
                )
            })
        });
        assert_eq!(&read.collect::<Vec<_>>(), want, "group {g}");
    }
}

pub(super) fn offset_delete(c: &mut RawClient, v: i16, t: &Topic) {
    let group = GroupId(s(&format!("offset-delete-v{v}")));
    admin_commit(c, &group, t, 9);
    let partition = OffsetDeleteRequestPartition::default().with_partition_index(0);
    let topic = OffsetDeleteRequestTopic::default().with_name(t.name.clone());
    let topics = vec![topic.with_partitions(vec![partition])];
    let request = OffsetDeleteRequest::default().with_topics(topics);
    let r = call!(
        c,
        OffsetDelete,
        v,
        request.clone().with_group_id(group.clone())
    );
    assert_eq!(r.error_code, 0, "{r:?}");
    let answered = r.topics.iter().flat_map(|x| {
        let ps = x.partitions.iter();
        ps.map(|p| (x.name.clone(), p.partition_index, p.error_code))
    });
    assert_eq!(answered.collect::<Vec<_>>(), [(t.name.clone(), 0, 0)]);
    assert_eq!(
        committed(c, &group, t),
        (-1, -1, String::new()),
        "not deleted"
    );
    // A group with neither members nor offsets: GROUP_ID_NOT_FOUND (69).
    let unknown = GroupId(s(&format!("offset-delete-unknown-v{v}")));
    let r = call!(c, OffsetDelete, v, request.with_group_id(unknown));
    assert_eq!(r.error_code, 69, "{r:?}");
}
