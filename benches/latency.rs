//! End-to-end latency of brokers already running, side by side: `kafka_compare`'s
//! latency phase (`rdk::end_to_end`: librdkafka, 8 partitions, `acks=all`, each record
//! timed from its scheduled send to a consumer's hands) on a new topic of each address
//! in turn, round after round, so drifting load falls on all of them. For comparing one
//! build or setting with another; prints figures, asserts none.
//!
//!   BENCH_ADDRS=127.0.0.1:9092,127.0.0.1:9093 cargo bench --bench latency
//!
//! Env: BENCH_ADDRS (comma-separated bootstrap addresses; required), BENCH_SIZE (record
//! bytes, default 1024), BENCH_RATE (records/s, default 156000), BENCH_LATENCY_SECS
//! (each phase, default 6), BENCH_ROUNDS (default 3).

#[allow(dead_code)]
#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "kafka_compare/rdk.rs"]
mod rdk;

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let addrs = std::env::var("BENCH_ADDRS").expect("BENCH_ADDRS: the brokers to measure");
    let size = common::env_f64("BENCH_SIZE").unwrap_or(1024.0) as usize;
    let rate = common::env_f64("BENCH_RATE").unwrap_or(156_000.0);
    let secs = common::env_f64("BENCH_LATENCY_SECS").unwrap_or(6.0);
    let rounds = common::env_f64("BENCH_ROUNDS").unwrap_or(3.0) as usize;
    // Topics of a run of their own: the brokers may hold those of earlier runs.
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    println!("{size} B at {rate:.0} records/s, {secs} s a phase: p50 / p99 / p99.9, ms");
    for round in 0..rounds {
        for addr in addrs.split(',') {
            let topic = format!("latency-{run}-{round}");
            common::create_topics(addr, &[&topic], common::PARTITIONS);
            let [p50, p99, p999] = rdk::end_to_end(addr, &topic, size, rate, secs);
            println!("round {round} {addr}: {p50:.1} / {p99:.1} / {p999:.1}");
        }
    }
}
