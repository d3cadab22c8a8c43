//! Raw requests for the ACL tests (`tests/acls.rs`, `tests/acls_per_api.rs`): ACL
//! bindings, and the answer each API gives for a topic, a group or the cluster.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;

use super::{batch, call, record, topic_name, RawClient};

pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const SECURITY_DISABLED: i16 = 54;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

/// Kafka's codes: resource types, pattern types, operations, permissions.
pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
pub const TRANSACTIONAL_ID: i8 = 5;
/// The one cluster resource's name.
pub const KAFKA_CLUSTER: &str = "kafka-cluster";
pub const LITERAL: i8 = 3;
pub const PREFIXED: i8 = 4;
pub const ALL: i8 = 2;
pub const READ: i8 = 3;
pub const WRITE: i8 = 4;
pub const CREATE: i8 = 5;
pub const DELETE: i8 = 6;
pub const ALTER: i8 = 7;
pub const DESCRIBE: i8 = 8;
pub const CLUSTER_ACTION: i8 = 9;
pub const DESCRIBE_CONFIGS: i8 = 10;
pub const ALTER_CONFIGS: i8 = 11;
pub const IDEMPOTENT_WRITE: i8 = 12;
pub const DENY: i8 = 2;
pub const ALLOW: i8 = 3;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One binding: `(resource type, name, pattern type)`, `(principal, host)`, operation,
/// permission.
pub fn acl(
    resource: (i8, &str, i8),
    who: (&str, &str),
    operation: i8,
    permission: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource.0)
        .with_resource_name(s(resource.1))
        .with_resource_pattern_type(resource.2)
        .with_principal(s(who.0))
        .with_host(s(who.1))
        .with_operation(operation)
        .with_permission_type(permission)
}

/// CreateAcls v3; each creation's error code.
pub fn create_acls(c: &mut RawClient, acls: Vec<AclCreation>) -> Vec<i16> {
    let r = call!(
        c,
        CreateAcls,
        3,
        CreateAclsRequest::default().with_creations(acls)
    );
    r.results.iter().map(|x| x.error_code).collect()
}

/// DescribeAcls v3 of every binding: the error code and `(resource name, principal,
/// operation)` of each binding found.
pub fn all_acls(c: &mut RawClient) -> (i16, Vec<(String, String, i8)>) {
    let request = DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let r = call!(c, DescribeAcls, 3, request);
    let found = r.resources.iter().flat_map(|res| {
        res.acls.iter().map(move |a| {
            (
                res.resource_name.to_string(),
                a.principal.to_string(),
                a.operation,
            )
        })
    });
    (r.error_code, found.collect())
}

/// Produce v9 of one record to partition 0; the partition's error code.
pub fn produce_code(c: &mut RawClient, topic: &str) -> i16 {
    let records = batch(&[record(None, b"v", 1_700_000_000_000)], Compression::None);
    let data = TopicProduceData::default()
        .with_name(topic_name(topic))
        .with_partition_data(vec![PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(records))]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![data]);
    call!(c, Produce, 9, request).responses[0].partition_responses[0].error_code
}

/// Fetch v12 of partition 0 from offset 0; the partition's error code.
pub fn fetch_code(c: &mut RawClient, topic: &str) -> i16 {
    let wanted = FetchTopic::default()
        .with_topic(topic_name(topic))
        .with_partitions(vec![FetchPartition::default()
            .with_partition(0)
            .with_fetch_offset(0)
            .with_partition_max_bytes(1 << 20)]);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![wanted]);
    call!(c, Fetch, 12, request).responses[0].partitions[0].error_code
}

/// ListOffsets v7 (latest) of partition 0; the partition's error code.
pub fn list_offsets_code(c: &mut RawClient, topic: &str) -> i16 {
    let wanted = ListOffsetsTopic::default()
        .with_name(topic_name(topic))
        .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]);
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![wanted]);
    call!(c, ListOffsets, 7, request).topics[0].partitions[0].error_code
}

/// Metadata v12 of every topic: the names listed.
pub fn listed_topics(c: &mut RawClient) -> Vec<String> {
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    let mut names: Vec<String> = r
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect();
    names.sort();
    names
}

/// Metadata v10 (the last with the cluster's) of one topic, without creating it, with
/// its authorized operations and the cluster's: (error code, topic operations,
/// cluster operations).
pub fn metadata_of(c: &mut RawClient, topic: &str) -> (i16, i32, i32) {
    let wanted = MetadataRequestTopic::default().with_name(Some(topic_name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(false)
        .with_include_topic_authorized_operations(true)
        .with_include_cluster_authorized_operations(true);
    let r = call!(c, Metadata, 10, request);
    let t = &r.topics[0];
    (
        t.error_code,
        t.topic_authorized_operations,
        r.cluster_authorized_operations,
    )
}

/// OffsetCommit v8 as admin tools send it (generation -1) of offset 0 of partition 0.
pub fn commit_code(c: &mut RawClient, group: &str, topic: &str) -> i16 {
    super::groups::commit_as_admin(c, group, (topic, 0), 0)
}

/// FindCoordinator v3 of a group; the error code.
pub fn find_coordinator_code(c: &mut RawClient, group: &str) -> i16 {
    let request = FindCoordinatorRequest::default().with_key(s(group));
    call!(c, FindCoordinator, 3, request).error_code
}

/// DescribeGroups v5 with authorized operations: (error code, operations).
pub fn describe_group(c: &mut RawClient, group: &str) -> (i16, i32) {
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(s(group))])
        .with_include_authorized_operations(true);
    let g = &call!(c, DescribeGroups, 5, request).groups[0];
    (g.error_code, g.authorized_operations)
}

