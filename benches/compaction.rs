//! Log compaction under load (issue 36): produce and consume throughput on a compacted
//! topic with the compactor running against the same with it off, and how fast and at
//! what CPU the storage of superseded records is given back, beside Apache Kafka's log
//! cleaner on the same workload in the same run.
//!
//!   [IGGY_SERVER_BIN=…] [KAFKA_CLASSPATH=…] cargo bench --bench compaction
//!
//! Per system (the gateway on its embedded store; on an iggy-server with IGGY_SERVER_BIN;
//! Kafka 4.4 with KAFKA_CLASSPATH, `log.cleaner.backoff.ms=100` and
//! `log.segment.delete.delay.ms=0`, so cleaned segments go at once) and per mode
//! (compactor off: `compaction_interval_ms=0`, Kafka `log.cleaner.enable=false`; on: every
//! 100 ms), in ROUNDS rounds of off then on, a fresh system and one topic of 8 partitions, `cleanup.policy=compact`, 1 MiB segments,
//! `min.cleanable.dirty.ratio=0.01`, `min.compaction.lag.ms=0`, `delete.retention.ms=0`:
//! 1. librdkafka (linger.ms=5, acks=all, idempotent) writes RECORDS records of 1 KiB,
//!    each key one of KEYS, round robin: records/s, and the system's CPU per record;
//! 2. a consumer reads every partition from its start to its end offsets at once:
//!    records/s (fewer records remain where compaction ran, so the consumer's fixed
//!    costs weigh more), and the time the read to the end took (what a restore from a
//!    compacted topic waits for);
//! 3. the stored bytes (disk blocks of every file under the system's directories) are
//!    sampled until they stop falling for 5 s. Reclaimed MB: what the run with the
//!    compactor off stores then, less what the run with it on does; MB/s over the time
//!    from the first write until the bytes stopped falling; CPU s per reclaimed MB: the
//!    system's CPU over the whole run with the compactor on, less with it off, per
//!    reclaimed MB.
//!
//! The ratios printed are on/off of the same system in the same run: produce and
//! consume records/s, and the read to the end's speed (off's time over on's).
//! Env: BENCH_RECORDS (scale on the record count), GATEWAY_BIN.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "kafka_compare/procs.rs"]
mod procs;

use common::{await_partitions, config, create_topics_with, PARTITIONS};
use procs::System;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const SIZE: usize = 1024;
const KEYS: u64 = 1_000;
const RECORDS: f64 = 100_000.0;
const TOPIC: &str = "compacted";
const TOPIC_CONFIGS: [(&str, &str); 5] = [
    ("cleanup.policy", "compact"),
    ("segment.bytes", "1048576"),
    ("min.cleanable.dirty.ratio", "0.01"),
    ("min.compaction.lag.ms", "0"),
    ("delete.retention.ms", "0"),
];
const LIMIT: Duration = Duration::from_secs(180);

const ROUNDS: usize = 2;

#[derive(Clone, Copy, Default)]
struct Run {
    produce_rps: f64,
    produce_cpu_us: f64,
    consume_rps: f64,
    consumed: u64,
    consume_secs: f64,
    /// Bytes stored once they stopped falling, and when (s from the first write).
    stored: u64,
    settled_secs: f64,
    /// The system's CPU seconds over the whole run.
    cpu_secs: f64,
}

fn main() {
    let records = (RECORDS * common::env_f64("BENCH_RECORDS").unwrap_or(1.0)) as u64;
    let bin = common::gateway_bin();
    let iggy_bin = std::env::var_os("IGGY_SERVER_BIN").map(PathBuf::from);
    let kafka_cp = std::env::var("KAFKA_CLASSPATH").ok();
    println!(
        "compaction bench: {records} records of {SIZE} B over {KEYS} keys, {PARTITIONS} partitions"
    );
    let mut names = vec!["gateway (embedded)"];
    iggy_bin.is_some().then(|| names.push("gateway (Iggy)"));
    kafka_cp.is_some().then(|| names.push("Kafka 4.4"));
    println!(
        "| system | round | compactor | produce rec/s | CPU µs/rec | consume rec/s (records) | stored MB | on/off produce, consume, to the end | reclaimed MB | MB/s | CPU s/MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for name in names {
        for round in 1..=ROUNDS {
            let mut runs = [Run::default(); 2];
            for (on, run) in [false, true].into_iter().zip(&mut runs) {
                let system = start(name, on, (&bin, iggy_bin.as_deref(), kafka_cp.as_deref()));
                *run = measure(&system, records);
            }
            for (on, run) in [false, true].into_iter().zip(&runs) {
                let mut row = format!(
                    "| {name} | {round} | {} | {:.0} | {:.1} | {:.0} ({}) | {:.1} |",
                    if on { "on" } else { "off" },
                    run.produce_rps,
                    run.produce_cpu_us,
                    run.consume_rps,
                    run.consumed,
                    run.stored as f64 / 1e6,
                );
                if on {
                    let (off, on) = (&runs[0], &runs[1]);
                    let reclaimed = off.stored.saturating_sub(on.stored) as f64 / 1e6;
                    row += &format!(
                        " {:.2}x, {:.2}x, {:.2}x | {reclaimed:.1} | {:.2} | {:.3} |",
                        on.produce_rps / off.produce_rps,
                        on.consume_rps / off.consume_rps,
                        off.consume_secs / on.consume_secs,
                        reclaimed / on.settled_secs,
                        (on.cpu_secs - off.cpu_secs) / reclaimed.max(1e-9),
                    );
                } else {
                    row += " | | | |";
                }
                println!("{row}");
            }
        }
    }
}

