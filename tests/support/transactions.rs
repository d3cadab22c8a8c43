//! Raw transactional requests: a producer's InitProducerId, AddPartitionsToTxn (also
//! as brokers send it), AddOffsetsToTxn, transactional Produce, TxnOffsetCommit and
//! EndTxn at the versions a test names, the last stable offset, and the four admin
//! APIs (WriteTxnMarkers, DescribeProducers, DescribeTransactions, ListTransactions)
//! as admin tools send them.

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::describe_producers_response::PartitionResponse;
use kafka_protocol::messages::describe_transactions_response::TransactionState;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, Record};

use super::configs::s;
use super::{batch, call, record, topic_name, RawClient};

/// A transactional producer: its id, the producer id and epoch.
/// How long a previous transaction's end may keep answering CONCURRENT_TRANSACTIONS
/// (51) before a test takes that answer as its failure.
pub const CONCURRENT_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone, Debug)]
pub struct Producer {
    pub id: String,
    pub pid: i64,
    pub epoch: i16,
}

/// InitProducerId v4 for transactional id `id` (a 60 s transaction timeout), asked
/// again while a previous transaction's end completes (CONCURRENT_TRANSACTIONS, 51),
/// as clients do.
pub fn init(c: &mut RawClient, id: &str) -> Producer {
    let deadline = std::time::Instant::now() + CONCURRENT_LIMIT;
    let r = loop {
        let r = init_with_timeout(c, id, 60_000);
        if r.error_code != 51 || std::time::Instant::now() >= deadline {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    Producer {
        id: id.to_string(),
        pid: r.producer_id.0,
        epoch: r.producer_epoch,
    }
}

/// InitProducerId v4 for transactional id `id` with `timeout_ms`, answered as it comes.
pub fn init_with_timeout(c: &mut RawClient, id: &str, timeout_ms: i32) -> InitProducerIdResponse {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s(id))))
        .with_transaction_timeout_ms(timeout_ms)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    call!(c, InitProducerId, 4, request)
}

/// AddPartitionsToTxn v3 of one partition: its error code.
pub fn add(c: &mut RawClient, p: &Producer, topic: &str, partition: i32) -> i16 {
    add_as(c, 3, p, topic, partition)
}

/// AddPartitionsToTxn at `version` (0–3, a producer's form) of one partition: its
/// error code.
pub fn add_as(c: &mut RawClient, version: i16, p: &Producer, topic: &str, partition: i32) -> i16 {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s(&p.id)))
        .with_v3_and_below_producer_id(ProducerId(p.pid))
        .with_v3_and_below_producer_epoch(p.epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![partition])]);
    let r = call!(c, AddPartitionsToTxn, version, request);
    r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

/// AddPartitionsToTxn at `version` (4+, a broker's batch of one transaction) of one
/// partition, added or with `verify_only` only looked for: the partition's code.
pub fn add_as_broker(
    c: &mut RawClient,
    version: i16,
    p: &Producer,
    (topic, partition): (&str, i32),
    verify_only: bool,
) -> i16 {
    let txn = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(TransactionalId(s(&p.id)))
        .with_producer_id(ProducerId(p.pid))
        .with_producer_epoch(p.epoch)
        .with_verify_only(verify_only)
        .with_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![partition])]);
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![txn]);
    let r = call!(c, AddPartitionsToTxn, version, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code
}

/// AddOffsetsToTxn at `version` of `group`: its error code.
pub fn add_offsets_as(c: &mut RawClient, version: i16, p: &Producer, group: &str) -> i16 {
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&p.id)))
        .with_producer_id(ProducerId(p.pid))
        .with_producer_epoch(p.epoch)
        .with_group_id(GroupId(s(group)));
    call!(c, AddOffsetsToTxn, version, request).error_code
}

/// InitProducerId at `version` (3+) of a producer that knows its id and epoch, as it
/// asks for a new epoch after an abortable error (KIP-360): its error code.
pub fn reinit_as(c: &mut RawClient, version: i16, p: &Producer) -> i16 {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(s(&p.id))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(p.pid))
        .with_producer_epoch(p.epoch);
    call!(c, InitProducerId, version, request).error_code
}

