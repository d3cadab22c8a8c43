//! librdkafka's transactional producer: committed transactions are read by a
//! read-committed consumer exactly once and in order, aborted ones never (a
//! read-uncommitted consumer sees both, as from Kafka); offsets sent with a
//! transaction become the group's at its commit; a transaction left open past its
//! timeout is aborted by the coordinator and its producer fenced; a transaction of
//! many batches is read one batch a fetch, and transactions larger than a fetch are
//! read from the log once; a consumer that left its group cannot commit offsets with a
//! transaction (KIP-447); a plain commit made after a transaction's offsets outlives
//! the transaction's commit, one made before does not (Kafka keeps the later of the two).

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::{Offset, TopicPartitionList};

use rdkafka::config::ClientConfig;

use super::{group_metadata, read, read_with, send, spread, txn_producer, values};
use crate::support::admin::Scrape;
use crate::support::kafka::{commit_offsets, committed, committed_at, create_topic};
use crate::support::{groups, on_every_store, Gateway, Store};

on_every_store!(
    async: committed_transactions_are_read_once_and_aborted_ones_never,
    a_transaction_past_its_timeout_is_aborted,
    a_transaction_of_many_batches_is_read_a_batch_a_fetch,
    transactions_larger_than_a_fetch_are_read_from_the_log_once,
    the_last_stable_offset_of_a_partition_written_here_reads_no_log,
    the_last_stable_offset_after_a_restart_reads_no_log,
    the_last_stable_offset_after_a_kill_reads_on_from_the_last_checkpoint,
    a_member_no_longer_in_its_group_cannot_commit_with_a_transaction,
    a_commit_made_after_a_transactions_offsets_outlives_its_commit,
);

const PARTITIONS: i32 = 3;

/// A gateway on `store` with `topic` made, its bootstrap address, and a transactional
/// producer `<topic>-producer` whose transactions time out after `timeout_ms`.
async fn started(
    store: Store,
    topic: &str,
    partitions: i32,
    timeout_ms: u32,
) -> Option<(Gateway, String, BaseProducer)> {
    let gw = Gateway::start_on(store, &[])?;
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, topic, partitions, &[]).await;
    let producer = txn_producer(&bootstrap, &format!("{topic}-producer"), timeout_ms);
    Some((gw, bootstrap, producer))
}

async fn committed_transactions_are_read_once_and_aborted_ones_never(store: Store) {
    let Some((_gw, bootstrap, producer)) = started(store, "txn-rd", PARTITIONS, 60_000).await
    else {
        return;
    };
    let (first, aborted, last) = (values("c-", 300), values("a-", 200), values("k-", 100));
    producer.begin_transaction().unwrap();
    send(&producer, "txn-rd", PARTITIONS, &first);
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    producer.begin_transaction().unwrap();
    send(&producer, "txn-rd", PARTITIONS, &aborted);
    producer.abort_transaction(Duration::from_secs(30)).unwrap();
    producer.begin_transaction().unwrap();
    send(&producer, "txn-rd", PARTITIONS, &last);
    let mut offsets = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        offsets
            .add_partition_offset("txn-rd", p, Offset::Offset(10 + p as i64))
            .unwrap();
    }
    let group = group_metadata(&bootstrap, "txn-rd-group");
    producer
        .send_offsets_to_transaction(&offsets, &group, Duration::from_secs(30))
        .unwrap();
    let held = ("txn-rd-group", "read_uncommitted");
    assert_eq!(
        committed_at(&bootstrap, held, "txn-rd", PARTITIONS),
        [-1; 3]
    );
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    assert_eq!(
        committed(&bootstrap, "txn-rd-group", "txn-rd", PARTITIONS),
        [10, 11, 12]
    );

    let mut both = first.clone();
    both.extend(last.iter().cloned());
    // `send` spreads each batch from partition 0, so spread the two lists apart.
    let mut want = spread(&first, PARTITIONS);
    for (p, vs) in spread(&last, PARTITIONS) {
        want.entry(p).or_default().extend(vs);
    }
    let got = read(
        &bootstrap,
        "txn-rd",
        PARTITIONS,
        "read_committed",
        both.len(),
    );
    assert_eq!(got, want, "read_committed: the committed records, in order");
    let everything = read(&bootstrap, "txn-rd", PARTITIONS, "read_uncommitted", 600);
    let n: usize = everything.values().map(Vec::len).sum();
    assert_eq!(n, 600, "read_uncommitted sees the aborted records too");
}

