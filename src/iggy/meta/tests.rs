//! The metadata port on a real Iggy server, at the port (no Kafka wire): each test
//! starts its own server (`test_server.rs`) and prints the SKIPPED line without one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy::prelude::{
    Consumer, Identifier, IggyByteSize, IggyExpiry, MaxTopicSize, MessageClient, PollingStrategy,
    SegmentClient, SystemClient, TopicClient, TopicCreateOptions,
};
use iggy_kafka_actors::store::meta::{Change, Meta, Since};
use iggy_kafka_actors::store::StoreError;

use super::test_server::Server;
use super::{log_of, MetaClient};
use crate::iggy::gateway_log;
use crate::iggy::pool::Conn;
use crate::iggy::IggyBackend;

const STREAM: &str = "kafka-gateway";

async fn backend(server: &Server, snapshot_records: u64) -> Arc<IggyBackend> {
    let started = IggyBackend::start(server.config(snapshot_records)).await;
    Arc::new(started.unwrap_or_else(|e| panic!("backend: {e}")))
}

fn meta(backend: &Arc<IggyBackend>) -> Meta {
    Meta::new(backend.clone())
}

fn put(key: &str, value: &[u8]) -> Change {
    Change::Put {
        key: key.into(),
        value: Bytes::copy_from_slice(value),
    }
}

fn delete(key: &str) -> Change {
    Change::Delete { key: key.into() }
}

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

/// A signed-in connection standing in for a native Iggy client.
async fn sdk(server: &Server) -> Conn {
    let conn = Conn::own(&server.config(1)).unwrap();
    conn.ready().await.expect("sign in");
    conn
}

/// Makes a table's log before the engine does, with Iggy's smallest segments, so a test
/// can drop its old records.
async fn small_segments(sdk: &Conn, table: &str) {
    let options = TopicCreateOptions {
        partitions_count: Some(1),
        message_expiry: Some(IggyExpiry::NeverExpire),
        max_topic_size: Some(MaxTopicSize::Unlimited),
        segment_size: Some(IggyByteSize::from(1 << 20)),
        messages_required_to_save: Some(1),
        ..TopicCreateOptions::default()
    };
    let c = sdk.ready().await.unwrap();
    c.create_topic(&id(STREAM), &log_of(table), &options)
        .await
        .unwrap();
}

