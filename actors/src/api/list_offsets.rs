//! ListOffsets: earliest, latest, max timestamp, or the first record at or after a time.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_request::ListOffsetsRequest;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::protocol::versions::since;
use crate::store::{StoreResult, TimestampedOffset, TopicPartition};
use crate::topic_admin::internal::is_internal;

/// Special timestamps: Kafka's `ListOffsetsRequest` constants.
const LATEST: i64 = -1;
const READ_COMMITTED: i8 = 1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
/// Earliest kept locally (tiered storage): the same as earliest here.
const EARLIEST_LOCAL: i64 = -4;
/// Latest offset in tiered storage (v9, KIP-1005): nothing is tiered here.
const LATEST_TIERED: i64 = -5;
/// Earliest offset not yet uploaded to tiered storage (v11, KIP-1023): none here,
/// answered as Kafka answers it for a topic without remote storage (no offset, -1).
const EARLIEST_PENDING_UPLOAD: i64 = -6;

/// Each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED for its partitions otherwise).
pub async fn handle(
    gw: Gateway,
    version: i16,
    req: ListOffsetsRequest,
    access: Access,
) -> ListOffsetsResponse {
    // Leader epochs exist from v4.
    let epoch = if version >= since::LIST_OFFSETS_LEADER_EPOCH {
        0
    } else {
        -1
    };
    let read_committed = req.isolation_level == READ_COMMITTED;
    let table = gw.topics.table();
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let meta = table.get(&t.name).cloned();
        let denied = !access.topic(Operation::Describe, &t.name);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let answer =
                ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
            let tp = meta
                .as_ref()
                .filter(|m| (0..m.partitions).contains(&p.partition_index))
                .map(|m| TopicPartition {
                    topic: m.name.clone(),
                    partition: p.partition_index,
                });
            partitions.push(match tp {
                _ if denied => answer
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    .with_timestamp(-1)
                    .with_offset(-1)
                    .with_leader_epoch(-1),
                None => answer
                    .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                    .with_timestamp(-1)
                    .with_offset(-1)
                    .with_leader_epoch(-1),
                Some(tp) => match lookup(&gw, &tp, p.timestamp, read_committed).await {
                    Ok(found) => {
                        let found = found.unwrap_or(TimestampedOffset {
                            offset: -1,
                            timestamp: -1,
                        });
                        answer
                            .with_timestamp(found.timestamp)
                            .with_offset(found.offset)
                            .with_leader_epoch(epoch)
                    }
                    Err(e) => {
                        tracing::warn!(partition = %tp, error = %e, "list offsets failed");
                        answer
                            .with_error_code(e.code().code())
                            .with_timestamp(-1)
                            .with_offset(-1)
                            .with_leader_epoch(-1)
                    }
                },
            });
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// The offset a special or real timestamp stands for; `None` when no record matches.
/// Read committed, the latest offset is the last stable one.
async fn lookup(
    gw: &Gateway,
    tp: &TopicPartition,
    timestamp: i64,
    read_committed: bool,
) -> StoreResult<Option<TimestampedOffset>> {
    let at = |offset| {
        Some(TimestampedOffset {
            offset,
            timestamp: -1,
        })
    };
    if is_internal(&tp.topic) {
        // An empty log (the offset store holds its contents): 0 at both ends.
        let ends = matches!(timestamp, LATEST | EARLIEST | EARLIEST_LOCAL);
        return Ok(if ends { at(0) } else { None });
    }
    Ok(match timestamp {
        LATEST if read_committed => at(gw.partitions.last_stable(tp).await?),
        LATEST => at(gw.partitions.logs().watermarks(tp.clone()).await?.high),
        EARLIEST | EARLIEST_LOCAL => {
            at(gw.partitions.logs().watermarks(tp.clone()).await?.log_start)
        }
        MAX_TIMESTAMP => gw.partitions.logs().max_timestamp(tp.clone()).await?,
        t if t >= 0 => {
            gw.partitions
                .logs()
                .offset_for_timestamp(tp.clone(), t)
                .await?
        }
        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => None,
        // Any other negative timestamp names no offset either.
        _ => None,
    })
}
