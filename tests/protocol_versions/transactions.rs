//! The transaction APIs at each version: AddPartitionsToTxn (v0–3 from producers, v4+
//! batched from brokers with the verify-only form), AddOffsetsToTxn, EndTxn and
//! TxnOffsetCommit, each on a transaction of its own opened by InitProducerId.

use crate::support;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, topic_name, RawClient};
use uuid::Uuid;

use super::{committed, Topic};

/// A transactional producer's id and epoch for `id`.
pub(super) fn init(c: &mut RawClient, id: &str) -> (ProducerId, i16) {
    let p = support::transactions::init(c, id);
    (ProducerId(p.pid), p.epoch)
}

fn topics(t: &Topic) -> Vec<AddPartitionsToTxnTopic> {
    vec![AddPartitionsToTxnTopic::default()
        .with_name(t.name.clone())
        .with_partitions(vec![0])]
}

/// Partition 0 of the test topic added at `v` (v0–3: the producer's form).
fn add(c: &mut RawClient, v: i16, id: &str, (pid, epoch): (ProducerId, i16), t: &Topic) -> i16 {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s(id)))
        .with_v3_and_below_producer_id(pid)
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(topics(t));
    let r = call!(c, AddPartitionsToTxn, v, request);
    let results = &r.results_by_topic_v3_and_below;
    assert_eq!(results.len(), 1, "{r:?}");
    results[0].results_by_partition[0].partition_error_code
}

pub(super) fn add_partitions_to_txn(c: &mut RawClient, v: i16, t: &Topic) {
    let id = format!("versions-add-v{v}");
    let producer = init(c, &id);
    if v <= 3 {
        assert_eq!(add(c, v, &id, producer, t), 0);
        // An epoch older than the producer's: PRODUCER_FENCED (90), or
        // INVALID_PRODUCER_EPOCH (47) to clients from before it (v0-1), as Kafka answers.
        let fenced = if v >= 2 { 90 } else { 47 };
        assert_eq!(add(c, v, &id, (producer.0, producer.1 - 1), t), fenced);
        return;
    }
    // v4+: a broker's batch; verify-only answers whether the partition is in already.
    let verify = |c: &mut RawClient| {
        let txn = AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(s(&id)))
            .with_producer_id(producer.0)
            .with_producer_epoch(producer.1)
            .with_verify_only(true)
            .with_topics(topics(t));
        let request = AddPartitionsToTxnRequest::default().with_transactions(vec![txn]);
        let r = call!(c, AddPartitionsToTxn, v, request);
        assert_eq!(r.error_code, 0, "{r:?}");
        r.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code
    };
    assert_eq!(
        verify(c),
        120,
        "not in the transaction yet: TRANSACTION_ABORTABLE, as Kafka's coordinator answers"
    );
    assert_eq!(add(c, 3, &id, producer, t), 0);
    assert_eq!(verify(c), 0);
}

pub(super) fn add_offsets_to_txn(c: &mut RawClient, v: i16) {
    let id = format!("versions-offsets-v{v}");
    let (pid, epoch) = init(c, &id);
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&id)))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_group_id(GroupId(s("versions-txn-group")));
    let r = call!(c, AddOffsetsToTxn, v, request.clone());
    assert_eq!(r.error_code, 0, "{r:?}");
    // Another producer id for the transactional id: INVALID_PRODUCER_ID_MAPPING (49).
    let r = call!(
        c,
        AddOffsetsToTxn,
        v,
        request.with_producer_id(ProducerId(pid.0 + 1))
    );
    assert_eq!(r.error_code, 49, "{r:?}");
}

pub(super) fn end_txn(c: &mut RawClient, v: i16, t: &Topic) {
    let id = format!("versions-end-v{v}");
    let producer = init(c, &id);
    let end = |c: &mut RawClient, committed| {
        let request = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(s(&id)))
            .with_producer_id(producer.0)
            .with_producer_epoch(producer.1)
            .with_committed(committed);
        call!(c, EndTxn, v, request)
    };
    // Nothing open: INVALID_TXN_STATE (48).
    assert_eq!(end(c, true).error_code, 48);
    assert_eq!(add(c, 3, &id, producer, t), 0);
    let r = end(c, true);
    assert_eq!(r.error_code, 0, "{r:?}");
    // v5 (transactions v2) bumps the epoch at every end and answers it.
    let bumped = (producer.0, producer.1 + 1);
    if v >= 5 {
        assert_eq!((r.producer_id, r.producer_epoch), bumped);
    }
    // A retried commit is answered as the first; an abort after it is refused.
    assert_eq!(end(c, true).error_code, 0);
    assert_eq!(end(c, false).error_code, 48);
}

pub(super) fn txn_offset_commit(c: &mut RawClient, v: i16, t: &Topic) {
    let id = format!("versions-txn-commit-v{v}");
    let group = format!("versions-txn-commit-v{v}");
    let (pid, epoch) = init(c, &id);
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&id)))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_group_id(GroupId(s(&group)));
    assert_eq!(call!(c, AddOffsetsToTxn, 3, request).error_code, 0);
    let partition = TxnOffsetCommitRequestPartition::default()
        .with_partition_index(0)
        .with_committed_offset(42)
        .with_committed_leader_epoch(-1)
        .with_committed_metadata(Some(s("txn")));
    // v6+ names topics by id (KIP-1319), and is answered by id.
    let by_id = v >= 6;
    let topic = |name: &TopicName, id: Uuid| {
        let topic = TxnOffsetCommitRequestTopic::default();
        let topic = match by_id {
            true => topic.with_topic_id(id),
            false => topic.with_name(name.clone()),
        };
        topic.with_partitions(vec![partition.clone()])
    };
    let commit = |c: &mut RawClient, topic: TxnOffsetCommitRequestTopic| {
        let request = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(s(&id)))
            .with_group_id(GroupId(s(&group)))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![topic]);
        let r = call!(c, TxnOffsetCommit, v, request);
        let answered = &r.topics[0];
        let named = match by_id {
            true => (TopicName::default(), answered.topic_id),
            false => (answered.name.clone(), Uuid::nil()),
        };
        (named, answered.partitions[0].error_code)
    };
    let name_or_id = |n: &TopicName, id| match by_id {
        true => (TopicName::default(), id),
        false => (n.clone(), Uuid::nil()),
    };
    // A topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (3); from v6, an id
    // no topic has: UNKNOWN_TOPIC_ID (100).
    let (missing, missing_id) = (topic_name("versions-missing"), Uuid::from_u128(0x5eed));
    let unknown = if by_id { 100 } else { 3 };
    let answer = commit(c, topic(&missing, missing_id));
    assert_eq!(answer, (name_or_id(&missing, missing_id), unknown));
    let answer = commit(c, topic(&t.name, t.id));
    assert_eq!(answer, (name_or_id(&t.name, t.id), 0));
    // Held until the commit, then the group's.
    assert_eq!(committed(c, &group, t).0, -1);
    let request = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&id)))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_committed(true);
    assert_eq!(call!(c, EndTxn, 3, request).error_code, 0);
    assert_eq!(committed(c, &group, t), (42, -1, "txn".to_string()));
}
