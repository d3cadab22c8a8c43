//! Consumer-group costs of iggy-kafka-gateway (issue 5, Performance), measured with raw Kafka
//! requests (the `kafka-protocol` crate over tokio sockets; no client library in the way):
//!
//! 1. OffsetCommit and OffsetFetch latency under 200 committing consumers: 200 connections,
//!    each a simple consumer (generation -1, no member id, as admin tools and `assign()`
//!    consumers commit) that commits one partition offset in a loop, then fetches it in a loop.
//!    Run twice: one group per consumer, then 10 groups of 20 consumers (each its own partition).
//! 2. Stabilization after a join: a 10-member group is formed and stable; an 11th member joins.
//!    Measured from the 11th member's first JoinGroup until all 11 members hold a SyncGroup
//!    answer of the new generation. Members heartbeat every 100 ms and rejoin on
//!    REBALANCE_IN_PROGRESS, as real consumers do; the leader sends the assignments.
//!
//! The gateway runs with IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0, so the figures are the
//! protocol's cost, not Kafka's deliberate 3 s wait for more members of an empty group.
//!
//!   cargo bench --bench groups
//!
//! Env: GATEWAY_BIN (default: this package's `iggy-kafka-gateway`, built by cargo for benches),
//! BENCH_CONSUMERS (default 200), BENCH_ROUNDS (requests per consumer and phase, default 50),
//! BENCH_REPEATS (stabilization repetitions, default 5), GATEWAY_LOG (the gateway's RUST_LOG,
//! default warn; its log is shown if it fails to start).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::{env, fs, net, thread};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::join_group_response::JoinGroupResponse;
use kafka_protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestTopic};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::{
    consumer_protocol_assignment, ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
    GroupId, RequestHeader, RequestKind, ResponseHeader, ResponseKind, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Barrier};

/// The topic the committing consumers commit to, and its partition count.
const OFFSETS_TOPIC: &str = "bench-offsets";
const OFFSETS_PARTITIONS: i32 = 32;
/// Shared-group run of part 1: this many groups.
const SHARED_GROUPS: usize = 10;
/// Part 2: the group's size before the join, and the member timings asked for.
const MEMBERS: usize = 10;
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 10_000;
const HEARTBEAT: Duration = Duration::from_millis(100);
/// The subscribed topic of part 2. Assignments are relayed unread, so it need not exist.
const GROUP_TOPIC: &str = "bench-stabilize";
const GROUP_TOPIC_PARTITIONS: i32 = 22;
/// Any one request; and each measured phase as a whole.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

// Kafka error codes the members act on.
const REBALANCE_IN_PROGRESS: i16 = 27;
const MEMBER_ID_REQUIRED: i16 = 79;

// Request versions: the newest each API's flexible encoding was stable at in Kafka 3.x.
const JOIN_V: i16 = 7;
const SYNC_V: i16 = 5;
const HEARTBEAT_V: i16 = 4;
const LEAVE_V: i16 = 4;
const COMMIT_V: i16 = 8;
const FETCH_V: i16 = 7;
const CREATE_TOPICS_V: i16 = 5;

