//! Part 4: a KIP-848 group of many members over many partitions converging (issue 35,
//! "State and scale"), driven by raw ConsumerGroupHeartbeat (68) requests.
//!
//! Each member behaves as Java's AsyncKafkaConsumer: it joins with epoch 0 (subscribing
//! to every topic of the bench), keeps the epoch each answer gives, heartbeats every
//! `heartbeat_interval_ms` the gateway answers, and when an answer changes what it owns it
//! takes the new set at once (giving up revoked partitions, owning added ones) and
//! acknowledges it by heartbeating at once with its `topic_partitions`. A fenced or
//! unknown member gives up everything and joins again. The members are spread over
//! connections, `per_conn` each, one request at a time per connection (the member due
//! first goes next).
//!
//! Converged: ConsumerGroupDescribe (69), polled every `POLL`, says "Stable" with every
//! member, and the members' own sets, at the group's assignment epoch, hold every
//! partition exactly once. Measured from the first join (a second event: from the first
//! newcomer's join), with the heartbeats sent and the gateway's CPU time and peak RSS.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::*;

const GROUP: &str = "bench-converge";
/// The partitions are spread over this many topics (one topic if they do not divide).
const TOPICS: usize = 10;
const HEARTBEAT_V: i16 = 1;
const DESCRIBE_V: i16 = 0;
/// What the members ask for; they revoke at once, so it never runs out.
const REBALANCE_MS: i32 = 60_000;
const POLL: Duration = Duration::from_millis(250);
const PROGRESS: Duration = Duration::from_secs(5);

const UNKNOWN_MEMBER_ID: i16 = 25;
const FENCED_MEMBER_EPOCH: i16 = 110;

type Owned = BTreeSet<(Uuid, i32)>;

/// What the members share with the one watching them.
#[derive(Default)]
struct Shared {
    heartbeats: AtomicU64,
    /// Rejoins after FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID.
    fenced: AtomicU64,
    /// Member index → its epoch and what it owns.
    owned: Mutex<HashMap<usize, (i32, Owned)>>,
}

/// One member's view of itself.
struct Member {
    index: usize,
    id: StrBytes,
    epoch: i32,
    owned: Owned,
    /// `owned` changed since the last heartbeat: the next one carries it.
    acknowledge: bool,
    due: Instant,
}

impl Member {
    fn request(&mut self, topics: &[TopicName]) -> ConsumerGroupHeartbeatRequest {
        let joining = self.epoch == 0;
        let owned = (joining || self.acknowledge).then(|| {
            let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
            for (t, p) in &self.owned {
                by_topic.entry(*t).or_default().push(*p);
            }
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    TopicPartitions::default()
                        .with_topic_id(t)
                        .with_partitions(ps)
                })
                .collect()
        });
        self.acknowledge = false;
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_member_id(self.id.clone())
            .with_member_epoch(self.epoch)
            .with_rebalance_timeout_ms(if joining { REBALANCE_MS } else { -1 })
            .with_subscribed_topic_names(joining.then(|| topics.to_vec()))
            .with_topic_partitions(owned)
    }

    /// Takes an answer in, and sets when the next heartbeat is due.
    fn answer(&mut self, r: ConsumerGroupHeartbeatResponse, shared: &Shared) -> Result<(), String> {
        let now = Instant::now();
        match r.error_code {
            0 => {}
            UNKNOWN_MEMBER_ID | FENCED_MEMBER_EPOCH => {
                shared.fenced.fetch_add(1, Ordering::Relaxed);
                self.epoch = 0;
                self.owned.clear();
                self.due = now;
                shared.owned.lock().unwrap().remove(&self.index);
                return Ok(());
            }
            e => {
                return Err(format!(
                    "member {}: heartbeat error {e}: {:?}",
                    self.index, r.error_message
                ))
            }
        }
        self.epoch = r.member_epoch;
        let interval = Duration::from_millis(r.heartbeat_interval_ms.max(1) as u64);
        self.due = now + interval;
        if let Some(a) = r.assignment {
            let given: Owned = (a.topic_partitions.iter())
                .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
                .collect();
            if given != self.owned {
                self.owned = given;
                self.acknowledge = true;
                self.due = now;
            }
        }
        (shared.owned.lock().unwrap()).insert(self.index, (self.epoch, self.owned.clone()));
        Ok(())
    }
}

/// One connection's members, heartbeating until aborted.
async fn connection(
    addr: String,
    topics: Arc<Vec<TopicName>>,
    members: Range<usize>,
    shared: Arc<Shared>,
) -> Result<(), String> {
    let mut conn = Conn::connect(&addr, "bench-converge").await?;
    let now = Instant::now();
    let mut members: Vec<Member> = members
        .map(|index| Member {
            index,
            id: s(&format!("bench-converge-member-{index:05}")),
            epoch: 0,
            owned: Owned::new(),
            acknowledge: false,
            due: now,
        })
        .collect();
    loop {
        let m = members.iter_mut().min_by_key(|m| m.due).expect("members");
        tokio::time::sleep_until(m.due.into()).await;
        let req = m.request(&topics);
        let r = call!(conn, ConsumerGroupHeartbeat, HEARTBEAT_V, req);
        shared.heartbeats.fetch_add(1, Ordering::Relaxed);
        m.answer(r, &shared)?;
    }
}

