//! What transactions cost (issue 16): a transactional producer against an idempotent one,
//! and read_committed consumption against read_uncommitted, measured in one run on each
//! store, with Apache Kafka's own ratios beside them when its jars are given.
//!
//!   [IGGY_SERVER_BIN=…] [KAFKA_CLASSPATH=…] cargo bench --bench transactions
//!
//! Per system (the gateway on its embedded store; on an iggy-server with IGGY_SERVER_BIN;
//! Kafka with KAFKA_CLASSPATH, as `benches/kafka-compare.sh` resolves it) and record size
//! (100 B, 1 KiB), 8 partitions, acks=all, no compression:
//! 1. librdkafka (transactions v1: AddPartitionsToTxn, the same epoch throughout) with
//!    linger.ms=5, batch.num.messages=10000, idempotent: `enable.idempotence`, every
//!    record sent, then flushed;
//! 2. the same, transactional: a `transactional.id`, committed every 100 ms or every
//!    10,000 records, whichever comes first (the setting), the last commit
//!    included; each transaction's time split into queueing (begin to the last send),
//!    drain (to the last acknowledgement) and EndTxn, beside the time the idempotent
//!    producer took for as many records;
//! 3. with KAFKA_CLASSPATH, Kafka's own `kafka-producer-perf-test` (`ProducerPerformance`
//!    as `kafka_compare/java.rs` runs it; the Java client of those jars, which uses
//!    transactions v2 (KIP-890) where the broker finalizes `transaction.version` 2),
//!    idempotent (its defaults), then transactional: `--transactional-id`,
//!    `--transaction-duration-ms 100` (a commit every 100 ms, whatever the count);
//! 4. the librdkafka transactional topic read from the start by assignment by a new
//!    consumer each time, read_uncommitted then read_committed, `READS` times each,
//!    alternating: one read lasts under a second here, too short alone to tell a few
//!    per cent, so the ratio is of the records/s over all of each side's reads, with the
//!    system's CPU per record read beside it.
//!
//! Each librdkafka producer sends one record (in a transaction of its own) before its
//! clock starts; the Java tool times from its first send, InitProducerId before it.
//! Every producer phase runs twice, alternating, and each ratio is taken within a round,
//! so a slower stretch of the shared machine touches both sides of it. The CPU per record
//! is the system's processes' (utime + stime) over the phase. With KAFKA_CLASSPATH each
//! system's finalized `transaction.version` is printed (`kafka-features.sh describe`).
//! Env: BENCH_RECORDS (scale on the record counts), BENCH_TIMEOUT_SECS (bound on a phase,
//! default 120), GATEWAY_BIN.

// Only the topic, client and consume helpers of the shared bench module are used here.
#[allow(dead_code)]
mod common;
// Kafka's perf-test tool, run as `benches/kafka-compare.sh` runs it.
#[allow(dead_code)]
#[path = "kafka_compare/java.rs"]
mod java;
// The systems are started as `benches/kafka-compare.sh` starts them.
#[allow(dead_code)]
#[path = "kafka_compare/procs.rs"]
mod procs;

use common::{await_partitions, bounded, config, consume, create_topic, PARTITIONS};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use std::{env, panic};

/// (record size in bytes, record count before BENCH_RECORDS scaling)
const SIZES: [(usize, f64); 2] = [(100, 1_000_000.0), (1024, 300_000.0)];
const ROUNDS: usize = 2;
/// Reads of the transactional topic each way (step 4).
const READS: usize = 3;
/// The commit cadence: whichever comes first.
const COMMIT_EVERY: Duration = Duration::from_millis(100);
const COMMIT_RECORDS: u64 = 10_000;

#[derive(Default)]
struct Figures {
    /// Per round, librdkafka.
    produce: Vec<Round>,
    /// Per round, `kafka-producer-perf-test` (none without KAFKA_CLASSPATH).
    java: Vec<Round>,
    /// The last transactional phase's.
    txn: Produced,
    read_uncommitted: Read,
    read_committed: Read,
}