/// The gateway process: killed on drop, so also when a panic unwinds; the data dir goes with it.
struct Gateway {
    child: Child,
    dir: tempfile::TempDir,
    addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_gateway(bin: &PathBuf) -> Gateway {
    // Let the OS pick a free port, then hand it to the gateway (a tiny race, fine on loopback).
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let log = fs::File::create(dir.path().join("gateway.log")).unwrap();
    let child = Command::new(bin)
        .env("IGGY_KAFKA_BIND_ADDRESS", &addr)
        .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_DATA_DIR", dir.path().join("data"))
        .env("IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
        .env(
            "RUST_LOG",
            env::var("GATEWAY_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("spawn gateway");
    let mut gw = Gateway { child, dir, addr };
    let deadline = Instant::now() + Duration::from_secs(15);
    while net::TcpStream::connect(&gw.addr).is_err() {
        if let Ok(Some(status)) = gw.child.try_wait() {
            let log = fs::read_to_string(gw.dir.path().join("gateway.log")).unwrap_or_default();
            panic!("gateway exited ({status}) before listening:\n{log}");
        }
        assert!(
            Instant::now() < deadline,
            "gateway: not listening after 15 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
    gw
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One Kafka connection: a request at a time, each answer checked against its correlation id.
struct Conn {
    stream: TcpStream,
    correlation: i32,
    client_id: StrBytes,
}

impl Conn {
    async fn connect(addr: &str, client_id: &str) -> Result<Conn, String> {
        let stream = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Conn {
            stream,
            correlation: 0,
            client_id: s(client_id),
        })
    }

    async fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, String> {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(self.client_id.clone()));
        let mut buf = BytesMut::new();
        buf.put_i32(0); // the length, filled in below
        header
            .encode(&mut buf, key.request_header_version(version))
            .map_err(|e| format!("{key:?} header: {e}"))?;
        body.encode(&mut buf, version)
            .map_err(|e| format!("{key:?} v{version}: {e}"))?;
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        let stream = &mut self.stream;
        let frame = tokio::time::timeout(CALL_TIMEOUT, async move {
            stream.write_all(&buf).await?;
            let len = stream.read_i32().await?;
            let mut frame = vec![0; len.max(0) as usize];
            stream.read_exact(&mut frame).await?;
            Ok::<_, std::io::Error>(frame)
        })
        .await
        .map_err(|_| format!("{key:?}: no answer after {CALL_TIMEOUT:?}"))?
        .map_err(|e| format!("{key:?}: {e}"))?;
        let mut frame = Bytes::from(frame);
        let header = ResponseHeader::decode(&mut frame, key.response_header_version(version))
            .map_err(|e| format!("{key:?} response header: {e}"))?;
        if header.correlation_id != self.correlation {
            return Err(format!(
                "{key:?}: correlation {} answered, {} asked",
                header.correlation_id, self.correlation
            ));
        }
        ResponseKind::decode(key, &mut frame, version).map_err(|e| format!("{key:?} response: {e}"))
    }
}

/// Calls and unwraps the response of the expected kind.
macro_rules! call {
    ($conn:expr, $kind:ident, $version:expr, $req:expr) => {
        match $conn
            .call(ApiKey::$kind, $version, RequestKind::$kind($req))
            .await?
        {
            ResponseKind::$kind(r) => r,
            other => {
                return Err(format!(
                    "{}: unexpected answer {other:?}",
                    stringify!($kind)
                ))
            }
        }
    };
}

async fn create_topic(addr: &str, name: &str, partitions: i32) -> Result<(), String> {
    let mut conn = Conn::connect(addr, "bench-admin").await?;
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let resp = call!(conn, CreateTopics, CREATE_TOPICS_V, req);
    match resp.topics.first().map(|t| t.error_code) {
        Some(0) => Ok(()),
        other => Err(format!("CreateTopics {name}: error {other:?}")),
    }
}

// ---------------------------------------------------------------- part 1: commit and fetch

/// What one committing consumer measured.
#[derive(Default)]
struct ConsumerResult {
    commits: Vec<Duration>,
    fetches: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
}

impl ConsumerResult {
    fn error(&mut self, e: String) {
        self.errors += 1;
        self.first_error.get_or_insert(e);
    }
}

struct OffsetsRun {
    label: String,
    commit: Vec<Duration>,
    commit_secs: f64,
    fetch: Vec<Duration>,
    fetch_secs: f64,
    errors: usize,
    first_error: Option<String>,
}

fn commit_request(group: &str, partition: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::default())
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s(OFFSETS_TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(s("bench")))])])
}

fn fetch_request(group: &str, partition: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(s(OFFSETS_TOPIC)))
            .with_partition_indexes(vec![partition])]))
}

/// One commit: its latency, or why it failed.
async fn commit_once(
    conn: &mut Conn,
    group: &str,
    partition: i32,
    offset: i64,
) -> Result<Duration, String> {
    let start = Instant::now();
    let resp = call!(
        conn,
        OffsetCommit,
        COMMIT_V,
        commit_request(group, partition, offset)
    );
    let took = start.elapsed();
    let code = resp
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .map(|p| p.error_code);
    match code {
        Some(0) => Ok(took),
        other => Err(format!("OffsetCommit {group}/{partition}: error {other:?}")),
    }
}

