//! The route table: which handler serves each API key (the versions served are
//! `protocol::versions`).
//!
//! Handlers are plain functions over a typed request. Those that change state send a
//! message to the actor owning it; they do that before returning their future, so
//! pipelined requests reach the actors in the order they arrived.

mod acls;
mod alter_configs;
mod alter_partition_reassignments;
mod api_versions;
mod client_quotas;
mod config_resources;
mod consumer_groups;
mod create_partitions;
mod create_topics;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod describe_log_dirs;
mod describe_producers;
mod describe_topic_partitions;
mod describe_transactions;
mod elect_leaders;
mod fetch;
mod group_access;
mod groups;
mod incremental_alter_configs;
mod init_producer_id;
mod list_offsets;
mod list_partition_reassignments;
mod list_transactions;
mod metadata;
mod offset_for_leader_epoch;
mod offsets;
mod produce;
mod scram_credentials;
mod transactions;
mod update_features;
mod write_txn_markers;

use std::future::{ready, Future};

use futures_util::FutureExt;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::authorizer::Access;
use crate::gateway::Gateway;
use crate::protocol::{Answer, Reply, WireError};
use crate::session::Caller;

/// Starts serving one decoded request.
pub fn route(
    gw: &Gateway,
    key: ApiKey,
    version: i16,
    body: RequestKind,
    caller: Caller,
    access: Access,
) -> Result<Reply, WireError> {
    Ok(match body {
        RequestKind::ApiVersions(r) => {
            let finalized = (gw.topics.config().finalized(), gw.transactions.version());
            let this = api_versions::This {
                cluster_id: &gw.settings.cluster_id,
                node_id: gw.settings.node_id,
            };
            answered(ResponseKind::ApiVersions(api_versions::handle(
                version, &r, finalized, this,
            )))
        }
        RequestKind::Metadata(r) => answer(
            metadata::handle(gw.clone(), version, r, caller, access),
            ResponseKind::Metadata,
        ),
        RequestKind::Produce(r) => produce::handle(gw, version, r, &access),
        RequestKind::Fetch(r) => Box::pin(
            fetch::handle(gw.clone(), version, r, access).map(|a| Answer::Fetch(Box::new(a))),
        ),
        RequestKind::ListOffsets(r) => answer(
            list_offsets::handle(gw.clone(), version, r, access),
            ResponseKind::ListOffsets,
        ),
        RequestKind::OffsetForLeaderEpoch(r) => answer(
            offset_for_leader_epoch::handle(gw.clone(), r, access),
            ResponseKind::OffsetForLeaderEpoch,
        ),
        RequestKind::CreateTopics(r) => answer(
            create_topics::handle(gw, version, r, &access),
            ResponseKind::CreateTopics,
        ),
        RequestKind::DeleteTopics(r) => answer(
            delete_topics::handle(gw, version, r, &access),
            ResponseKind::DeleteTopics,
        ),
        RequestKind::DeleteRecords(r) => answer(
            delete_records::handle(gw.clone(), r, access),
            ResponseKind::DeleteRecords,
        ),
        RequestKind::CreatePartitions(r) => answer(
            create_partitions::handle(gw, r, &access),
            ResponseKind::CreatePartitions,
        ),
        RequestKind::DescribeCluster(r) => answered(ResponseKind::DescribeCluster(
            describe_cluster::handle(gw, version, &r, &caller, &access),
        )),
        RequestKind::DescribeTopicPartitions(r) => answer(
            describe_topic_partitions::handle(gw.clone(), r, access),
            ResponseKind::DescribeTopicPartitions,
        ),
        RequestKind::DescribeLogDirs(r) => answer(
            describe_log_dirs::handle(gw.clone(), r, access),
            ResponseKind::DescribeLogDirs,
        ),
        RequestKind::ElectLeaders(r) => answered(ResponseKind::ElectLeaders(
            elect_leaders::handle(gw, r, &access),
        )),
        RequestKind::ListPartitionReassignments(_) => answered(
            ResponseKind::ListPartitionReassignments(list_partition_reassignments::handle(&access)),
        ),
        RequestKind::AlterPartitionReassignments(r) => {
            answered(ResponseKind::AlterPartitionReassignments(
                alter_partition_reassignments::handle(gw, r, &access),
            ))
        }
        RequestKind::DescribeConfigs(r) => answer(
            describe_configs::handle(gw.clone(), version, r, access),
            ResponseKind::DescribeConfigs,
        ),
        RequestKind::AlterConfigs(r) => answer(
            alter_configs::handle(gw, r, &access),
            ResponseKind::AlterConfigs,
        ),
        RequestKind::IncrementalAlterConfigs(r) => answer(
            incremental_alter_configs::handle(gw, r, &access),
            ResponseKind::IncrementalAlterConfigs,
        ),
        RequestKind::UpdateFeatures(r) => answer(
            update_features::handle(gw, version, r, &access),
            ResponseKind::UpdateFeatures,
        ),
        RequestKind::InitProducerId(r) => answer(
            init_producer_id::handle(gw.clone(), version, r, access),
            ResponseKind::InitProducerId,
        ),
        RequestKind::AddPartitionsToTxn(r) => answer(
            transactions::add_partitions(gw.clone(), version, r, access),
            ResponseKind::AddPartitionsToTxn,
        ),
        RequestKind::AddOffsetsToTxn(r) => answer(
            transactions::add_offsets(gw.clone(), version, r, access),
            ResponseKind::AddOffsetsToTxn,
        ),
        RequestKind::EndTxn(r) => answer(
            transactions::end(gw.clone(), version, r, access),
            ResponseKind::EndTxn,
        ),
        RequestKind::TxnOffsetCommit(r) => answer(
            transactions::commit_offsets(gw.clone(), version, r, access),
            ResponseKind::TxnOffsetCommit,
        ),
        RequestKind::ListTransactions(r) => answer(
            list_transactions::handle(gw.clone(), r, access),
            ResponseKind::ListTransactions,
        ),
        RequestKind::DescribeTransactions(r) => answer(
            describe_transactions::handle(gw.clone(), r, access),
            ResponseKind::DescribeTransactions,
        ),
        RequestKind::DescribeProducers(r) => answer(
            describe_producers::handle(gw.clone(), r, access),
            ResponseKind::DescribeProducers,
        ),
        RequestKind::WriteTxnMarkers(r) => answer(
            write_txn_markers::handle(gw.clone(), r, access),
            ResponseKind::WriteTxnMarkers,
        ),
        RequestKind::FindCoordinator(r) => answered(ResponseKind::FindCoordinator(
            groups::find_coordinator(gw, version, r, &caller, &access),
        )),
        RequestKind::JoinGroup(r) => answer(
            groups::join(gw.clone(), version, r, caller, access),
            ResponseKind::JoinGroup,
        ),
        RequestKind::SyncGroup(r) => answer(
            groups::sync(gw.clone(), version, r, access),
            ResponseKind::SyncGroup,
        ),
        RequestKind::Heartbeat(r) => answer(
            groups::heartbeat(gw.clone(), r, access),
            ResponseKind::Heartbeat,
        ),
        RequestKind::LeaveGroup(r) => answer(
            groups::leave(gw.clone(), version, r, access),
            ResponseKind::LeaveGroup,
        ),
        RequestKind::DescribeGroups(r) => answer(
            groups::describe(gw.clone(), version, r, access),
            ResponseKind::DescribeGroups,
        ),
        RequestKind::ListGroups(r) => answer(
            groups::list(gw.clone(), version, r, access),
            ResponseKind::ListGroups,
        ),
        RequestKind::DeleteGroups(r) => answer(
            groups::delete(gw.clone(), r, access),
            ResponseKind::DeleteGroups,
        ),
        RequestKind::ConsumerGroupHeartbeat(r) => answer(
            consumer_groups::heartbeat(gw.clone(), r, caller, access),
            ResponseKind::ConsumerGroupHeartbeat,
        ),
        RequestKind::ConsumerGroupDescribe(r) => answer(
            consumer_groups::describe(gw.clone(), r, access),
            ResponseKind::ConsumerGroupDescribe,
        ),
        RequestKind::OffsetCommit(r) => answer(
            offsets::commit(gw.clone(), version, r, access),
            ResponseKind::OffsetCommit,
        ),
        RequestKind::OffsetFetch(r) => answer(
            offsets::fetch(gw.clone(), version, r, access),
            ResponseKind::OffsetFetch,
        ),
        RequestKind::OffsetDelete(r) => answer(
            offsets::delete(gw.clone(), r, access),
            ResponseKind::OffsetDelete,
        ),
        RequestKind::AlterUserScramCredentials(r) => answer(
            scram_credentials::alter(gw.clone(), r, access),
            ResponseKind::AlterUserScramCredentials,
        ),
        RequestKind::DescribeUserScramCredentials(r) => answer(
            scram_credentials::describe(gw.clone(), r, access),
            ResponseKind::DescribeUserScramCredentials,
        ),
        RequestKind::CreateAcls(r) => answer(
            acls::create(gw.clone(), access, r),
            ResponseKind::CreateAcls,
        ),
        RequestKind::DescribeAcls(r) => answer(
            acls::describe(gw.clone(), access, r),
            ResponseKind::DescribeAcls,
        ),
        RequestKind::DeleteAcls(r) => answer(
            acls::delete(gw.clone(), access, r),
            ResponseKind::DeleteAcls,
        ),
        RequestKind::DescribeClientQuotas(r) => answer(
            client_quotas::describe(gw.clone(), access, r),
            ResponseKind::DescribeClientQuotas,
        ),
        RequestKind::AlterClientQuotas(r) => answer(
            client_quotas::alter(gw.clone(), access, r),
            ResponseKind::AlterClientQuotas,
        ),
        // The decoder refuses keys outside SERVED, so this is only reached if the two disagree.
        _ => return Err(WireError::NotServed(key)),
    })
}

/// The answer to an ApiVersions request newer than served (KIP-511), at v0.
pub fn unsupported_api_versions() -> Reply {
    answered(ResponseKind::ApiVersions(api_versions::unsupported()))
}

fn answered(response: ResponseKind) -> Reply {
    Box::pin(ready(Answer::Send(Box::new(response))))
}

fn answer<T: 'static, F>(fut: F, wrap: fn(T) -> ResponseKind) -> Reply
where
    F: Future<Output = T> + 'static,
{
    Box::pin(fut.map(move |r| Answer::Send(Box::new(wrap(r)))))
}