async fn a_transaction_past_its_timeout_is_aborted(store: Store) {
    let Some((_gw, bootstrap, producer)) = started(store, "txn-timeout", 1, 2_000).await else {
        return;
    };
    producer.begin_transaction().unwrap();
    send(&producer, "txn-timeout", 1, &values("late-", 5));
    // The coordinator aborts it after 2 s; ticks come every half second.
    std::thread::sleep(Duration::from_secs(4));
    let commit = producer.commit_transaction(Duration::from_secs(10));
    assert!(
        commit.is_err(),
        "a timed-out transaction committed: {commit:?}"
    );
    drop(producer);
    // Its records are never read committed; a later producer's are.
    let next = txn_producer(&bootstrap, "txn-timeout-producer", 60_000);
    next.begin_transaction().unwrap();
    send(&next, "txn-timeout", 1, &values("after-", 3));
    next.commit_transaction(Duration::from_secs(30)).unwrap();
    let got = read(&bootstrap, "txn-timeout", 1, "read_committed", 3);
    assert_eq!(got.get(&0), Some(&values("after-", 3)));
}

/// A read-committed consumer fetching one batch at a time through transactions of
/// several batches each: every fetch must move it on, though the transaction it is in
/// ends only batches later (a gateway answering up to where its index had read, from
/// the batches fetched, once left such a reader at the transaction's first batch).
async fn a_transaction_of_many_batches_is_read_a_batch_a_fetch(store: Store) {
    let Some((_gw, bootstrap, producer)) = started(store, "txn-batches", 1, 60_000).await else {
        return;
    };
    let mut want = Vec::new();
    for txn in 0..3 {
        producer.begin_transaction().unwrap();
        // Each `send` flushes: four batches a transaction.
        for batch in 0..4 {
            let vs = values(&format!("t{txn}-b{batch}-"), 5);
            send(&producer, "txn-batches", 1, &vs);
            want.extend(vs);
        }
        producer
            .commit_transaction(Duration::from_secs(30))
            .unwrap();
    }
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &bootstrap)
        .set("isolation.level", "read_committed")
        // At least one batch comes whatever the limit (KIP-74): one a fetch.
        .set("max.partition.fetch.bytes", "1");
    let got = read_with(config, "txn-batches", 1, want.len());
    assert_eq!(got.get(&0), Some(&want), "every committed record, in order");
}