/// The group as ConsumerGroupDescribe shows it, and the members' own sets.
struct Status {
    state: String,
    epoch: i32,
    assignment_epoch: i32,
    members: usize,
    /// Members (described) at the assignment epoch.
    at_epoch: usize,
    /// Partitions the members say they own, counted once each, and in all.
    owned: usize,
    owned_total: usize,
}

impl Status {
    fn converged(&self, members: usize, partitions: usize) -> bool {
        self.state == "Stable"
            && self.members == members
            && self.at_epoch == members
            && self.owned == partitions
            && self.owned_total == partitions
    }
}

async fn status(conn: &mut Conn, shared: &Shared) -> Result<Status, String> {
    let req = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(GROUP))]);
    let r = call!(conn, ConsumerGroupDescribe, DESCRIBE_V, req);
    let g = r.groups.into_iter().next().ok_or("describe: no group")?;
    // Before the first join the group is not there (GROUP_ID_NOT_FOUND).
    let state = match g.error_code {
        0 => g.group_state.to_string(),
        e => format!("error {e}"),
    };
    let owned = shared.owned.lock().unwrap();
    // The members' own sets count only at the group's assignment epoch.
    let current = || {
        (owned.values())
            .filter(|(epoch, _)| *epoch == g.assignment_epoch)
            .flat_map(|(_, ps)| ps.iter())
    };
    Ok(Status {
        state,
        epoch: g.group_epoch,
        assignment_epoch: g.assignment_epoch,
        members: g.members.len(),
        at_epoch: (g.members.iter())
            .filter(|m| m.member_epoch == g.assignment_epoch)
            .count(),
        owned: current().collect::<BTreeSet<_>>().len(),
        owned_total: current().count(),
    })
}

/// One event's figures.
pub(crate) struct Converged {
    pub(crate) what: String,
    pub(crate) members: usize,
    /// None: not converged within the limit.
    pub(crate) secs: Option<f64>,
    pub(crate) heartbeats: u64,
    pub(crate) fenced: u64,
    pub(crate) epochs: i32,
    pub(crate) cpu_secs: f64,
    pub(crate) written_mib: f64,
    pub(crate) peak_rss_mib: f64,
}

pub(crate) struct Setup {
    pub(crate) members: usize,
    pub(crate) partitions: usize,
    pub(crate) newcomers: usize,
    pub(crate) per_conn: usize,
    pub(crate) limit: Duration,
    /// The gateway's KIP-848 session and heartbeat interval, ms (`timing`).
    pub(crate) timing: (u64, u64),
}

/// Part 4's gateway: Kafka's KIP-848 session and heartbeat interval (45 s, 5 s) unless
/// BENCH_CONSUMER_SESSION_MS and BENCH_CONSUMER_HEARTBEAT_MS say otherwise.
pub(crate) fn timing() -> (u64, u64) {
    let ms = |name, default| {
        env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        ms("BENCH_CONSUMER_SESSION_MS", 45_000),
        ms("BENCH_CONSUMER_HEARTBEAT_MS", 5_000),
    )
}

/// Where an event started: the time, the counters and the gateway's CPU time then.
struct Mark {
    at: Instant,
    heartbeats: u64,
    fenced: u64,
    epoch: i32,
    cpu: f64,
    written: f64,
}

/// MiB process `pid` wrote so far (wchar of /proc/<pid>/io: its write calls, whether or not
/// they reached the disk yet); NaN if unreadable.
fn written_mib(pid: u32) -> f64 {
    let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    (io.lines())
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |b| b / (1024.0 * 1024.0))
}

impl Mark {
    async fn now(conn: &mut Conn, shared: &Shared, pid: u32) -> Result<Mark, String> {
        let epoch = status(conn, shared).await?.epoch;
        Ok(Mark {
            at: Instant::now(),
            heartbeats: shared.heartbeats.load(Ordering::Relaxed),
            fenced: shared.fenced.load(Ordering::Relaxed),
            epoch,
            cpu: procs::cpu_secs(pid),
            written: written_mib(pid),
        })
    }
}

impl Setup {
    /// The topics the partitions are spread over.
    fn topics(&self) -> usize {
        if self.partitions.is_multiple_of(TOPICS) {
            TOPICS
        } else {
            1
        }
    }
}

