//! The error codes an answer carries, counted the way Kafka's `errorCounts()` counts
//! them: one per partition, topic, group or member result. A request-level code that
//! sits beside such results counts only when set, so a Fetch without a top-level error
//! is not counted twice. An API added to `api::SERVED` is taught here too;
//! `tests/protocol_versions/mod.rs` fails for a served API whose answers are not counted.

use kafka_protocol::messages::{FetchResponse, ResponseKind};

/// Every error code in `response`, `0` (NONE) included.
pub(super) fn of(response: &ResponseKind) -> Vec<i16> {
    let mut codes = Vec::new();
    match response {
        ResponseKind::Produce(r) => codes.extend(
            r.responses
                .iter()
                .flat_map(|t| &t.partition_responses)
                .map(|p| p.error_code),
        ),
        ResponseKind::ListOffsets(r) => codes.extend(
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::Metadata(r) => {
            for t in &r.topics {
                codes.push(t.error_code);
                codes.extend(t.partitions.iter().map(|p| p.error_code));
            }
            beside(&mut codes, r.error_code);
        }
        ResponseKind::ApiVersions(r) => codes.push(r.error_code),
        ResponseKind::SaslHandshake(r) => codes.push(r.error_code),
        ResponseKind::SaslAuthenticate(r) => codes.push(r.error_code),
        ResponseKind::AlterUserScramCredentials(r) => {
            codes.extend(r.results.iter().map(|u| u.error_code))
        }
        ResponseKind::DescribeUserScramCredentials(r) => {
            codes.extend(r.results.iter().map(|u| u.error_code));
            beside(&mut codes, r.error_code);
        }
        ResponseKind::CreateTopics(r) => codes.extend(r.topics.iter().map(|t| t.error_code)),
        ResponseKind::DeleteTopics(r) => codes.extend(r.responses.iter().map(|t| t.error_code)),
        ResponseKind::CreatePartitions(r) => codes.extend(r.results.iter().map(|t| t.error_code)),
        ResponseKind::DeleteRecords(r) => codes.extend(
            (r.topics.iter())
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::DescribeLogDirs(r) => {
            codes.extend(r.results.iter().map(|d| d.error_code));
            beside(&mut codes, r.error_code);
        }
        ResponseKind::DescribeTopicPartitions(r) => {
            for t in &r.topics {
                codes.push(t.error_code);
                codes.extend(t.partitions.iter().map(|p| p.error_code));
            }
        }
        ResponseKind::InitProducerId(r) => codes.push(r.error_code),
        ResponseKind::AddPartitionsToTxn(r) => {
            let by_transaction = r
                .results_by_transaction
                .iter()
                .flat_map(|t| &t.topic_results);
            codes.extend(
                (r.results_by_topic_v3_and_below.iter().chain(by_transaction))
                    .flat_map(|t| &t.results_by_partition)
                    .map(|p| p.partition_error_code),
            );
            beside(&mut codes, r.error_code);
        }
        ResponseKind::AddOffsetsToTxn(r) => codes.push(r.error_code),
        ResponseKind::EndTxn(r) => codes.push(r.error_code),
        ResponseKind::TxnOffsetCommit(r) => codes.extend(
            (r.topics.iter())
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::WriteTxnMarkers(r) => codes.extend(
            (r.markers.iter())
                .flat_map(|m| &m.topics)
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::ListTransactions(r) => codes.push(r.error_code),
        ResponseKind::DescribeTransactions(r) => {
            codes.extend(r.transaction_states.iter().map(|t| t.error_code))
        }
        ResponseKind::DescribeProducers(r) => codes.extend(
            (r.topics.iter())
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::DescribeCluster(r) => codes.push(r.error_code),
        ResponseKind::ListPartitionReassignments(r) => codes.push(r.error_code),
        ResponseKind::AlterPartitionReassignments(r) => {
            codes.extend(
                r.responses
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code),
            );
            beside(&mut codes, r.error_code);
        }
        ResponseKind::ElectLeaders(r) => {
            codes.extend(
                r.replica_election_results
                    .iter()
                    .flat_map(|t| &t.partition_result)
                    .map(|p| p.error_code),
            );
            beside(&mut codes, r.error_code);
        }
        ResponseKind::OffsetForLeaderEpoch(r) => codes.extend(
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::FindCoordinator(r) => {
            // v4+ answers per key; earlier versions at the top.
            codes.extend(r.coordinators.iter().map(|c| c.error_code));
            beside(&mut codes, r.error_code);
        }
        ResponseKind::JoinGroup(r) => codes.push(r.error_code),
        ResponseKind::SyncGroup(r) => codes.push(r.error_code),
        ResponseKind::Heartbeat(r) => codes.push(r.error_code),
        ResponseKind::LeaveGroup(r) => {
            codes.extend(r.members.iter().map(|m| m.error_code));
            beside(&mut codes, r.error_code);
        }
        ResponseKind::DescribeGroups(r) => codes.extend(r.groups.iter().map(|g| g.error_code)),
        ResponseKind::ListGroups(r) => codes.push(r.error_code),
        ResponseKind::DeleteGroups(r) => codes.extend(r.results.iter().map(|g| g.error_code)),
        ResponseKind::ConsumerGroupHeartbeat(r) => codes.push(r.error_code),
        ResponseKind::ConsumerGroupDescribe(r) => {
            codes.extend(r.groups.iter().map(|g| g.error_code))
        }
        ResponseKind::OffsetCommit(r) => codes.extend(
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.error_code),
        ),
        ResponseKind::OffsetFetch(r) => {
            // v8+ answers per group; earlier versions for the one group at the top.
            for g in &r.groups {
                codes.extend(
                    g.topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .map(|p| p.error_code),
                );
                beside(&mut codes, g.error_code);
            }
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code),
            );
            beside(&mut codes, r.error_code);
        }
        ResponseKind::OffsetDelete(r) => {
            codes.extend(
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code),
            );
            beside(&mut codes, r.error_code);
        }
        ResponseKind::DescribeConfigs(r) => codes.extend(r.results.iter().map(|c| c.error_code)),
        ResponseKind::AlterConfigs(r) => codes.extend(r.responses.iter().map(|c| c.error_code)),
        ResponseKind::IncrementalAlterConfigs(r) => {
            codes.extend(r.responses.iter().map(|c| c.error_code))
        }
        ResponseKind::UpdateFeatures(r) => {
            // v0-1 answer per feature; v2 at the top only.
            codes.extend(r.results.iter().map(|f| f.error_code));
            beside(&mut codes, r.error_code);
        }
        ResponseKind::CreateAcls(r) => codes.extend(r.results.iter().map(|c| c.error_code)),
        ResponseKind::DescribeAcls(r) => codes.push(r.error_code),
        ResponseKind::DeleteAcls(r) => codes.extend(r.filter_results.iter().map(|f| f.error_code)),
        ResponseKind::DescribeClientQuotas(r) => codes.push(r.error_code),
        ResponseKind::AlterClientQuotas(r) => codes.extend(r.entries.iter().map(|e| e.error_code)),
        _ => {}
    }
    codes
}

/// Every error code in a Fetch answer (which travels apart: `protocol::fetch_answer`).
pub(super) fn of_fetch(r: &FetchResponse) -> Vec<i16> {
    let mut codes: Vec<i16> = r
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.error_code)
        .collect();
    beside(&mut codes, r.error_code);
    codes
}

/// A request-level code next to per-item results: counted when set, or when there are
/// no item results to count.
fn beside(codes: &mut Vec<i16>, code: i16) {
    if code != 0 || codes.is_empty() {
        codes.push(code);
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::ProduceResponse;

    use super::*;

    #[test]
    fn partition_results_count_one_each() {
        let partitions =
            [0, 3, 3].map(|code| PartitionProduceResponse::default().with_error_code(code));
        let r = ProduceResponse::default().with_responses(vec![
            TopicProduceResponse::default().with_partition_responses(partitions.into())
        ]);
        assert_eq!(of(&ResponseKind::Produce(r)), vec![0, 3, 3]);
    }

    #[test]
    fn an_unset_request_level_code_beside_results_is_not_counted() {
        assert_eq!(of_fetch(&FetchResponse::default()), vec![0]);
        let failed = FetchResponse::default().with_error_code(87);
        assert_eq!(of_fetch(&failed), vec![87]);
    }
}