/// One fetch: its latency, or why it failed (an error or not the offset last committed).
async fn fetch_once(
    conn: &mut Conn,
    group: &str,
    partition: i32,
    expected: i64,
) -> Result<Duration, String> {
    let start = Instant::now();
    let resp = call!(conn, OffsetFetch, FETCH_V, fetch_request(group, partition));
    let took = start.elapsed();
    let p = resp.topics.first().and_then(|t| t.partitions.first());
    match p {
        Some(p) if resp.error_code == 0 && p.error_code == 0 && p.committed_offset == expected => {
            Ok(took)
        }
        Some(p) => Err(format!(
            "OffsetFetch {group}/{partition}: error {}/{}, offset {} (committed {expected})",
            resp.error_code, p.error_code, p.committed_offset
        )),
        None => Err(format!(
            "OffsetFetch {group}/{partition}: error {}, no partition",
            resp.error_code
        )),
    }
}

/// A committing consumer. Always reaches the three barriers, failed or not, so the run
/// cannot deadlock; a connection whose request failed is dropped (it may be out of step).
#[allow(clippy::too_many_arguments)]
async fn committing_consumer(
    addr: String,
    index: usize,
    group: String,
    partition: i32,
    rounds: usize,
    barrier: Arc<Barrier>,
    deadline: Instant,
) -> ConsumerResult {
    let mut out = ConsumerResult::default();
    let mut conn = match Conn::connect(&addr, &format!("bench-consumer-{index}")).await {
        Ok(c) => Some(c),
        Err(e) => {
            out.error(e);
            None
        }
    };
    // Unmeasured warm-up: the group's first commit and read (which may create state).
    let base = index as i64 * 1_000_000;
    if let Some(c) = conn.as_mut() {
        let warm = async {
            commit_once(c, &group, partition, base).await?;
            fetch_once(c, &group, partition, base).await
        };
        if let Err(e) = warm.await {
            out.error(format!("warm-up: {e}"));
            conn = None;
        }
    }
    barrier.wait().await;
    let mut last = base;
    for round in 1..=rounds {
        let Some(c) = conn.as_mut() else { break };
        if Instant::now() > deadline {
            out.error("commit phase over its time bound".into());
            break;
        }
        match commit_once(c, &group, partition, base + round as i64).await {
            Ok(t) => {
                out.commits.push(t);
                last = base + round as i64;
            }
            Err(e) => {
                out.error(e);
                conn = None;
            }
        }
    }
    barrier.wait().await;
    for _ in 0..rounds {
        let Some(c) = conn.as_mut() else { break };
        if Instant::now() > deadline {
            out.error("fetch phase over its time bound".into());
            break;
        }
        match fetch_once(c, &group, partition, last).await {
            Ok(t) => out.fetches.push(t),
            Err(e) => {
                out.error(e);
                conn = None;
            }
        }
    }
    barrier.wait().await;
    out
}

/// `consumers` consumers over `groups` groups: consumer i is in group i % groups; the k-th
/// consumer of group g commits partition (g + k) % 32, so no two consumers of a group share a
/// partition and the partitions (hence the offset slots) are spread.
async fn offsets_run(addr: &str, consumers: usize, groups: usize, rounds: usize) -> OffsetsRun {
    let barrier = Arc::new(Barrier::new(consumers + 1));
    let deadline = Instant::now() + 2 * PHASE_TIMEOUT;
    let tasks: Vec<_> = (0..consumers)
        .map(|i| {
            let (g, k) = (i % groups, i / groups);
            let partition = ((g + k) % OFFSETS_PARTITIONS as usize) as i32;
            let group = format!("bench-offsets-{groups}g-{g}");
            tokio::spawn(committing_consumer(
                addr.to_string(),
                i,
                group,
                partition,
                rounds,
                barrier.clone(),
                deadline,
            ))
        })
        .collect();
    barrier.wait().await;
    let t0 = Instant::now();
    barrier.wait().await;
    let t1 = Instant::now();
    barrier.wait().await;
    let t2 = Instant::now();
    let mut run = OffsetsRun {
        label: if groups == consumers {
            format!("{consumers} groups, 1 consumer each")
        } else {
            format!("{groups} groups, {} consumers each", consumers / groups)
        },
        commit: Vec::new(),
        commit_secs: (t1 - t0).as_secs_f64(),
        fetch: Vec::new(),
        fetch_secs: (t2 - t1).as_secs_f64(),
        errors: 0,
        first_error: None,
    };
    for t in tasks {
        let r = t.await.expect("consumer task panicked");
        run.commit.extend(r.commits);
        run.fetch.extend(r.fetches);
        run.errors += r.errors;
        if run.first_error.is_none() {
            run.first_error = r.first_error;
        }
    }
    run.commit.sort_unstable();
    run.fetch.sort_unstable();
    run
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The p-quantile of sorted samples, in ms (nearest rank).
fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}

