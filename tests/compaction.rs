//! Log compaction through real clients, on both stores. A topic written by rdkafka with
//! many versions of each key and tombstones, turned to `cleanup.policy=compact` by
//! AlterConfigs: after the compactor's passes a consumer from the beginning reads
//! exactly the latest value of each live key and no deleted key, and the partition's
//! storage shrank (DescribeLogDirs, printed): on the embedded store its file, on Iggy
//! its oldest segments (`docs/IGGY_MAPPING.md`, "Log compaction"), where a native Iggy
//! reader still sees the superseded versions the remaining segments hold. While it
//! compacts, every read sees each key's versions in order and its latest one. SIGKILLs
//! of the gateway process while it compacts lose nothing that must stay, and compaction
//! resumes after each restart (embedded store: its pass rewrites a file; a pass on Iggy
//! writes one table row, then deletes segments); so do machine crashes, which lose what
//! was not synced, on the embedded store.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use crate::support;
use support::admin::Scrape;
use support::describe::stored_bytes;
use support::kafka::{admin, create_topic, read_to_end};
use support::machine::Machine;
use support::{on_every_store, Gateway, Store};

on_every_store!(
    a_compacted_topic_keeps_the_latest_value_of_each_key,
    transactions_compact_to_the_latest_committed_value,
    a_pass_deletes_the_partitions_transaction_index_checkpoint
);

const KEYS: usize = 50;
/// Keys from this one on are deleted (a tombstone each) halfway.
const DELETED_FROM: usize = 40;
const VALUE_BYTES: usize = 2_000;

/// Settings of the compacted topic: every bit of dirt cleanable, tombstones kept 1 s.
const COMPACTED: &[(&str, &str)] = &[
    ("cleanup.policy", "compact"),
    ("min.cleanable.dirty.ratio", "0.01"),
    ("delete.retention.ms", "1000"),
    ("min.compaction.lag.ms", "0"),
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn key(k: usize) -> String {
    format!("key-{k:03}")
}

/// Version `round` of key `k`'s value: the round first, then padding.
fn value(k: usize, round: usize) -> String {
    let head = format!("{round:05}:{k:03}:");
    format!("{head}{}", "x".repeat(VALUE_BYTES - head.len()))
}

fn round_of(value: &[u8]) -> usize {
    std::str::from_utf8(&value[..5]).unwrap().parse().unwrap()
}

fn producer(bootstrap: &str) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "0")
        .create()
        .expect("producer")
}

/// The key of a record written after each round on its own: the partition's last
/// batch, which compaction never touches (the active tail), holds it alone.
const TAIL: &str = "tail";

/// Writes round `round` of every key (a tombstone for a deleted key from `tombstones`
/// on, nothing for it after), each round its own batches, then a [`TAIL`] record;
/// acknowledged when it returns.
fn write_round(
    p: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    round: usize,
    tombstones: usize,
) {
    for k in 0..KEYS {
        let key = key(k);
        let deleted = k >= DELETED_FROM;
        if deleted && round > tombstones {
            continue;
        }
        let value = value(k, round);
        let record = BaseRecord::to(topic).partition(0).key(&key);
        let record = match deleted && round == tombstones {
            true => record,
            false => record.payload(&value),
        };
        p.send(record).map_err(|(e, _)| e).expect("queued");
    }
    p.flush(Duration::from_secs(30)).expect("acknowledged");
    let tail = BaseRecord::to(topic).partition(0).key(TAIL).payload("");
    p.send(tail).map_err(|(e, _)| e).expect("queued");
    p.flush(Duration::from_secs(30)).expect("acknowledged");
}

