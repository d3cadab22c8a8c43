//! Committed offsets: stored as sent, deleted by a negative offset, all read by a null topic list.

use crate::support;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use support::configs::s;
use support::{batch, call, record, Gateway, RawClient, Store};

use super::{
    commit, commit_with, committed, create_topic, fetch, missing, read_as, ADMIN, NO_DELAY,
};

fn committed_offsets_are_stored_as_sent(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    // Partition 0 holds offsets 0-2; partition 1 is empty.
    produce(&mut c, "t", 0, 3);
    // A group nobody has joined: an admin tool's commit (generation -1) is accepted on
    // an empty (here: not yet existing) group.
    let g = "stored-as-sent";
    // 0 on an empty partition, and 3, one past the last record: no range check.
    assert_eq!(
        commit(&mut c, g, ADMIN, &[("t", 0, 3), ("t", 1, 0)]),
        [0, 0]
    );
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    assert_eq!(read, [read_as("t", 0, 3), read_as("t", 1, 0)]);
    // Far past the end is stored as sent too: the gateway never checks a position.
    assert_eq!(commit(&mut c, g, ADMIN, &[("t", 0, 1000)]), [0]);
    assert_eq!(committed(&mut c, g, "t", 0), 1000);
    // Metadata and leader epoch come back as sent; null metadata reads as empty.
    let offsets = vec![("t", 0, 2, 9, Some("checkpoint")), ("t", 1, 1, -1, None)];
    assert_eq!(commit_with(&mut c, g, ADMIN, offsets), [0, 0]);
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    let want = [
        ("t".to_string(), 0, 2, 9, "checkpoint".to_string()),
        ("t".to_string(), 1, 1, -1, String::new()),
    ];
    assert_eq!(read, want);
}

fn a_negative_offset_deletes_the_entry_and_a_missing_entry_reads_minus_one(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let g = "negative";
    assert_eq!(
        commit(&mut c, g, ADMIN, &[("t", 0, 5), ("t", 1, 6)]),
        [0, 0]
    );
    assert_eq!(commit(&mut c, g, ADMIN, &[("t", 0, -1)]), [0]);
    // Deleted: -1, no epoch, no metadata and no error (fetch() checks every error code).
    let read = fetch(&mut c, g, Some(&[("t", &[0, 1])]));
    assert_eq!(read, [missing("t", 0), read_as("t", 1, 6)]);
    // ...and gone from the list of what the group has committed.
    assert_eq!(fetch(&mut c, g, None), [read_as("t", 1, 6)]);
    // A group that never committed reads -1 everywhere, without error either.
    let read = fetch(&mut c, "never-committed", Some(&[("t", &[0, 1])]));
    assert_eq!(read, [missing("t", 0), missing("t", 1)]);
    assert_eq!(fetch(&mut c, "never-committed", None), []);
}

fn offset_fetch_with_a_null_topic_list_returns_every_committed_partition(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for (topic, partitions) in [("a", 3), ("b", 1), ("uncommitted", 2)] {
        create_topic(&mut c, topic, partitions);
    }
    let offsets = [("a", 0, 10), ("a", 2, 12), ("b", 0, 20)];
    assert_eq!(commit(&mut c, "g", ADMIN, &offsets), [0, 0, 0]);
    // Another group's offsets stay its own.
    assert_eq!(commit(&mut c, "other", ADMIN, &[("a", 1, 99)]), [0]);
    // Admin listConsumerGroupOffsets: exactly the partitions with an offset.
    let mut read = fetch(&mut c, "g", None);
    read.sort();
    let want = [
        read_as("a", 0, 10),
        read_as("a", 2, 12),
        read_as("b", 0, 20),
    ];
    assert_eq!(read, want);
}

/// Produces `count` one-record batches to a partition (Produce v9, acks=all).
fn produce(c: &mut RawClient, topic: &str, partition: i32, count: usize) {
    for _ in 0..count {
        let record = record(None, b"v", 1_700_000_000_000);
        let data = PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(batch(&[record], Compression::None)));
        let t = TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![data]);
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![t]);
        let r = call!(c, Produce, 9, request);
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0, "{p:?}");
    }
}

support::on_every_store!(
    committed_offsets_are_stored_as_sent,
    a_negative_offset_deletes_the_entry_and_a_missing_entry_reads_minus_one,
    offset_fetch_with_a_null_topic_list_returns_every_committed_partition,
);
