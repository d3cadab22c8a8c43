//! WriteTxnMarkers: a marker (commit or abort) of a producer's transaction written
//! into partitions, through their log slots as the coordinator writes its own
//! (`Partitions::append_marker`). Kafka's coordinators send it to partition leaders;
//! here they do not (each gateway's slots write their markers), so it comes from
//! admins ending a hanging transaction: `Admin.abortTransaction`,
//! `kafka-transactions.sh abort`. Read-committed readers then move past it
//! (`txn_index.rs` learns the end from the log). A marker older than the producer's
//! epoch in the partition answers INVALID_PRODUCER_EPOCH (`ProducerStates::check_marker`);
//! from v2 a marker names its transaction version (KIP-1228), and one of transactions
//! v2 needs an epoch above the producer's (its coordinator bumped it), not equal.
//!
//! As Kafka's `handleWriteTxnMarkersRequest`: ALTER or CLUSTER_ACTION on the cluster,
//! else CLUSTER_AUTHORIZATION_FAILED for every partition; unknown partitions
//! UNKNOWN_TOPIC_OR_PARTITION; each partition answered on its own.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WriteTxnMarkersRequest,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
};

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::protocol::markers::Marker;
use crate::store::TopicPartition;
use crate::topic_admin::internal::is_internal;
use crate::transactions::slot::now_ms;

/// The transaction version from which a marker's epoch is the bumped one (KIP-890).
const TRANSACTIONS_V2: i8 = 2;

/// Each partition of `marker` answered with `code`.
fn every_partition(marker: &WritableTxnMarker, code: i16) -> WritableTxnMarkerResult {
    let topics = marker.topics.iter().map(|t| {
        let partitions = t.partition_indexes.iter().map(|&p| {
            WritableTxnMarkerPartitionResult::default()
                .with_partition_index(p)
                .with_error_code(code)
        });
        WritableTxnMarkerTopicResult::default()
            .with_name(t.name.clone())
            .with_partitions(partitions.collect())
    });
    WritableTxnMarkerResult::default()
        .with_producer_id(marker.producer_id)
        .with_topics(topics.collect())
}

pub async fn handle(
    gw: Gateway,
    req: WriteTxnMarkersRequest,
    access: Access,
) -> WriteTxnMarkersResponse {
    // Kafka asks ALTER silently first (admins), then CLUSTER_ACTION (brokers).
    let allowed = access.permits(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME)
        || access.cluster(Operation::ClusterAction);
    if !allowed {
        let code = ResponseError::ClusterAuthorizationFailed.code();
        let refused = req.markers.iter().map(|m| every_partition(m, code));
        return WriteTxnMarkersResponse::default().with_markers(refused.collect());
    }
    let table = gw.topics.table();
    let now = now_ms();
    let mut results: Vec<WritableTxnMarkerResult> = Vec::with_capacity(req.markers.len());
    // Every append is sent before any is awaited, so they reach the slots in order.
    let mut appends = Vec::new();
    for (m, marker) in req.markers.iter().enumerate() {
        let (kind, name) = match marker.transaction_result {
            true => (Marker::Commit, "commit"),
            false => (Marker::Abort, "abort"),
        };
        let producer = (marker.producer_id.0, marker.producer_epoch);
        let mut result = every_partition(marker, 0);
        for (t, topic) in result.topics.iter_mut().enumerate() {
            let meta = table.get(&topic.name);
            for (p, partition) in topic.partitions.iter_mut().enumerate() {
                let index = partition.partition_index;
                let refused = if producer.0 < 0 || producer.1 < 0 {
                    Some((ResponseError::InvalidRequest, "no producer id and epoch"))
                } else if is_internal(&topic.name) {
                    Some((
                        ResponseError::InvalidTopicException,
                        "transactional offsets end with EndTxn, not markers",
                    ))
                } else if !meta.is_some_and(|m| (0..m.partitions).contains(&index)) {
                    Some((ResponseError::UnknownTopicOrPartition, "no such partition"))
                } else {
                    None
                };
                if let Some((code, why)) = refused {
                    tracing::info!(topic = %topic.name.as_str(), partition = index, producer_id = producer.0, "WriteTxnMarkers refused: {why}");
                    partition.error_code = code.code();
                    continue;
                }
                let tp = TopicPartition {
                    topic: topic.name.as_str().into(),
                    partition: index,
                };
                // v2 (KIP-1228): a transactions v2 marker's epoch must be above the
                // producer's, as its coordinator bumped it to end the transaction.
                let strict = marker.transaction_version >= TRANSACTIONS_V2;
                let append = (gw.partitions).append_marker(
                    tp.clone(),
                    kind,
                    producer,
                    (marker.coordinator_epoch, strict),
                    now,
                );
                appends.push(((m, t, p), tp, name, append));
            }
        }
        results.push(result);
    }
    for ((m, t, p), tp, name, append) in appends {
        let producer_id = results[m].producer_id.0;
        let code = match append.await {
            Ok(Ok(appended)) => {
                tracing::info!(partition = %tp, producer_id, offset = appended.base_offset, "{name} marker written by WriteTxnMarkers");
                0
            }
            Ok(Err(e)) => {
                tracing::info!(partition = %tp, producer_id, error = %e, "{name} marker not written");
                e.code().code()
            }
            Err(e) => {
                tracing::warn!(partition = %tp, producer_id, error = %e, "{name} marker not written");
                ResponseError::NotLeaderOrFollower.code()
            }
        };
        results[m].topics[t].partitions[p].error_code = code;
    }
    WriteTxnMarkersResponse::default().with_markers(results)
}
