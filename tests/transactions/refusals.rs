//! What Kafka refuses of transactional requests, answered with its codes while the
//! gateway serves on: a transactional batch for a partition not in the transaction
//! (INVALID_TXN_STATE 48) or without a transactional id in the request (53), a
//! control batch from a client (INVALID_RECORD 87), a timeout over
//! `transaction.max.timeout.ms` (INVALID_TRANSACTION_TIMEOUT 50), a zombie's epoch
//! (PRODUCER_FENCED 90 from its coordinator, INVALID_PRODUCER_EPOCH 47 from Produce;
//! every API and version in `fencing.rs`), and OffsetFetch `require_stable` while a
//! transaction holds the group's offset (UNSTABLE_OFFSET_COMMIT 88).

use bytes::Bytes;
use iggy_kafka_actors::protocol::markers::{self, Marker};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, Record};

use crate::support::configs::s;
use crate::support::kafka::create_topic;
use crate::support::transactions::{init_with_timeout as init, CONCURRENT_LIMIT};
use crate::support::{batch, call, on_every_store, record, topic_name, Gateway, RawClient, Store};

on_every_store!(async: transactional_misuse_is_refused_with_kafkas_codes);

/// Produce v9 of one batch to partition `partition` of `topic`: its error code.
fn produce(
    c: &mut RawClient,
    id: Option<&str>,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> i16 {
    let data = PartitionProduceData::default()
        .with_index(partition)
        .with_records(Some(records));
    let topic = TopicProduceData::default()
        .with_name(topic_name(topic))
        .with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_transactional_id(id.map(|id| TransactionalId(s(id))))
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![topic]);
    let r = call!(c, Produce, 9, request);
    r.responses[0].partition_responses[0].error_code
}

fn transactional(pid: i64, epoch: i16, sequence: i32) -> Bytes {
    let r = Record {
        transactional: true,
        producer_id: pid,
        producer_epoch: epoch,
        sequence,
        ..record(None, b"v", 1_700_000_000_000)
    };
    batch(&[r], Compression::None)
}

fn add(c: &mut RawClient, id: &str, (pid, epoch): (ProducerId, i16), topic: &str) -> i16 {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s(id)))
        .with_v3_and_below_producer_id(pid)
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![0])]);
    let r = call!(c, AddPartitionsToTxn, 3, request);
    r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

async fn transactional_misuse_is_refused_with_kafkas_codes(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    create_topic(&gw.bootstrap(), "txn-refusals", 2, &[]).await;
    let mut c = RawClient::connect(gw.addr);
    // Over the 15-minute default of transaction.max.timeout.ms.
    assert_eq!(init(&mut c, "refusals", 900_001).error_code, 50);
    let r = init(&mut c, "refusals", 60_000);
    assert_eq!(r.error_code, 0, "{r:?}");
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    // A transactional batch of this producer at its first epoch.
    let txn = |c: &mut RawClient, id, partition, sequence| {
        let records = transactional(pid.0, epoch, sequence);
        produce(c, id, "txn-refusals", partition, records)
    };
    // Data before the partition is in the transaction.
    assert_eq!(txn(&mut c, Some("refusals"), 0, 0), 48);
    // A transactional batch without the request's transactional id.
    assert_eq!(txn(&mut c, None, 0, 0), 53);
    // A marker from a client.
    let marker = markers::batch(Marker::Commit, pid.0, epoch, 0, 0);
    assert_eq!(
        produce(&mut c, Some("refusals"), "txn-refusals", 0, marker),
        87
    );
    assert_eq!(add(&mut c, "refusals", (pid, epoch), "txn-refusals"), 0);
    assert_eq!(txn(&mut c, Some("refusals"), 0, 0), 0);
    // Partition 1 was not added.
    assert_eq!(txn(&mut c, Some("refusals"), 1, 0), 48);

    // Offsets held by the open transaction are unstable for require_stable readers.
    let group = GroupId(s("refusals-group"));
    let request = AddOffsetsToTxnRequest::default()
        .with_transactional_id(TransactionalId(s("refusals")))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_group_id(group.clone());
    assert_eq!(call!(c, AddOffsetsToTxn, 3, request).error_code, 0);
    let partition = TxnOffsetCommitRequestPartition::default()
        .with_partition_index(0)
        .with_committed_offset(1);
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s("refusals")))
        .with_group_id(group.clone())
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(topic_name("txn-refusals"))
            .with_partitions(vec![partition])]);
    assert_eq!(
        call!(c, TxnOffsetCommit, 3, request).topics[0].partitions[0].error_code,
        0
    );
    let fetch = |c: &mut RawClient, require_stable| {
        let topic = OffsetFetchRequestTopic::default()
            .with_name(topic_name("txn-refusals"))
            .with_partition_indexes(vec![0]);
        let request = OffsetFetchRequest::default()
            .with_group_id(group.clone())
            .with_topics(Some(vec![topic]))
            .with_require_stable(require_stable);
        let r = call!(c, OffsetFetch, 7, request);
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.committed_offset)
    };
    assert_eq!(fetch(&mut c, true).0, 88);
    assert_eq!(fetch(&mut c, false), (0, -1));

    // A second incarnation fences the first: its epoch is refused. The open
    // transaction is aborted first, CONCURRENT_TRANSACTIONS (51) answered until its
    // markers are out, as Kafka answers it; clients ask again.
    let deadline = std::time::Instant::now() + CONCURRENT_LIMIT;
    let next = loop {
        let next = init(&mut c, "refusals", 60_000);
        if next.error_code != 51 || std::time::Instant::now() >= deadline {
            break next;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!((next.error_code, next.producer_id), (0, pid));
    assert!(next.producer_epoch > epoch);
    assert_eq!(add(&mut c, "refusals", (pid, epoch), "txn-refusals"), 90);
    assert_eq!(txn(&mut c, Some("refusals"), 0, 1), 47);
    // Its previous transaction was aborted: nothing unstable is left.
    assert_eq!(fetch(&mut c, true), (0, -1));
}
