//! Part 3: a group of real librdkafka consumers rebalancing (issue 35), under classic eager
//! (`range`), classic cooperative-sticky and KIP-848 (`group.protocol=consumer`, the
//! gateway's `uniform` assignor). Per protocol: a fresh 40-partition topic written at a
//! steady rate, 10 members consuming it and auto-committing; once the group has settled
//! (a) an 11th member joins, (b) one of the first 10 is killed (SIGKILL).
//!
//! Each member is a child process: this bench binary again, with `MEMBER_ENV` naming the
//! protocol, so the kill is a real one (no LeaveGroup, sockets closed by the kernel). A member
//! prints what it does on stdout, stamped with the wall clock (µs since the epoch, one clock
//! for every process of the machine):
//!   `s T`                 subscribed (the newcomer's join starts here)
//!   `a T p,p,...`         its assignment after a rebalance callback (every change)
//!   `o T p:next p:next`   every 20 ms, the next offset of each partition read since the last
//!
//! Settled: every partition owned by exactly one live member, every live member owning some,
//! and no assignment change for `QUIET`; the settle time runs to the last change. The rate
//! during a rebalance counts new records only (per partition, the highest offset any member
//! reached: a record read again after a revocation counts once), over the settle time but at
//! least `MIN_WINDOW`, against the rate over the `STEADY` before the event.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use std::{env, process};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientContext, Message};

use crate::common::{await_partition_count, config, create_topics, payload};

/// Set in a member's environment: the protocol's `key`. Also the topic, group and gateway.
pub(crate) const MEMBER_ENV: &str = "BENCH_REBALANCE_MEMBER";
const TOPIC_ENV: &str = "BENCH_REBALANCE_TOPIC";
const ADDR_ENV: &str = "BENCH_REBALANCE_ADDR";

const PARTITIONS: i32 = 40;
const MEMBERS: usize = 10;
/// Records per second the producer writes (100 bytes each), round robin over the partitions.
const RATE: f64 = 2_000.0;
/// The producer runs this long before the members start: what they first catch up on.
const PREFILL: Duration = Duration::from_secs(2);
/// Classic members' session and heartbeat; the gateway's KIP-848 settings are the same
/// (`start_gateway`).
pub(crate) const SESSION_MS: u64 = 6_000;
pub(crate) const HEARTBEAT_MS: u64 = 500;
const QUIET: Duration = Duration::from_secs(3);
const STEADY: Duration = Duration::from_secs(3);
const MIN_WINDOW: Duration = Duration::from_millis(250);
const REPORT: Duration = Duration::from_millis(20);
const SETTLE_LIMIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy)]
pub(crate) enum Protocol {
    Eager,
    Cooperative,
    Consumer,
}

impl Protocol {
    pub(crate) const ALL: [Protocol; 3] =
        [Protocol::Eager, Protocol::Cooperative, Protocol::Consumer];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Eager => "classic eager (range)",
            Protocol::Cooperative => "classic cooperative-sticky",
            Protocol::Consumer => "KIP-848 (consumer, uniform)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Protocol::Eager => "eager",
            Protocol::Cooperative => "cooperative",
            Protocol::Consumer => "consumer",
        }
    }

    fn from_key(key: &str) -> Protocol {
        Protocol::ALL
            .into_iter()
            .find(|p| p.key() == key)
            .unwrap_or_else(|| panic!("{MEMBER_ENV}={key}: no such protocol"))
    }

    fn configure(self, c: &mut rdkafka::ClientConfig) {
        let classic = |c: &mut rdkafka::ClientConfig, strategy| {
            c.set("partition.assignment.strategy", strategy)
                .set("session.timeout.ms", SESSION_MS.to_string())
                .set("heartbeat.interval.ms", HEARTBEAT_MS.to_string());
        };
        match self {
            Protocol::Eager => classic(c, "range"),
            Protocol::Cooperative => classic(c, "cooperative-sticky"),
            // Session, heartbeat and assignor are the gateway's.
            Protocol::Consumer => {
                c.set("group.protocol", "consumer");
            }
        }
    }
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// A member's context: prints its assignment after every rebalance callback.
struct Reporter;

impl ClientContext for Reporter {}

