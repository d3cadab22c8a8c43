//! DeleteRecords: each partition's log start moves up to the offset asked for (-1:
//! the high watermark), and the answer carries the log start after (`low_watermark`).
//! The log store checks and moves it (`LogCall::DeleteRecords`): past the high
//! watermark is OFFSET_OUT_OF_RANGE, below the log start changes nothing. The
//! internal `__consumer_offsets` is an empty log here, as Fetch and ListOffsets
//! serve it: only 0 and -1 are in range.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_request::DeleteRecordsRequest;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult,
};

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::store::{StoreResult, TopicPartition, Watermarks};
use crate::topic_admin::internal::is_internal;

/// Each topic needs DELETE on it (TOPIC_AUTHORIZATION_FAILED for its partitions,
/// whether it exists or not), as `KafkaApis.handleDeleteRecordsRequest` decides.
pub async fn handle(
    gw: Gateway,
    req: DeleteRecordsRequest,
    access: Access,
) -> DeleteRecordsResponse {
    let table = gw.topics.table();
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let meta = table.get(&t.name).cloned();
        let denied = !access.topic(Operation::Delete, &t.name);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let tp = meta
                .as_ref()
                .filter(|m| (0..m.partitions).contains(&p.partition_index))
                .map(|m| TopicPartition {
                    topic: m.name.clone(),
                    partition: p.partition_index,
                });
            let outcome = match tp {
                _ if denied => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(tp) => delete(&gw, &tp, p.offset).await.map_err(|e| {
                    tracing::info!(partition = %tp, offset = p.offset, error = %e, "records not deleted");
                    e.code()
                }),
            };
            let answer =
                DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
            partitions.push(match outcome {
                Ok(low_watermark) => {
                    tracing::info!(topic = %t.name.as_str(), partition = p.partition_index, low_watermark, "records deleted");
                    answer.with_low_watermark(low_watermark)
                }
                Err(code) => answer.with_low_watermark(-1).with_error_code(code.code()),
            });
        }
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}

/// The log start after deleting below `offset`.
async fn delete(gw: &Gateway, tp: &TopicPartition, offset: i64) -> StoreResult<i64> {
    if is_internal(&tp.topic) {
        // Its contents live in the offset store: an empty log, 0 at both ends.
        return Watermarks::default().moved_start(tp, offset).map(|_| 0);
    }
    let w = gw
        .partitions
        .logs()
        .delete_records(tp.clone(), offset)
        .await?;
    Ok(w.log_start)
}