/// What the reads one way came to: records/s over them all, and the system's µs of CPU
/// per record read.
#[derive(Clone, Copy, Default)]
struct Read {
    rps: f64,
    cpu_us: f64,
}

/// One round of a producer pair: records/s and the system's µs of CPU per record, of
/// the idempotent producer, then of the transactional one.
#[derive(Clone, Copy, Default)]
struct Round {
    idem: (f64, f64),
    txn: (f64, f64),
}

impl Round {
    fn ratio(&self) -> f64 {
        self.txn.0 / self.idem.0
    }
}

/// A produce phase's figures; the commit ones are 0 for an idempotent producer.
#[derive(Clone, Copy, Default)]
struct Produced {
    records: u64,
    rps: f64,
    /// The system's µs of CPU per record.
    cpu_us: f64,
    commits: u64,
    /// Mean ms from a transaction's begin to its last send: the records queued in the
    /// client, none sent before the linger or the commit's flush.
    queue_ms: f64,
    /// Mean ms from a transaction's last send to its records' acknowledgements.
    drain_ms: f64,
    /// Mean ms `commit_transaction` took after that (EndTxn).
    end_ms: f64,
}

/// Sends one record, then `n` records round robin over the partitions; with `txn` (a
/// transactional id), in transactions ended as `COMMIT_EVERY` / `COMMIT_RECORDS` say.
fn produce(
    (addr, pids): (&str, &[u32]),
    topic: &str,
    size: usize,
    n: u64,
    txn: Option<&str>,
    limit: Duration,
) -> Produced {
    let mut cfg = config(addr);
    cfg.set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("acks", "all")
        .set("compression.type", "none")
        .set("enable.idempotence", "true")
        .set("message.timeout.ms", limit.as_millis().to_string());
    if let Some(id) = txn {
        // librdkafka wants its delivery timeout within the transaction's.
        cfg.set("transactional.id", id).set(
            "transaction.timeout.ms",
            (limit.as_millis() + 1000).to_string(),
        );
    }
    // Polled here (`drain`), not by a ThreadedProducer's thread.
    let producer: BaseProducer = cfg.create().expect("producer");
    await_partitions(producer.client(), topic);
    if txn.is_some() {
        producer
            .init_transactions(limit)
            .expect("init_transactions");
    }
    let payload = vec![b'x'; size];
    // One record first, committed when transactional, so the clock starts with the
    // producer id known and the connections up (an idempotent producer asks for its id
    // at its first send).
    let deadline = Instant::now() + limit;
    if txn.is_some() {
        producer.begin_transaction().expect("begin_transaction");
    }
    let first = BaseRecord::<(), [u8]>::to(topic)
        .payload(&payload)
        .partition(0);
    producer
        .send(first)
        .map_err(|(e, _)| e)
        .expect("first record");
    drain(&producer, deadline);
    if txn.is_some() {
        producer
            .commit_transaction(limit)
            .expect("commit_transaction");
    }
    let (start, cpu) = (Instant::now(), cpu_secs(pids));
    let (mut commits, mut queueing) = (0u64, Duration::ZERO);
    let (mut draining, mut ending) = (Duration::ZERO, Duration::ZERO);
    let (mut opened, mut in_txn) = (Instant::now(), 0u64);
    for i in 0..n {
        if txn.is_some() && in_txn == 0 {
            producer.begin_transaction().expect("begin_transaction");
            opened = Instant::now();
        }
        let rec = BaseRecord::<(), [u8]>::to(topic)
            .payload(&payload)
            .partition((i % PARTITIONS as u64) as i32);
        common::send_polling(&producer, rec, deadline);
        in_txn += 1;
        if i % 1000 == 0 {
            producer.poll(Duration::ZERO);
        }
        let last = i + 1 == n;
        if txn.is_some() && (last || in_txn == COMMIT_RECORDS || opened.elapsed() >= COMMIT_EVERY) {
            let at = Instant::now();
            drain(&producer, deadline);
            let drained = Instant::now();
            producer
                .commit_transaction(limit)
                .expect("commit_transaction");
            queueing += at - opened;
            (draining, ending) = (draining + (drained - at), ending + drained.elapsed());
            (commits, in_txn) = (commits + 1, 0);
        }
    }
    if txn.is_none() {
        drain(&producer, deadline);
    }
    let secs = start.elapsed().as_secs_f64();
    let mean_ms = |d: Duration| d.as_secs_f64() * 1e3 / commits.max(1) as f64;
    Produced {
        records: n,
        rps: n as f64 / secs,
        cpu_us: (cpu_secs(pids) - cpu) * 1e6 / n as f64,
        commits,
        queue_ms: mean_ms(queueing),
        drain_ms: mean_ms(draining),
        end_ms: mean_ms(ending),
    }
}

