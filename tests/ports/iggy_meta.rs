//! What only the Iggy engine's metadata port has to show, at the port: tables that
//! gateways on one server write together, snapshots standing in for records Iggy has
//! dropped, and a write whose answer was lost. Each test starts its own server and
//! prints the SKIPPED line without one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use iggy::prelude::{Identifier, SegmentClient, SystemClient, TcpClient, TopicClient};
use iggy_kafka_actors::store::meta::{Change, Meta, Since};
use iggy_kafka_actors::store::StoreError;
use iggy_kafka_gateway::IggyBackend;

use super::iggy_backend;
use super::meta::{put, write_at_once};
use crate::support::iggy::{
    first_offset, rerun_after_recovery_failure, small_segment_log, snapshot_upto, IggyServer,
};

/// The gateway's own stream (`iggy_gateway_stream`), where the tables' logs are.
const STREAM: &str = "kafka-gateway";

/// The log of a table (`src/iggy/meta/mod.rs`).
fn log_of(table: &str) -> String {
    format!("meta.{table}")
}

async fn backend(server: &IggyServer, snapshot_records: u64) -> Arc<IggyBackend> {
    let tune = |s: &mut iggy_kafka_gateway::Settings| s.iggy_snapshot_records = snapshot_records;
    Arc::new(iggy_backend(server, tune).await)
}

fn meta(backend: &Arc<IggyBackend>) -> Meta {
    Meta::new(backend.clone())
}

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

/// Makes a table's log before the engine does, with Iggy's smallest segments, so a test
/// can drop its old records.
async fn small_segments(sdk: &TcpClient, table: &str) {
    sdk.create_topic(&id(STREAM), &log_of(table), &small_segment_log())
        .await
        .unwrap();
}

/// Drops every sealed segment of a table's log; the offset it starts at afterwards.
async fn drop_old_records(sdk: &TcpClient, table: &str) -> u64 {
    sdk.delete_segments(&id(STREAM), &id(&log_of(table)), 0, 1_000)
        .await
        .unwrap();
    first_offset(sdk, &log_of(table)).await
}

