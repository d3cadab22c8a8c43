//! Many partitions and many connections, on every system in turn at each stage (so load
//! that drifts over the run falls on all of them): memory idle; a tenth of the partitions
//! (one topic), then all of them (`TOPICS` topics), each partition holding one record,
//! with the cost of a full Metadata and of a Fetch of every partition at both sizes;
//! `kafka-producer-perf-test` into the first topic (after an unmeasured run) alone, then again while a crowd of
//! librdkafka producers (`crowd`) holds its connections open and produces slowly; memory
//! after the crowd has gone.

use std::fmt::Write as _;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::create_topics;
use crate::crowd::Crowd;
use crate::procs::{established_to, status_mib, System};
use crate::requests::{cost, one_record_each, Cost, Request};
use crate::{fmt_rate, java, step};

/// Topics the partitions are spread over: Iggy refuses more than 1000 partitions in one
/// topic, so every system gets the same 10 × 1000.
pub const TOPICS: usize = 10;

/// What one run does.
pub struct Plan {
    /// Partitions of each topic.
    pub partitions: i32,
    /// Producers in the crowd.
    pub connections: usize,
    /// Records of each perf-test run (100 B).
    pub records: u64,
    /// Seconds each request's cost is measured for.
    pub cost_secs: f64,
    pub limit: Duration,
}

