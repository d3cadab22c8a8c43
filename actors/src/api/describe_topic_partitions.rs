//! DescribeTopicPartitions (KIP-966): what Metadata says of topics' partitions, a page
//! at a time, as the Java AdminClient's `describeTopics` asks for it (3.8+). Answered as
//! Kafka 4.1's broker does (`DescribeTopicPartitionsRequestHandler`,
//! `KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`): topics sorted by name
//! from the cursor's on, at most `response_partition_limit` partitions (capped at
//! Kafka's default `max.request.partition.size.limit`, 2000), and a next cursor where
//! the limit cut the answer. Partitions are placed as Metadata places them.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_topic_partitions_request::DescribeTopicPartitionsRequest;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponse, DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::metadata::{placement, LEADER_EPOCH};
use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::membership::Cluster;
use crate::store::TopicMeta;
use crate::topic_admin::internal::is_internal;
use crate::topic_admin::validate_topic_name;

/// Kafka's default `max.request.partition.size.limit`: no answer holds more partitions.
const MAX_PARTITIONS: i32 = 2000;

/// An empty topic list asks for every topic the caller may describe; the others are
/// left out. Named topics the caller may not describe answer TOPIC_AUTHORIZATION_FAILED
/// (without an id, whether they exist or not), missing ones UNKNOWN_TOPIC_OR_PARTITION.
pub async fn handle(
    gw: Gateway,
    req: DescribeTopicPartitionsRequest,
    access: Access,
) -> DescribeTopicPartitionsResponse {
    let every_topic = req.topics.is_empty();
    let cursor_topic = req.cursor.as_ref().map_or("", |c| c.topic_name.as_str());
    let named: BTreeSet<&str> = req.topics.iter().map(|t| t.name.as_str()).collect();
    if let Some(c) = &req.cursor {
        let message = if !every_topic && !named.contains(c.topic_name.as_str()) {
            Some(format!(
                "DescribeTopicPartitionsRequest topic list should contain the cursor topic: {}",
                c.topic_name.as_str()
            ))
        } else if c.partition_index < 0 {
            Some(format!(
                "DescribeTopicPartitionsRequest cursor partition must be valid: {}-{}",
                c.topic_name.as_str(),
                c.partition_index
            ))
        } else {
            None
        };
        if let Some(message) = message {
            tracing::debug!(%message, "describe topic partitions refused");
            return refused(&req, ResponseError::InvalidRequest);
        }
    }
    // A topic this gateway has not seen may have just been made through another.
    let table = gw.topics.table_knowing(named.iter().copied()).await;
    let wanted: Vec<&str> = if every_topic {
        table.all().into_iter().map(|t| &*t.name).collect()
    } else {
        named.iter().copied().collect()
    };
    let cluster = gw.groups.cluster();
    let mut denied = Vec::new();
    let mut remaining = req.response_partition_limit.clamp(1, MAX_PARTITIONS);
    let mut response = DescribeTopicPartitionsResponse::default();
    for name in wanted.into_iter().filter(|name| *name >= cursor_topic) {
        if every_topic && !access.permits(Operation::Describe, ResourceType::Topic, name) {
            continue;
        }
        if !every_topic && !access.topic(Operation::Describe, name) {
            denied.push(failed(name, ResponseError::TopicAuthorizationFailed));
            continue;
        }
        if remaining == 0 {
            // The next page starts with this topic.
            response.next_cursor = Some(cursor(name, 0));
            break;
        }
        let Some(topic) = table.get(name) else {
            let code = match validate_topic_name(name) {
                Ok(()) => ResponseError::UnknownTopicOrPartition,
                Err(_) => ResponseError::InvalidTopicException,
            };
            response.topics.push(failed(name, code));
            continue;
        };
        let first = match &req.cursor {
            Some(c) if name == cursor_topic => c.partition_index,
            _ => 0,
        };
        // In i64: a cursor near i32::MAX plus the limit would overflow an i32.
        let end = (i64::from(first) + i64::from(remaining)).min(i64::from(topic.partitions)) as i32;
        let partitions: Vec<_> = (first..end)
            .map(|p| partition(&cluster, topic, p))
            .collect();
        remaining -= partitions.len() as i32;
        let operations = access.operations(ResourceType::Topic, name);
        response
            .topics
            .push(described(topic, partitions, operations));
        if end < topic.partitions {
            response.next_cursor = Some(cursor(name, end));
            break;
        }
    }
    // As Kafka, refusals come after the topics described.
    response.topics.extend(denied);
    response
}

fn partition(
    cluster: &Cluster,
    topic: &TopicMeta,
    p: i32,
) -> DescribeTopicPartitionsResponsePartition {
    let placed = placement(cluster, &topic.name, p);
    DescribeTopicPartitionsResponsePartition::default()
        .with_partition_index(p)
        .with_leader_id(placed.leader)
        .with_leader_epoch(LEADER_EPOCH)
        .with_replica_nodes(placed.replicas)
        .with_isr_nodes(placed.isr)
        // No replica ever falls out of sync, so none is eligible or was (KIP-966).
        .with_eligible_leader_replicas(Some(Vec::new()))
        .with_last_known_elr(Some(Vec::new()))
}

fn described(
    topic: &TopicMeta,
    partitions: Vec<DescribeTopicPartitionsResponsePartition>,
    operations: i32,
) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_name(Some(topic_name(&topic.name)))
        .with_topic_id(topic.id)
        .with_is_internal(is_internal(&topic.name))
        .with_partitions(partitions)
        .with_topic_authorized_operations(operations)
}

/// A topic answered with an error: no id, no partitions.
fn failed(name: &str, code: ResponseError) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(code.code())
        .with_name(Some(topic_name(name)))
        .with_topic_id(Uuid::nil())
}

/// The whole request refused, as Kafka's `getErrorResponse`: each topic named answers
/// the code.
fn refused(
    req: &DescribeTopicPartitionsRequest,
    code: ResponseError,
) -> DescribeTopicPartitionsResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            DescribeTopicPartitionsResponseTopic::default()
                .with_error_code(code.code())
                .with_name(Some(t.name.clone()))
        })
        .collect();
    DescribeTopicPartitionsResponse::default().with_topics(topics)
}

fn cursor(topic: &str, partition: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(topic_name(topic))
        .with_partition_index(partition)
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}