/// Waits for every record sent to be acknowledged, as librdkafka's own
/// `rd_kafka_commit_transaction` does before its EndTxn (and so every C, Python or Go
/// application's commit): `rd_kafka_flush` holds the producer's flushing flag, so what
/// the queues hold goes out at once instead of after `linger.ms`. A wait that only polls
/// sets no flag and added a linger to every commit; rdkafka's own `flush` only raises it
/// for an instant between polls. This thread serves the delivery events meanwhile.
fn drain(producer: &BaseProducer, deadline: Instant) {
    // A raw pointer is not Send; librdkafka's handle is thread-safe.
    let rk = producer.client().native_ptr() as usize;
    let ms = deadline
        .saturating_duration_since(Instant::now())
        .as_millis();
    let flushed = std::thread::scope(|s| {
        let flush = s.spawn(move || unsafe {
            rdkafka::bindings::rd_kafka_flush(rk as *mut _, ms.min(i32::MAX as u128) as i32)
        });
        while !flush.is_finished() {
            producer.poll(Duration::from_millis(1));
        }
        flush.join().expect("the flush thread")
    });
    assert_eq!(
        flushed,
        rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR,
        "produce: records still in flight"
    );
}

/// CPU seconds used so far by the processes `pids` together.
fn cpu_secs(pids: &[u32]) -> f64 {
    pids.iter().map(|&p| procs::cpu_secs(p)).sum()
}

/// One `kafka-producer-perf-test` run of `n` records: records/s and the system's µs of
/// CPU per record; with `txn` (a transactional id), committing every `COMMIT_EVERY`.
/// A failure is printed and gives NaN, so the other phases go on.
fn java_produce(
    (classpath, addr, pids): (&str, &str, &[u32]),
    topic: &str,
    size: usize,
    n: u64,
    txn: Option<&str>,
    limit: Duration,
) -> (f64, f64) {
    let every = COMMIT_EVERY.as_millis().to_string();
    let options = match txn {
        Some(id) => vec![
            "--transactional-id",
            id,
            "--transaction-duration-ms",
            &every,
        ],
        None => vec![],
    };
    let cpu = cpu_secs(pids);
    let shape = (size, "none");
    match java::produce_with(classpath, addr, topic, shape, (n, 1), &options, limit) {
        Ok((rps, _)) => (rps, (cpu_secs(pids) - cpu) * 1e6 / n as f64),
        Err(e) => {
            let what = if txn.is_some() {
                "transactional"
            } else {
                "idempotent"
            };
            eprintln!("perf-test {what} on {topic}: {e}");
            (f64::NAN, f64::NAN)
        }
    }
}

