//! ListPartitionReassignments: no reassignment is ever in progress (the backend keeps
//! each partition's data; replicas are not placed by this gateway), so the list is
//! empty, for every partition or the ones named, known or not, as Kafka 4.1's
//! controller leaves out partitions without one.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_partition_reassignments_response::ListPartitionReassignmentsResponse;
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};

/// Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka.
pub fn handle(access: &Access) -> ListPartitionReassignmentsResponse {
    if !access.cluster(Operation::Describe) {
        let denied = ResponseError::ClusterAuthorizationFailed;
        return ListPartitionReassignmentsResponse::default()
            .with_error_code(denied.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "DESCRIBE on the cluster is not allowed",
            )));
    }
    ListPartitionReassignmentsResponse::default()
}