/// Checks what a reader saw against the rounds acknowledged (`rounds` of them, deleted
/// keys' tombstones at round `tombstones`): offsets grow, each key's versions come in
/// order, and each key's last version is there, its latest value or its tombstone (the
/// tombstone may be gone). [`TAIL`] records are left out. Answers whether the view is the compacted one: one record
/// per live key and nothing of the deleted ones.
fn check_view(read: &[(i64, String, Option<Vec<u8>>)], rounds: usize, tombstones: usize) -> bool {
    let mut last: BTreeMap<&str, (i64, Option<usize>)> = BTreeMap::new();
    let mut versions: BTreeMap<&str, usize> = BTreeMap::new();
    for (offset, key, value) in read.iter().filter(|r| r.1 != TAIL) {
        let round = value.as_deref().map(round_of);
        if let Some((before, previous)) = last.get(key.as_str()) {
            assert!(
                before < offset,
                "offsets grow: {key} at {before} then {offset}"
            );
            assert!(
                previous.is_some_and(|p| round.is_none_or(|r| r > p)),
                "{key}: version {round:?} after {previous:?}"
            );
        }
        last.insert(key, (*offset, round));
        *versions.entry(key).or_default() += 1;
    }
    for k in 0..KEYS {
        let key = key(k);
        let latest = last.get(key.as_str()).map(|l| l.1);
        if k < DELETED_FROM {
            assert_eq!(latest, Some(Some(rounds - 1)), "{key}: its latest value");
        } else {
            assert!(
                matches!(latest, None | Some(None)) || rounds <= tombstones,
                "{key} deleted, read {latest:?}"
            );
        }
    }
    let live = last.values().filter(|l| l.1.is_some()).count();
    last.len() == live && versions.values().all(|&n| n == 1) && live == DELETED_FROM
}

/// Every message a native Iggy reader finds in partition 0 of `topic`: offset and
/// payload.
async fn natively_read(server: &support::iggy::IggyServer, topic: &str) -> Vec<(u64, Vec<u8>)> {
    use ::iggy::prelude::{Consumer, Identifier, MessageClient, PollingStrategy};
    let sdk = server.sdk().await;
    let id = |name: &str| Identifier::named(name).unwrap();
    let (mut out, mut next) = (Vec::new(), 0);
    loop {
        let polled = sdk
            .poll_messages(
                &id("kafka"),
                &id(topic),
                Some(0),
                &Consumer::default(),
                &PollingStrategy::offset(next),
                1_000,
                false,
            )
            .await
            .expect("native poll");
        let Some(last) = polled.messages.last() else {
            return out;
        };
        next = last.header.offset + 1;
        out.extend((polled.messages.iter()).map(|m| (m.header.offset, m.payload.to_vec())));
    }
}

/// Reads until the view is the compacted one, checking each read on the way.
fn await_compacted(bootstrap: &str, topic: &str, rounds: usize, tombstones: usize) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let read = read_to_end(bootstrap, topic);
        if check_view(&read, rounds, tombstones) {
            return;
        }
        let seen: Vec<_> = read.iter().map(|r| (r.0, &r.1[..])).collect();
        assert!(Instant::now() < deadline, "never compacted: read {seen:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn a_compacted_topic_keeps_the_latest_value_of_each_key(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[("compaction_interval_ms", "100")]) else {
        return;
    };
    let b = gw.bootstrap();
    let topic = "versions";
    // Not compacted until AlterConfigs says so: the size before is all versions'. Iggy
    // gives back whole segments: its smallest, so that some are superseded whole.
    let not_yet: Vec<_> = (COMPACTED.iter().skip(1)).copied().collect();
    let not_yet = [&not_yet[..], &[("segment.bytes", "1048576")]].concat();
    runtime().block_on(create_topic(&b, topic, 1, &not_yet));
    let (rounds, tombstones) = (40, 10);
    let p = producer(&b);
    for round in 0..rounds {
        write_round(&p, topic, round, tombstones);
    }
    let everything = read_to_end(&b, topic);
    assert!(
        !check_view(&everything, rounds, tombstones),
        "every version is there"
    );
    let before = stored_bytes(&gw, topic);

    let mut compact = AlterConfig::new(ResourceSpecifier::Topic(topic));
    for (k, v) in COMPACTED {
        compact = compact.set(k, v);
    }
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let altered = runtime().block_on(admin(&b).alter_configs(&[compact], &options));
    assert!(altered.unwrap().iter().all(Result::is_ok));
    await_compacted(&b, topic, rounds, tombstones);
    // On Iggy, segments go in the pass after the one that removed their last records.
    let fell = wait_for(Duration::from_secs(30), || {
        stored_bytes(&gw, topic) < before
    });
    let after = stored_bytes(&gw, topic);
    println!(
        "{store:?}: partition stored {before} bytes with {} records, {after} bytes compacted",
        everything.len()
    );
    assert!(fell, "storage fell: {before} -> {after}");
    if let Some(server) = gw.iggy_server() {
        // A native reader sees what the remaining segments hold, superseded or not,
        // from the first offset Iggy still has: past the deleted segments.
        let native = runtime().block_on(natively_read(server, topic));
        let kafka = read_to_end(&b, topic);
        println!(
            "native Iggy reader: {} messages from offset {}; Kafka reader: {} records",
            native.len(),
            native[0].0,
            kafka.len()
        );
        assert!(native[0].0 > 0, "the oldest segments went");
        assert!(
            native.len() > kafka.len(),
            "superseded versions stay for Iggy readers"
        );
        let last = native.last().unwrap();
        assert_eq!(
            last.0 as i64,
            kafka.last().unwrap().0,
            "both read to the end"
        );
    }

    // Compaction goes on with what comes next.
    write_round(&p, topic, rounds, tombstones);
    write_round(&p, topic, rounds + 1, tombstones);
    await_compacted(&b, topic, rounds + 2, tombstones);
}