impl ConsumerContext for Reporter {
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, _: &Rebalance<'_>) {
        let owned = consumer.assignment().map_or_else(
            |e| panic!("assignment: {e}"),
            |tpl| {
                let ps: Vec<String> = tpl
                    .elements()
                    .iter()
                    .map(|e| e.partition().to_string())
                    .collect();
                ps.join(",")
            },
        );
        println!("a {} {owned}", now_us());
    }
}

/// Member mode: consume until killed, or until the bench closes stdin (so no member outlives
/// a bench that died).
pub(crate) fn member_main(key: &str) {
    let var = |name| env::var(name).unwrap_or_else(|_| panic!("member: {name} unset"));
    let (addr, topic) = (var(ADDR_ENV), var(TOPIC_ENV));
    thread::spawn(|| {
        let _ = std::io::stdin().read(&mut [0u8; 1]);
        process::exit(0);
    });
    let mut c = config(&addr);
    c.set("group.id", &topic)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "500");
    Protocol::from_key(key).configure(&mut c);
    let consumer: BaseConsumer<Reporter> = c.create_with_context(Reporter).expect("consumer");
    consumer.subscribe(&[&topic]).expect("subscribe");
    println!("s {}", now_us());
    let mut read: HashMap<i32, i64> = HashMap::new();
    let mut reported = Instant::now();
    loop {
        match consumer.poll(REPORT) {
            Some(Ok(m)) => {
                read.insert(m.partition(), m.offset() + 1);
            }
            Some(Err(e)) => eprintln!("member: {e}"),
            None => {}
        }
        if reported.elapsed() >= REPORT && !read.is_empty() {
            let offsets: Vec<String> = read.drain().map(|(p, o)| format!("{p}:{o}")).collect();
            println!("o {} {}", now_us(), offsets.join(" "));
            reported = Instant::now();
        }
    }
}

enum Line {
    Subscribed,
    Assigned(BTreeSet<i32>),
    Read(Vec<(i32, i64)>),
}

fn parse(line: &str) -> Option<(u64, Line)> {
    let mut words = line.split(' ');
    let (kind, at) = (words.next()?, words.next()?.parse().ok()?);
    let line = match kind {
        "s" => Line::Subscribed,
        "a" => Line::Assigned(
            words
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|p| p.parse().ok())
                .collect(),
        ),
        "o" => Line::Read(
            words
                .filter_map(|w| {
                    let (p, o) = w.split_once(':')?;
                    Some((p.parse().ok()?, o.parse().ok()?))
                })
                .collect(),
        ),
        _ => return None,
    };
    Some((at, line))
}

/// A member process, killed on drop.
struct Member(Child);

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_member(
    protocol: Protocol,
    addr: &str,
    topic: &str,
    index: usize,
    tx: mpsc::Sender<(usize, u64, Line)>,
) -> Member {
    let mut child = Command::new(env::current_exe().unwrap())
        .env(MEMBER_ENV, protocol.key())
        .env(ADDR_ENV, addr)
        .env(TOPIC_ENV, topic)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn member");
    let out = BufReader::new(child.stdout.take().unwrap());
    thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if let Some((at, l)) = parse(&line) {
                let _ = tx.send((index, at, l));
            }
        }
    });
    Member(child)
}

/// What the members reported so far.
#[derive(Default)]
struct Seen {
    owned: HashMap<usize, BTreeSet<i32>>,
    /// (when, member) of every assignment change.
    changes: Vec<(u64, usize)>,
    subscribed: HashMap<usize, u64>,
    /// (when, partition, next offset), in arrival order.
    reads: Vec<(u64, i32, i64)>,
}

impl Seen {
    fn apply(&mut self, (member, at, line): (usize, u64, Line)) {
        match line {
            Line::Subscribed => {
                self.subscribed.insert(member, at);
            }
            Line::Assigned(ps) => {
                if self.owned.get(&member) != Some(&ps) {
                    self.changes.push((at, member));
                    self.owned.insert(member, ps);
                }
            }
            Line::Read(offsets) => self
                .reads
                .extend(offsets.into_iter().map(|(p, o)| (at, p, o))),
        }
    }

