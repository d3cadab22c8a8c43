//! Produce/consume throughput of iggy-kafka-gateway vs Tansu, measured in one run with the same
//! client (librdkafka via the `rdkafka` crate) and the same settings, so the numbers compare.
//!
//!   TANSU_BIN=/path/to/tansu cargo bench --bench throughput
//!
//! Env: GATEWAY_BIN (default: this package's `iggy-kafka-gateway`, which cargo builds for benches),
//! TANSU_BIN (Tansu is skipped without it), BENCH_RECORDS (scale factor on the record counts,
//! e.g. 0.1 or 5), BENCH_TIMEOUT_SECS (bound on each produce/consume phase, default 120).
//! MB = 10^6 bytes of record payload. Latency is send() -> delivery callback: at full speed it is
//! mostly time spent in librdkafka's queue (up to 100k records), the same for both brokers.

mod common;

use common::{await_partitions, bounded, config, consume, create_topic, Stats, PARTITIONS};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use std::{env, fs, net, panic, thread};

/// (record size in bytes, record count before BENCH_RECORDS scaling)
const SIZES: [(usize, f64); 2] = [(100, 1_000_000.0), (1024, 300_000.0)];

/// The broker process: killed on drop, so also when a panic unwinds; the data dir goes with it.
struct Broker {
    child: Child,
    dir: tempfile::TempDir,
    addr: String,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_broker(name: &str, bin: &Path) -> Broker {
    // Let the OS pick a free port, then hand it to the broker (a tiny race, fine on loopback).
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let log = fs::File::create(dir.path().join("broker.log")).unwrap();
    let mut cmd = Command::new(bin);
    if name == "tansu" {
        let url = format!("tcp://{addr}");
        let listeners = ["--listener-url", &url, "--advertised-listener-url", &url];
        cmd.arg("broker")
            .args(listeners)
            .args(["--storage-engine", "memory://tansu/"]);
    } else {
        cmd.env("IGGY_KAFKA_BIND_ADDRESS", &addr);
        cmd.env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0");
        cmd.env("IGGY_KAFKA_DATA_DIR", dir.path().join("data"));
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let child = cmd.spawn().expect("spawn broker");
    let mut broker = Broker { child, dir, addr };
    let deadline = Instant::now() + Duration::from_secs(15);
    while net::TcpStream::connect(&broker.addr).is_err() {
        if let Ok(Some(status)) = broker.child.try_wait() {
            let log = fs::read_to_string(broker.dir.path().join("broker.log")).unwrap_or_default();
            panic!("{name} exited ({status}) before listening:\n{log}");
        }
        assert!(
            Instant::now() < deadline,
            "{name}: not listening after 15 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
    broker
}

#[derive(Clone, Copy, Default)]
struct Row {
    records: u64,
    produce_rps: f64,
    produce_mbps: f64,
    p50_ms: f64,
    p99_ms: f64,
    consume_rps: f64,
    consume_mbps: f64,
}

/// Produces `n` records, round-robin over the partitions by explicit partition number (an even
/// spread that does not depend on librdkafka's sticky partitioner). Fills the produce columns.
fn produce(addr: &str, topic: &str, size: usize, n: u64, limit: Duration) -> Row {
    let stats = Stats {
        base: Instant::now(),
        acks: Mutex::default(),
    };
    let producer: ThreadedProducer<Stats> = config(addr)
        .set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("acks", "all")
        .set("compression.type", "none")
        .set("message.timeout.ms", limit.as_millis().to_string())
        .create_with_context(stats)
        .expect("producer");
    await_partitions(producer.client(), topic);
    let stats = producer.context().clone();
    let done = || {
        let acks = stats.acks.lock().unwrap();
        acks.latencies_ns.len() as u64 + acks.failed
    };
    let payload = vec![b'x'; size];
    let start = Instant::now();
    let deadline = start + limit;
    for i in 0..n {
        let partition = (i % PARTITIONS as u64) as i32;
        let mut rec = BaseRecord::<(), [u8], usize>::with_opaque_to(topic, 0).payload(&payload);
        rec = rec.partition(partition);
        loop {
            // Stamp at the send that succeeds: time spent waiting for queue room is not latency.
            rec.delivery_opaque = stats.base.elapsed().as_nanos() as usize;
            match producer.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    assert!(
                        Instant::now() < deadline,
                        "produce: queue full for {limit:?}"
                    );
                    rec = r;
                    thread::sleep(Duration::from_micros(200));
                }
                Err((e, _)) => panic!("produce: send failed: {e}"),
            }
        }
    }
    while done() < n {
        assert!(
            Instant::now() < deadline,
            "produce: {} of {n} acked",
            done()
        );
        thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    let mut acks = stats.acks.lock().unwrap();
    if let Some(e) = &acks.first_error {
        eprintln!(
            "  produce: {} records failed, first error: {e}",
            acks.failed
        );
    }
    let lat = &mut acks.latencies_ns;
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get((lat.len() as f64 * p) as usize)
            .map_or(f64::NAN, |&ns| ns as f64 / 1e6)
    };
    let ok = lat.len() as u64;
    Row {
        records: ok,
        produce_rps: ok as f64 / secs,
        produce_mbps: (ok * size as u64) as f64 / secs / 1e6,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        ..Row::default()
    }
}

fn run_broker(name: &str, bin: &Path, scale: f64, limit: Duration) -> Vec<Row> {
    let broker = start_broker(name, bin);
    eprintln!("{name}: listening on {}", broker.addr);
    let hard = limit + Duration::from_secs(30);
    let mut rows = Vec::new();
    for (size, base_n) in SIZES {
        let n = ((base_n * scale) as u64).max(1);
        // A topic per size, so each consume phase reads exactly its own records.
        let topic = format!("bench-{size}");
        create_topic(&broker.addr, &topic);
        let (addr, t) = (broker.addr.clone(), topic.clone());
        let mut row = bounded("produce", hard, move || produce(&addr, &t, size, n, limit));
        eprintln!(
            "{name} {size} B: {}/{n} acked, {:.0} rec/s",
            row.records, row.produce_rps
        );
        let (addr, acked) = (broker.addr.clone(), row.records);
        let consumed = bounded("consume", hard, move || {
            consume(&addr, &topic, size, acked, limit)
        });
        (row.consume_rps, row.consume_mbps) = consumed;
        eprintln!(
            "{name} {size} B: {acked} consumed, {:.0} rec/s",
            row.consume_rps
        );
        rows.push(row);
    }
    rows
}

fn main() {
    let env_f64 = |name| env::var(name).ok().and_then(|s| s.parse::<f64>().ok());
    let scale = env_f64("BENCH_RECORDS").unwrap_or(1.0);
    let limit = Duration::from_secs_f64(env_f64("BENCH_TIMEOUT_SECS").unwrap_or(120.0));
    // Cargo builds the package's binaries for its benches and passes their paths at compile time.
    let built = option_env!("CARGO_BIN_EXE_iggy-kafka-gateway");
    let built = PathBuf::from(built.unwrap_or("target/release/iggy-kafka-gateway"));
    let gateway = env::var_os("GATEWAY_BIN").map_or(built, PathBuf::from);
    let tansu = env::var_os("TANSU_BIN").map(PathBuf::from);
    let mut results: Vec<(&str, Vec<Row>)> = Vec::new();
    for (name, bin) in [("gateway", Some(gateway)), ("tansu", tansu)] {
        let Some(bin) = bin else {
            println!("SKIPPED tansu: set TANSU_BIN");
            continue;
        };
        if !bin.is_file() {
            println!("SKIPPED {name}: no binary at {}", bin.display());
            continue;
        }
        // A failing broker is reported and the other one still measured; its process was
        // already killed by the Broker guard during unwinding.
        match panic::catch_unwind(|| run_broker(name, &bin, scale, limit)) {
            Ok(rows) => results.push((name, rows)),
            Err(_) => println!("FAILED {name}: see the panic message above"),
        }
    }

    println!("\n{PARTITIONS} partitions, linger.ms=5, batch.num.messages=10000, acks=all, no compression");
    print!("broker     size   records | produce rec/s     MB/s   p50 ms   p99 ms |");
    println!(" consume rec/s     MB/s");
    for (name, rows) in &results {
        for ((size, _), r) in SIZES.iter().zip(rows) {
            print!(
                "{name:<8} {size:>5}B {:>9} | {:>13.0} {:>8.1}",
                r.records, r.produce_rps, r.produce_mbps
            );
            print!(" {:>8.1} {:>8.1} |", r.p50_ms, r.p99_ms);
            println!(" {:>13.0} {:>8.1}", r.consume_rps, r.consume_mbps);
        }
    }
    if let [("gateway", gw), ("tansu", tansu)] = &results[..] {
        println!("\ngateway / tansu (throughput: >1 favours the gateway; p99 latency: <1 does)");
        for (((size, _), g), t) in SIZES.iter().zip(gw).zip(tansu) {
            let (prod, cons) = (g.produce_rps / t.produce_rps, g.consume_rps / t.consume_rps);
            let p99 = g.p99_ms / t.p99_ms;
            println!("{size:>5}B  produce {prod:.2}x  consume {cons:.2}x  p99 latency {p99:.2}x");
        }
    }
}