#[test]
fn sigkills_while_compacting_lose_nothing_that_must_stay() {
    // A process: SIGKILLed again and again while it compacts.
    let mut gw = Gateway::process_with(&[("compaction_interval_ms", "10")]);
    let (b, data) = (gw.bootstrap(), gw.data_dir().to_path_buf());
    let step = Duration::from_micros(400);
    let interrupted =
        crashes_while_compacting(&b, &data, "killed", 15, step, || gw.restart_after_kill());
    println!("{interrupted} of 15 SIGKILLs came while a pass's new file was there");
}

/// The same through machine crashes (`support::machine`: what was not synced is lost
/// too), with `durability=batch` so every acknowledged round must stay: a pass must
/// sync its new file before it takes the old one's place.
#[test]
fn machine_crashes_while_compacting_lose_nothing_that_must_stay() {
    let mut machine = Machine::start(&[("compaction_interval_ms", "10"), ("durability", "batch")]);
    let (b, data) = (machine.bootstrap(), machine.data_dir().to_path_buf());
    let step = Duration::from_micros(700);
    let interrupted = crashes_while_compacting(&b, &data, "crashed", 8, step, || machine.crash());
    println!("{interrupted} of 8 machine crashes came while a pass's new file was there");
}

/// Makes `topic` compacted through `b`, then `crashes` times writes ten rounds and,
/// once a pass has begun its new file under `data`, `step` later each time, calls
/// `crash` (which brings the gateway back); after each, a reader sees every key's
/// latest acknowledged version, and at the end compaction has finished. Answers how
/// many crashes came while a pass's new file was there.
fn crashes_while_compacting(
    b: &str,
    data: &Path,
    topic: &str,
    crashes: u32,
    step: Duration,
    mut crash: impl FnMut(),
) -> usize {
    // Rounds pile up for a while, so each pass has some to do.
    let lagging = [&COMPACTED[..3], &[("min.compaction.lag.ms", "300")]].concat();
    runtime().block_on(create_topic(b, topic, 1, &lagging));
    let tombstones = 3;
    let (mut rounds, mut interrupted) = (0, 0);
    for n in 0..crashes {
        let p = producer(b);
        for _ in 0..10 {
            write_round(&p, topic, rounds, tombstones);
            rounds += 1;
        }
        drop(p);
        let began = wait_for(Duration::from_secs(3), || compacting(data));
        std::thread::sleep(step * n);
        interrupted += usize::from(began && compacting(data));
        crash();
        check_view(&read_to_end(b, topic), rounds, tombstones);
    }
    await_compacted(b, topic, rounds, tombstones);
    interrupted
}

/// Polls `done` until it holds or `limit` passed; whether it held.
fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    true
}

/// Whether a compaction's new file is there: a pass was under way.
fn compacting(data: &Path) -> bool {
    let topics = std::fs::read_dir(data.join("logs")).unwrap().flatten();
    let mut files = topics.flat_map(|t| std::fs::read_dir(t.path()).unwrap().flatten());
    files.any(|f| f.path().extension().is_some_and(|e| e == "compacted"))
}

