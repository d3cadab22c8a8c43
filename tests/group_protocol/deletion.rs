//! What DeleteGroups, OffsetDelete and DeleteTopics do to a group and its offsets.

use crate::support;

use std::time::Duration;

use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, Gateway, RawClient, Store};

use super::{
    commit, committed, create_topic, describe, fetch, missing, read_as, Member, ADMIN, NO_DELAY,
};

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

fn delete_topic(c: &mut RawClient, name: &str) {
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(s(name))])
        .with_timeout_ms(5000);
    let r = call!(c, DeleteTopics, 5, request);
    assert_eq!(r.responses[0].error_code, 0, "delete {name}: {r:?}");
}

support::on_every_store!(
    delete_groups_refuses_groups_with_members_and_unknown_groups,
    an_empty_group_without_offsets_stays_until_deleted,
    offset_delete_refuses_topics_a_live_member_subscribes_to,
    deleting_a_topic_removes_its_committed_offsets,
);
