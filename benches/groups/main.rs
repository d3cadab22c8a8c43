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
//! 3. Rebalances of real librdkafka consumers (`rebalance.rs`), each member a child process:
//!    classic eager, classic cooperative-sticky and KIP-848, a 10-member group on a
//!    40-partition topic written at a steady rate; the time to settle after an 11th member
//!    joins and after one is killed, and the rate of records read meanwhile.
//! 4. Convergence of a large KIP-848 group (`converge.rs`): 1,000 members driven by raw
//!    ConsumerGroupHeartbeat requests over 10,000 partitions, from the first join until
//!    every member owns exactly its target; then 100 more join. Heartbeats sent, and the
//!    gateway's CPU time and peak RSS.
//!
//! The gateway runs with IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0, so the figures are the
//! protocol's cost, not Kafka's deliberate 3 s wait for more members of an empty group.
//!
//!   cargo bench --bench groups
//!   BENCH_PHASES=rebalance cargo bench --bench groups
//!   BENCH_PHASES=converge BENCH_MEMBERS=100 BENCH_PARTITIONS=1000 cargo bench --bench groups
//!
//! Env: BENCH_PHASES (which of offsets, stabilize, rebalance, converge to run,
//! comma-separated; default all), BENCH_BACKEND (`iggy`: the gateway on an iggy-server, IGGY_SERVER_BIN, default
//! /work/shared/iggy/iggy-server; `kafka`: Apache Kafka from KAFKA_CLASSPATH serves the phases
//! instead, for reference; else the embedded store), GATEWAY_BIN (default: this package's `iggy-kafka-gateway`, built by cargo for benches),
//! BENCH_CONSUMERS (default 200), BENCH_ROUNDS (requests per consumer and phase, default 50),
//! BENCH_REPEATS (stabilization repetitions, default 5); part 4: BENCH_MEMBERS (default 1000),
//! BENCH_PARTITIONS (default 10000), BENCH_NEWCOMERS (default a tenth of the members),
//! BENCH_MEMBERS_PER_CONN (default 20), BENCH_CONVERGE_LIMIT_S (default 300),
//! BENCH_CONSUMER_HEARTBEAT_MS and BENCH_CONSUMER_SESSION_MS (its gateway's KIP-848 heartbeat
//! interval and session, default Kafka's 5000 and 45000); GATEWAY_LOG (the gateway's RUST_LOG,
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

#[macro_use]
mod wire;
// `common::Row` and the produce/consume phases are the other benches'.
mod commits;
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;
mod converge;
// The iggy-server of BENCH_BACKEND=iggy, started as `kafka_compare` starts it.
#[allow(dead_code)]
#[path = "../kafka_compare/procs.rs"]
mod procs;
mod rebalance;
mod stabilize;

use commits::*;
use stabilize::*;
use wire::*;

