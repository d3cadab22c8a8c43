//! CreatePartitions and OffsetForLeaderEpoch by hand-built request, and a topic's
//! partition count as Metadata lists it.

use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, MetadataRequest, OffsetForLeaderEpochRequest,
};

use super::{call, topic_name, RawClient};

pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;

/// One topic to grow: its name, the count asked for, and how many replica
/// assignments to send (None: a null list).
pub type Growth<'a> = (&'a str, i32, Option<usize>);

/// One topic's answer: name, error code, error message.
pub type Grown = (String, i16, Option<String>);

/// CreatePartitions at `v`; each assignment names broker 0, as a client would.
pub fn grow(c: &mut RawClient, v: i16, topics: &[Growth], validate_only: bool) -> Vec<Grown> {
    let topics = topics
        .iter()
        .map(|&(name, count, assignments)| {
            let one = || CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(0)]);
            CreatePartitionsTopic::default()
                .with_name(topic_name(name))
                .with_count(count)
                .with_assignments(assignments.map(|n| (0..n).map(|_| one()).collect()))
        })
        .collect();
    let request = CreatePartitionsRequest::default()
        .with_topics(topics)
        .with_timeout_ms(5000)
        .with_validate_only(validate_only);
    let r = call!(c, CreatePartitions, v, request);
    r.results
        .into_iter()
        .map(|t| {
            let message = t.error_message.map(|m| m.to_string());
            (t.name.to_string(), t.error_code, message)
        })
        .collect()
}

/// The partitions Metadata (v12, without auto-creation) lists for `topic`, or None
/// when it answers an error for it.
pub fn count(c: &mut RawClient, topic: &str) -> Option<usize> {
    let wanted = MetadataRequestTopic::default().with_name(Some(topic_name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(false);
    let r = call!(c, Metadata, 12, request);
    let t = r.topics.into_iter().next()?;
    (t.error_code == 0).then_some(t.partitions.len())
}

/// One partition asked for: (topic, partition, current leader epoch, leader epoch).
pub type Asked<'a> = (&'a str, i32, i32, i32);
/// One partition answered: (topic, partition, error code, leader epoch, end offset).
pub type Ended = (String, i32, i16, i32, i64);

/// OffsetForLeaderEpoch at `v` as a consumer sends it (replica id -1), one topic entry a
/// partition asked for.
pub fn ends(c: &mut RawClient, v: i16, asked: &[Asked]) -> Vec<Ended> {
    let topics = asked
        .iter()
        .map(|&(topic, partition, current, epoch)| {
            let p = OffsetForLeaderPartition::default()
                .with_partition(partition)
                .with_current_leader_epoch(current)
                .with_leader_epoch(epoch);
            OffsetForLeaderTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![p])
        })
        .collect();
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(topics);
    let r = call!(c, OffsetForLeaderEpoch, v, request);
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let topic = t.topic.to_string();
                (
                    topic,
                    p.partition,
                    p.error_code,
                    p.leader_epoch,
                    p.end_offset,
                )
            })
        })
        .collect()
}

/// One partition's election answer: (topic, partition, error code, error message).
pub type Elected = (String, i32, i16, Option<String>);

/// ElectLeaders at `v` of `election_type` (v0 has none: preferred) for the partitions
/// named (None: every partition); the top-level code (0 before v1) and each answer.
pub fn elect(
    c: &mut RawClient,
    v: i16,
    election_type: i8,
    asked: Option<&[(&str, &[i32])]>,
) -> (i16, Vec<Elected>) {
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    let topics = asked.map(|asked| {
        asked
            .iter()
            .map(|(topic, partitions)| {
                TopicPartitions::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(partitions.to_vec())
            })
            .collect()
    });
    let mut request = kafka_protocol::messages::ElectLeadersRequest::default()
        .with_topic_partitions(topics)
        .with_timeout_ms(5000);
    if v >= 1 {
        request = request.with_election_type(election_type);
    }
    let r = call!(c, ElectLeaders, v, request);
    let answers = r
        .replica_election_results
        .iter()
        .flat_map(|t| {
            t.partition_result.iter().map(|p| {
                let message = p.error_message.as_ref().map(|m| m.to_string());
                (t.topic.to_string(), p.partition_id, p.error_code, message)
            })
        })
        .collect();
    (r.error_code, answers)
}

/// ListPartitionReassignments v0 of the partitions named (None: all): the top-level
/// code and the partitions listed as (topic, partition).
pub fn reassignments(
    c: &mut RawClient,
    asked: Option<&[(&str, &[i32])]>,
) -> (i16, Vec<(String, i32)>) {
    use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
    let topics = asked.map(|asked| {
        asked
            .iter()
            .map(|(topic, partitions)| {
                ListPartitionReassignmentsTopics::default()
                    .with_name(topic_name(topic))
                    .with_partition_indexes(partitions.to_vec())
            })
            .collect()
    });
    let request = kafka_protocol::messages::ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(topics);
    let r = call!(c, ListPartitionReassignments, 0, request);
    let listed = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index))
        })
        .collect();
    (r.error_code, listed)
}

/// AlterPartitionReassignments at `v` of one partition each (None: cancel): the
/// top-level code and each partition's (topic, partition, code, message).
pub fn reassign(
    c: &mut RawClient,
    v: i16,
    asked: &[(&str, i32, Option<&[i32]>)],
) -> (i16, Vec<Elected>) {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    let topics = asked
        .iter()
        .map(|&(topic, partition, replicas)| {
            let p = ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(replicas.map(|r| r.iter().map(|&b| BrokerId(b)).collect()));
            ReassignableTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![p])
        })
        .collect();
    let request = kafka_protocol::messages::AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(topics);
    let r = call!(c, AlterPartitionReassignments, v, request);
    let answers = r
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let message = p.error_message.as_ref().map(|m| m.to_string());
                (t.name.to_string(), p.partition_index, p.error_code, message)
            })
        })
        .collect();
    (r.error_code, answers)
}
