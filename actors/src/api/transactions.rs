//! The transactional producer's coordinator requests: AddPartitionsToTxn,
//! AddOffsetsToTxn and EndTxn go to the transaction slot of their transactional id
//! (`transactions/`); TxnOffsetCommit, which the group's coordinator serves, holds the
//! offsets until the transaction ends. Each needs WRITE on the transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as in Kafka.

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_protocol::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::end_txn_request::EndTxnRequest;
use kafka_protocol::messages::end_txn_response::EndTxnResponse;
use kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::ProducerId;

use super::group_access::{group_denied, not_coordinator};
use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::group_coordinator::{CheckCommit, MemberRef};
use crate::protocol::versions::since;
use crate::store::{CommittedOffset, TopicPartition};
use crate::topic_admin::internal::is_internal;
use crate::transactions::remote_adds::Added;
use crate::transactions::slot::{Add, Describe, End, EndAnswer};
use crate::transactions::state::{EndAsk, OldEpoch, TxnError, TxnState};

/// Offsets metadata longer than this is refused, as OffsetCommit refuses it.
const MAX_METADATA: usize = 4096;

fn txn_denied(access: &Access, id: &str) -> bool {
    !access.allows(Operation::Write, ResourceType::TransactionalId, id)
}

/// Why the slot refused a request, an old epoch answered `old`, or why no answer
/// came; `None` when done.
fn refusal(
    id: &str,
    what: &str,
    old: OldEpoch,
    answer: Result<Result<(), TxnError>, actix::MailboxError>,
) -> Option<ResponseError> {
    match answer {
        Ok(Ok(())) => None,
        Ok(Err(e)) => {
            tracing::info!(transactional_id = id, error = %e, "{what} refused");
            Some(e.code_with(old))
        }
        Err(_) => Some(ResponseError::CoordinatorNotAvailable),
    }
}

/// [`refusal`] as an error code.
fn settled(
    id: &str,
    what: &str,
    old: OldEpoch,
    answer: Result<Result<(), TxnError>, actix::MailboxError>,
) -> i16 {
    refusal(id, what, old, answer).map_or(0, |e| e.code())
}

/// Every partition of `topics` answered with `code`.
fn all_partitions(
    topics: &[AddPartitionsToTxnTopic],
    code: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| {
            let partitions = t.partitions.iter().map(|&p| {
                AddPartitionsToTxnPartitionResult::default()
                    .with_partition_index(p)
                    .with_partition_error_code(code)
            });
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(partitions.collect())
        })
        .collect()
}

/// What the coordinator answered for a transaction's partitions: one code for them
/// all, or, to the verify-only form, the transaction each must be in.
enum Answered {
    All(i16),
    Verified(TxnState),
}

impl Answered {
    /// A partition's code: for the verify-only form TRANSACTION_ABORTABLE when the
    /// transaction does not hold it, as Kafka's `handleVerifyPartitionsInTransaction`.
    fn code(&self, tp: &(String, i32)) -> i16 {
        match self {
            Answered::All(code) => *code,
            Answered::Verified(s) if s.partitions.contains(tp) => 0,
            Answered::Verified(_) => ResponseError::TransactionAbortable.code(),
        }
    }
}

/// The verify-only form brokers send (v4+, KIP-890): the producer must be the id's
/// current one at its epoch (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED) with no end
/// being decided (CONCURRENT_TRANSACTIONS); then each partition is looked for.
async fn verify(gw: &Gateway, id: &str, (producer_id, epoch): (i64, i16)) -> Answered {
    let state = gw.transactions.ask(id, Describe(id.to_string())).await;
    let refused = |e: TxnError| Answered::All(e.code().code());
    match state {
        Ok(Ok(Some(s))) => match s.check_joinable(producer_id, epoch) {
            Ok(()) => Answered::Verified(s),
            Err(e) => refused(e),
        },
        Ok(Ok(None)) => refused(TxnError::NoProducer(id.to_string())),
        Ok(Err(e)) => refused(e),
        Err(_) => Answered::All(ResponseError::CoordinatorNotAvailable.code()),
    }
}