    /// Every partition owned by exactly one of `live`, each of them owning some.
    fn covered(&self, live: &[usize]) -> bool {
        let mut seen = BTreeSet::new();
        for m in live {
            match self.owned.get(m) {
                Some(ps) if !ps.is_empty() => {
                    if ps.iter().any(|p| !seen.insert(*p)) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        seen.len() == PARTITIONS as usize
    }

    /// New records read by time `t`: per partition the highest next offset any member reported.
    fn progress(&self, t: u64) -> i64 {
        let mut high: HashMap<i32, i64> = HashMap::new();
        for &(_, p, o) in self.reads.iter().filter(|r| r.0 <= t) {
            let h = high.entry(p).or_default();
            *h = (*h).max(o);
        }
        high.values().sum()
    }

    /// Records per second read in [from, to] (µs).
    fn rate(&self, from: u64, to: u64) -> f64 {
        (self.progress(to) - self.progress(from)) as f64 / ((to - from) as f64 / 1e6)
    }
}

/// Takes reports until `until` (µs).
fn pump(rx: &mpsc::Receiver<(usize, u64, Line)>, seen: &mut Seen, until: u64) {
    while now_us() < until {
        if let Ok(r) = rx.recv_timeout(Duration::from_millis(50)) {
            seen.apply(r);
        }
    }
    while let Ok(r) = rx.try_recv() {
        seen.apply(r);
    }
}

/// Waits until `live` settle after `after` (µs): the times of the first and the last
/// assignment change, and how many changes there were.
fn settle(
    rx: &mpsc::Receiver<(usize, u64, Line)>,
    seen: &mut Seen,
    live: &[usize],
    after: u64,
) -> Result<(u64, u64, usize), String> {
    let limit = now_us() + SETTLE_LIMIT.as_micros() as u64;
    loop {
        pump(rx, seen, now_us() + 100_000);
        let changes: Vec<u64> = seen
            .changes
            .iter()
            .filter(|(at, m)| *at >= after && live.contains(m))
            .map(|c| c.0)
            .collect();
        let first = changes.iter().min().copied().unwrap_or(after);
        let last = changes.iter().max().copied().unwrap_or(after);
        if seen.covered(live) && now_us() >= last + QUIET.as_micros() as u64 {
            return Ok((first, last, changes.len()));
        }
        if now_us() > limit {
            return Err(format!(
                "not settled after {SETTLE_LIMIT:?}: {} partitions owned by {live:?}",
                live.iter()
                    .filter_map(|m| seen.owned.get(m))
                    .map(|ps| ps.len())
                    .sum::<usize>()
            ));
        }
    }
}

/// One event's figures.
#[derive(Clone, Copy, Default)]
pub(crate) struct Settled {
    pub(crate) ms: f64,
    /// Until the first assignment change: after a kill, when the coordinator noticed.
    pub(crate) first_ms: f64,
    pub(crate) changes: usize,
    /// Rate during the rebalance / rate over `STEADY` before it.
    pub(crate) ratio: f64,
    pub(crate) steady: f64,
}

pub(crate) struct Run {
    pub(crate) protocol: Protocol,
    pub(crate) join: Settled,
    pub(crate) kill: Settled,
    /// Partitions the killed member owned.
    pub(crate) killed_owned: usize,
}

/// The figures of an event at `t0` (µs) that settled as `settle` found; the changes, each
/// with its member and time from `t0`, go to stderr.
fn measure(seen: &Seen, what: &str, t0: u64, (first, last, changes): (u64, u64, usize)) -> Settled {
    let each: Vec<String> = seen
        .changes
        .iter()
        .filter(|c| c.0 >= t0)
        .map(|(at, m)| format!("m{m} +{:.0}", (at - t0) as f64 / 1e3))
        .collect();
    eprintln!(
        "  {what} at {t0} µs: assignment changes {}",
        each.join(", ")
    );
    let window = (last - t0).max(MIN_WINDOW.as_micros() as u64);
    let steady = seen.rate(t0 - STEADY.as_micros() as u64, t0);
    Settled {
        ms: (last - t0) as f64 / 1e3,
        first_ms: (first - t0) as f64 / 1e3,
        changes,
        ratio: seen.rate(t0, t0 + window) / steady,
        steady,
    }
}

/// Writes `RATE` records/s round robin over the partitions until `stop`.
fn steady_producer(addr: &str, topic: &str, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let producer: ThreadedProducer<DefaultProducerContext> = config(addr)
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    await_partition_count(producer.client(), topic, PARTITIONS);
    let topic = topic.to_string();
    thread::spawn(move || {
        let value = payload(100);
        let start = Instant::now();
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let due = (start.elapsed().as_secs_f64() * RATE) as u64;
            while sent < due {
                let p = (sent % PARTITIONS as u64) as i32;
                let rec = BaseRecord::<(), [u8]>::to(&topic)
                    .payload(&value)
                    .partition(p);
                match producer.send(rec) {
                    Ok(()) => sent += 1,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => break,
                    Err((e, _)) => panic!("steady producer: {e}"),
                }
            }
            thread::sleep(Duration::from_millis(5));
        }
        let _ = producer.flush(Duration::from_secs(5));
    })
}

/// One protocol: form the group, let a member join, kill one.
pub(crate) fn rebalance_run(addr: &str, protocol: Protocol) -> Result<Run, String> {
    let topic = format!("bench-rebalance-{}", protocol.key());
    create_topics(addr, &[&topic], PARTITIONS);
    let stop = Arc::new(AtomicBool::new(false));
    let producer = steady_producer(addr, &topic, stop.clone());
    thread::sleep(PREFILL);
    let (tx, rx) = mpsc::channel();
    let mut seen = Seen::default();
    let mut members: Vec<Option<Member>> = (0..MEMBERS)
        .map(|i| Some(spawn_member(protocol, addr, &topic, i, tx.clone())))
        .collect();
    let outcome = (|| {
        let mut live: Vec<usize> = (0..MEMBERS).collect();
        settle(&rx, &mut seen, &live, 0).map_err(|e| format!("forming: {e}"))?;
        pump(&rx, &mut seen, now_us() + STEADY.as_micros() as u64);
        members.push(Some(spawn_member(protocol, addr, &topic, MEMBERS, tx)));
        live.push(MEMBERS);
        while !seen.subscribed.contains_key(&MEMBERS) {
            pump(&rx, &mut seen, now_us() + 10_000);
        }
        let t0 = seen.subscribed[&MEMBERS];
        let joined = settle(&rx, &mut seen, &live, t0).map_err(|e| format!("join: {e}"))?;
        let join = measure(&seen, "join", t0, joined);
        pump(&rx, &mut seen, now_us() + STEADY.as_micros() as u64);
        // Member 0: the first to join, in a classic group most likely its leader.
        let killed_owned = seen.owned.get(&0).map_or(0, |ps| ps.len());
        let t0 = now_us();
        drop(members[0].take());
        live.retain(|m| *m != 0);
        let killed = settle(&rx, &mut seen, &live, t0).map_err(|e| format!("kill: {e}"))?;
        let kill = measure(&seen, "kill", t0, killed);
        Ok(Run {
            protocol,
            join,
            kill,
            killed_owned,
        })
    })();
    drop(members);
    stop.store(true, Ordering::Relaxed);
    let _ = producer.join();
    outcome
}

pub(crate) fn print(runs: &[Run]) {
    println!();
    println!(
        "3. Rebalances of a {MEMBERS}-member librdkafka group (one process each, auto-commit every"
    );
    println!("   500 ms) on a {PARTITIONS}-partition topic written at {RATE} records/s. settle: from the");
    println!(
        "   event to the last assignment change (each partition owned once, then {QUIET:?} quiet);"
    );
    println!("   first: to the first change. join: from the 11th member's subscribe(); kill: from SIGKILL");
    println!("   of member 0 (owning `owned` partitions), so it includes the session timeout ({SESSION_MS} ms,");
    println!("   heartbeats {HEARTBEAT_MS} ms; for KIP-848 the gateway's, set the same). rate: new records read");
    println!("   per second over the settle time (at least {MIN_WINDOW:?}) / over the {STEADY:?} before it.");
    println!(
        "   {:<28} {:>8} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}",
        "protocol",
        "join ms",
        "first",
        "changes",
        "rate",
        "kill ms",
        "first",
        "changes",
        "rate",
        "owned",
        "steady/s"
    );
    for r in runs {
        let (j, k) = (&r.join, &r.kill);
        println!(
            "   {:<28} {:>8.0} {:>8.0} {:>8} {:>6.2} {:>8.0} {:>8.0} {:>8} {:>6.2} {:>6} {:>9.0}",
            r.protocol.name(),
            j.ms,
            j.first_ms,
            j.changes,
            j.ratio,
            k.ms,
            k.first_ms,
            k.changes,
            k.ratio,
            r.killed_owned,
            j.steady
        );
    }
}