/// Resident memory of each of a system's processes: (name, VmRSS, VmHWM), MiB.
type Memory = Vec<(&'static str, f64, f64)>;

/// Everything measured on one system.
#[derive(Default)]
struct Figures {
    memory: Vec<Memory>,
    create_secs: [Option<f64>; 2],
    metadata: [Option<Cost>; 2],
    fetch: [Option<Cost>; 2],
    /// perf-test alone and with the crowd: (records/s, µs of the system's CPU per record).
    perf: [Option<(f64, f64)>; 2],
    /// Connections the system's listener held with the crowd open.
    connections: Option<usize>,
}

fn memory(sys: &System) -> Memory {
    sys.procs
        .iter()
        .map(|p| (p.name, p.rss_mib(), p.peak_rss_mib()))
        .collect()
}

/// Runs the stages on `systems` (Kafka first: ratios are to it) and returns the tables.
pub fn run(systems: &[System], classpath: &str, plan: &Plan) -> String {
    let topics: Vec<(String, i32)> = (0..TOPICS)
        .map(|i| (format!("scale-{i}"), plan.partitions))
        .collect();
    let mut figs: Vec<Figures> = systems.iter().map(|_| Figures::default()).collect();
    // Let every system finish starting up.
    thread::sleep(Duration::from_secs(5));
    for (sys, f) in systems.iter().zip(&mut figs) {
        f.memory.push(memory(sys));
    }
    for (stage, range) in [(0, 0..1), (1, 1..TOPICS)] {
        let upto = &topics[..range.end];
        let count = plan.partitions * upto.len() as i32;
        eprintln!("== {count} partitions");
        for (sys, f) in systems.iter().zip(&mut figs) {
            let mine = &topics[range.clone()];
            f.create_secs[stage] = step(&format!("{}: create", sys.name), || {
                let names: Vec<&str> = mine.iter().map(|t| t.0.as_str()).collect();
                let start = Instant::now();
                create_topics(&sys.addr, &names, plan.partitions);
                start.elapsed().as_secs_f64()
            });
            // One 100 B record in every partition, so a Fetch of all has each to read.
            // One deadline for the stage, and no more topics after one fails: a broker
            // that cannot open its partitions' files (iggy-server past its open-file
            // limit) may answer each partition only after its own timeout.
            let deadline = Instant::now() + plan.limit;
            for (t, p) in mine {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Err(e) = one_record_each(&sys.addr, (t, *p), left) {
                    eprintln!("  {}: {e}; the stage's other topics stay empty", sys.name);
                    break;
                }
            }
            f.memory.push(memory(sys));
            let measure = |what: &str, request: Request| {
                let c = step(&format!("{}: {what}, {count} partitions", sys.name), || {
                    cost(sys, request, upto, plan.cost_secs)
                })?;
                c.map_err(|e| eprintln!("  {}: {what}: {e}", sys.name)).ok()
            };
            f.metadata[stage] = measure("Metadata", Request::Metadata);
            f.fetch[stage] = measure("Fetch", Request::Fetch(upto));
            for (what, c) in [("Metadata", &f.metadata[stage]), ("Fetch", &f.fetch[stage])] {
                if let Some(c) = c {
                    eprintln!(
                        "  {:<20} {what} of {count}: {:.2} ms, {:.2} ms CPU {}",
                        sys.name,
                        c.ms,
                        c.cpu_ms,
                        c.split()
                    );
                }
            }
        }
    }
    let perf = |sys: &System, records: u64| {
        let cpu = sys.cpu_secs();
        let got = step(&format!("{}: perf-test", sys.name), || {
            let shape = (100, "none");
            java::produce(
                classpath,
                &sys.addr,
                &topics[0].0,
                shape,
                (records, 1),
                plan.limit,
            )
        });
        let cpu_us = (sys.cpu_secs() - cpu) * 1e6 / records as f64;
        match got {
            Some(Ok((rps, _))) => {
                eprintln!(
                    "  {:<20} perf-test: {rps:.0} rec/s, {cpu_us:.2} µs CPU/record",
                    sys.name
                );
                Some((rps, cpu_us))
            }
            Some(Err(e)) => {
                eprintln!("  {}: perf-test: {e}", sys.name);
                None
            }
            None => None,
        }
    };
    // Not measured: JIT-compiles Kafka's produce path (cold, it ran at a tenth of its
    // speed here) and gives every system the same start.
    eprintln!("== warm-up: perf-test, not measured");
    for sys in systems {
        perf(sys, plan.records / 5);
    }
    eprintln!("== perf-test alone");
    for (sys, f) in systems.iter().zip(&mut figs) {
        f.perf[0] = perf(sys, plan.records);
    }
    eprintln!("== perf-test with {} producers open", plan.connections);
    for (sys, f) in systems.iter().zip(&mut figs) {
        let crowd = step(&format!("{}: open the crowd", sys.name), || {
            Crowd::open(&sys.addr, &topics, plan.connections, plan.limit)
        });
        let port: u16 = sys
            .addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        f.connections = Some(established_to(port));
        f.memory.push(memory(sys));
        eprintln!(
            "  {:<20} {} connections open, this process {:.0} MiB",
            sys.name,
            established_to(port),
            status_mib(std::process::id(), "VmRSS")
        );
        f.perf[1] = perf(sys, plan.records);
        if let Some(crowd) = crowd {
            let (acked, failed) = crowd.tally();
            eprintln!(
                "  {:<20} crowd: {acked} records acknowledged, {failed} failed",
                sys.name
            );
        }
        thread::sleep(Duration::from_secs(5));
        f.memory.push(memory(sys));
    }
    report(systems, &figs, plan)
}

fn report(systems: &[System], figs: &[Figures], plan: &Plan) -> String {
    let kafka = &figs[0];
    let (few, all) = (plan.partitions, plan.partitions * TOPICS as i32);
    let mut md = String::new();
    let header = |md: &mut String, first: &str| {
        let _ = write!(md, "| {first} |");
        for s in systems {
            let _ = write!(md, " {} |", s.name);
        }
        md.push_str("\n|---|");
        md.push_str(&"---|".repeat(systems.len()));
        md.push('\n');
    };
    let _ = writeln!(
        md,
        "**Resident memory, MiB: VmRSS now / VmHWM peak so far (RSS ratio to {})**\n",
        systems[0].name
    );
    header(&mut md, "stage");
    let stage_names = [
        "idle".to_string(),
        format!("{few} partitions (1 topic)"),
        format!("{all} partitions ({TOPICS} topics)"),
        format!("{} producers connected", plan.connections),
        "5 s after they closed".to_string(),
    ];
    for (i, name) in stage_names.iter().enumerate() {
        let _ = write!(md, "| {name} |");
        let base: Option<f64> = kafka.memory.get(i).map(|m| m.iter().map(|p| p.1).sum());
        for f in figs {
            match f.memory.get(i) {
                Some(m) => {
                    let rss: f64 = m.iter().map(|p| p.1).sum();
                    let hwm: f64 = m.iter().map(|p| p.2).sum();
                    let parts = if m.len() > 1 {
                        let p: Vec<String> =
                            m.iter().map(|(n, r, _)| format!("{n} {r:.0}")).collect();
                        format!(" ({})", p.join(" + "))
                    } else {
                        String::new()
                    };
                    let ratio = base.map_or(String::new(), |b| format!(" ({:.2})", rss / b));
                    let _ = write!(md, " {rss:.0} / {hwm:.0}{ratio}{parts} |");
                }
                None => md.push_str(" — |"),
            }
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**Requests over every partition, each holding one 100 B record: ms per request / \
         ms of the system's CPU per request (CPU ratio to {})**\n",
        systems[0].name
    );
    header(&mut md, "request");
    let cost_row = |md: &mut String, name: String, pick: &dyn Fn(&Figures) -> &Option<Cost>| {
        let _ = write!(md, "| {name} |");
        let base = pick(kafka).as_ref().map(|c| c.cpu_ms);
        for f in figs {
            match pick(f) {
                Some(c) => {
                    let ratio = base.map_or(String::new(), |b| format!(" ({:.2})", c.cpu_ms / b));
                    let split = match c.split() {
                        s if s.is_empty() => s,
                        s => format!(": {s}"),
                    };
                    let _ = write!(md, " {:.2} / {:.2}{ratio}{split} |", c.ms, c.cpu_ms);
                }
                None => md.push_str(" failed |"),
            }
        }
        md.push('\n');
    };
    for (stage, n) in [(0, few), (1, all)] {
        cost_row(&mut md, format!("Metadata, {n} partitions"), &|f| {
            &f.metadata[stage]
        });
    }
    for (stage, n) in [(0, few), (1, all)] {
        cost_row(&mut md, format!("Fetch of {n} partitions"), &|f| {
            &f.fetch[stage]
        });
    }
    // How much each request's CPU grew from one topic to all: 10 × more partitions.
    for (what, pick) in [
        (
            "Metadata",
            (|f: &Figures| &f.metadata) as fn(&Figures) -> &[Option<Cost>; 2],
        ),
        ("Fetch", |f: &Figures| &f.fetch),
    ] {
        let _ = write!(md, "| {what} CPU growth, {few} → {all} |");
        for f in figs {
            match pick(f) {
                [Some(a), Some(b)] => {
                    let _ = write!(md, " × {:.1} |", b.cpu_ms / a.cpu_ms);
                }
                _ => md.push_str(" — |"),
            }
        }
        md.push('\n');
    }
    for (stage, what) in [
        (0, format!("CreateTopics, 1 × {few}, s")),
        (1, format!("CreateTopics, {} × {few}, s", TOPICS - 1)),
    ] {
        let _ = write!(md, "| {what} |");
        for f in figs {
            let _ = write!(
                md,
                " {} |",
                f.create_secs[stage].map_or("failed".into(), |s| format!("{s:.1}"))
            );
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n**`kafka-producer-perf-test`, {} × 100 B, acks=all, into one topic of {few} \
         partitions with {all} partitions on the broker: records/s (ratio) ; µs of the \
         system's CPU per record**\n",
        plan.records
    );
    header(&mut md, "run");
    for (i, name) in [
        "alone".to_string(),
        format!(
            "{} producers connected, one record/s each",
            plan.connections
        ),
    ]
    .iter()
    .enumerate()
    {
        let _ = write!(md, "| {name} |");
        let base = kafka.perf[i].map(|p| p.0);
        for f in figs {
            match f.perf[i] {
                Some((rps, cpu)) => {
                    let ratio = base.map_or(String::new(), |b| format!(" ({:.2})", rps / b));
                    let _ = write!(md, " {}{ratio} ; {cpu:.2} |", fmt_rate(rps));
                }
                None => md.push_str(" failed |"),
            }
        }
        md.push('\n');
    }
    let _ = write!(md, "| connections the broker held with the crowd open |");
    for f in figs {
        let _ = write!(
            md,
            " {} |",
            f.connections.map_or("—".into(), |c| c.to_string())
        );
    }
    md.push('\n');
    md
}