/// CreateTopics v7 of a one-partition topic; its error code.
pub fn create_topic_code(c: &mut RawClient, topic: &str) -> i16 {
    let t = create_topics_request::CreatableTopic::default()
        .with_name(topic_name(topic))
        .with_num_partitions(1)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![t]);
    call!(c, CreateTopics, 7, request).topics[0].error_code
}

/// The bit field Kafka's authorized-operations fields hold for these operations.
pub fn bits(operations: &[i8]) -> i32 {
    operations.iter().fold(0, |b, op| b | (1 << op))
}

/// Metadata v12 of one topic: its id.
pub fn topic_id(c: &mut RawClient, topic: &str) -> uuid::Uuid {
    let wanted = MetadataRequestTopic::default().with_name(Some(topic_name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(false);
    let t = &call!(c, Metadata, 12, request).topics[0];
    assert_eq!(t.error_code, 0, "{t:?}");
    t.topic_id
}

/// DeleteTopics v6 of one topic, by name or by id: the name answered and the error code.
pub fn delete_topic(c: &mut RawClient, topic: Result<&str, uuid::Uuid>) -> (Option<String>, i16) {
    let state = match topic {
        Ok(name) => {
            delete_topics_request::DeleteTopicState::default().with_name(Some(topic_name(name)))
        }
        Err(id) => delete_topics_request::DeleteTopicState::default().with_topic_id(id),
    };
    let request = DeleteTopicsRequest::default()
        .with_topics(vec![state])
        .with_timeout_ms(5000);
    let r = &call!(c, DeleteTopics, 6, request).responses[0];
    (r.name.as_ref().map(|n| n.to_string()), r.error_code)
}

/// InitProducerId v4, idempotent or with a transactional id: (error code, producer id).
pub fn init_producer_id(c: &mut RawClient, transactional_id: Option<&str>) -> (i16, i64) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(transactional_id.map(|t| TransactionalId(s(t))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let r = call!(c, InitProducerId, 4, request);
    (r.error_code, r.producer_id.0)
}

/// ListGroups v4: the error code and the groups listed, sorted.
pub fn list_groups(c: &mut RawClient) -> (i16, Vec<String>) {
    let r = call!(c, ListGroups, 4, ListGroupsRequest::default());
    let mut names: Vec<String> = r.groups.iter().map(|g| g.group_id.to_string()).collect();
    names.sort();
    (r.error_code, names)
}

/// DeleteGroups v2 of one group: its error code.
pub fn delete_group_code(c: &mut RawClient, group: &str) -> i16 {
    let request = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(group))]);
    call!(c, DeleteGroups, 2, request).results[0].error_code
}

/// One topic's partitions in an OffsetFetch answer: (topic, [(partition, offset, code)]).
pub type FetchedOffsets = Vec<(String, Vec<(i32, i64, i16)>)>;

/// OffsetFetch v8 of one group, partition 0 of each topic named (`None`: every topic
/// with an offset): the group's error code and its topics.
pub fn fetch_offsets(
    c: &mut RawClient,
    group: &str,
    topics: Option<&[&str]>,
) -> (i16, FetchedOffsets) {
    use offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopics};
    let topics = topics.map(|ts| {
        ts.iter()
            .map(|t| {
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name(t))
                    .with_partition_indexes(vec![0])
            })
            .collect()
    });
    let wanted = OffsetFetchRequestGroup::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(topics);
    let request = OffsetFetchRequest::default().with_groups(vec![wanted]);
    let g = &call!(c, OffsetFetch, 8, request).groups[0];
    let topics = g.topics.iter().map(|t| {
        let partitions = t.partitions.iter();
        let partitions = partitions.map(|p| (p.partition_index, p.committed_offset, p.error_code));
        (t.name.to_string(), partitions.collect())
    });
    (g.error_code, topics.collect())
}

/// OffsetFetch v7 (one group at the top) of partition 0 of `topic`: the top-level code.
pub fn fetch_offsets_v7_code(c: &mut RawClient, group: &str, topic: &str) -> i16 {
    let wanted = offset_fetch_request::OffsetFetchRequestTopic::default()
        .with_name(topic_name(topic))
        .with_partition_indexes(vec![0]);
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![wanted]));
    call!(c, OffsetFetch, 7, request).error_code
}

/// OffsetDelete v0 of partition 0 of `topic`: the top-level code and the partition's.
pub fn delete_offset(c: &mut RawClient, group: &str, topic: &str) -> (i16, Option<i16>) {
    use offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic};
    let t = OffsetDeleteRequestTopic::default()
        .with_name(topic_name(topic))
        .with_partitions(vec![
            OffsetDeleteRequestPartition::default().with_partition_index(0)
        ]);
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(vec![t].into_iter().collect());
    let r = call!(c, OffsetDelete, 0, request);
    let partition = r.topics.iter().flat_map(|t| t.partitions.iter()).next();
    (r.error_code, partition.map(|p| p.error_code))
}
