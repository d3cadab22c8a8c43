//! Real clients' zombies, on both stores: a transactional producer whose
//! transactional id a second producer took over (init_transactions) learns it is
//! fenced as from Kafka, the fatal error that has Kafka Streams, Flink and Spring close
//! it, never an abortable one that would have it abort and carry on. librdkafka (as
//! its own regression test `0103-transactions` checks it): the zombie's commit fails
//! with the fatal `_FENCED`, whether it produced after the fencing (Produce answered
//! INVALID_PRODUCER_EPOCH), sent offsets (AddOffsetsToTxn) or only commits (EndTxn).
//! The Java client (`tests/clients/FencingJava.java`): ProducerFencedException at the
//! commit, at the abort a send after the fencing calls for, and at
//! sendOffsetsToTransaction, under transactions v1 (kafka-clients 3.9) and v2 (4.x,
//! which the gateway's finalized `transaction.version` 2 has speak it). The
//! successors' transactions carry on, and only their records are read committed.
//! The same requests hand-built, at every version: `fencing.rs`.

use std::time::Duration;

use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use super::{group_metadata, read, send, txn_producer, values};
use crate::support::client_checks;
use crate::support::kafka::create_topic;
use crate::support::{on_every_store, Gateway, Store};

on_every_store!(
    async: a_librdkafka_zombie_fails_fatally_as_fenced,
    a_java_zombie_gets_producer_fenced_exception,
);

/// What the zombie does after it was fenced, before it commits.
#[derive(Clone, Copy, Debug)]
enum Then {
    Commit,
    Produce,
    SendOffsets,
}

async fn a_librdkafka_zombie_fails_fatally_as_fenced(store: Store) {
    const TOPIC: &str = "txn-zombies";
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, TOPIC, 1, &[]).await;
    let mut want = Vec::new();
    for then in [Then::Commit, Then::Produce, Then::SendOffsets] {
        let id = format!("txn-zombie-{then:?}");
        let zombie = txn_producer(&bootstrap, &id, 60_000);
        zombie.begin_transaction().unwrap();
        send(&zombie, TOPIC, 1, &values("zombie-", 3));
        let successor = txn_producer(&bootstrap, &id, 60_000);
        match then {
            Then::Commit => {}
            Then::Produce => {
                let late = BaseRecord::<(), _>::to(TOPIC).partition(0).payload("late");
                zombie.send(late).map_err(|(e, _)| e).expect("send");
                // Its delivery fails; the flush may report that.
                let _ = zombie.flush(Duration::from_secs(30));
            }
            Then::SendOffsets => {
                let mut offsets = TopicPartitionList::new();
                offsets
                    .add_partition_offset(TOPIC, 0, Offset::Offset(99))
                    .unwrap();
                let group = group_metadata(&bootstrap, "txn-zombies-group");
                let refused = zombie
                    .send_offsets_to_transaction(&offsets, &group, Duration::from_secs(30))
                    .expect_err("a fenced producer sent offsets");
                assert_fenced(then, refused);
            }
        }
        let refused = zombie
            .commit_transaction(Duration::from_secs(30))
            .expect_err("a fenced producer committed");
        assert_fenced(then, refused);
        let fatal = zombie.client().fatal_error();
        assert_eq!(fatal.map(|(code, _)| code), Some(RDKafkaErrorCode::Fenced));

        let mine = values(&format!("{then:?}-"), 2);
        successor.begin_transaction().unwrap();
        send(&successor, TOPIC, 1, &mine);
        successor
            .commit_transaction(Duration::from_secs(30))
            .unwrap();
        want.extend(mine);
    }
    let got = read(&bootstrap, TOPIC, 1, "read_committed", want.len());
    assert_eq!(got.get(&0), Some(&want), "only the successors' records");
}

/// `refused` is librdkafka's fatal `_FENCED`: not abortable, not retriable.
fn assert_fenced(then: Then, refused: KafkaError) {
    let KafkaError::Transaction(e) = &refused else {
        panic!("{then:?}: not a transaction error: {refused}");
    };
    let seen = (
        e.code(),
        e.is_fatal(),
        e.txn_requires_abort(),
        e.is_retriable(),
    );
    assert_eq!(
        seen,
        (RDKafkaErrorCode::Fenced, true, false, false),
        "{then:?}: {e}"
    );
}

async fn a_java_zombie_gets_producer_fenced_exception(store: Store) {
    let jars = client_checks::java_jars();
    let mut protocols = Vec::new();
    for jars in &jars {
        let Some(gw) = Gateway::start_on(store, &[]) else {
            return;
        };
        let said = client_checks::java(jars, "FencingJava", &gw.bootstrap());
        let v2 = said.contains("java-fencing: transactions v2");
        protocols.push(if v2 { "v2" } else { "v1" });
    }
    // kafka-clients 3.9 speaks transactions v1, 4.x v2 (`client_checks::java_jars`).
    if jars.len() == 2 {
        assert_eq!(protocols, ["v1", "v2"]);
    }
}
