//! The gateway against Apache Kafka itself (issue 18), on one machine in one run: the
//! gateway on its embedded store, the gateway on an iggy-server, Kafka 4.x (KRaft, one
//! combined node, its defaults) and Tansu (memory), all running side by side and driven
//! by the same clients with the same settings, one system after the other within each
//! test, so drifting load on the shared cores falls on all of them alike.
//!
//!   benches/kafka-compare.sh        (finds the jars and binaries, runs this, draws the plot)
//!
//! Tests, each at 100 B and 1 KiB, with no compression and with lz4, on 8 partitions,
//! `acks=all`: `kafka-producer-perf-test` with 1 and 4 producers and
//! `kafka-consumer-perf-test` (Kafka's own tools); the same through librdkafka (the
//! `rdkafka` crate, `common`). Then end-to-end latency at half the lowest peak produce
//! rate, a group of 4 consumers reading while a producer writes, and every process's
//! peak resident memory. Every phase also records the CPU its system's processes used
//! per record (utime + stime): on two shared cores that bounds throughput however noisy
//! the clock is.
//!
//! Env: KAFKA_CLASSPATH (kafka_2.13 + kafka-tools jars; required), IGGY_SERVER_BIN and
//! TANSU_BIN (each system skipped without it), GATEWAY_BIN (default: this package's
//! binary), BASELINE_GATEWAY_BIN (another build of the gateway, on its embedded store
//! and, with IGGY_SERVER_BIN, on an iggy-server of its own, as more systems: a change's
//! before and after in one run), BENCH_SCALE (factor on record counts, default 1), BENCH_LATENCY_SECS (each
//! latency phase, default 6), BENCH_TIMEOUT_SECS (bound on each phase, default 120),
//! BENCH_OUT (directory for results.md and results.json, default target/kafka-compare).

// `common::Row` is the other benches' table row; this one keeps its own.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;
// Also read by `benches/scale` and `benches/transactions`, which use what this bench
// does not.
#[allow(dead_code)]
mod java;
#[allow(dead_code)]
mod procs;
mod rdk;

use common::{bounded, consume, create_topics_with, PARTITIONS};
use procs::System;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use std::{env, fs};

/// (record size in bytes, records per phase before BENCH_SCALE)
const SIZES: [(usize, f64); 2] = [(100, 1_000_000.0), (1024, 300_000.0)];
const COMPRESSIONS: [&str; 2] = ["none", "lz4"];
/// Members of the consumer group.
const MEMBERS: usize = 4;

/// One figure of one system: the value (None when the phase failed) and the CPU its
/// processes used per record during the phase, µs.
#[derive(Clone, Copy)]
struct Measure {
    value: Option<f64>,
    cpu_us: Option<f64>,
}

const FAILED: Measure = Measure {
    value: None,
    cpu_us: None,
};

/// One throughput test, measured on every system (in the order of `systems`).
struct Row {
    test: String,
    size: usize,
    compression: &'static str,
    records: u64,
    per_system: Vec<Measure>,
}

/// Runs `f` as one phase of `sys` over `records` records: a failure (error or panic) is
/// printed and leaves the figure out, and the other phases go on.
fn phase(
    sys: &System,
    what: &str,
    records: u64,
    f: impl FnOnce() -> Result<f64, String>,
) -> Measure {
    let (cpu, clock) = (sys.cpu_secs(), Instant::now());
    let result = panic::catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err("panicked (message above)".into()));
    let cpu_us = (sys.cpu_secs() - cpu) * 1e6 / records as f64;
    match result {
        Ok(v) => {
            eprintln!(
                "  {:<20} {what}: {v:.0} rec/s, {cpu_us:.2} µs CPU/record ({:.1} s)",
                sys.name,
                clock.elapsed().as_secs_f64()
            );
            Measure {
                value: Some(v),
                cpu_us: Some(cpu_us),
            }
        }
        Err(e) => {
            eprintln!("  {:<20} {what}: FAILED {e}", sys.name);
            FAILED
        }
    }
}

/// Deletes topics once measured, so neither disk nor Tansu's memory holds every test's data.
fn delete_topics(addr: &str, topics: &[String]) {
    let admin: AdminClient<DefaultClientContext> = common::config(addr).create().unwrap();
    let timeout = Some(Duration::from_secs(10));
    let opts = AdminOptions::new()
        .request_timeout(timeout)
        .operation_timeout(timeout);
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    if let Err(e) = rt.block_on(admin.delete_topics(&names, &opts)) {
        eprintln!("  delete topics on {addr}: {e}");
    }
}