/// A read-committed consumer whose fetches each end inside a transaction: the
/// partition's index reads on past the fetch to find where the transaction ends, and
/// what it read (the records themselves on Iggy, which cannot read headers alone), like
/// what a fetch read past the last stable offset, serves the consumer's next fetch. So
/// the store gives its reads about what it gives a read-uncommitted consumer of the same
/// log (`backend_read_bytes_total`), not twice that, and the consumer gets every
/// committed record once, in order, no aborted one.
async fn transactions_larger_than_a_fetch_are_read_from_the_log_once(store: Store) {
    let Some((gw, bootstrap, producer)) = started(store, "txn-large", 1, 60_000).await else {
        return;
    };
    let pad = "x".repeat(1000);
    let (mut all, mut want) = (Vec::new(), Vec::new());
    for txn in 0..5 {
        producer.begin_transaction().unwrap();
        // Each `send` flushes: four batches of about 40 KB a transaction.
        for batch in 0..4 {
            let vs: Vec<String> = (0..40)
                .map(|i| format!("t{txn}-b{batch}-{i}-{pad}"))
                .collect();
            send(&producer, "txn-large", 1, &vs);
            all.extend(vs.iter().cloned());
            if txn != 2 {
                want.extend(vs);
            }
        }
        let end = Duration::from_secs(30);
        match txn {
            2 => producer.abort_transaction(end).unwrap(),
            _ => producer.commit_transaction(end).unwrap(),
        }
    }
    let read_bytes = || {
        let scrape = Scrape::take(gw.admin);
        let name = "iggy_kafka_gateway_backend_read_bytes_total";
        scrape.sum(name, &[("call", "read")]) + scrape.sum(name, &[("call", "read_headers")])
    };
    let reader = |isolation: &str| {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &bootstrap)
            .set("isolation.level", isolation)
            // Under two batches a fetch: each ends inside a transaction of four.
            .set("max.partition.fetch.bytes", "65536");
        config
    };
    let start = read_bytes();
    let got = read_with(reader("read_uncommitted"), "txn-large", 1, all.len());
    assert_eq!(got.get(&0), Some(&all), "read_uncommitted: every record");
    let uncommitted = read_bytes() - start;
    let start = read_bytes();
    let got = read_with(reader("read_committed"), "txn-large", 1, want.len());
    assert_eq!(
        got.get(&0),
        Some(&want),
        "read_committed: the committed records"
    );
    let committed = read_bytes() - start;
    assert!(
        uncommitted > 0.0 && committed < 1.25 * uncommitted,
        "the store gave reads {committed} bytes for read_committed, {uncommitted} for \
         read_uncommitted"
    );
}

/// The last stable offset (a read-committed ListOffsets: librdkafka's default
/// isolation, with which a consumer without a committed offset looks for the end) of a
/// partition this gateway has written from its first record is what its appends kept
/// in the transaction index: the store reads nothing for it. Without that index, the
/// first one read the partition from its start, every record of it on Iggy.
async fn the_last_stable_offset_of_a_partition_written_here_reads_no_log(store: Store) {
    if let Some(gw) = Gateway::start_on(store, &[]) {
        stable_offsets_read_no_log(gw, "txn-lso", |_| {}).await;
    }
}

/// A gateway stopped cleanly saves its transaction indexes as it stops (here only
/// then: `txn_index_checkpoint_ms=0`), so the one started on the same store answers the
/// last stable offset from the saved index: no read of the log, where without it the
/// first one read the whole partition. Its appends then keep the restored index: the
/// open transaction's commit moves the last stable offset with no read either.
async fn the_last_stable_offset_after_a_restart_reads_no_log(store: Store) {
    let settings = [("txn_index_checkpoint_ms", "0")];
    if let Some(gw) = Gateway::process_on(store, &settings) {
        let restart = |gw: &mut Gateway| {
            assert!(gw.terminate().success(), "the gateway stopped cleanly");
            gw.restart_after_kill();
        };
        stable_offsets_read_no_log(gw, "txn-lso-restart", restart).await;
    }
}

/// Writes `topic` a committed transaction and leaves one open, hands the gateway to
/// `meanwhile`, then expects the last stable offset where the open transaction began,
/// and after its commit past its marker, with no read of the log for either.
async fn stable_offsets_read_no_log(
    mut gw: Gateway,
    topic: &str,
    meanwhile: impl FnOnce(&mut Gateway),
) {
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, topic, 1, &[]).await;
    let producer = txn_producer(&bootstrap, &format!("{topic}-producer"), 60_000);
    producer.begin_transaction().unwrap();
    send(&producer, topic, 1, &values("committed-", 300));
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    producer.begin_transaction().unwrap();
    let open = values("open-", 20);
    send(&producer, topic, 1, &open);
    let (_, high) = watermarks(&bootstrap, topic, "read_uncommitted");
    meanwhile(&mut gw);
    let before = read_bytes(&gw);
    assert_eq!(
        watermarks(&bootstrap, topic, "read_committed"),
        (0, high - open.len() as i64),
        "the last stable offset is where the open transaction began"
    );
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    assert_eq!(
        watermarks(&bootstrap, topic, "read_committed"),
        (0, high + 1),
        "after its commit marker"
    );
    assert_eq!(read_bytes(&gw) - before, 0.0, "bytes the store read");
}

