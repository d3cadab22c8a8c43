//! Metadata, CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords at each
//! version.

use crate::support;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::*;
use support::{call, topic_name as name, RawClient};
use uuid::Uuid;

use super::{create, Topic};

pub(super) fn metadata(c: &mut RawClient, v: i16, t: &Topic) {
    // By name (without auto-creation where the request can say so), then all topics:
    // v0 asks for all with an empty list, later versions with null.
    let wanted = MetadataRequestTopic::default().with_name(Some(t.name.clone()));
    let mut by_name = MetadataRequest::default().with_topics(Some(vec![wanted]));
    if v >= 4 {
        by_name = by_name.with_allow_auto_topic_creation(false);
    }
    let all = MetadataRequest::default().with_topics((v == 0).then(Vec::new));
    for request in [by_name, all] {
        let r = call!(c, Metadata, v, request);
        assert_eq!(r.brokers.len(), 1);
        let listed = r.topics.iter().find(|x| x.name.as_ref() == Some(&t.name));
        let topic = listed.expect("the topic is listed");
        assert_eq!((topic.error_code, topic.partitions.len()), (0, 1));
        assert_eq!(topic.partitions[0].leader_id, r.brokers[0].node_id);
        // Topic ids are answered from v10.
        assert_eq!(topic.topic_id, if v >= 10 { t.id } else { Uuid::nil() });
    }
    // Authorized operations (v8+), when asked: with no authorizer, every topic
    // operation, READ (3) and WRITE (4) among them; i32::MIN means "not asked".
    if v >= 8 {
        let wanted = MetadataRequestTopic::default().with_name(Some(t.name.clone()));
        let asked = MetadataRequest::default()
            .with_topics(Some(vec![wanted]))
            .with_allow_auto_topic_creation(false)
            .with_include_topic_authorized_operations(true);
        let ops = call!(c, Metadata, v, asked).topics[0].topic_authorized_operations;
        assert!(
            ops != i32::MIN && ops & (1 << 3) != 0 && ops & (1 << 4) != 0,
            "v{v}: {ops:#b}"
        );
    }
}

pub(super) fn create_topics(c: &mut RawClient, v: i16) {
    let topic = format!("created-v{v}");
    let r = create(c, v, &topic, 3);
    assert_eq!((r.error_code, r.name.0.as_str()), (0, &*topic));
    if v >= 5 {
        assert_eq!((r.num_partitions, r.replication_factor), (3, 1));
    }
    let listed = describe(c, &topic);
    assert_eq!((listed.error_code, listed.partitions.len()), (0, 3));
    if v >= 7 {
        assert_eq!(r.topic_id, listed.topic_id, "topic id");
    }
    // Creating it again is TOPIC_ALREADY_EXISTS (36), answered at this version too.
    assert_eq!(create(c, v, &topic, 3).error_code, 36);
}

pub(super) fn delete_topics(c: &mut RawClient, v: i16) {
    let topic = format!("deleted-v{v}");
    let id = create(c, 7, &topic, 1).topic_id;
    // v6 names topics by name or id (KIP-516); the id is what it adds, so use that.
    let request = match v {
        6.. => DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default().with_topic_id(id)]),
        _ => DeleteTopicsRequest::default().with_topic_names(vec![name(&topic)]),
    };
    let request = request.with_timeout_ms(5000);
    let r = call!(c, DeleteTopics, v, request.clone());
    let d = &r.responses[0];
    assert_eq!((d.error_code, &d.name), (0, &Some(name(&topic))));
    if v >= 6 {
        assert_eq!(d.topic_id, id);
    }
    assert_eq!(describe(c, &topic).error_code, 3, "still listed");
    // Again: UNKNOWN_TOPIC_ID (100) by id, UNKNOWN_TOPIC_OR_PARTITION (3) by name.
    let r = call!(c, DeleteTopics, v, request);
    assert_eq!(r.responses[0].error_code, if v >= 6 { 100 } else { 3 });
}

pub(super) fn create_partitions(c: &mut RawClient, v: i16) {
    let topic = format!("widened-v{v}");
    create(c, 7, &topic, 1);
    let grown = CreatePartitionsTopic::default()
        .with_name(name(&topic))
        .with_count(2)
        .with_assignments(None);
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![grown])
        .with_timeout_ms(5000);
    let r = call!(c, CreatePartitions, v, request.clone());
    let t = &r.results[0];
    assert_eq!(
        (t.error_code, &t.name, &t.error_message),
        (0, &name(&topic), &None)
    );
    assert_eq!(describe(c, &topic).partitions.len(), 2);
    // Again: INVALID_PARTITIONS (37), the count no increase.
    let r = call!(c, CreatePartitions, v, request);
    assert_eq!(r.results[0].error_code, 37);
}

/// A topic of its own, so the records the other APIs read stay.
pub(super) fn delete_records(c: &mut RawClient, v: i16) {
    let topic = format!("trimmed-v{v}");
    create(c, 7, &topic, 1);
    support::records::produce_n(c, &topic, 0, 3);
    assert_eq!(
        support::records::delete(c, v, &topic, &[(0, 2)]),
        [(0, 0, 2)]
    );
    // Past the high watermark: OFFSET_OUT_OF_RANGE (1).
    assert_eq!(
        support::records::delete(c, v, &topic, &[(0, 4)]),
        [(0, 1, -1)]
    );
}

/// Metadata v12 for one topic, without creating it.
fn describe(c: &mut RawClient, topic: &str) -> MetadataResponseTopic {
    let wanted = MetadataRequestTopic::default().with_name(Some(name(topic)));
    let request = MetadataRequest::default().with_topics(Some(vec![wanted]));
    let request = request.with_allow_auto_topic_creation(false);
    let r = call!(c, Metadata, 12, request);
    r.topics.into_iter().next().expect("one topic")
}