// ---------------------------------------------------------------- part 2: stabilization

enum Event {
    /// The member is about to send its first JoinGroup.
    FirstJoin(Instant),
    /// The member got a JoinGroup answer (no error) of this generation.
    Joined {
        member: usize,
        generation: i32,
        at: Instant,
    },
    /// The member got a SyncGroup answer (no error) in this generation.
    Synced {
        member: usize,
        generation: i32,
        at: Instant,
    },
    Failed {
        member: usize,
        error: String,
    },
}

fn subscription() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    ConsumerProtocolSubscription::default()
        .with_topics(vec![s(GROUP_TOPIC)])
        .encode(&mut b, 0)
        .unwrap();
    b.freeze()
}

/// The leader's work: partitions dealt round robin over the members, in the order given.
fn assign(joined: &JoinGroupResponse) -> Vec<SyncGroupRequestAssignment> {
    let n = joined.members.len().max(1);
    joined
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let partitions = (0..GROUP_TOPIC_PARTITIONS)
                .filter(|p| *p as usize % n == i)
                .collect();
            let mut b = BytesMut::new();
            b.put_i16(0);
            ConsumerProtocolAssignment::default()
                .with_assigned_partitions(vec![
                    consumer_protocol_assignment::TopicPartition::default()
                        .with_topic(TopicName(s(GROUP_TOPIC)))
                        .with_partitions(partitions),
                ])
                .encode(&mut b, 0)
                .unwrap();
            SyncGroupRequestAssignment::default()
                .with_member_id(m.member_id.clone())
                .with_assignment(b.freeze())
        })
        .collect()
}

/// A group member as a consumer runs one: join (KIP-394: MEMBER_ID_REQUIRED, then join with
/// the id), sync (the leader with assignments), then heartbeat every 100 ms until told of a
/// rebalance, when it rejoins and syncs again. Leaves the group when `stop` turns true.
async fn member(
    addr: String,
    group: String,
    index: usize,
    mut stop: watch::Receiver<bool>,
    events: mpsc::UnboundedSender<Event>,
) {
    let result = member_loop(&addr, &group, index, &mut stop, &events).await;
    if let Err(error) = result {
        let _ = events.send(Event::Failed {
            member: index,
            error,
        });
    }
}

