//! The batch form (`iggy.message.format=batch`): each Kafka batch kept whole in one Iggy
//! message, a filler for each of its other records, offsets still Kafka's. Driven
//! through librdkafka and raw Fetch requests, and read natively.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use rdkafka::admin::{AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::Producer as _;
use rdkafka::{Offset, TopicPartitionList};

use support::iggy::IggyServer;
use support::kafka::create_topic;
use support::RawClient;

use super::{consume_and_check, header, iggy_messages, produce_per_codec, served};
use crate::transactions::{read, send, spread, txn_producer, values};

const BATCH: (&str, &str) = ("iggy.message.format", "batch");

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_form_topic_keeps_batches_as_produced_and_kafka_offsets() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "whole";
    create_topic(&gw.bootstrap(), topic, 2, &[BATCH]).await;
    // none, lz4 (3), zstd (4), one after the other; record n to partition n % 2.
    let codecs = ["none", "lz4", "zstd"];
    let expected = produce_per_codec(&gw.bootstrap(), topic, (2, 4_500), &codecs).await;
    consume_and_check(&gw.bootstrap(), topic, &expected).await;

    // Natively: a message per record still (Iggy offsets are Kafka's), each batch in
    // the first of its records' messages, compressed as produced, the rest fillers.
    let sdk = server.sdk().await;
    let messages = iggy_messages(&sdk, topic, 0).await;
    assert_eq!(messages.len(), expected[&0].len());
    let whole: Vec<_> = messages
        .iter()
        .filter(|m| header(m, "kafka.mapping") == Some(vec![4]))
        .collect();
    assert!(
        whole.len() * 5 < messages.len(),
        "librdkafka batches records: {} batches for {} records",
        whole.len(),
        messages.len()
    );
    let mut stored_codecs = BTreeSet::new();
    for m in &messages {
        if header(m, "kafka.mapping").is_some() {
            stored_codecs.insert(i16::from_be_bytes([m.payload[21], m.payload[22]]) & 0x07);
        } else {
            assert!(m.payload.is_empty() && m.user_headers.is_none(), "a filler");
        }
    }
    assert_eq!(stored_codecs, BTreeSet::from([0, 3, 4]));

    // Fetch serves them compressed as they came, and a read from inside a batch gets
    // that batch whole, from its base offset (the client skips what it did not ask).
    let mut raw = RawClient::connect(gw.addr);
    let mut served_codecs = BTreeSet::new();
    let mut next = 0;
    while next < messages.len() as i64 {
        let batches = served(&mut raw, topic, 0, next);
        assert_eq!(batches[0].0, next, "batches follow one another");
        for (base, count, codec) in batches {
            assert_eq!(base, next);
            served_codecs.insert(codec);
            next = base + i64::from(count);
        }
    }
    assert_eq!(served_codecs, BTreeSet::from([0, 3, 4]));
    let inside = whole
        .iter()
        .map(|m| m.header.offset)
        .zip(whole.iter().skip(1).map(|m| m.header.offset))
        .find(|(a, b)| b - a > 2)
        .expect("a batch of three records or more");
    let from_inside = served(&mut raw, topic, 0, inside.0 as i64 + 2);
    assert_eq!(
        from_inside[0].0, inside.0 as i64,
        "served from its batch's start"
    );
    assert_eq!(from_inside[0].1, (inside.1 - inside.0) as i32);

    // Lookups by time read each record's timestamp: record n has 1_700_000_000_000 + n,
    // and partition 0 holds the even n, offset n / 2.
    let bootstrap = gw.bootstrap();
    let found = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", "unused")
            .create()
            .unwrap();
        [1_001, 2_500, 3_333]
            .map(|n| {
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition_offset(topic, 0, Offset::Offset(1_700_000_000_000 + n))
                    .unwrap();
                let found = consumer
                    .offsets_for_times(tpl, Duration::from_secs(10))
                    .unwrap();
                found.find_partition(topic, 0).unwrap().offset()
            })
            .to_vec()
    })
    .await
    .unwrap();
    assert_eq!(
        found,
        [1_001, 2_500, 3_333].map(|n: i64| Offset::Offset((n + 1) / 2))
    );
}

/// Transactions on a batch-form topic: aborted batches are kept whole like any other
/// and read-committed consumers skip them by their markers; idempotent producer history
/// is rebuilt from the whole batches after a restart; a change of form takes effect for
/// the next batches, and both forms read back in one partition.
#[tokio::test(flavor = "multi_thread")]
async fn transactions_restarts_and_a_change_of_form_on_a_batch_form_topic() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gw = server.process_gateway();
    let topic = "whole-txn";
    create_topic(&gw.bootstrap(), topic, 2, &[BATCH]).await;
    let bootstrap = gw.bootstrap();
    tokio::task::spawn_blocking(move || {
        let producer = txn_producer(&bootstrap, "whole-txn", 30_000);
        for (prefix, commit) in [("a", true), ("b", false), ("c", true)] {
            producer.begin_transaction().unwrap();
            send(&producer, topic, 2, &values(prefix, 40));
            match commit {
                true => producer.commit_transaction(Duration::from_secs(30)),
                false => producer.abort_transaction(Duration::from_secs(30)),
            }
            .unwrap();
        }
    })
    .await
    .unwrap();
    let committed: Vec<String> = [values("a", 40), values("c", 40)].concat();
    let bootstrap = gw.bootstrap();
    let got = tokio::task::spawn_blocking(move || read(&bootstrap, topic, 2, "read_committed", 80))
        .await
        .unwrap();
    let by_partition = |v: &[String]| {
        let mut out = spread(&v[..40], 2);
        for (p, rest) in spread(&v[40..], 2) {
            out.entry(p).or_default().extend(rest);
        }
        out
    };
    assert_eq!(got, by_partition(&committed));

    // After a restart the same, and the record form from now on appends after it.
    gw.kill();
    gw.restart_after_kill();
    let to_records = AlterConfig::new(ResourceSpecifier::Topic(topic)).set(BATCH.0, "record");
    let altered = support::kafka::admin(&gw.bootstrap())
        .alter_configs(&[to_records], &AdminOptions::new())
        .await
        .expect("AlterConfigs");
    assert!(altered.iter().all(Result::is_ok), "{altered:?}");
    let bootstrap = gw.bootstrap();
    tokio::task::spawn_blocking(move || {
        let producer = txn_producer(&bootstrap, "whole-txn", 30_000);
        producer.begin_transaction().unwrap();
        send(&producer, topic, 2, &values("d", 40));
        producer
            .commit_transaction(Duration::from_secs(30))
            .unwrap();
        producer.flush(Duration::from_secs(10)).unwrap();
    })
    .await
    .unwrap();
    let all: Vec<String> = [committed, values("d", 40)].concat();
    let bootstrap = gw.bootstrap();
    let got =
        tokio::task::spawn_blocking(move || read(&bootstrap, topic, 2, "read_committed", 120))
            .await
            .unwrap();
    let mut want = by_partition(&all[..80]);
    for (p, rest) in spread(&all[80..], 2) {
        want.entry(p).or_default().extend(rest);
    }
    assert_eq!(got, want);
    let bootstrap = gw.bootstrap();
    let uncommitted =
        tokio::task::spawn_blocking(move || read(&bootstrap, topic, 2, "read_uncommitted", 160))
            .await
            .unwrap();
    assert_eq!(uncommitted.values().map(Vec::len).sum::<usize>(), 160);
}