/// The partition's watermarks as a consumer at `isolation` asks for them (ListOffsets).
fn watermarks(bootstrap: &str, topic: &str, isolation: &str) -> (i64, i64) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    (consumer.fetch_watermarks(topic, 0, Duration::from_secs(10))).unwrap()
}

/// Bytes the gateway's log store gave reads of any kind.
fn read_bytes(gw: &Gateway) -> f64 {
    let scrape = Scrape::take(gw.admin);
    let name = "iggy_kafka_gateway_backend_read_bytes_total";
    scrape.sum(name, &[("call", "read")]) + scrape.sum(name, &[("call", "read_headers")])
}

/// A gateway killed keeps what it saved last (every `txn_index_checkpoint_ms`): the
/// one started on the same store reads the log on from there. The last checkpoint here
/// is from after a committed transaction of 300 batches, so the last stable offset
/// (where the open transaction that followed began) costs no more reading than a
/// Fetch of that open transaction; read from the log start, the 300 batches come too.
async fn the_last_stable_offset_after_a_kill_reads_on_from_the_last_checkpoint(store: Store) {
    const TOPIC: &str = "txn-lso-kill";
    let Some(mut gw) = Gateway::process_on(store, &[("txn_index_checkpoint_ms", "50")]) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, TOPIC, 1, &[]).await;
    let producer = txn_producer(&bootstrap, &format!("{TOPIC}-producer"), 60_000);
    producer.begin_transaction().unwrap();
    for value in values("committed-", 300) {
        send(&producer, TOPIC, 1, &[value]);
    }
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    let (_, committed_end) = watermarks(&bootstrap, TOPIC, "read_uncommitted");
    assert_eq!(
        watermarks(&bootstrap, TOPIC, "read_committed").1,
        committed_end,
        "the commit marker is written"
    );
    // The open transaction is written until two saves ended after the commit: the
    // second began after the first ended, so it saved the index past the commit.
    let saves = || {
        let name = "iggy_kafka_gateway_backend_call_duration_seconds_count";
        Scrape::take(gw.admin).sum(name, &[("call", "meta_write"), ("table", "txn_index")])
    };
    let first = saves();
    producer.begin_transaction().unwrap();
    let mut open = 0;
    while saves() < first + 2.0 {
        assert!(open < 10_000, "no transaction index saved");
        send(&producer, TOPIC, 1, &values(&format!("open-{open}-"), 1));
        open += 1;
    }
    let (_, high) = watermarks(&bootstrap, TOPIC, "read_uncommitted");
    drop(producer);
    gw.restart_after_kill();
    let before = read_bytes(&gw);
    assert_eq!(
        watermarks(&bootstrap, TOPIC, "read_committed"),
        (0, committed_end),
        "the last stable offset is where the open transaction began"
    );
    let for_the_stable_offset = read_bytes(&gw) - before;
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("group.id", "txn-lso-kill")
        .set("isolation.level", "read_uncommitted")
        .create()
        .unwrap();
    let mut at = TopicPartitionList::new();
    (at.add_partition_offset(TOPIC, 0, Offset::Offset(committed_end))).unwrap();
    consumer.assign(&at).unwrap();
    let (mut read, deadline) = (0, std::time::Instant::now() + Duration::from_secs(30));
    while read < high - committed_end {
        assert!(
            std::time::Instant::now() < deadline,
            "read {read} records of the open transaction"
        );
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            m.expect("fetch");
            read += 1;
        }
    }
    let for_the_fetch = read_bytes(&gw) - before - for_the_stable_offset;
    assert!(
        for_the_stable_offset <= for_the_fetch,
        "the store read {for_the_stable_offset} bytes for the last stable offset, \
         {for_the_fetch} for a fetch of the {open} records after it"
    );
}

