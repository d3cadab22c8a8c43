//! Scaling by gateways: one iggy-server, then 1, 2 and 3 gateways sharing it (started as
//! `kafka_compare` starts one; they find each other through Iggy, `docs/CLUSTER.md`).
//! With each count, librdkafka producers and a consumer bootstrapped with every gateway's
//! address write and read a topic of their own, whose partition leaders Metadata spreads
//! over the gateways. What each process spends per record tells how far more gateways go.

use std::fmt::Write as _;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{consume, create_topic, PARTITIONS};
use crate::procs::{self, cpu_secs, Proc};
use crate::{rdk, requests};

/// Producers writing at once, as `kafka_compare`'s "×4".
const PRODUCERS: u64 = 4;
const MOST_GATEWAYS: usize = 3;

/// One phase with `gateways` gateways: records/s and µs of CPU per record of each gateway,
/// of iggy-server and of this process (the clients).
struct Phase {
    gateways: usize,
    what: &'static str,
    rps: Option<f64>,
    gateway_us: Vec<f64>,
    iggy_us: f64,
    client_us: f64,
    leaders: String,
}

/// Runs the phases and returns their table (markdown) with per-core figures.
pub fn run(iggy_bin: &Path, gateway_bin: &Path, records: u64, limit: Duration) -> String {
    let server = procs::iggy(iggy_bin);
    let mut gateways: Vec<Proc> = Vec::new();
    let mut phases = Vec::new();
    for k in 1..=MOST_GATEWAYS {
        gateways.push(procs::gateway(gateway_bin, Some(&server.addr)));
        await_cluster(&gateways);
        let bootstrap: Vec<&str> = gateways.iter().map(|g| g.addr.as_str()).collect();
        let bootstrap = bootstrap.join(",");
        let topic = format!("gateways-{k}");
        create_topic(&bootstrap, &topic);
        let leaders = requests::leaders(&gateways[0].addr, &topic).map_or_else(
            |e| e,
            |l| {
                let counts: Vec<String> = l.iter().map(|(_, n)| n.to_string()).collect();
                counts.join("/")
            },
        );
        eprintln!("== {k} gateway(s) on one iggy-server, leaders {leaders} of {PARTITIONS}");
        if k == 1 {
            // Unmeasured: lets the gateway and iggy-server reach their working sizes.
            let (b, t) = (bootstrap.clone(), topic.clone());
            crate::step("warm-up", move || {
                rdk::produce_many(&b, &t, (100, "none"), (records / 5, 1), limit)
            });
        }
        let measure = |what: &'static str, f: Box<dyn FnOnce() -> f64 + Send>| {
            let pids: Vec<u32> = gateways.iter().map(Proc::pid).collect();
            let before: Vec<f64> = pids.iter().map(|&p| cpu_secs(p)).collect();
            let (iggy0, me0) = (server.cpu_secs(), cpu_secs(std::process::id()));
            let rps = crate::step(what, f);
            let per = |secs: f64| secs * 1e6 / records as f64;
            let phase = Phase {
                gateways: k,
                what,
                rps,
                gateway_us: pids
                    .iter()
                    .zip(&before)
                    .map(|(&p, b)| per(cpu_secs(p) - b))
                    .collect(),
                iggy_us: per(server.cpu_secs() - iggy0),
                client_us: per(cpu_secs(std::process::id()) - me0),
                leaders: leaders.clone(),
            };
            eprintln!(
                "  {what}: {} rec/s; µs CPU/record: gateways {:.2?}, iggy-server {:.2}, clients {:.2}",
                phase.rps.map_or("failed".into(), |r| format!("{r:.0}")),
                phase.gateway_us,
                phase.iggy_us,
                phase.client_us
            );
            phase
        };
        let (b, t) = (bootstrap.clone(), topic.clone());
        phases.push(measure(
            "produce",
            Box::new(move || rdk::produce_many(&b, &t, (100, "none"), (records, PRODUCERS), limit)),
        ));
        let (b, t) = (bootstrap.clone(), topic.clone());
        phases.push(measure(
            "consume",
            Box::new(move || consume(&b, &t, (100, records), "read_uncommitted", limit).0),
        ));
    }
    table(&phases, records)
}

/// Waits until every gateway lists all of them as brokers.
fn await_cluster(gateways: &[Proc]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gateways
        .iter()
        .all(|g| requests::brokers(&g.addr) == Ok(gateways.len()))
    {
        assert!(
            Instant::now() < deadline,
            "{} gateways do not all list each other",
            gateways.len()
        );
        thread::sleep(Duration::from_millis(100));
    }
}

fn table(phases: &[Phase], records: u64) -> String {
    let mut md = format!(
        "**1–{MOST_GATEWAYS} gateways on one iggy-server: {records} × 100 B records, \
         {PARTITIONS} partitions, {PRODUCERS} librdkafka producers then one consumer \
         (by assignment), bootstrapped with every gateway**\n\n\
         | gateways | leaders | phase | records/s | µs CPU per record: each gateway | all gateways | iggy-server | clients | records/s per core: a gateway | iggy-server |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    for p in phases {
        let each: Vec<String> = p.gateway_us.iter().map(|u| format!("{u:.2}")).collect();
        let all: f64 = p.gateway_us.iter().sum();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {all:.2} | {:.2} | {:.2} | {} | {} |",
            p.gateways,
            p.leaders,
            p.what,
            p.rps.map_or("failed".into(), crate::fmt_rate),
            each.join(" + "),
            p.iggy_us,
            p.client_us,
            crate::fmt_rate(1e6 / all),
            crate::fmt_rate(1e6 / p.iggy_us),
        );
    }
    md
}