/// Creates `topic` on `sys` (8 partitions, the system's topic configurations) inside a
/// phase, as an error rather than a panic.
fn topic(sys: &System, topic: &str) -> Result<(), String> {
    let (a, t, configs) = (sys.addr.clone(), topic.to_string(), sys.topic_configs);
    panic::catch_unwind(move || create_topics_with(&a, &[&t], PARTITIONS, configs))
        .map_err(|_| format!("create {topic} failed"))
}

/// The six throughput tests of one size and compression on one system.
fn run_case(
    sys: &System,
    cp: &str,
    (size, compression, n): (usize, &'static str, u64),
    limit: Duration,
    java_broken: &mut bool,
) -> Vec<Measure> {
    let addr = sys.addr.clone();
    let name = |client: &str, k: u64| format!("{client}-{size}-{compression}-p{k}");
    let topics = [
        name("java", 1),
        name("java", 4),
        name("rdk", 1),
        name("rdk", 4),
    ];
    let hard = limit + Duration::from_secs(30);
    let mut out = Vec::new();
    // A system the Java tools failed on once is not given them again: a hung tool costs
    // the whole phase limit each time (Tansu's answers stall the Java producer).
    let mut java = |what: &str, f: &dyn Fn() -> Result<f64, String>| {
        if *java_broken {
            eprintln!(
                "  {:<20} {what}: skipped (the Java tools failed here before)",
                sys.name
            );
            return FAILED;
        }
        let m = phase(sys, what, n, f);
        *java_broken = m.value.is_none();
        m
    };
    for (t, k) in [(&topics[0], 1), (&topics[1], 4)] {
        out.push(java(&format!("perf-test produce ×{k}"), &|| {
            topic(sys, t)?;
            java::produce(cp, &addr, t, (size, compression), (n, k), limit).map(|(rps, _)| rps)
        }));
    }
    out.push(java("perf-test consume", &|| {
        java::consume(cp, &addr, &topics[0], n, limit)
    }));
    for (t, k) in [(&topics[2], 1), (&topics[3], 4)] {
        out.push(phase(sys, &format!("librdkafka produce ×{k}"), n, || {
            topic(sys, t)?;
            let (a, t) = (addr.clone(), t.clone());
            Ok(bounded("produce", hard, move || {
                rdk::produce_many(&a, &t, (size, compression), (n, k), limit)
            }))
        }));
    }
    out.push(phase(sys, "librdkafka consume", n, || {
        let (a, t) = (addr.clone(), topics[2].clone());
        Ok(bounded("consume", hard, move || {
            consume(&a, &t, (size, n), "read_committed", limit).0
        }))
    }));
    delete_topics(&addr, &topics);
    out
}

fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else {
        format!("{:.0} k", v / 1e3)
    }
}

/// "value (ratio to the first system's)" for a table cell; "failed" without a value.
fn cell(v: Option<f64>, base: Option<f64>, fmt: impl Fn(f64) -> String) -> String {
    match (v, base) {
        (Some(v), Some(b)) => format!("{} ({:.2})", fmt(v), v / b),
        (Some(v), None) => fmt(v),
        _ => "failed".into(),
    }
}