async fn member_loop(
    addr: &str,
    group: &str,
    index: usize,
    stop: &mut watch::Receiver<bool>,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), String> {
    let mut conn = Conn::connect(addr, &format!("bench-member-{index}")).await?;
    let group_id = GroupId(s(group));
    let protocols = vec![JoinGroupRequestProtocol::default()
        .with_name(s("range"))
        .with_metadata(subscription())];
    let mut member_id = StrBytes::default();
    let _ = events.send(Event::FirstJoin(Instant::now()));
    loop {
        let join = JoinGroupRequest::default()
            .with_group_id(group_id.clone())
            .with_session_timeout_ms(SESSION_MS)
            .with_rebalance_timeout_ms(REBALANCE_MS)
            .with_member_id(member_id.clone())
            .with_protocol_type(s("consumer"))
            .with_protocols(protocols.clone());
        let joined = call!(conn, JoinGroup, JOIN_V, join);
        match joined.error_code {
            0 => {}
            MEMBER_ID_REQUIRED if member_id.is_empty() => {
                member_id = joined.member_id;
                continue;
            }
            e => return Err(format!("JoinGroup: error {e}")),
        }
        member_id = joined.member_id.clone();
        let generation = joined.generation_id;
        let _ = events.send(Event::Joined {
            member: index,
            generation,
            at: Instant::now(),
        });
        let assignments = if joined.leader == member_id {
            assign(&joined)
        } else {
            Vec::new()
        };
        let sync = SyncGroupRequest::default()
            .with_group_id(group_id.clone())
            .with_generation_id(generation)
            .with_member_id(member_id.clone())
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(joined.protocol_name.clone())
            .with_assignments(assignments);
        let synced = call!(conn, SyncGroup, SYNC_V, sync);
        match synced.error_code {
            0 => {
                let _ = events.send(Event::Synced {
                    member: index,
                    generation,
                    at: Instant::now(),
                });
            }
            REBALANCE_IN_PROGRESS => continue,
            e => return Err(format!("SyncGroup gen {generation}: error {e}")),
        }
        loop {
            tokio::select! {
                _ = stop.changed() => {
                    let leave = LeaveGroupRequest::default()
                        .with_group_id(group_id.clone())
                        .with_members(vec![MemberIdentity::default().with_member_id(member_id.clone())]);
                    let _ = call!(conn, LeaveGroup, LEAVE_V, leave);
                    return Ok(());
                }
                _ = tokio::time::sleep(HEARTBEAT) => {}
            }
            let hb = HeartbeatRequest::default()
                .with_group_id(group_id.clone())
                .with_generation_id(generation)
                .with_member_id(member_id.clone());
            match call!(conn, Heartbeat, HEARTBEAT_V, hb).error_code {
                0 => {}
                REBALANCE_IN_PROGRESS => break,
                e => return Err(format!("Heartbeat gen {generation}: error {e}")),
            }
        }
    }
}

/// Answers seen so far: generation → member → when.
#[derive(Default)]
struct Gens(BTreeMap<i32, HashMap<usize, Instant>>);

impl Gens {
    /// The newest generation above `after` in which all `n` members hold an answer, with
    /// the time of the last of those answers.
    fn complete(&self, n: usize, after: i32) -> Option<(i32, Instant)> {
        self.0
            .range(after + 1..)
            .rev()
            .find(|(_, members)| members.len() == n)
            .map(|(g, members)| (*g, *members.values().max().unwrap()))
    }

    fn newest(&self) -> i32 {
        self.0.keys().next_back().copied().unwrap_or(0)
    }
}

/// What the members of one run reported.
#[derive(Default)]
struct Seen {
    joins: Gens,
    syncs: Gens,
    first_join: Option<Instant>,
}

impl Seen {
    fn apply(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::FirstJoin(at) => self.first_join = Some(at),
            Event::Joined {
                member,
                generation,
                at,
            } => {
                self.joins
                    .0
                    .entry(generation)
                    .or_default()
                    .insert(member, at);
            }
            Event::Synced {
                member,
                generation,
                at,
            } => {
                self.syncs
                    .0
                    .entry(generation)
                    .or_default()
                    .insert(member, at);
            }
            Event::Failed { member, error } => return Err(format!("member {member}: {error}")),
        }
        Ok(())
    }
}

/// Takes events until `done` says the wait is over or the phase times out.
async fn wait_for(
    rx: &mut mpsc::UnboundedReceiver<Event>,
    seen: &mut Seen,
    mut done: impl FnMut(&Seen) -> bool,
    what: &str,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + PHASE_TIMEOUT;
    while !done(seen) {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .map_err(|_| format!("{what}: not done after {PHASE_TIMEOUT:?}"))?
            .ok_or_else(|| format!("{what}: every member stopped"))?;
        seen.apply(event)?;
    }
    Ok(())
}

struct Stabilization {
    /// How far into the quiet period's last 100 ms the 11th member was started.
    offset: Duration,
    /// From the 11th member's first JoinGroup to all 11 synced in the new generation.
    stabilized: Duration,
    /// Part of it until the JoinGroup answers of the new generation (the other members
    /// learn of the rebalance from a heartbeat, then rejoin).
    join_phase: Duration,
    /// Generations the join took (1 when the rebalance went through in one round).
    generations: i32,
    /// From the 10 members' start to all 10 synced in one generation (the initial churn).
    formed: Duration,
}