/// One transaction's partitions: added, or for the verify-only form brokers send
/// (v4+, KIP-890) checked to be in it already. An old epoch is INVALID_PRODUCER_EPOCH
/// below v2, as Kafka answers clients from before PRODUCER_FENCED.
async fn add_one(
    gw: &Gateway,
    version: i16,
    access: &Access,
    txn: AddPartitionsToTxnTransaction,
) -> AddPartitionsToTxnResult {
    let id = txn.transactional_id.to_string();
    let result = AddPartitionsToTxnResult::default().with_transactional_id(txn.transactional_id);
    if txn_denied(access, &id) {
        let code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return result.with_topic_results(all_partitions(&txn.topics, code));
    }
    // Unknown or denied partitions fail; the others are then not attempted (Kafka).
    let table = gw.topics.table();
    let mut failed = false;
    let mut wanted = Vec::new();
    let mut codes: Vec<Vec<i16>> = Vec::with_capacity(txn.topics.len());
    for t in &txn.topics {
        let meta = table.get(&t.name).filter(|m| !is_internal(&m.name));
        let denied = !access.topic(Operation::Write, &t.name);
        codes.push(
            t.partitions
                .iter()
                .map(|&p| {
                    let code = match meta {
                        _ if denied => ResponseError::TopicAuthorizationFailed.code(),
                        Some(m) if (0..m.partitions).contains(&p) => {
                            wanted.push((t.name.to_string(), p));
                            return 0;
                        }
                        _ => ResponseError::UnknownTopicOrPartition.code(),
                    };
                    failed = true;
                    code
                })
                .collect(),
        );
    }
    let answered = if failed {
        None
    } else if txn.verify_only {
        Some(verify(gw, &id, (txn.producer_id.0, txn.producer_epoch)).await)
    } else {
        let add = Add {
            id: id.clone(),
            producer_id: txn.producer_id.0,
            epoch: txn.producer_epoch,
            partitions: wanted,
            group: None,
        };
        let old = OldEpoch::at(version, since::ADD_PARTITIONS_TO_TXN_PRODUCER_FENCED);
        let answer = gw.transactions.ask(&id, add).await;
        Some(Answered::All(settled(
            &id,
            "AddPartitionsToTxn",
            old,
            answer,
        )))
    };
    let topics = txn.topics.iter().zip(codes).map(|(t, codes)| {
        let partitions = t.partitions.iter().zip(codes).map(|(&p, c)| {
            let c = match &answered {
                Some(answered) => answered.code(&(t.name.to_string(), p)),
                None if c == 0 => ResponseError::OperationNotAttempted.code(),
                None => c,
            };
            AddPartitionsToTxnPartitionResult::default()
                .with_partition_index(p)
                .with_partition_error_code(c)
        });
        AddPartitionsToTxnTopicResult::default()
            .with_name(t.name.clone())
            .with_results_by_partition(partitions.collect())
    });
    result.with_topic_results(topics.collect())
}