/// Produce v9 of `n` transactional records from sequence `sequence`, stamped
/// `timestamp`: the offset of the first, after checking it was written.
pub fn produce(
    c: &mut RawClient,
    p: &Producer,
    at: (&str, i32),
    sequence: i32,
    n: usize,
    timestamp: i64,
) -> i64 {
    let answer = produce_as(c, 9, p, at, (sequence, n), timestamp);
    assert_eq!(answer.error_code, 0, "{answer:?}");
    answer.base_offset
}

/// Produce at `version` of `n` transactional records from sequence `sequence`, each
/// valued `<transactional id>-<sequence>`: the partition's answer. From v13 the topic
/// goes by its id, asked of Metadata first.
pub fn produce_as(
    c: &mut RawClient,
    version: i16,
    p: &Producer,
    (topic, partition): (&str, i32),
    (sequence, n): (i32, usize),
    timestamp: i64,
) -> produce_response::PartitionProduceResponse {
    let records: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: true,
            producer_id: p.pid,
            producer_epoch: p.epoch,
            sequence: sequence + i as i32,
            offset: i as i64,
            ..record(
                None,
                format!("{}-{}", p.id, sequence + i as i32).as_bytes(),
                timestamp,
            )
        })
        .collect();
    let data = PartitionProduceData::default()
        .with_index(partition)
        .with_records(Some(batch(&records, Compression::None)));
    let mut named = TopicProduceData::default()
        .with_name(topic_name(topic))
        .with_partition_data(vec![data]);
    if version >= 13 {
        named = named.with_topic_id(super::acls::topic_id(c, topic));
    }
    let request = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(s(&p.id))))
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![named]);
    let mut r = call!(c, Produce, version, request);
    r.responses.remove(0).partition_responses.remove(0)
}

/// TxnOffsetCommit v5 (no AddOffsetsToTxn before it: transactions v2) of `offset`
/// for partition 0 of `topic` in `group`: its error code.
pub fn commit_offset(
    c: &mut RawClient,
    p: &Producer,
    (group, topic): (&str, &str),
    offset: i64,
) -> i16 {
    commit_offset_as(c, 5, p, (group, (topic, 0)), offset)
}

/// TxnOffsetCommit at `version` of `offset` for one partition in `group`, naming no
/// member: its error code.
pub fn commit_offset_as(
    c: &mut RawClient,
    version: i16,
    p: &Producer,
    (group, (topic, partition)): (&str, (&str, i32)),
    offset: i64,
) -> i16 {
    let partition = TxnOffsetCommitRequestPartition::default()
        .with_partition_index(partition)
        .with_committed_offset(offset);
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s(&p.id)))
        .with_group_id(GroupId(s(group)))
        .with_producer_id(ProducerId(p.pid))
        .with_producer_epoch(p.epoch)
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![partition])]);
    call!(c, TxnOffsetCommit, version, request).topics[0].partitions[0].error_code
}

/// EndTxn v3: its error code.
pub fn end(c: &mut RawClient, p: &Producer, commit: bool) -> i16 {
    end_as(c, 3, p, commit).error_code
}

/// EndTxn at `version`.
pub fn end_as(c: &mut RawClient, version: i16, p: &Producer, commit: bool) -> EndTxnResponse {
    let request = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s(&p.id)))
        .with_producer_id(ProducerId(p.pid))
        .with_producer_epoch(p.epoch)
        .with_committed(commit);
    call!(c, EndTxn, version, request)
}

/// The partition's latest offset by ListOffsets v7 at `isolation` (1: read committed,
/// the last stable offset).
pub fn latest(c: &mut RawClient, topic: &str, partition: i32, isolation: i8) -> i64 {
    let wanted = ListOffsetsTopic::default()
        .with_name(topic_name(topic))
        .with_partitions(vec![ListOffsetsPartition::default()
            .with_partition_index(partition)
            .with_timestamp(-1)]);
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation)
        .with_topics(vec![wanted]);
    let r = call!(c, ListOffsets, 7, request);
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.offset
}