/// Drops every sealed segment of a table's log; the offset it starts at afterwards.
async fn drop_old_records(sdk: &Conn, table: &str) -> u64 {
    let c = sdk.ready().await.unwrap();
    let log = id(&log_of(table));
    c.delete_segments(&id(STREAM), &log, 0, 1_000)
        .await
        .unwrap();
    let polled = c
        .poll_messages(
            &id(STREAM),
            &log,
            Some(0),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            1,
            false,
        )
        .await
        .unwrap();
    polled.messages[0].header.offset
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
async fn writes_scans_and_changes_round_trip() {
    let Some(server) = Server::start() else {
        return;
    };
    let (gw, other) = (
        backend(&server, 10_000).await,
        backend(&server, 10_000).await,
    );
    let m = meta(&gw);
    let empty = m.scan("round", "").await.unwrap();
    assert_eq!((empty.version, empty.entries), (0, vec![]));
    assert_eq!(
        m.since("round", 0).await.unwrap(),
        Since::Changes(0, vec![])
    );

    let binary = [0u8, 255, 0, 10];
    let first = vec![put("a/1", b"x"), put("a/2", &binary), put("b", b"")];
    let second = vec![delete("a/1"), put("b", b"z"), delete("never-there")];
    assert_eq!(m.write("round", first.clone()).await.unwrap(), 1);
    assert_eq!(m.write("round", second.clone()).await.unwrap(), 2);
    // A write of nothing still gets its own version (a unique number).
    assert_eq!(m.write("round", vec![]).await.unwrap(), 3);

    let a = m.scan("round", "a/").await.unwrap();
    assert_eq!(a.version, 3);
    assert_eq!(
        a.entries,
        vec![("a/2".into(), Bytes::copy_from_slice(&binary))]
    );
    let all = m.scan("round", "").await.unwrap();
    let keys: Vec<&str> = all.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["a/2", "b"]);
    assert_eq!(all.entries[1].1, Bytes::from_static(b"z"));
    assert_eq!(m.scan("round", "a/2/").await.unwrap().entries, vec![]);
    assert_eq!(
        m.scan("elsewhere", "").await.unwrap().version,
        0,
        "tables apart"
    );

    let everything: Vec<Change> = first.iter().chain(&second).cloned().collect();
    // From this replica's memory, and from a replica that has to read the log.
    for m in [&m, &meta(&other)] {
        assert_eq!(
            m.since("round", 0).await.unwrap(),
            Since::Changes(3, everything.clone())
        );
        assert_eq!(
            m.since("round", 1).await.unwrap(),
            Since::Changes(3, second.clone())
        );
        assert_eq!(
            m.since("round", 3).await.unwrap(),
            Since::Changes(3, vec![])
        );
        match m.since("round", 4).await {
            Err(StoreError::Fatal(msg)) => assert!(msg.contains("past its end"), "{msg}"),
            other => panic!("since past the end: {other:?}"),
        }
    }
    let fresh = meta(&other).scan("round", "").await.unwrap();
    assert_eq!(fresh, all, "another gateway's replica, loaded from the log");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_gateways_writing_one_table_get_unique_versions_in_log_order() {
    let Some(server) = Server::start() else {
        return;
    };
    let (a, b) = (
        backend(&server, 10_000).await,
        backend(&server, 10_000).await,
    );
    let handles = [meta(&a), meta(&a).client(), meta(&b), meta(&b).client()];
    let writers = handles.iter().enumerate().map(|(n, m)| {
        let m = m.clone();
        tokio::spawn(async move {
            let mut versions = Vec::new();
            for i in 0..25 {
                let key = format!("w/{n}/{i:02}");
                let version = m.write("shared", vec![put(&key, b"v")]).await.unwrap();
                versions.push((version, key));
            }
            versions
        })
    });
    let mut written = Vec::new();
    for writer in writers.collect::<Vec<_>>() {
        let versions = writer.await.unwrap();
        assert!(
            versions.windows(2).all(|w| w[0].0 < w[1].0),
            "one handle's versions increase: {versions:?}"
        );
        written.extend(versions);
    }
    written.sort();
    let versions: Vec<u64> = written.iter().map(|(v, _)| *v).collect();
    assert_eq!(
        versions,
        (1..=100).collect::<Vec<_>>(),
        "unique, none skipped"
    );

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

    // What one gateway writes, the other's Since and Scan see; a gateway's write lands
    // after what others wrote before it.
    assert_eq!(
        meta(&b)
            .write("shared", vec![put("x", b"b")])
            .await
            .unwrap(),
        101
    );
    assert_eq!(
        meta(&a).since("shared", 100).await.unwrap(),
        Since::Changes(101, vec![put("x", b"b")])
    );
    assert_eq!(
        meta(&b)
            .write("shared", vec![put("x", b"b2")])
            .await
            .unwrap(),
        102
    );
    assert_eq!(
        meta(&a)
            .write("shared", vec![put("x", b"a")])
            .await
            .unwrap(),
        103
    );
    for m in [meta(&a), meta(&b)] {
        let x = m.scan("shared", "x").await.unwrap();
        assert_eq!(x.version, 103);
        assert_eq!(x.entries, vec![("x".into(), Bytes::from_static(b"a"))]);
    }

    // A client handle is one more Iggy connection, sharing the replicas.
    let sdk = sdk(&server).await;
    let connections = || async {
        sdk.ready()
            .await
            .unwrap()
            .get_clients()
            .await
            .unwrap()
            .len()
    };
    let before = connections().await;
    let own = meta(&a).client();
    assert_eq!(own.scan("shared", "x").await.unwrap().version, 103);
    assert_eq!(connections().await, before + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn snapshots_let_replicas_load_after_iggy_drops_old_records_and_since_says_gone() {
    let Some(server) = Server::start() else {
        return;
    };
    let writer = backend(&server, 50).await;
    let sdk = sdk(&server).await;
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
        let upto = gateway_log::latest_marker(&sdk, STREAM, &log_of("big"))
            .await
            .unwrap();
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
    let Some(server) = Server::start() else {
        return;
    };
    let writer = backend(&server, 1_000_000).await;
    let sdk = sdk(&server).await;
    small_segments(&sdk, "holey").await;
    fill(&meta(&writer), "holey", 300).await;
    let first = drop_old_records(&sdk, "holey").await;
    assert!(first > 0, "segments not dropped");

    let restarted = backend(&server, 1_000_000).await;
    match meta(&restarted).scan("holey", "").await {
        Err(StoreError::Fatal(msg)) => assert_eq!(
            msg,
            format!("gateway log 'meta.holey' lost records 0..{first}, which no snapshot covers")
        ),
        Err(other) => panic!("a table with a hole: {other}"),
        Ok(scan) => panic!("a table with a hole loaded, at version {}", scan.version),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unanswered_writes_are_unavailable_and_the_replica_follows_the_log_only() {
    let Some(mut server) = Server::start() else {
        return;
    };
    let gw = backend(&server, 10_000).await;
    let m = meta(&gw);
    assert_eq!(m.write("t", vec![put("k", b"1")]).await.unwrap(), 1);

    // Answered too late (no time at all to answer): Unavailable, yet it lands, and the
    // replica has it once, from the log.
    let hasty = Meta::new(Arc::new(MetaClient {
        handle: gw.handle.clone(),
        inner: gw.inner.clone(),
        request_timeout: Duration::ZERO,
        conn: Arc::new(Conn::own(&gw.inner.config).unwrap()),
    }));
    match hasty.write("t", vec![put("k", b"2")]).await {
        Err(StoreError::Unavailable(_)) => {}
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
        Err(StoreError::Unavailable(_)) => {}
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
    assert_eq!(scan.entries, vec![("k".into(), Bytes::from_static(b"2"))]);
    assert_eq!(m.write("t", vec![put("k", b"3")]).await.unwrap(), 3);
    assert_eq!(
        m.since("t", 2).await.unwrap(),
        Since::Changes(3, vec![put("k", b"3")])
    );
}
