//! AlterPartitionReassignments: refused for each partition, since the backend keeps
//! each partition's data and this gateway places no replicas; cancelling (null
//! replicas) answers NO_REASSIGNMENT_IN_PROGRESS, as Kafka's controller does when none
//! is under way; a missing topic or partition UNKNOWN_TOPIC_OR_PARTITION.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_request::AlterPartitionReassignmentsRequest;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    AlterPartitionReassignmentsResponse, ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;

/// Why a target is refused.
const NOT_PLACED: &str =
    "the backend keeps each partition's data; replicas are not placed by this gateway";

/// Needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED at the top and for every
/// partition otherwise (`AlterPartitionReassignmentsRequest.getErrorResponse`).
pub fn handle(
    gw: &Gateway,
    req: AlterPartitionReassignmentsRequest,
    access: &Access,
) -> AlterPartitionReassignmentsResponse {
    let allowed = access.cluster(Operation::Alter);
    let denied = (
        ResponseError::ClusterAuthorizationFailed,
        "ALTER on the cluster is not allowed".to_string(),
    );
    let table = gw.topics.table();
    let responses = req
        .topics
        .into_iter()
        .map(|t| {
            let partitions = table.get(&t.name).map_or(0, |m| m.partitions);
            let answers = t
                .partitions
                .iter()
                .map(|p| {
                    let (code, message) = if !allowed {
                        denied.clone()
                    } else if !(0..partitions).contains(&p.partition_index) {
                        let unknown = ResponseError::UnknownTopicOrPartition;
                        let message =
                            format!("{}-{} does not exist", t.name.as_str(), p.partition_index);
                        (unknown, message)
                    } else if p.replicas.is_none() {
                        let none = ResponseError::NoReassignmentInProgress;
                        (
                            none,
                            "No partition reassignment is in progress.".to_string(),
                        )
                    } else {
                        (
                            ResponseError::InvalidReplicaAssignment,
                            NOT_PLACED.to_string(),
                        )
                    };
                    ReassignablePartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code.code())
                        .with_error_message(Some(StrBytes::from_string(message)))
                })
                .collect();
            ReassignableTopicResponse::default()
                .with_name(t.name)
                .with_partitions(answers)
        })
        .collect();
    let response = AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(req.allow_replication_factor_change)
        .with_responses(responses);
    if allowed {
        return response;
    }
    response
        .with_error_code(denied.0.code())
        .with_error_message(Some(StrBytes::from_string(denied.1)))
}