/// A consume-transform-produce loop whose consumer is no longer a member of its group
/// (it left, as a zombie's membership ends in a rebalance or a coordinator's restart)
/// has its offsets refused (UNKNOWN_MEMBER_ID, as Kafka's validateOffsetCommit answers a
/// transactional commit naming a member it does not know): otherwise the zombie and the
/// member that took its partitions both commit, and what they produced is read twice.
/// The transaction can only abort; a live member's offsets commit with its transaction.
async fn a_member_no_longer_in_its_group_cannot_commit_with_a_transaction(store: Store) {
    const TOPIC: &str = "txn-zombie";
    let Some((_gw, bootstrap, producer)) = started(store, TOPIC, 1, 60_000).await else {
        return;
    };
    let joined = |b: &str| {
        let c = groups::member(b, "zombie-group", TOPIC, "range");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while c.assignment().map_or(0, |a| a.count()) == 0 {
            assert!(std::time::Instant::now() < deadline, "never assigned");
            let _ = c.poll(Duration::from_millis(100));
        }
        c
    };
    let b = bootstrap.clone();
    let zombie = tokio::task::spawn_blocking(move || {
        let c = joined(&b);
        let stale = c.group_metadata().expect("group metadata");
        drop(c); // leaves the group
        stale
    })
    .await
    .unwrap();
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(TOPIC, 0, Offset::Offset(5))
        .unwrap();

    producer.begin_transaction().unwrap();
    send(&producer, TOPIC, 1, &values("zombie-", 2));
    let refused = producer
        .send_offsets_to_transaction(&offsets, &zombie, Duration::from_secs(30))
        .expect_err("a member that left its group committed offsets with a transaction");
    assert_eq!(
        refused.rdkafka_error_code(),
        Some(rdkafka::types::RDKafkaErrorCode::UnknownMemberId),
        "{refused}"
    );
    producer.abort_transaction(Duration::from_secs(30)).unwrap();
    assert_eq!(committed(&bootstrap, "zombie-group", TOPIC, 1), [-1]);

    let b = bootstrap.clone();
    let (live, current) = tokio::task::spawn_blocking(move || {
        let c = joined(&b);
        let current = c.group_metadata().expect("group metadata");
        (c, current)
    })
    .await
    .unwrap();
    producer.begin_transaction().unwrap();
    send(&producer, TOPIC, 1, &values("live-", 2));
    producer
        .send_offsets_to_transaction(&offsets, &current, Duration::from_secs(30))
        .unwrap();
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    assert_eq!(committed(&bootstrap, "zombie-group", TOPIC, 1), [5]);
    let got = read(&bootstrap, TOPIC, 1, "read_committed", 2);
    assert_eq!(got.get(&0), Some(&values("live-", 2)));
    drop(live);
}

/// Kafka keeps the later of a transactional and a plain commit in the order they were
/// made, not settled. Without that rule the transaction's commit moved partition 0
/// back from 20 to 10; so would a settle landing late or retried.
async fn a_commit_made_after_a_transactions_offsets_outlives_its_commit(store: Store) {
    const TOPIC: &str = "txn-later";
    const GROUP: &str = "txn-later-group";
    let Some((_gw, bootstrap, producer)) = started(store, TOPIC, 2, 60_000).await else {
        return;
    };
    commit_offsets(&bootstrap, GROUP, TOPIC, &[(0, 3), (1, 3)]);
    producer.begin_transaction().unwrap();
    send(&producer, TOPIC, 2, &values("v-", 2));
    let mut offsets = TopicPartitionList::new();
    for p in 0..2 {
        offsets
            .add_partition_offset(TOPIC, p, Offset::Offset(10))
            .unwrap();
    }
    let group = group_metadata(&bootstrap, GROUP);
    producer
        .send_offsets_to_transaction(&offsets, &group, Duration::from_secs(30))
        .unwrap();
    commit_offsets(&bootstrap, GROUP, TOPIC, &[(0, 20)]);
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    assert_eq!(committed(&bootstrap, GROUP, TOPIC, 2), [20, 10]);
}