/// One run in a fresh group: 10 members form it; once it is quiet, the 11th member starts
/// `offset` later (runs spread the offsets over one heartbeat interval, so the join meets
/// the others' heartbeat cycle at different points, as it would in the wild).
async fn stabilization_once(
    addr: &str,
    rep: usize,
    offset: Duration,
) -> Result<Stabilization, String> {
    let group = format!("bench-stabilize-{rep}");
    let (stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut seen = Seen::default();
    let mut tasks = Vec::new();
    let start = Instant::now();
    for i in 0..MEMBERS {
        let (addr, group, stop, tx) =
            (addr.to_string(), group.clone(), stop_rx.clone(), tx.clone());
        tasks.push(tokio::spawn(member(addr, group, i, stop, tx)));
    }
    let outcome = async {
        // Formed: all 10 synced in the newest generation, and still so after a quiet second
        // (a late rejoin would have started another generation).
        let mut formed;
        let mut stable_gen = 0;
        loop {
            let newest_complete = |s: &Seen| {
                s.syncs
                    .complete(MEMBERS, 0)
                    .is_some_and(|(g, _)| g == s.syncs.newest())
            };
            wait_for(
                &mut rx,
                &mut seen,
                newest_complete,
                "forming the 10-member group",
            )
            .await?;
            let (g, at) = seen.syncs.complete(MEMBERS, 0).unwrap();
            formed = at - start;
            if g == stable_gen {
                break;
            }
            stable_gen = g;
            tokio::time::sleep(Duration::from_secs(1) + offset).await;
            while let Ok(event) = rx.try_recv() {
                seen.apply(event)?;
            }
            if seen.syncs.newest() == stable_gen {
                break;
            }
        }
        seen.first_join = None;
        let (addr, group, stop, tx) =
            (addr.to_string(), group.clone(), stop_rx.clone(), tx.clone());
        tasks.push(tokio::spawn(member(addr, group, MEMBERS, stop, tx)));
        wait_for(
            &mut rx,
            &mut seen,
            |s| s.syncs.complete(MEMBERS + 1, stable_gen).is_some(),
            "stabilizing after the 11th member joined",
        )
        .await?;
        let (g, synced_at) = seen.syncs.complete(MEMBERS + 1, stable_gen).unwrap();
        let joined_at = seen.joins.0.get(&g).and_then(|m| m.values().max().copied());
        let t0 = seen
            .first_join
            .ok_or("the 11th member never reported its first join")?;
        Ok(Stabilization {
            offset,
            stabilized: synced_at - t0,
            join_phase: joined_at.map_or(Duration::ZERO, |j| j - t0),
            generations: g - stable_gen,
            formed,
        })
    }
    .await;
    // Members leave (the group is not reused), then the tasks go.
    let _ = stop_tx.send(true);
    for t in tasks {
        let abort = t.abort_handle();
        if tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
    outcome
}

// ---------------------------------------------------------------- main

fn main() {
    let env_usize = |name, default| {
        env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let consumers = env_usize("BENCH_CONSUMERS", 200).max(1);
    let rounds = env_usize("BENCH_ROUNDS", 50).max(1);
    let repeats = env_usize("BENCH_REPEATS", 5).max(1);
    // Cargo builds the package's binaries for its benches and passes their paths at compile time.
    let built = option_env!("CARGO_BIN_EXE_iggy-kafka-gateway");
    let built = PathBuf::from(built.unwrap_or("target/release/iggy-kafka-gateway"));
    let bin = env::var_os("GATEWAY_BIN").map_or(built, PathBuf::from);
    // A wrong path is a mistake, not a reason to measure nothing.
    assert!(
        bin.is_file(),
        "no gateway binary at {}: GATEWAY_BIN must name one",
        bin.display()
    );
    let gw = start_gateway(&bin);
    eprintln!("gateway listening on {}", gw.addr);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = gw.addr.clone();

    rt.block_on(create_topic(&addr, OFFSETS_TOPIC, OFFSETS_PARTITIONS))
        .expect("create the offsets topic");
    let mut runs = Vec::new();
    for groups in [consumers, SHARED_GROUPS.min(consumers)] {
        eprintln!("offsets: {consumers} consumers over {groups} groups, {rounds} rounds");
        runs.push(rt.block_on(offsets_run(&addr, consumers, groups, rounds)));
    }

    let mut stabilizations = Vec::new();
    for rep in 0..repeats {
        let offset = HEARTBEAT * rep as u32 / repeats as u32;
        match rt.block_on(stabilization_once(&addr, rep, offset)) {
            Ok(st) => {
                eprintln!(
                    "stabilization {}: {:.1} ms ({} generation(s))",
                    rep + 1,
                    ms(st.stabilized),
                    st.generations
                );
                stabilizations.push(st);
            }
            Err(e) => println!("FAILED stabilization run {}: {e}", rep + 1),
        }
    }
    drop(rt);

    let cores = thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!("iggy-kafka-gateway consumer groups, embedded backend, default offset slots (4);");
    println!(
        "IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0 (the protocol's cost, not Kafka's 3 s wait);"
    );
    println!("client and gateway share this machine ({cores} cores).");
    println!();
    println!(
        "1. OffsetCommit v{COMMIT_V} / OffsetFetch v{FETCH_V} under {consumers} concurrent consumers"
    );
    println!(
        "   (one connection each, generation -1, one partition of a {OFFSETS_PARTITIONS}-partition topic;"
    );
    println!(
        "   {rounds} commits each, then {rounds} fetches each; one unmeasured warm-up commit+fetch first)"
    );
    println!(
        "   {:<30} {:<7} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "groups", "request", "count", "p50 ms", "p99 ms", "max ms", "req/s"
    );
    for run in &runs {
        for (name, lat, secs) in [
            ("commit", &run.commit, run.commit_secs),
            ("fetch", &run.fetch, run.fetch_secs),
        ] {
            println!(
                "   {:<30} {:<7} {:>8} {:>8.2} {:>8.2} {:>8.2} {:>10.0}",
                run.label,
                name,
                lat.len(),
                pct(lat, 0.50),
                pct(lat, 0.99),
                lat.last().map_or(f64::NAN, |d| ms(*d)),
                lat.len() as f64 / secs
            );
        }
        if run.errors > 0 {
            println!(
                "   {}: {} failed requests, first: {}",
                run.label,
                run.errors,
                run.first_error.as_deref().unwrap_or("?")
            );
        }
    }
    println!();
    println!(
        "2. Stabilization of a {MEMBERS}-member group after an 11th member joins (JoinGroup v{JOIN_V},"
    );
    println!(
        "   session and rebalance timeout {SESSION_MS} ms, heartbeat every {} ms, a fresh group each run):",
        HEARTBEAT.as_millis()
    );
    println!("   stabilized: from the 11th member's first JoinGroup to all 11 holding a SyncGroup answer");
    println!("   of the new generation; of which join phase: until the new generation's JoinGroup answers");
    println!("   (the other 10 learn of the rebalance from their next heartbeat and rejoin); offset: when the");
    println!("   11th started within the heartbeat cycle, spread over the runs");
    println!(
        "   {:<4} {:>10} {:>14} {:>14} {:>12} {:>20}",
        "run", "offset ms", "stabilized ms", "join phase ms", "generations", "10 members formed ms"
    );
    for (i, st) in stabilizations.iter().enumerate() {
        println!(
            "   {:<4} {:>10.0} {:>14.1} {:>14.1} {:>12} {:>20.1}",
            i + 1,
            ms(st.offset),
            ms(st.stabilized),
            ms(st.join_phase),
            st.generations,
            ms(st.formed)
        );
    }
    let mut times: Vec<Duration> = stabilizations.iter().map(|s| s.stabilized).collect();
    times.sort_unstable();
    if !times.is_empty() {
        println!(
            "   median {:.1} ms over {} runs",
            ms(times[times.len() / 2]),
            times.len()
        );
    }
    drop(gw);
}