/// A transactional producer writes every key in each transaction and aborts one in
/// three: once compacted, a read_committed consumer from the beginning reads each key
/// once, with its latest committed value, and never an aborted one on the way.
fn transactions_compact_to_the_latest_committed_value(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[("compaction_interval_ms", "100")]) else {
        return;
    };
    let b = gw.bootstrap();
    let topic = "transactional";
    runtime().block_on(create_topic(&b, topic, 1, COMPACTED));
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", &b)
        .set("transactional.id", "compacted-txns")
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    let limit = Duration::from_secs(30);
    p.init_transactions(limit).expect("init");
    let rounds = 30;
    let aborted = |round: usize| round % 3 == 2;
    for round in 0..rounds {
        p.begin_transaction().expect("begin");
        send_round(&p, topic, round);
        match aborted(round) {
            true => {
                p.flush(limit).expect("delivered");
                p.abort_transaction(limit).expect("abort")
            }
            false => p.commit_transaction(limit).expect("commit"),
        }
    }
    let latest = (0..rounds).rev().find(|&r| !aborted(r)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = read_to_end(&b, topic);
        let mut versions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (_, key, value) in &read {
            let round = round_of(value.as_deref().expect("no tombstones here"));
            assert!(!aborted(round), "{key}: aborted version {round} read");
            versions.entry(key).or_default().push(round);
        }
        assert_eq!(versions.len(), KEYS, "every key is there");
        if versions.values().all(|v| v == &[latest]) {
            println!(
                "{store:?}: {} records read, each key's latest committed value",
                read.len()
            );
            return;
        }
        let left = versions.values().map(Vec::len).sum::<usize>() - KEYS;
        assert!(
            Instant::now() < deadline,
            "never compacted: {left} superseded versions left"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Queues every key's value of `round` to partition 0 of `topic`.
fn send_round(p: &ThreadedProducer<DefaultProducerContext>, topic: &str, round: usize) {
    for k in 0..KEYS {
        let (key, value) = (key(k), value(k, round));
        let record = BaseRecord::<str, str>::to(topic)
            .partition(0)
            .key(&key)
            .payload(&value);
        p.send(record).map_err(|(e, _)| e).expect("queued");
    }
}

/// A pass that removed records deletes the partition's saved transaction index
/// checkpoint (`txn_checkpoints.rs`). Saved here while a transaction was open, one
/// would otherwise outlive the abort marker the passes remove once none of its records
/// is left: a gateway starting from it would wait for that marker for good, its last
/// stable offset held at the transaction's start.
fn a_pass_deletes_the_partitions_transaction_index_checkpoint(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[("txn_index_checkpoint_ms", "0")]) else {
        return;
    };
    let b = gw.bootstrap();
    let topic = "compacted-checkpoint";
    runtime().block_on(create_topic(&b, topic, 1, COMPACTED));
    let limit = Duration::from_secs(30);
    let producer = |id: &str| {
        let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .set("transactional.id", id)
            .set("linger.ms", "0")
            .create()
            .expect("producer");
        p.init_transactions(limit).expect("init");
        p
    };
    let send_all = |p: &ThreadedProducer<DefaultProducerContext>, round| {
        send_round(p, topic, round);
        p.flush(limit).expect("delivered");
    };
    let p = producer("compacted-checkpoint");
    p.begin_transaction().expect("begin");
    send_all(&p, 0);
    let watermarks = |isolation: &str| {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .set("isolation.level", isolation)
            .create()
            .unwrap();
        (consumer.fetch_watermarks(topic, 0, limit)).unwrap()
    };
    assert_eq!(watermarks("read_committed").1, 0, "the transaction is open");
    // Saved as the gateway stops, with the transaction open.
    assert!(gw.terminate().success(), "the gateway stopped cleanly");
    gw.restart_after_kill();
    p.abort_transaction(limit).expect("abort");
    // Another producer's: a marker of the first producer's would end its open
    // transaction in the restored index, whatever the checkpoint said.
    let other = producer("compacted-checkpoint-other");
    other.begin_transaction().expect("begin");
    send_all(&other, 1);
    other.commit_transaction(limit).expect("commit");
    let (_, high) = watermarks("read_uncommitted");
    // Passes until the abort marker's `delete.retention.ms` (1 s) is long past.
    gw.restart_with("compaction_interval_ms", Some("100"));
    let passes = || Scrape::take(gw.admin).sum("iggy_kafka_gateway_compaction_passes_total", &[]);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) || passes() < 2.0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} passes",
            passes()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    gw.restart_after_kill();
    assert_eq!(
        watermarks("read_committed").1,
        high,
        "the last stable offset, read committed"
    );
}
