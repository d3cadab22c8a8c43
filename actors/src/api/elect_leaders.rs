//! ElectLeaders: every partition already has its preferred leader (Metadata names one
//! per partition and any gateway serves any partition), so no election is ever
//! needed. Answered as Kafka 4.1's controller answers
//! (`ReplicationControlManager.electLeaders`): ELECTION_NOT_NEEDED for each partition
//! named, UNKNOWN_TOPIC_OR_PARTITION for missing ones, and, for every partition (a
//! null list), only the partitions an election was needed for: none.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::elect_leaders_request::ElectLeadersRequest;
use kafka_protocol::messages::elect_leaders_response::{
    ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;

/// ELECTION_NOT_NEEDED's message (Kafka's `Errors` default, which its controller sends).
const NOT_NEEDED: &str = "Leader election not needed for topic partition.";

/// Kafka's `ElectionType`: preferred (0) and unclean (1).
const ELECTION_TYPES: std::ops::RangeInclusive<i8> = 0..=1;

/// Needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED at the top and for every
/// partition named otherwise, as Kafka's `ElectLeadersRequest.getErrorResponse`.
pub fn handle(gw: &Gateway, req: ElectLeadersRequest, access: &Access) -> ElectLeadersResponse {
    if !access.cluster(Operation::Alter) {
        let message = "ALTER on the cluster is not allowed".to_string();
        return refused(req, ResponseError::ClusterAuthorizationFailed, message);
    }
    if !ELECTION_TYPES.contains(&req.election_type) {
        let message = format!("Invalid election type {}", req.election_type);
        tracing::debug!(%message, "elect leaders refused");
        return refused(req, ResponseError::InvalidRequest, message);
    }
    let Some(topics) = req.topic_partitions else {
        return ElectLeadersResponse::default();
    };
    let table = gw.topics.table();
    let results = topics
        .into_iter()
        .map(|t| {
            let partitions = table.get(&t.topic).map_or(0, |m| m.partitions);
            let answers = t
                .partitions
                .iter()
                .map(|&p| {
                    let (code, message) = if (0..partitions).contains(&p) {
                        let code = ResponseError::ElectionNotNeeded;
                        (code, NOT_NEEDED.to_string())
                    } else if partitions == 0 {
                        let unknown = ResponseError::UnknownTopicOrPartition;
                        (unknown, format!("No such topic as {}", t.topic.as_str()))
                    } else {
                        let unknown = ResponseError::UnknownTopicOrPartition;
                        (
                            unknown,
                            format!("No such partition as {}-{p}", t.topic.as_str()),
                        )
                    };
                    result(p, code, message)
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(t.topic)
                .with_partition_result(answers)
        })
        .collect();
    ElectLeadersResponse::default().with_replica_election_results(results)
}

fn result(partition: i32, code: ResponseError, message: String) -> PartitionResult {
    PartitionResult::default()
        .with_partition_id(partition)
        .with_error_code(code.code())
        .with_error_message(Some(StrBytes::from_string(message)))
}

/// The whole request refused: the code at the top and for every partition named.
fn refused(req: ElectLeadersRequest, code: ResponseError, message: String) -> ElectLeadersResponse {
    let results = req
        .topic_partitions
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            let answers = t
                .partitions
                .iter()
                .map(|&p| result(p, code, message.clone()))
                .collect();
            ReplicaElectionResult::default()
                .with_topic(t.topic)
                .with_partition_result(answers)
        })
        .collect();
    ElectLeadersResponse::default()
        .with_error_code(code.code())
        .with_replica_election_results(results)
}