fn main() {
    let Ok(cp) = env::var("KAFKA_CLASSPATH") else {
        println!("SKIPPED kafka_compare: set KAFKA_CLASSPATH (benches/kafka-compare.sh does)");
        return;
    };
    let scale = common::env_f64("BENCH_SCALE").unwrap_or(1.0);
    let latency_secs = common::env_f64("BENCH_LATENCY_SECS").unwrap_or(6.0);
    let limit = Duration::from_secs_f64(common::env_f64("BENCH_TIMEOUT_SECS").unwrap_or(120.0));
    let out_dir =
        env::var_os("BENCH_OUT").map_or(PathBuf::from("target/kafka-compare"), PathBuf::from);
    let gateway = common::gateway_bin();
    let bin = |var: &str| {
        let path = env::var_os(var).map(PathBuf::from);
        // Unset skips a system; a path naming no file is a mistake, not an absence.
        if let Some(p) = &path {
            assert!(p.is_file(), "{var}={} names no file", p.display());
        } else {
            println!("SKIPPED a system: set {var}");
        }
        path
    };
    let (iggy_bin, tansu_bin) = (bin("IGGY_SERVER_BIN"), bin("TANSU_BIN"));
    let baseline_bin = bin("BASELINE_GATEWAY_BIN");
    let version = cp
        .split(':')
        .find_map(|j| {
            j.rsplit('/')
                .next()?
                .strip_prefix("kafka_2.13-")?
                .strip_suffix(".jar")
        })
        .unwrap_or("4.x")
        .to_string();

    let kafka_name: &'static str = Box::leak(format!("Kafka {version}").into_boxed_str());
    let mut systems = procs::kafka_and_gateways((kafka_name, &cp), &gateway, iggy_bin.as_deref());
    // The batch form (`iggy.message.format=batch`) on a server of its own: the Iggy
    // backend for topics only Kafka clients read.
    if let Some(iggy) = &iggy_bin {
        let server = procs::iggy(iggy);
        let gw = procs::gateway(&gateway, Some(&server.addr));
        systems.push(System {
            topic_configs: &[("iggy.message.format", "batch")],
            ..System::of("gateway (Iggy, batch form)", vec![gw, server])
        });
    }
    if let Some(bin) = &baseline_bin {
        let gw = procs::gateway(bin, None);
        systems.push(System::of("baseline gateway (embedded)", vec![gw]));
        // On a server of its own, so neither gateway's data weighs on the other's.
        if let Some(iggy) = &iggy_bin {
            let server = procs::iggy(iggy);
            let gw = procs::gateway(bin, Some(&server.addr));
            systems.push(System::of("baseline gateway (Iggy)", vec![gw, server]));
        }
    }
    if let Some(bin) = &tansu_bin {
        systems.push(System::of("Tansu (memory)", vec![procs::tansu(bin)]));
    }
    let started = Instant::now();

    // Not measured: JIT-compiles Kafka's hot paths and lets every system settle.
    for sys in &systems {
        phase(sys, "warm-up", 200_000, || {
            topic(sys, "warm-up")?;
            let a = sys.addr.clone();
            Ok(bounded("warm-up", limit, move || {
                let rps = rdk::produce_many(&a, "warm-up", (100, "none"), (200_000, 1), limit);
                consume(&a, "warm-up", (100, 200_000), "read_committed", limit);
                rps
            }))
        });
        delete_topics(&sys.addr, &["warm-up".to_string()]);
    }

    let tests = [
        "perf-test produce ×1",
        "perf-test produce ×4",
        "perf-test consume",
        "librdkafka produce ×1",
        "librdkafka produce ×4",
        "librdkafka consume",
    ];
    let mut rows = Vec::new();
    let mut java_broken = vec![false; systems.len()];
    for (size, base_n) in SIZES {
        let n = ((base_n * scale) as u64).max(1000) / 4 * 4;
        for compression in COMPRESSIONS {
            eprintln!("== {size} B, compression {compression}, {n} records a phase");
            let per: Vec<Vec<Measure>> = systems
                .iter()
                .zip(&mut java_broken)
                .map(|(sys, broken)| run_case(sys, &cp, (size, compression, n), limit, broken))
                .collect();
            for (i, test) in tests.iter().enumerate() {
                rows.push(Row {
                    test: test.to_string(),
                    size,
                    compression,
                    records: n,
                    per_system: per.iter().map(|m| m[i]).collect(),
                });
            }
        }
    }

    // End-to-end latency at half the lowest librdkafka produce peak of that size (one
    // producer, no compression), the same rate on every system.
    let mut latency = Vec::new();
    for (size, _) in SIZES {
        let peak = rows
            .iter()
            .filter(|r| r.size == size && r.compression == "none" && r.test == tests[3])
            .flat_map(|r| r.per_system.iter().filter_map(|m| m.value))
            .fold(f64::INFINITY, f64::min);
        let rate = if peak.is_finite() {
            peak / 2.0
        } else {
            10_000.0
        };
        eprintln!("== end-to-end latency, {size} B at {rate:.0} records/s");
        let per: Vec<Option<[f64; 3]>> = systems
            .iter()
            .map(|sys| {
                let t = format!("e2e-{size}");
                let records = (rate * latency_secs) as u64;
                let mut got = None;
                phase(sys, "end-to-end", records.max(1), || {
                    topic(sys, &t)?;
                    let a = sys.addr.clone();
                    let tt = t.clone();
                    let p = bounded("e2e", limit, move || {
                        rdk::end_to_end(&a, &tt, size, rate, latency_secs)
                    });
                    eprintln!(
                        "    p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms",
                        p[0], p[1], p[2]
                    );
                    got = Some(p);
                    Ok(rate)
                });
                delete_topics(&sys.addr, &[t]);
                got
            })
            .collect();
        latency.push((size, rate, per));
    }

    // A group of 4 reading 8 partitions while a producer writes (no compression).
    let mut groups = Vec::new();
    for (size, base_n) in SIZES {
        let n = ((base_n * scale) as u64).max(1000);
        eprintln!("== group of {MEMBERS}, {size} B, {n} records");
        let per: Vec<Measure> = systems
            .iter()
            .map(|sys| {
                let t = format!("group-{size}");
                let m = phase(sys, "group consume", n, || {
                    topic(sys, &t)?;
                    let (a, tt) = (sys.addr.clone(), t.clone());
                    Ok(bounded(
                        "group",
                        limit + Duration::from_secs(30),
                        move || rdk::group(&a, &tt, size, n, MEMBERS, limit),
                    ))
                });
                delete_topics(&sys.addr, &[t]);
                m
            })
            .collect();
        groups.push((size, n, per));
    }

    let memory: Vec<Vec<(&str, f64)>> = systems
        .iter()
        .map(|s| s.procs.iter().map(|p| (p.name, p.peak_rss_mib())).collect())
        .collect();
    let minutes = started.elapsed().as_secs_f64() / 60.0;

    // ------------------------------------------------------------------ report
    let names: Vec<&str> = systems.iter().map(|s| s.name).collect();
    let header = |first: &str| {
        let mut h = format!("| {first} |");
        let mut rule = String::from("|---|");
        for n in &names {
            let _ = write!(h, " {n} |");
            rule.push_str("---|");
        }
        format!("{h}\n{rule}\n")
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "{PARTITIONS} partitions, acks=all, records per phase: {} × 100 B, {} × 1 KiB; \
         run took {minutes:.1} min.\n",
        rows[0].records,
        rows.last().map_or(0, |r| r.records)
    );
    let _ = writeln!(md, "**Throughput, records/s (ratio to {kafka_name})**\n");
    md.push_str(&header("test"));
    for r in &rows {
        let base = r.per_system[0].value;
        let _ = write!(md, "| {} {} B {} |", r.test, r.size, r.compression);
        for m in &r.per_system {
            let _ = write!(md, " {} |", cell(m.value, base, fmt_rate));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**CPU per record, µs: all of the system's processes (ratio to {kafka_name})**\n"
    );
    md.push_str(&header("test"));
    for r in &rows {
        let base = r.per_system[0].cpu_us;
        let _ = write!(md, "| {} {} B {} |", r.test, r.size, r.compression);
        for m in &r.per_system {
            let _ = write!(md, " {} |", cell(m.cpu_us, base, |v| format!("{v:.2}")));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**End-to-end latency, ms: p50 / p99 / p99.9 (p99 ratio to {kafka_name})**\n"
    );
    md.push_str(&header("size, rate"));
    for (size, rate, per) in &latency {
        let _ = write!(md, "| {size} B at {} rec/s |", fmt_rate(*rate));
        let base = per[0].map(|p| p[1]);
        for p in per {
            match p {
                Some(p) => {
                    let ratio = base.map_or(String::new(), |b| format!(" ({:.2})", p[1] / b));
                    let _ = write!(md, " {:.1} / {:.1} / {:.1}{ratio} |", p[0], p[1], p[2]);
                }
                None => md.push_str(" failed |"),
            }
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**Group of {MEMBERS} reading while a producer writes, records/s (ratio); µs CPU per record**\n"
    );
    md.push_str(&header("size"));
    for (size, n, per) in &groups {
        let _ = write!(md, "| {size} B, {n} records |");
        for m in per {
            let cpu = m.cpu_us.map_or(String::new(), |c| format!("; {c:.2} µs"));
            let _ = write!(md, " {}{cpu} |", cell(m.value, per[0].value, fmt_rate));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**Peak resident memory (VmHWM), MiB (ratio to {kafka_name})**\n"
    );
    md.push_str(&header("whole run"));
    md.push_str("| peak RSS |");
    let kafka_rss = memory[0].iter().map(|p| p.1).sum::<f64>();
    for procs in &memory {
        let total: f64 = procs.iter().map(|p| p.1).sum();
        let parts: Vec<String> = procs.iter().map(|(n, m)| format!("{n} {m:.0}")).collect();
        let _ = write!(md, " {} ({:.2}) |", parts.join(" + "), total / kafka_rss);
    }
    md.push('\n');
    println!("\n{md}");

    let measure = |m: &Measure| json!({"value": m.value, "cpu_us": m.cpu_us});
    let results = json!({
        "systems": names,
        "scale": scale,
        "minutes": minutes,
        "throughput": rows.iter().map(|r| json!({
            "test": r.test, "size": r.size, "compression": r.compression, "records": r.records,
            "per_system": r.per_system.iter().map(measure).collect::<Vec<Value>>(),
        })).collect::<Vec<Value>>(),
        "latency": latency.iter().map(|(size, rate, per)| json!({
            "size": size, "rate": rate, "per_system": per,
        })).collect::<Vec<Value>>(),
        "group": groups.iter().map(|(size, n, per)| json!({
            "size": size, "records": n, "per_system": per.iter().map(measure).collect::<Vec<Value>>(),
        })).collect::<Vec<Value>>(),
        "memory_mib": memory,
    });
    fs::create_dir_all(&out_dir).unwrap();
    fs::write(out_dir.join("results.md"), &md).unwrap();
    fs::write(
        out_dir.join("results.json"),
        serde_json::to_string_pretty(&results).unwrap(),
    )
    .unwrap();
    println!("written: {}/results.md, results.json", out_dir.display());
}