/// v0–3 carry one transaction from its producer; v4+ a batch of them from a broker,
/// which needs CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED).
pub async fn add_partitions(
    gw: Gateway,
    version: i16,
    req: AddPartitionsToTxnRequest,
    access: Access,
) -> AddPartitionsToTxnResponse {
    if version < since::ADD_PARTITIONS_TO_TXN_BATCHED {
        let txn = AddPartitionsToTxnTransaction::default()
            .with_transactional_id(req.v3_and_below_transactional_id)
            .with_producer_id(req.v3_and_below_producer_id)
            .with_producer_epoch(req.v3_and_below_producer_epoch)
            .with_topics(req.v3_and_below_topics);
        let result = add_one(&gw, version, &access, txn).await;
        return AddPartitionsToTxnResponse::default()
            .with_results_by_topic_v3_and_below(result.topic_results);
    }
    if !access.cluster(Operation::ClusterAction) {
        return AddPartitionsToTxnResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let mut results = Vec::with_capacity(req.transactions.len());
    for txn in req.transactions {
        results.push(add_one(&gw, version, &access, txn).await);
    }
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// Also READ on the group (GROUP_AUTHORIZATION_FAILED). An old epoch is
/// INVALID_PRODUCER_EPOCH below v2, PRODUCER_FENCED from it, as Kafka answers.
pub async fn add_offsets(
    gw: Gateway,
    version: i16,
    req: AddOffsetsToTxnRequest,
    access: Access,
) -> AddOffsetsToTxnResponse {
    let id = req.transactional_id.to_string();
    let refused = |e: ResponseError| AddOffsetsToTxnResponse::default().with_error_code(e.code());
    if txn_denied(&access, &id) {
        return refused(ResponseError::TransactionalIdAuthorizationFailed);
    }
    if let Some(e) = group_denied(&access, Operation::Read, &req.group_id) {
        return refused(e);
    }
    let add = Add {
        id: id.clone(),
        producer_id: req.producer_id.0,
        epoch: req.producer_epoch,
        partitions: Vec::new(),
        group: Some(req.group_id.to_string()),
    };
    let old = OldEpoch::at(version, since::ADD_OFFSETS_TO_TXN_PRODUCER_FENCED);
    let code = settled(
        &id,
        "AddOffsetsToTxn",
        old,
        gw.transactions.ask(&id, add).await,
    );
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

/// From v5 (transactions v2) every end bumps the epoch, and the answer carries the
/// producer id and epoch the producer goes on with. An old epoch is
/// INVALID_PRODUCER_EPOCH below v2, PRODUCER_FENCED from it, as Kafka answers.
pub async fn end(gw: Gateway, version: i16, req: EndTxnRequest, access: Access) -> EndTxnResponse {
    let id = req.transactional_id.to_string();
    let answer = EndTxnResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if txn_denied(&access, &id) {
        return answer.with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code());
    }
    let ask = EndAsk {
        commit: req.committed,
        producer_id: req.producer_id.0,
        epoch: req.producer_epoch,
        bump: version >= since::END_TXN_EPOCH_BUMP,
    };
    let end = End {
        id: id.clone(),
        ask,
    };
    match gw.transactions.ask(&id, end).await {
        Ok(Ok(EndAnswer {
            producer: (producer_id, epoch),
            completed,
        })) => {
            if let Some(completed) = completed {
                // The markers are out (or left to a later tick) before the answer.
                let _ = completed.await;
            }
            answer
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch)
        }
        other => {
            let old = OldEpoch::at(version, since::END_TXN_PRODUCER_FENCED);
            let code = settled(&id, "EndTxn", old, other.map(|r| r.map(|_| ())));
            answer.with_error_code(code)
        }
    }
}

/// The transaction a commit's offsets go into, as Kafka's group coordinator checks it
/// with the transaction's coordinator before anything else: from v5 (transactions v2)
/// the group joins it, as AddOffsetsToTxn would have done (`join_group`); before,
/// the producer must be the id's current one with no end being decided (its stored
/// state, which every gateway reads). A fenced producer's offsets are refused
/// INVALID_PRODUCER_EPOCH (47), never held for its successor's transaction.
async fn transaction_refused(
    gw: &Gateway,
    version: i16,
    req: &TxnOffsetCommitRequest,
) -> Option<ResponseError> {
    let id = req.transactional_id.to_string();
    let answer = match version >= since::TXN_OFFSET_COMMIT_IMPLICIT_ADD {
        true => join_group(gw, req).await,
        false => {
            let producer = (req.producer_id.0, req.producer_epoch);
            Ok(gw.transactions.joinable(&id, producer).await)
        }
    };
    refusal(
        &id,
        "TxnOffsetCommit",
        OldEpoch::InvalidProducerEpoch,
        answer,
    )
}

/// The group joins the transaction (TxnOffsetCommit v5, transactions v2). Kafka's
/// group coordinator asks the transaction's coordinator: here its slot, or the table
/// when another gateway coordinates the id (`remote_adds.rs`).
async fn join_group(
    gw: &Gateway,
    req: &TxnOffsetCommitRequest,
) -> Result<Result<(), TxnError>, actix::MailboxError> {
    let (id, group) = (req.transactional_id.to_string(), req.group_id.to_string());
    let producer = (req.producer_id.0, req.producer_epoch);
    if !gw.transactions.coordinates(&id) {
        let added = Added::Group(group);
        return Ok(gw.transactions.add_remotely(&id, producer, added).await);
    }
    let add = Add {
        id: id.clone(),
        producer_id: producer.0,
        epoch: producer.1,
        partitions: Vec::new(),
        group: Some(group),
    };
    gw.transactions.ask(&id, add).await
}

/// A commit that names a member (KIP-447: v3+ carries the consumer's generation, member
/// id and instance id) is checked as OffsetCommit checks one, as Kafka's
/// `validateOffsetCommit` does for a transactional commit: a zombie whose partitions a
/// rebalance moved, or a member from before a restart, cannot commit for the group.
/// One that names none (v0-2, or a producer outside group management) is let through.
async fn member_refused(gw: &Gateway, req: &TxnOffsetCommitRequest) -> Option<ResponseError> {
    let named = req.generation_id_or_member_epoch >= 0
        || !req.member_id.is_empty()
        || req.group_instance_id.is_some();
    if !named {
        return None;
    }
    gw.groups
        .ask(CheckCommit(MemberRef {
            group: req.group_id.to_string(),
            generation: req.generation_id_or_member_epoch,
            member_id: req.member_id.to_string(),
            instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
        }))
        .await
        .unwrap_or(Err(ResponseError::CoordinatorNotAvailable))
        .err()
}

/// Served by the group's coordinator: READ on the group and on each topic; then the
/// transaction (`transaction_refused`), then the member (`member_refused`), in
/// Kafka's order. The offsets are held until the transaction ends (`offsets/held.rs`).
pub async fn commit_offsets(
    gw: Gateway,
    version: i16,
    req: TxnOffsetCommitRequest,
    access: Access,
) -> TxnOffsetCommitResponse {
    let id = req.transactional_id.to_string();
    let group = req.group_id.to_string();
    let mut whole = if txn_denied(&access, &id) {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else {
        group_denied(&access, Operation::Read, &group).or_else(|| not_coordinator(&gw, &group))
    };
    if whole.is_none() {
        whole = transaction_refused(&gw, version, &req).await;
    }
    if whole.is_none() {
        whole = member_refused(&gw, &req).await;
    }
    let table = gw.topics.table();
    let mut staged = Vec::new();
    let mut answers: Vec<(usize, i32, Option<ResponseError>)> = Vec::new();
    let by_id = version >= since::TXN_OFFSET_COMMIT_TOPIC_IDS;
    for (t, topic) in req.topics.iter().enumerate() {
        // From v6 topics are named by id (KIP-1319): an unknown id is UNKNOWN_TOPIC_ID,
        // and the topic's name is checked only once the id is known, as Fetch does.
        let meta = match by_id {
            true => table.by_id(&topic.topic_id),
            false => table.get(&topic.name),
        };
        let name = meta.map_or(topic.name.as_str(), |m| &m.name);
        let denied = (meta.is_some() || !by_id) && !access.topic(Operation::Read, name);
        let unknown = match by_id {
            true => ResponseError::UnknownTopicId,
            false => ResponseError::UnknownTopicOrPartition,
        };
        for p in &topic.partitions {
            let metadata = p.committed_metadata.as_deref().unwrap_or_default();
            let error = whole.or(if denied {
                Some(ResponseError::TopicAuthorizationFailed)
            } else if meta.is_none() {
                Some(unknown)
            } else if !meta.is_some_and(|m| (0..m.partitions).contains(&p.partition_index)) {
                Some(ResponseError::UnknownTopicOrPartition)
            } else if metadata.len() > MAX_METADATA {
                Some(ResponseError::OffsetMetadataTooLarge)
            } else {
                None
            });
            if error.is_none() {
                let tp = TopicPartition {
                    topic: name.into(),
                    partition: p.partition_index,
                };
                let committed = CommittedOffset {
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: metadata.to_string(),
                };
                staged.push((tp, committed));
            }
            answers.push((t, p.partition_index, error));
        }
    }
    let stored = match staged.is_empty() {
        true => Ok(()),
        false => {
            let group: Arc<str> = group.as_str().into();
            let held = gw.offsets.hold(&group, req.producer_id.0, staged).await;
            held.map_err(|e| {
                tracing::warn!(group = %group, error = %e, "transactional offsets not stored");
                e.code()
            })
        }
    };
    let mut topics: Vec<TxnOffsetCommitResponseTopic> = req
        .topics
        .iter()
        .map(|t| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_topic_id(t.topic_id)
        })
        .collect();
    for (t, partition, error) in answers {
        let code = match (error, &stored) {
            (Some(e), _) | (None, &Err(e)) => e.code(),
            (None, Ok(())) => 0,
        };
        topics[t].partitions.push(
            TxnOffsetCommitResponsePartition::default()
                .with_partition_index(partition)
                .with_error_code(code),
        );
    }
    TxnOffsetCommitResponse::default().with_topics(topics)
}
