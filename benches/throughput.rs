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
//! CPU per record consumed is the broker process's (utime + stime from /proc).

mod common;
// The brokers are started as `kafka_compare` starts them.
#[allow(dead_code)]
#[path = "kafka_compare/procs.rs"]
mod procs;

use common::{bounded, consume, create_topic, produce, Row, PARTITIONS};
use std::path::{Path, PathBuf};
use std::time::Duration;
use std::{env, panic};

/// (record size in bytes, record count before BENCH_RECORDS scaling)
const SIZES: [(usize, f64); 2] = [(100, 1_000_000.0), (1024, 300_000.0)];

/// A full-speed librdkafka produce phase (`common::produce`) as a row.
fn produce_row(addr: &str, topic: &str, size: usize, n: u64, limit: Duration) -> Row {
    let (secs, lat) = produce(addr, topic, (size, "none"), n, None, limit);
    Row::produced(lat.len() as u64, size, secs, &lat)
}

/// Each size's row, with the broker's CPU per record consumed (µs).
fn run_broker(name: &str, bin: &Path, scale: f64, limit: Duration) -> Vec<(Row, f64)> {
    let broker = match name {
        "tansu" => procs::tansu(bin),
        _ => procs::gateway(bin, None),
    };
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
        let cpu = broker.cpu_secs();
        let consumed = bounded("consume", hard, move || {
            consume(&addr, &topic, (size, acked), "read_committed", limit)
        });
        let cpu_us = (broker.cpu_secs() - cpu) * 1e6 / acked as f64;
        (row.consume_rps, row.consume_mbps) = consumed;
        eprintln!(
            "{name} {size} B: {acked} consumed, {:.0} rec/s, {cpu_us:.2} µs CPU/record",
            row.consume_rps
        );
        rows.push((row, cpu_us));
    }
    rows
}

fn main() {
    let scale = common::env_f64("BENCH_RECORDS").unwrap_or(1.0);
    let limit = Duration::from_secs_f64(common::env_f64("BENCH_TIMEOUT_SECS").unwrap_or(120.0));
    let gateway = common::gateway_bin();
    let tansu = env::var_os("TANSU_BIN").map(PathBuf::from);
    let mut results: Vec<(&str, Vec<(Row, f64)>)> = Vec::new();
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
        // already killed by its guard (`procs::Proc`) during unwinding.
        match panic::catch_unwind(|| run_broker(name, &bin, scale, limit)) {
            Ok(rows) => results.push((name, rows)),
            Err(_) => println!("FAILED {name}: see the panic message above"),
        }
    }

    println!("\n{PARTITIONS} partitions, linger.ms=5, batch.num.messages=10000, acks=all, no compression");
    print!("broker     size   records | produce rec/s     MB/s   p50 ms   p99 ms |");
    println!(" consume rec/s     MB/s  µs CPU/rec");
    for (name, rows) in &results {
        for ((size, _), (r, cpu)) in SIZES.iter().zip(rows) {
            print!(
                "{name:<8} {size:>5}B {:>9} | {:>13.0} {:>8.1}",
                r.records, r.produce_rps, r.produce_mbps
            );
            print!(" {:>8.1} {:>8.1} |", r.p50_ms, r.p99_ms);
            println!(
                " {:>13.0} {:>8.1} {cpu:>11.2}",
                r.consume_rps, r.consume_mbps
            );
        }
    }
    if let [("gateway", gw), ("tansu", tansu)] = &results[..] {
        println!("\ngateway / tansu (throughput: >1 favours the gateway; p99 latency: <1 does)");
        for (((size, _), (g, _)), (t, _)) in SIZES.iter().zip(gw).zip(tansu) {
            let (prod, cons) = (g.produce_rps / t.produce_rps, g.consume_rps / t.consume_rps);
            let p99 = g.p99_ms / t.p99_ms;
            println!("{size:>5}B  produce {prod:.2}x  consume {cons:.2}x  p99 latency {p99:.2}x");
        }
    }
}