fn main() {
    // A member of part 3's group: this binary started again by `rebalance::spawn_member`.
    if let Ok(protocol) = env::var(rebalance::MEMBER_ENV) {
        rebalance::member_main(&protocol);
        return;
    }
    let phases =
        env::var("BENCH_PHASES").unwrap_or_else(|_| "offsets,stabilize,rebalance,converge".into());
    let on = |phase| phases.split(',').any(|p| p.trim() == phase);
    let env_usize = |name, default| {
        env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let consumers = env_usize("BENCH_CONSUMERS", 200).max(1);
    let rounds = env_usize("BENCH_ROUNDS", 50).max(1);
    let repeats = env_usize("BENCH_REPEATS", 5).max(1);
    let members = env_usize("BENCH_MEMBERS", 1000).max(1);
    let converge_setup = converge::Setup {
        members,
        partitions: env_usize("BENCH_PARTITIONS", 10_000).max(1),
        newcomers: env_usize("BENCH_NEWCOMERS", members / 10),
        per_conn: env_usize("BENCH_MEMBERS_PER_CONN", 20).max(1),
        limit: Duration::from_secs(env_usize("BENCH_CONVERGE_LIMIT_S", 300) as u64),
        timing: converge::timing(),
    };
    let bin = common::gateway_bin();
    // A wrong path is a mistake, not a reason to measure nothing.
    assert!(
        bin.is_file(),
        "no gateway binary at {}: GATEWAY_BIN must name one",
        bin.display()
    );
    // BENCH_BACKEND=iggy: the gateway on an iggy-server (killed on drop, after the gateway).
    let iggy = (env::var("BENCH_BACKEND").as_deref() == Ok("iggy")).then(|| {
        let server = env::var_os("IGGY_SERVER_BIN")
            .map_or_else(|| "/work/shared/iggy/iggy-server".into(), PathBuf::from);
        assert!(
            server.is_file(),
            "no iggy-server at {}: set IGGY_SERVER_BIN",
            server.display()
        );
        procs::iggy(&server)
    });
    let iggy_addr = iggy.as_ref().map(|p| p.addr.as_str());
    // BENCH_BACKEND=kafka: Apache Kafka from KAFKA_CLASSPATH (as benches/kafka-compare.sh
    // sets it) serves the phases instead, its KIP-848 session and heartbeat part 3's.
    let kafka = (env::var("BENCH_BACKEND").as_deref() == Ok("kafka")).then(|| {
        let cp = env::var("KAFKA_CLASSPATH").expect("BENCH_BACKEND=kafka needs KAFKA_CLASSPATH");
        let (session, beat) = (rebalance::SESSION_MS, rebalance::HEARTBEAT_MS);
        procs::kafka_with(
            &cp,
            &format!(
                "group.consumer.min.session.timeout.ms={session}\n\
                 group.consumer.session.timeout.ms={session}\n\
                 group.consumer.min.heartbeat.interval.ms={beat}\n\
                 group.consumer.heartbeat.interval.ms={beat}\n"
            ),
        )
    });
    let part3_timing = (rebalance::SESSION_MS, rebalance::HEARTBEAT_MS);
    let gw = start_gateway(&bin, iggy_addr, part3_timing);
    eprintln!("gateway listening on {}", gw.addr);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = kafka.as_ref().map_or(&gw.addr, |k| &k.addr).clone();

    let mut runs = Vec::new();
    if on("offsets") {
        rt.block_on(create_topic(&addr, OFFSETS_TOPIC, OFFSETS_PARTITIONS))
            .expect("create the offsets topic");
    }
    for groups in [consumers, SHARED_GROUPS.min(consumers)]
        .into_iter()
        .filter(|_| on("offsets"))
    {
        eprintln!("offsets: {consumers} consumers over {groups} groups, {rounds} rounds");
        runs.push(rt.block_on(offsets_run(&addr, consumers, groups, rounds)));
    }

    let mut stabilizations = Vec::new();
    for rep in (0..repeats).filter(|_| on("stabilize")) {
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

    let mut rebalances = Vec::new();
    for protocol in rebalance::Protocol::ALL
        .into_iter()
        .filter(|_| on("rebalance"))
    {
        eprintln!("rebalance: {}", protocol.name());
        match rebalance::rebalance_run(&addr, protocol) {
            Ok(run) => rebalances.push(run),
            Err(e) => println!("FAILED rebalance run, {}: {e}", protocol.name()),
        }
    }

    // Part 4 on a gateway of its own, with its own KIP-848 timing, after the first is gone.
    drop(gw);
    let mut convergence = Vec::new();
    if on("converge") {
        let gw = start_gateway(&bin, iggy_addr, converge_setup.timing);
        eprintln!(
            "converge: {} members over {} partitions, gateway on {}",
            converge_setup.members, converge_setup.partitions, gw.addr
        );
        let run = converge::converge_run(&gw.addr, gw.child.id(), &converge_setup);
        match rt.block_on(run) {
            Ok(events) => convergence = events,
            Err(e) => println!("FAILED convergence run: {e}"),
        }
    }
    drop(rt);

    let cores = thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    match (&kafka, &iggy) {
        (Some(_), _) => {
            println!("Apache Kafka (KAFKA_CLASSPATH), group.initial.rebalance.delay.ms=0;")
        }
        (None, Some(_)) => {
            println!("iggy-kafka-gateway consumer groups, Iggy backend, default offset slots (4);")
        }
        (None, None) => println!(
            "iggy-kafka-gateway consumer groups, embedded backend, default offset slots (4);"
        ),
    }
    println!(
        "IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0 (the protocol's cost, not Kafka's 3 s wait);"
    );
    println!("client and gateway share this machine ({cores} cores).");
    if on("offsets") {
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
    }
    if on("stabilize") {
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
            "run",
            "offset ms",
            "stabilized ms",
            "join phase ms",
            "generations",
            "10 members formed ms"
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
    }
    if on("rebalance") {
        rebalance::print(&rebalances);
    }
    if on("converge") {
        converge::print(&converge_setup, &convergence);
    }
    drop(iggy);
}
