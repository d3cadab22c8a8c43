//! OffsetForLeaderEpoch: where a leader epoch ends, which consumers ask after a leader
//! change to check for truncation (KIP-320). Every partition has had one leader epoch
//! here, 0, which never ends: epoch 0 ends at the high watermark, as Kafka's leader
//! answers for its current epoch (`LeaderEpochFileCache.endOffsetFor`). The request's
//! current leader epoch is checked as Kafka's `Partition.checkCurrentLeaderEpoch` does.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::store::{TopicMeta, TopicPartition};
use crate::topic_admin::internal::is_internal;

/// Every partition's one leader epoch.
const EPOCH: i32 = 0;
/// "No epoch" in requests and answers (Kafka's `UNDEFINED_EPOCH`), and "no offset".
const UNDEFINED: i32 = -1;

/// CLUSTER_ACTION on the cluster (brokers' followers) or DESCRIBE on each topic
/// (consumers), as in Kafka; TOPIC_AUTHORIZATION_FAILED for the partitions of a topic
/// allowed neither. Followers (`replica_id` ≥ 0) are answered as consumers are.
pub async fn handle(
    gw: Gateway,
    req: OffsetForLeaderEpochRequest,
    access: Access,
) -> OffsetForLeaderEpochResponse {
    let table = gw.topics.table();
    let follower = access.permits(
        Operation::ClusterAction,
        ResourceType::Cluster,
        CLUSTER_NAME,
    );
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let allowed = follower || access.topic(Operation::Describe, &t.topic);
        let meta = table.get(&t.topic).cloned();
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let answer = if allowed {
                end_of(&gw, meta.as_deref(), &p).await
            } else {
                refused(p.partition, ResponseError::TopicAuthorizationFailed)
            };
            partitions.push(answer);
        }
        topics.push(
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic)
                .with_partitions(partitions),
        );
    }
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

/// The end of the epoch asked for in one partition.
async fn end_of(
    gw: &Gateway,
    meta: Option<&TopicMeta>,
    p: &OffsetForLeaderPartition,
) -> EpochEndOffset {
    let Some(meta) = meta.filter(|m| (0..m.partitions).contains(&p.partition)) else {
        return refused(p.partition, ResponseError::UnknownTopicOrPartition);
    };
    match p.current_leader_epoch {
        UNDEFINED | EPOCH => {}
        newer if newer > EPOCH => {
            return refused(p.partition, ResponseError::UnknownLeaderEpoch);
        }
        _ => return refused(p.partition, ResponseError::FencedLeaderEpoch),
    }
    // An epoch after ours, or none, has no end: Kafka answers no error, -1 and -1.
    if p.leader_epoch != EPOCH {
        return ended(p.partition, UNDEFINED, UNDEFINED.into());
    }
    if is_internal(&meta.name) {
        // An empty log (the offset store holds its contents).
        return ended(p.partition, EPOCH, 0);
    }
    let tp = TopicPartition {
        topic: meta.name.clone(),
        partition: p.partition,
    };
    match gw.partitions.logs().watermarks(tp.clone()).await {
        Ok(marks) => ended(p.partition, EPOCH, marks.high),
        Err(e) => {
            tracing::warn!(partition = %tp, error = %e, "offset for leader epoch failed");
            refused(p.partition, e.code())
        }
    }
}

fn ended(partition: i32, leader_epoch: i32, end_offset: i64) -> EpochEndOffset {
    EpochEndOffset::default()
        .with_partition(partition)
        .with_leader_epoch(leader_epoch)
        .with_end_offset(end_offset)
}

fn refused(partition: i32, code: ResponseError) -> EpochEndOffset {
    ended(partition, UNDEFINED, UNDEFINED.into()).with_error_code(code.code())
}