/// Writes `count` records of 8 KiB to `table` (keys `k/00`..`k/19` over and over),
/// enough for several 1 MiB segments; checks they get versions `1..=count`.
async fn fill(m: &Meta, table: &'static str, count: u64) {
    for n in 0..count {
        let change = put(&format!("k/{:02}", n % 20), &[n as u8; 8 << 10]);
        assert_eq!(m.write(table, vec![change]).await.unwrap(), n + 1);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_gateways_writing_one_table_get_unique_versions_in_log_order() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (a, b) = (
        backend(&server, 10_000).await,
        backend(&server, 10_000).await,
    );
    let handles = [
        meta(&a),
        meta(&a).client().unwrap(),
        meta(&b),
        meta(&b).client().unwrap(),
    ];
    let written = write_at_once(&handles, "shared").await;

    // Every gateway sees the writes in the order of their versions.
    for m in [&meta(&a), &meta(&b)] {
        let Since::Changes(100, changes) = m.since("shared", 0).await.unwrap() else {
            panic!("changes since 0");
        };
        let keys: Vec<&str> = changes.iter().map(Change::key).collect();
        let in_version_order: Vec<&str> = written.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(keys, in_version_order);
        let scan = m.scan("shared", "w/").await.unwrap();
        assert_eq!((scan.version, scan.entries.len()), (100, 100));
    }

    // A client handle is one more Iggy connection, sharing the replicas.
    let sdk = server.sdk().await;
    let connections = || async { sdk.get_clients().await.unwrap().len() };
    let before = connections().await;
    let own = meta(&a).client().unwrap();
    assert_eq!(own.scan("shared", "w/").await.unwrap().version, 100);
    assert_eq!(connections().await, before + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshots_let_replicas_load_after_iggy_drops_old_records_and_since_says_gone() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let writer = backend(&server, 50).await;
    let sdk = server.sdk().await;
    small_segments(&sdk, "big").await;
    // A replica loaded now, then left behind while the log moves on.
    let idle = backend(&server, 50).await;
    assert_eq!(meta(&idle).scan("big", "").await.unwrap().version, 0);

    let m = meta(&writer);
    fill(&m, "big", 300).await;
    // Writes go on until a snapshot covers all 300 (the writer snapshots every 50).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut version = 300;
    let covered = loop {
        let upto = snapshot_upto(&sdk, &log_of("big")).await;
        if let Some(upto) = upto.filter(|u| *u >= 300) {
            break upto;
        }
        assert!(Instant::now() < deadline, "no snapshot past 300: {upto:?}");
        version = m.write("big", vec![put("tick", b"t")]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let first = drop_old_records(&sdk, "big").await;
    assert!(
        (100..=covered).contains(&first),
        "the log starts at {first}, the snapshot covers {covered}"
    );
    let expected = m.scan("big", "").await.unwrap();
    assert_eq!(expected.version, version);
    assert_eq!(m.scan("big", "k/").await.unwrap().entries.len(), 20);

    // A restarted gateway loads the snapshot and the records after it; the idle one
    // finds its log trimmed past what it read and reloads.
    let restarted = backend(&server, 50).await;
    for m in [meta(&restarted), meta(&idle)] {
        let scan = m.scan("big", "").await.unwrap();
        // Not printed whole: the values are 8 KiB each.
        assert!(
            scan == expected,
            "{} entries at version {}, expected {} at {}",
            scan.entries.len(),
            scan.version,
            expected.entries.len(),
            expected.version
        );
    }
    let r = meta(&restarted);
    for since in [0, first - 1] {
        // Summed up: the values are 8 KiB each.
        let answer = match r.since("big", since).await.unwrap() {
            Since::Changes(v, changes) => format!("{} changes up to {v}", changes.len()),
            Since::Gone => "gone".to_string(),
        };
        assert_eq!(answer, "gone", "since {since}, with the log from {first}");
    }
    match r.since("big", first).await.unwrap() {
        Since::Changes(v, changes) => {
            assert_eq!(v, version);
            assert_eq!(changes.len() as u64, version - first, "one change a write");
        }
        Since::Gone => panic!("records from {first} on are in the log"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_whose_lost_records_no_snapshot_covers_is_refused_naming_its_log() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let writer = backend(&server, 1_000_000).await;
    let sdk = server.sdk().await;
    small_segments(&sdk, "holey").await;
    fill(&meta(&writer), "holey", 300).await;
    let first = drop_old_records(&sdk, "holey").await;
    assert!(first > 0, "segments not dropped");

    let restarted = backend(&server, 1_000_000).await;
    match meta(&restarted).scan("holey", "").await {
        Err(StoreError::Fatal { what, .. }) => assert_eq!(
            what,
            format!("gateway log 'meta.holey' lost records 0..{first}, which no snapshot covers")
        ),
        Err(other) => panic!("a table with a hole: {other}"),
        Ok(scan) => panic!("a table with a hole loaded, at version {}", scan.version),
    }
}

/// SIGKILLs iggy-server and starts it again on its data: rerun once if the server
/// fails its own crash recovery (`support::iggy::rerun_after_recovery_failure`).
#[test]
fn unanswered_writes_are_unavailable_and_the_replica_follows_the_log_only() {
    rerun_after_recovery_failure(
        unanswered_writes_are_unavailable_and_the_replica_follows_the_log_only_once,
    );
}

async fn unanswered_writes_are_unavailable_and_the_replica_follows_the_log_only_once() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    let gw = backend(&server, 10_000).await;
    let m = meta(&gw);
    assert_eq!(m.write("t", vec![put("k", b"1")]).await.unwrap(), 1);

    // Answered too late (no time at all to answer): Unavailable, yet it lands, and the
    // replica has it once, from the log.
    // Kept to the end: its runtime runs the write on after the answer is given up.
    let hasty = Meta::new(Arc::new(
        iggy_backend(&server, |s| s.iggy_request_timeout_ms = 0).await,
    ));
    match hasty.write("t", vec![put("k", b"2")]).await {
        Err(StoreError::Unavailable { .. }) => {}
        other => panic!("a write answered in no time: {other:?}"),
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while m.scan("t", "").await.unwrap().version < 2 {
        assert!(
            Instant::now() < deadline,
            "the unanswered write never landed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        m.since("t", 0).await.unwrap(),
        Since::Changes(2, vec![put("k", b"1"), put("k", b"2")])
    );

    // Iggy gone: the write is Unavailable and not applied; once Iggy is back the
    // table goes on from what the log holds.
    server.stop();
    match m.write("t", vec![put("k", b"lost")]).await {
        Err(StoreError::Unavailable { .. }) => {}
        other => panic!("a write with Iggy down: {other:?}"),
    }
    server.start_again();
    let deadline = Instant::now() + Duration::from_secs(20);
    let scan = loop {
        match m.scan("t", "").await {
            Ok(scan) => break scan,
            Err(e) => assert!(Instant::now() < deadline, "Iggy not back: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(scan.version, 2);
    assert_eq!(
        scan.entries,
        vec![("k".into(), bytes::Bytes::from_static(b"2"))]
    );
    assert_eq!(m.write("t", vec![put("k", b"3")]).await.unwrap(), 3);
    assert_eq!(
        m.since("t", 2).await.unwrap(),
        Since::Changes(3, vec![put("k", b"3")])
    );
}