fn run(
    system: &[procs::Proc],
    name: &str,
    scale: f64,
    limit: Duration,
    classpath: Option<&str>,
) -> Vec<Figures> {
    let addr = system.last().expect("a process").addr.clone();
    let pids: Vec<u32> = system.iter().map(procs::Proc::pid).collect();
    let hard = limit * 3;
    let mut all = Vec::new();
    for (size, base_n) in SIZES {
        let n = ((base_n * scale) as u64).max(1);
        let mut f = Figures::default();
        for round in 0..ROUNDS {
            let (idem, txn) = (
                format!("idem-{size}-{round}"),
                format!("txn-{size}-{round}"),
            );
            create_topic(&addr, &idem);
            create_topic(&addr, &txn);
            let (a, p) = (addr.clone(), pids.clone());
            let idem = bounded("idempotent", hard, move || {
                produce((&a, &p), &idem, size, n, None, limit)
            });
            let (a, p, t) = (addr.clone(), pids.clone(), txn.clone());
            let id = format!("bench-{size}-{round}");
            let txn_figures = bounded("transactional", hard, move || {
                produce((&a, &p), &t, size, n, Some(&id), limit)
            });
            let t = txn_figures;
            eprintln!(
                "{name} {size} B round {round}: librdkafka idempotent {:.0} rec/s ({:.2} µs CPU), transactional {:.0} rec/s ({:.2} µs CPU; {} commits, {:.1} + {:.1} + {:.1} ms each)",
                idem.rps, idem.cpu_us, t.rps, t.cpu_us, t.commits, t.queue_ms, t.drain_ms, t.end_ms
            );
            f.produce.push(Round {
                idem: (idem.rps, idem.cpu_us),
                txn: (t.rps, t.cpu_us),
            });
            f.txn = t;
            if let Some(cp) = classpath {
                let (idem, txn) = (
                    format!("java-idem-{size}-{round}"),
                    format!("java-txn-{size}-{round}"),
                );
                create_topic(&addr, &idem);
                create_topic(&addr, &txn);
                let on = (cp, addr.as_str(), pids.as_slice());
                let id = format!("perf-{name}-{size}-{round}");
                let r = Round {
                    idem: java_produce(on, &idem, size, n, None, limit),
                    txn: java_produce(on, &txn, size, n, Some(&id), limit),
                };
                eprintln!(
                    "{name} {size} B round {round}: perf-test idempotent {:.0} rec/s ({:.2} µs CPU), transactional {:.0} rec/s ({:.2} µs CPU), ratio {:.2}",
                    r.idem.0, r.idem.1, r.txn.0, r.txn.1, r.ratio()
                );
                f.java.push(r);
            }
            if round + 1 == ROUNDS {
                let records = (n + 1) as f64 * READS as f64;
                // Per isolation level: seconds reading and CPU seconds, over all reads.
                let mut spent = [(0.0, 0.0); 2];
                for _ in 0..READS {
                    for (i, level) in ["read_uncommitted", "read_committed"]
                        .into_iter()
                        .enumerate()
                    {
                        let (a, t, p) = (addr.clone(), txn.clone(), pids.clone());
                        let (secs, cpu) = bounded(level, hard, move || {
                            let cpu = cpu_secs(&p);
                            let rps = consume(&a, &t, (size, n + 1), level, limit).0;
                            ((n + 1) as f64 / rps, cpu_secs(&p) - cpu)
                        });
                        spent[i].0 += secs;
                        spent[i].1 += cpu;
                    }
                }
                let [uncommitted, committed] = spent.map(|(secs, cpu)| Read {
                    rps: records / secs,
                    cpu_us: cpu * 1e6 / records,
                });
                (f.read_uncommitted, f.read_committed) = (uncommitted, committed);
                eprintln!(
                    "{name} {size} B, {READS} reads each: read_uncommitted {:.0} rec/s ({:.3} µs CPU), read_committed {:.0} rec/s ({:.3} µs CPU)",
                    uncommitted.rps, uncommitted.cpu_us, committed.rps, committed.cpu_us
                );
            }
        }
        all.push(f);
    }
    all
}

