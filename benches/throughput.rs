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

use common::{bounded, consume, create_topic, produce, Row, PARTITIONS};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

/// A full-speed librdkafka produce phase (`common::produce`) as a row.
fn produce_row(addr: &str, topic: &str, size: usize, n: u64, limit: Duration) -> Row {
    let (secs, lat) = produce(addr, topic, (size, "none"), n, None, limit);
    Row::produced(lat.len() as u64, size, secs, &lat)
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
        let mut row = bounded("produce", hard, move || {
            produce_row(&addr, &t, size, n, limit)
        });
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
        // Unset TANSU_BIN skips Tansu; a path naming no file is a mistake, not an absence.
        assert!(
            bin.is_file(),
            "{name}: no binary at {} (GATEWAY_BIN / TANSU_BIN must name one)",
            bin.display()
        );
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