/// A fresh system of kind `name`, its compactor on or off.
fn start(
    name: &'static str,
    on: bool,
    (bin, iggy_bin, kafka_cp): (&PathBuf, Option<&std::path::Path>, Option<&str>),
) -> System {
    if name.starts_with("Kafka") {
        let extra = if on {
            "log.cleaner.backoff.ms=100\nlog.segment.delete.delay.ms=0\n"
        } else {
            "log.cleaner.enable=false\n"
        };
        return System::of(name, vec![procs::kafka_with(kafka_cp.unwrap(), extra)]);
    }
    // The gateway takes its settings from the environment it inherits.
    std::env::set_var(
        "IGGY_KAFKA_COMPACTION_INTERVAL_MS",
        if on { "100" } else { "0" },
    );
    match iggy_bin.filter(|_| name.contains("Iggy")) {
        Some(iggy) => {
            let server = procs::iggy(iggy);
            let gw = procs::gateway(bin, Some(&server.addr));
            System::of(name, vec![gw, server])
        }
        None => System::of(name, vec![procs::gateway(bin, None)]),
    }
}

fn measure(system: &System, records: u64) -> Run {
    let addr = &system.addr;
    create_topics_with(addr, &[TOPIC], PARTITIONS, &TOPIC_CONFIGS);
    let cpu = system.cpu_secs();
    let start = Instant::now();
    produce(addr, records);
    let secs = start.elapsed().as_secs_f64();
    let produce_cpu_us = (system.cpu_secs() - cpu) * 1e6 / records as f64;
    let (consumed, consume_secs) = consume(addr);
    let stored = || system.procs.iter().map(|p| p.stored_bytes()).sum::<u64>();
    let (mut low, mut fell_at) = (stored(), Instant::now());
    while fell_at.elapsed() < Duration::from_secs(5) && start.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(500));
        let now = stored();
        if now < low {
            (low, fell_at) = (now, Instant::now());
        }
    }
    Run {
        produce_rps: records as f64 / secs,
        produce_cpu_us,
        consume_rps: consumed as f64 / consume_secs,
        consumed,
        consume_secs,
        stored: low,
        settled_secs: (fell_at - start).as_secs_f64(),
        cpu_secs: system.cpu_secs() - cpu,
    }
}

/// `n` records of [`SIZE`] bytes, keys round robin over [`KEYS`], partitions round robin.
fn produce(addr: &str, n: u64) {
    let producer: BaseProducer = config(addr)
        .set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", LIMIT.as_millis().to_string())
        .create()
        .expect("producer");
    await_partitions(producer.client(), TOPIC);
    let payload = vec![b'x'; SIZE];
    let deadline = Instant::now() + LIMIT;
    for i in 0..n {
        let key = format!("key-{:05}", i % KEYS);
        let rec = BaseRecord::to(TOPIC)
            .key(&key)
            .payload(&payload)
            .partition((i % PARTITIONS as u64) as i32);
        common::send_polling(&producer, rec, deadline);
        if i % 1000 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer.flush(LIMIT).expect("produce: flush");
}

/// Every partition read from its start to its end offsets: (records, seconds).
fn consume(addr: &str) -> (u64, f64) {
    let consumer: BaseConsumer = config(addr)
        .set("group.id", "bench")
        .set("enable.auto.commit", "false")
        .set("queued.min.messages", "1000000")
        .create()
        .expect("consumer");
    await_partitions(consumer.client(), TOPIC);
    let mut ends = Vec::new();
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        let (_, high) = (consumer.fetch_watermarks(TOPIC, p, LIMIT)).expect("watermarks");
        ends.push(high);
        tpl.add_partition_offset(TOPIC, p, Offset::Beginning)
            .unwrap();
    }
    let start = Instant::now();
    consumer.assign(&tpl).expect("assign");
    let mut next = vec![0i64; PARTITIONS as usize];
    let mut got = 0;
    while next.iter().zip(&ends).any(|(n, e)| n < e) {
        assert!(
            start.elapsed() < LIMIT,
            "consume: {got} records, not at the ends"
        );
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            got += 1;
            next[m.partition() as usize] = m.offset() + 1;
        }
    }
    (got, start.elapsed().as_secs_f64())
}