fn main() {
    let scale = common::env_f64("BENCH_RECORDS").unwrap_or(1.0);
    let limit = Duration::from_secs_f64(common::env_f64("BENCH_TIMEOUT_SECS").unwrap_or(120.0));
    let gateway = common::gateway_bin();
    let iggy_bin = env::var_os("IGGY_SERVER_BIN").map(PathBuf::from);
    let kafka_cp = env::var("KAFKA_CLASSPATH").ok();
    let cp = kafka_cp.as_deref();

    // Per system: its finalized transaction.version (with KAFKA_CLASSPATH) and figures.
    let mut results: Vec<(&str, String, Vec<Figures>)> = Vec::new();
    let mut measure = |name: &'static str, start: &dyn Fn() -> Vec<procs::Proc>| {
        // A failing system is reported and the others still measured.
        match panic::catch_unwind(panic::AssertUnwindSafe(|| {
            let procs = start();
            let addr = &procs.last().expect("a process").addr;
            let level = cp.map_or("-".into(), |cp| {
                match java::finalized_level(cp, addr, "transaction.version", limit) {
                    Ok(Some(level)) => level.to_string(),
                    Ok(None) => "none".into(),
                    Err(e) => format!("? ({e})"),
                }
            });
            eprintln!("{name}: transaction.version finalized: {level}");
            (level, run(&procs, name, scale, limit, cp))
        })) {
            Ok((level, figures)) => results.push((name, level, figures)),
            Err(_) => println!("FAILED {name}: see the panic message above"),
        }
    };
    measure("embedded", &|| vec![procs::gateway(&gateway, None)]);
    match &iggy_bin {
        Some(bin) => measure("iggy", &|| {
            let server = procs::iggy(bin);
            let gw = procs::gateway(&gateway, Some(&server.addr));
            vec![server, gw]
        }),
        None => println!("SKIPPED iggy: set IGGY_SERVER_BIN to an iggy-server binary"),
    }
    match cp {
        Some(cp) => measure("kafka", &|| vec![procs::kafka(cp)]),
        None => {
            println!("SKIPPED kafka and perf-test: set KAFKA_CLASSPATH (benches/kafka-compare.sh resolves it)")
        }
    }

    let ratios = |rounds: &[Round]| {
        let r: Vec<String> = rounds.iter().map(|r| format!("{:.2}", r.ratio())).collect();
        r.join(" / ")
    };
    let cpu = |rounds: &[Round]| {
        let r: Vec<String> = rounds
            .iter()
            .map(|r| format!("{:.2}/{:.2}", r.idem.1, r.txn.1))
            .collect();
        r.join("  ")
    };
    println!("\n{PARTITIONS} partitions, librdkafka linger.ms=5, batch.num.messages=10000, acks=all; commits every 100 ms or 10,000 records");
    println!("system    size | idempotent rec/s  transactional rec/s  ratio (per round)   commits  ms a txn: queue + drain + EndTxn (idempotent) | read_uncommitted  read_committed  ratio  µs CPU/record read | µs CPU/record idem/txn (per round)");
    for (name, _, figures) in &results {
        for ((size, _), f) in SIZES.iter().zip(figures) {
            let last = f.produce.last().copied().unwrap_or_default();
            // The idempotent producer's time for a transaction's worth of records.
            let per_txn = f.txn.records as f64 / f.txn.commits.max(1) as f64 / last.idem.0 * 1e3;
            println!(
                "{name:<8} {size:>5}B | {:>16.0} {:>20.0}  {:<18} {:>8}  {:>5.1} + {:>5.1} + {:>4.1} ({:>5.1}) | {:>16.0} {:>15.0} {:>6.2}  {:.3}/{:.3} | {}",
                last.idem.0,
                last.txn.0,
                ratios(&f.produce),
                f.txn.commits,
                f.txn.queue_ms,
                f.txn.drain_ms,
                f.txn.end_ms,
                per_txn,
                f.read_uncommitted.rps,
                f.read_committed.rps,
                f.read_committed.rps / f.read_uncommitted.rps,
                f.read_uncommitted.cpu_us,
                f.read_committed.cpu_us,
                cpu(&f.produce),
            );
        }
    }
    if cp.is_some() {
        println!("\nkafka-producer-perf-test (its defaults, acks=all), transactional: --transaction-duration-ms {}", COMMIT_EVERY.as_millis());
        println!("system    size | transaction.version | idempotent rec/s  transactional rec/s  ratio (per round) | µs CPU/record idem/txn (per round)");
        for (name, level, figures) in &results {
            for ((size, _), f) in SIZES.iter().zip(figures) {
                let last = f.java.last().copied().unwrap_or_default();
                println!(
                    "{name:<8} {size:>5}B | {level:>19} | {:>16.0} {:>20.0}  {:<18} | {}",
                    last.idem.0,
                    last.txn.0,
                    ratios(&f.java),
                    cpu(&f.java),
                );
            }
        }
    }
}