/// Waits until `members` have converged since `mark` (or `limit` passed), printing
/// progress.
async fn wait(
    conn: &mut Conn,
    shared: &Shared,
    tasks: &mut JoinSet<Result<(), String>>,
    (what, members, partitions, limit): (&str, usize, usize, Duration),
    (mark, pid): (Mark, u32),
) -> Result<Converged, String> {
    let Mark {
        at: t0,
        heartbeats: hb0,
        fenced: fenced0,
        epoch: epoch0,
        cpu: cpu0,
        written: written0,
    } = mark;
    let mut reported = t0;
    loop {
        tokio::time::sleep(POLL).await;
        if let Some(done) = tasks.try_join_next() {
            done.map_err(|e| e.to_string())??;
        }
        let st = status(conn, shared).await?;
        let converged = st.converged(members, partitions);
        if converged || t0.elapsed() > limit || reported.elapsed() >= PROGRESS {
            reported = Instant::now();
            eprintln!(
                "  {what}: {:.1} s, {} heartbeats, {}, epoch {} (assignment {}), {} members, {} at it, \
                 {} partitions owned ({} in all), gateway CPU {:.1} s",
                t0.elapsed().as_secs_f64(),
                shared.heartbeats.load(Ordering::Relaxed) - hb0,
                st.state,
                st.epoch,
                st.assignment_epoch,
                st.members,
                st.at_epoch,
                st.owned,
                st.owned_total,
                procs::cpu_secs(pid) - cpu0
            );
        }
        if converged || t0.elapsed() > limit {
            return Ok(Converged {
                what: what.to_string(),
                members,
                secs: converged.then(|| t0.elapsed().as_secs_f64()),
                heartbeats: shared.heartbeats.load(Ordering::Relaxed) - hb0,
                fenced: shared.fenced.load(Ordering::Relaxed) - fenced0,
                epochs: st.epoch - epoch0,
                cpu_secs: procs::cpu_secs(pid) - cpu0,
                written_mib: written_mib(pid) - written0,
                peak_rss_mib: procs::status_mib(pid, "VmHWM"),
            });
        }
    }
}

/// Creates the topics, lets `members` join and converge, then `newcomers` more.
pub(crate) async fn converge_run(
    addr: &str,
    pid: u32,
    set: &Setup,
) -> Result<Vec<Converged>, String> {
    let topics = set.topics();
    let names: Vec<String> = (0..topics).map(|i| format!("bench-converge-{i}")).collect();
    for name in &names {
        create_topic(addr, name, (set.partitions / topics) as i32).await?;
    }
    let names: Vec<TopicName> = names.iter().map(|n| TopicName(s(n))).collect();
    let (names, shared) = (Arc::new(names), Arc::new(Shared::default()));
    let mut tasks = JoinSet::new();
    let mut conn = Conn::connect(addr, "bench-converge-describe").await?;
    let mut events = Vec::new();
    for (what, from, to) in [
        ("form", 0, set.members),
        ("join", set.members, set.members + set.newcomers),
    ] {
        let mark = Mark::now(&mut conn, &shared, pid).await?;
        for start in (from..to).step_by(set.per_conn) {
            let members = start..(start + set.per_conn).min(to);
            tasks.spawn(connection(
                addr.to_string(),
                names.clone(),
                members,
                shared.clone(),
            ));
        }
        let event = (what, to, set.partitions, set.limit);
        let ev = wait(&mut conn, &shared, &mut tasks, event, (mark, pid)).await?;
        let done = ev.secs.is_some();
        events.push(ev);
        if !done || set.newcomers == 0 {
            break;
        }
    }
    tasks.shutdown().await;
    Ok(events)
}

pub(crate) fn print(set: &Setup, events: &[Converged]) {
    println!();
    println!(
        "4. A KIP-848 group converging: {} members (ConsumerGroupHeartbeat v{HEARTBEAT_V}, {} per connection,",
        set.members, set.per_conn
    );
    println!(
        "   sequential) over {} partitions ({} topics), then {} newcomers. Members heartbeat at the",
        set.partitions,
        set.topics(),
        set.newcomers
    );
    let (session, heartbeat) = set.timing;
    println!("   interval the gateway answers ({heartbeat} ms; session {session} ms) and at once to acknowledge");
    println!("   a change of what they own. converged: from the first join until Describe says Stable with");
    println!("   every member at the assignment epoch and their own sets hold each partition once (polled");
    println!("   every {POLL:?}). fenced: rejoins after FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID. CPU and");
    println!("   written (its write calls, /proc/<pid>/io wchar): the gateway's over the event; peak RSS:");
    println!("   its VmHWM since it started (a gateway of its own for this part).");
    println!(
        "   {:<6} {:>8} {:>13} {:>11} {:>8} {:>7} {:>9} {:>12} {:>13}",
        "event",
        "members",
        "converged s",
        "heartbeats",
        "fenced",
        "epochs",
        "CPU s",
        "written MiB",
        "peak RSS MiB"
    );
    for e in events {
        println!(
            "   {:<6} {:>8} {:>13} {:>11} {:>8} {:>7} {:>9.1} {:>12.0} {:>13.0}",
            e.what,
            e.members,
            e.secs.map_or("no".to_string(), |s| format!("{s:.2}")),
            e.heartbeats,
            e.fenced,
            e.epochs,
            e.cpu_secs,
            e.written_mib,
            e.peak_rss_mib
        );
    }
}