/// One marker of WriteTxnMarkers: producer id, epoch, commit or abort, and its
/// `(topic, partitions)`.
pub type MarkerSpec<'a> = (i64, i16, bool, &'a [(&'a str, &'a [i32])]);

/// WriteTxnMarkers v1 (coordinator epoch 0): each marker's (topic, partition, code).
pub fn write_markers(c: &mut RawClient, markers: &[MarkerSpec]) -> Vec<Vec<(String, i32, i16)>> {
    write_markers_at(c, (1, 0), markers)
}

/// The same at version `v`, each marker of transaction version `tv` (v2+, KIP-1228).
pub fn write_markers_at(
    c: &mut RawClient,
    (v, tv): (i16, i8),
    markers: &[MarkerSpec],
) -> Vec<Vec<(String, i32, i16)>> {
    let markers = markers.iter().map(|&(pid, epoch, commit, topics)| {
        let topics = topics.iter().map(|(topic, partitions)| {
            WritableTxnMarkerTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(partitions.to_vec())
        });
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_transaction_result(commit)
            .with_coordinator_epoch(0)
            .with_transaction_version(tv)
            .with_topics(topics.collect())
    });
    let request = WriteTxnMarkersRequest::default().with_markers(markers.collect());
    let r = call!(c, WriteTxnMarkers, v, request);
    let results = r.markers.iter().map(|m| {
        let partitions = m.topics.iter().flat_map(|t| {
            let name = t.name.to_string();
            t.partitions
                .iter()
                .map(move |p| (name.clone(), p.partition_index, p.error_code))
        });
        partitions.collect()
    });
    results.collect()
}

/// DescribeProducers v0 of `(topic, partitions)`: every partition's answer, in order.
pub fn describe_producers(c: &mut RawClient, topics: &[(&str, &[i32])]) -> Vec<PartitionResponse> {
    let topics = topics.iter().map(|(topic, partitions)| {
        TopicRequest::default()
            .with_name(topic_name(topic))
            .with_partition_indexes(partitions.to_vec())
    });
    let request = DescribeProducersRequest::default().with_topics(topics.collect());
    let r = call!(c, DescribeProducers, 0, request);
    r.topics.into_iter().flat_map(|t| t.partitions).collect()
}

/// DescribeTransactions v0 of `ids`: each one's answer, in order.
pub fn describe_transactions(c: &mut RawClient, ids: &[&str]) -> Vec<TransactionState> {
    let asked = ids.iter().map(|id| TransactionalId(s(id))).collect();
    let request = DescribeTransactionsRequest::default().with_transactional_ids(asked);
    let r = call!(c, DescribeTransactions, 0, request);
    let answered: Vec<_> = (r.transaction_states.iter())
        .map(|t| t.transactional_id.to_string())
        .collect();
    assert_eq!(answered, ids, "one answer per id, in order");
    r.transaction_states
}

/// ListTransactions at `v`: (error code, unknown state filters, listed (id, producer
/// id, state) sorted by id).
pub fn list_transactions(
    c: &mut RawClient,
    v: i16,
    request: ListTransactionsRequest,
) -> (i16, Vec<String>, Vec<(String, i64, String)>) {
    let r = call!(c, ListTransactions, v, request);
    let unknown = r
        .unknown_state_filters
        .iter()
        .map(|f| f.to_string())
        .collect();
    let mut listed: Vec<_> = (r.transaction_states.iter())
        .map(|t| {
            let id = t.transactional_id.to_string();
            (id, t.producer_id.0, t.transaction_state.to_string())
        })
        .collect();
    listed.sort();
    (r.error_code, unknown, listed)
}

/// EndTxn v5 succeeded and moved the producer to its next epoch, which it returns.
pub fn end_bumped(c: &mut RawClient, p: &Producer, commit: bool) -> Producer {
    let r = end_as(c, 5, p, commit);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!((r.producer_id.0, r.producer_epoch), (p.pid, p.epoch + 1));
    Producer {
        epoch: r.producer_epoch,
        ..p.clone()
    }
}
