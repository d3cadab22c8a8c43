//! Scale (issue 18's "Also"): many partitions and connections, and several gateways on
//! one Iggy. Prints figures, asserts none.
//!
//!   KAFKA_CLASSPATH=… IGGY_SERVER_BIN=… cargo bench --bench scale
//!
//! 1. `many`: Apache Kafka (KRaft, one node, as `kafka_compare` starts it), the gateway
//!    on its embedded store and, with IGGY_SERVER_BIN, the gateway on an iggy-server:
//!    memory idle, with 10 × 1000 partitions and with 1000 producers connected; the cost
//!    of a full Metadata and of a Fetch of every partition at 1000 and 10,000
//!    partitions; `kafka-producer-perf-test` alone and while the 1000 produce slowly.
//! 2. `gateways`: one iggy-server with 1, 2 and 3 gateways, librdkafka producers and a
//!    consumer bootstrapped with all of them, CPU per record of every process.
//!
//! Env: KAFKA_CLASSPATH (Kafka 4's kafka_2.13 and kafka-tools jars, as
//! `benches/kafka-compare.sh` resolves them; part 1 is skipped without it),
//! IGGY_SERVER_BIN (the Iggy system of part 1 and all of part 2 are skipped without it),
//! GATEWAY_BIN (default: this package's binary), BENCH_SCALE (factor on partitions,
//! connections and records, default 1: 10,000 partitions, 1000 producers, 1,000,000
//! records), BENCH_COST_SECS (how long each request is repeated, default 4),
//! BENCH_TIMEOUT_SECS (bound on each step, default 180), BENCH_OUT (directory for
//! results.md, default target/scale).

// Other benches' helpers; this one uses some of each.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../kafka_compare/java.rs"]
mod java;
#[allow(dead_code)]
#[path = "../kafka_compare/procs.rs"]
mod procs;
#[allow(dead_code)]
#[path = "../raw/mod.rs"]
mod raw;
#[allow(dead_code)]
#[path = "../kafka_compare/rdk.rs"]
mod rdk;

mod crowd;
mod gateways;
mod many;
mod requests;

use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use std::{env, fs};

/// Runs one step; a panic is printed (the message is above) and gives None, so one
/// system failing a step leaves the others' figures.
pub fn step<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    let got = panic::catch_unwind(AssertUnwindSafe(f));
    if got.is_err() {
        eprintln!("  {what}: failed");
    }
    got.ok()
}

pub fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else {
        format!("{:.0} k", v / 1e3)
    }
}

fn load_average() -> String {
    let s = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Lifts this process's open-file limit (inherited by every broker it starts) as far as
/// the kernel allows, and returns it: 10,000 partitions are 10,000 to 30,000 open files
/// on a broker (iggy-server held about 4.4 a partition, so 20,000 stop it near 4,500).
fn raise_file_limit() -> u64 {
    let most = fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let wanted = libc::rlimit {
            rlim_cur: most,
            rlim_max: most,
        };
        // Raising the hard limit needs root; without it, up to the hard limit.
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

fn main() {
    let scale = common::env_f64("BENCH_SCALE").unwrap_or(1.0);
    let limit = Duration::from_secs_f64(common::env_f64("BENCH_TIMEOUT_SECS").unwrap_or(180.0));
    let out_dir = env::var_os("BENCH_OUT").map_or(PathBuf::from("target/scale"), PathBuf::from);
    let classpath = env::var("KAFKA_CLASSPATH").ok();
    let iggy_bin = env::var_os("IGGY_SERVER_BIN").map(PathBuf::from);
    if let Some(p) = &iggy_bin {
        // Unset skips; a path naming no file is a mistake, not an absence.
        assert!(p.is_file(), "IGGY_SERVER_BIN={} names no file", p.display());
    }
    let gateway = common::gateway_bin();
    let files = raise_file_limit();
    let records = ((1_000_000.0 * scale) as u64).max(10_000);
    let started = Instant::now();
    let mut md = format!(
        "Load average at the start: {}; open-file limit of every broker: {files}.\n\n",
        load_average()
    );

    match &classpath {
        None => println!(
            "SKIPPED scale: many partitions and connections: set KAFKA_CLASSPATH \
             (benches/kafka-compare.sh shows how)"
        ),
        Some(cp) => {
            let plan = many::Plan {
                partitions: ((1000.0 * scale) as i32).max(10),
                connections: ((1000.0 * scale) as usize).max(10),
                records,
                cost_secs: common::env_f64("BENCH_COST_SECS").unwrap_or(4.0),
                limit,
            };
            let systems = procs::kafka_and_gateways(("Kafka", cp), &gateway, iggy_bin.as_deref());
            if iggy_bin.is_none() {
                println!("SKIPPED scale: the gateway on Iggy: set IGGY_SERVER_BIN");
            }
            md.push_str(&many::run(&systems, cp, &plan));
        }
    }
    match &iggy_bin {
        None => println!("SKIPPED scale: 1, 2 and 3 gateways on one Iggy: set IGGY_SERVER_BIN"),
        Some(bin) => {
            md.push('\n');
            md.push_str(&gateways::run(bin, &gateway, records, limit));
        }
    }
    let _ = writeln!(
        md,
        "\nLoad average at the end: {}; run took {:.1} min.",
        load_average(),
        started.elapsed().as_secs_f64() / 60.0
    );
    println!("\n{md}");
    fs::create_dir_all(&out_dir).unwrap();
    fs::write(out_dir.join("results.md"), &md).unwrap();
    println!("written: {}/results.md", out_dir.display());
}
