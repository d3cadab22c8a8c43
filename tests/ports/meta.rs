//! The metadata port on both engines: writes and their versions, scans by prefix,
//! changes since a version (or `Gone`), conditional writes, client handles, a second
//! gateway on a shared store, ping and flush, and tables kept across a restart.

use bytes::Bytes;
use iggy_kafka_actors::store::meta::{Change, Expect, Meta, Since, Version};
use iggy_kafka_actors::store::{StoreError, TopicLimits};

use super::{batch, tp, Engine};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    writes_are_scanned_by_prefix_in_key_order,
    since_answers_the_changes_after_a_version_or_gone,
    a_write_applies_its_changes_in_order,
    a_conditional_write_applies_only_where_the_entries_are_as_expected,
    versions_are_unique_and_increasing_across_concurrent_writers,
    client_handles_share_the_tables,
    a_second_gateway_on_a_shared_store_sees_the_first_ones_writes,
    ping_and_flush_answer,
    tables_survive_a_restart_of_the_engine,
);

pub fn put(key: &str, value: &[u8]) -> Change {
    Change::Put {
        key: key.into(),
        value: Bytes::copy_from_slice(value),
    }
}

pub fn delete(key: &str) -> Change {
    Change::Delete { key: key.into() }
}

/// Writes keys `w/<n>/00`..`w/<n>/24` to `table` through each handle `n`, all handles
/// at once; checks each handle's versions increase and that together they are 1 to
/// 25 × handles, none skipped. Every write's (version, key), in version order.
pub async fn write_at_once(handles: &[Meta], table: &'static str) -> Vec<(Version, String)> {
    let writers = handles.iter().enumerate().map(|(n, m)| {
        let m = m.clone();
        tokio::spawn(async move {
            let mut versions = Vec::new();
            for i in 0..25 {
                let key = format!("w/{n}/{i:02}");
                let version = m.write(table, vec![put(&key, b"v")]).await.unwrap();
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
    let versions: Vec<Version> = written.iter().map(|(v, _)| *v).collect();
    let all = 25 * handles.len() as Version;
    assert_eq!(
        versions,
        (1..=all).collect::<Vec<_>>(),
        "unique, none skipped"
    );
    written
}

const BINARY: [u8; 4] = [0, 255, 0, 10];

/// Three writes to table `round`: versions 1, 2 and 3 (a write of nothing too).
async fn three_writes(m: &Meta) -> (Vec<Change>, Vec<Change>) {
    let first = vec![put("a/1", b"x"), put("a/2", &BINARY), put("b", b"")];
    let second = vec![delete("a/1"), put("b", b"z"), delete("never-there")];
    assert_eq!(m.write("round", first.clone()).await.unwrap(), 1);
    assert_eq!(m.write("round", second.clone()).await.unwrap(), 2);
    // A write of nothing still gets its own version (a unique number).
    assert_eq!(m.write("round", vec![]).await.unwrap(), 3);
    (first, second)
}

async fn writes_are_scanned_by_prefix_in_key_order(e: Engine) {
    let m = &e.meta;
    let empty = m.scan("round", "").await.unwrap();
    assert_eq!((empty.version, empty.entries), (0, vec![]));
    three_writes(m).await;

    let a = m.scan("round", "a/").await.unwrap();
    assert_eq!(a.version, 3);
    assert_eq!(
        a.entries,
        vec![("a/2".into(), Bytes::copy_from_slice(&BINARY))]
    );
    let all = m.scan("round", "").await.unwrap();
    let keys: Vec<&str> = all.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["a/2", "b"]);
    assert_eq!(all.entries[1].1, Bytes::from_static(b"z"));
    assert_eq!(m.scan("round", "a/2/").await.unwrap().entries, vec![]);
    assert_eq!(m.scan("round", "c").await.unwrap().entries, vec![]);
    let elsewhere = m.scan("elsewhere", "").await.unwrap();
    assert_eq!(
        (elsewhere.version, elsewhere.entries),
        (0, vec![]),
        "tables apart"
    );
}

async fn since_answers_the_changes_after_a_version_or_gone(e: Engine) {
    let m = &e.meta;
    assert_eq!(
        m.since("round", 0).await.unwrap(),
        Since::Changes(0, vec![])
    );
    let (first, second) = three_writes(m).await;
    let everything: Vec<Change> = first.iter().chain(&second).cloned().collect();
    let kept = |version, changes| match e.promises.keeps_changes {
        true => Since::Changes(version, changes),
        false => Since::Gone,
    };
    assert_eq!(m.since("round", 0).await.unwrap(), kept(3, everything));
    assert_eq!(m.since("round", 1).await.unwrap(), kept(3, second));
    assert_eq!(m.since("round", 2).await.unwrap(), kept(3, vec![]));
    assert_eq!(
        m.since("round", 3).await.unwrap(),
        Since::Changes(3, vec![]),
        "nothing since the latest"
    );
    match m.since("round", 4).await {
        Err(StoreError::Fatal { .. }) => {}
        other => panic!("since past the end: {other:?}"),
    }
    assert_eq!(m.write("round", vec![put("c", b"1")]).await.unwrap(), 4);
    assert_eq!(
        m.since("round", 3).await.unwrap(),
        kept(4, vec![put("c", b"1")])
    );
    assert_eq!(
        m.since("other", 0).await.unwrap(),
        Since::Changes(0, vec![])
    );
}

async fn a_write_applies_its_changes_in_order(e: Engine) {
    let m = &e.meta;
    m.write("ordered", vec![put("j", b"old"), put("gone", b"g")])
        .await
        .unwrap();
    let changes = vec![
        put("k", b"1"),
        put("k", b"2"),
        delete("j"),
        put("j", b"3"),
        put("brief", b"b"),
        delete("brief"),
        delete("gone"),
    ];
    assert_eq!(m.write("ordered", changes).await.unwrap(), 2);
    let scan = m.scan("ordered", "").await.unwrap();
    assert_eq!(scan.version, 2);
    let expected = vec![
        ("j".to_string(), Bytes::from_static(b"3")),
        ("k".to_string(), Bytes::from_static(b"2")),
    ];
    assert_eq!(scan.entries, expected);
}

/// Two writers read `k` and write it back expecting what they read: the first applies,
/// the other changes nothing, on every gateway, and readers of the changes never see
/// it; a write expecting no entry applies once.
async fn a_conditional_write_applies_only_where_the_entries_are_as_expected(e: Engine) {
    let other = e.another().await;
    let (a, b) = (&e.meta, other.as_ref().map_or(&e.meta, |o| &o.meta));
    let expect = |key: &str, value: Option<&[u8]>| {
        vec![Expect {
            key: key.into(),
            value: value.map(Bytes::copy_from_slice),
        }]
    };
    let table = "conditional";
    let first = a.write(table, vec![put("k", b"1")]).await.unwrap();
    let won = a.write_if(table, expect("k", Some(b"1")), vec![put("k", b"2")]);
    assert_eq!(won.await.unwrap(), Some(first + 1));
    let lost = b.write_if(
        table,
        expect("k", Some(b"1")),
        vec![put("k", b"late"), put("m", b"x")],
    );
    assert_eq!(lost.await.unwrap(), None, "its condition no longer holds");
    let fresh = || b.write_if(table, expect("n", None), vec![put("n", b"new")]);
    assert!(fresh().await.unwrap().is_some());
    assert_eq!(fresh().await.unwrap(), None, "the entry is there now");
    let entries = vec![
        ("k".to_string(), Bytes::from_static(b"2")),
        ("n".to_string(), Bytes::from_static(b"new")),
    ];
    for m in [a, b] {
        assert_eq!(m.scan(table, "").await.unwrap().entries, entries);
    }
    if let Since::Changes(_, changes) = b.since(table, first).await.unwrap() {
        assert_eq!(changes, vec![put("k", b"2"), put("n", b"new")]);
    }
}

async fn versions_are_unique_and_increasing_across_concurrent_writers(e: Engine) {
    let handles = [
        e.meta.clone(),
        e.meta.clone(),
        e.meta.client().unwrap(),
        e.meta.client().unwrap(),
    ];
    let written = write_at_once(&handles, "busy").await;
    let scan = e.meta.scan("busy", "w/").await.unwrap();
    assert_eq!((scan.version, scan.entries.len()), (100, 100));
    if e.promises.keeps_changes {
        // The changes come in the order of their versions.
        let Since::Changes(100, changes) = e.meta.since("busy", 0).await.unwrap() else {
            panic!("changes since 0");
        };
        let keys: Vec<&str> = changes.iter().map(Change::key).collect();
        let in_version_order: Vec<&str> = written.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(keys, in_version_order);
    }
    let quiet = e.meta.write("quiet", vec![put("k", b"v")]).await.unwrap();
    assert_eq!(quiet, 1, "every table counts its own writes");
}

async fn client_handles_share_the_tables(e: Engine) {
    let (m, client) = (&e.meta, e.meta.client().unwrap());
    assert_eq!(client.shared(), m.shared());
    assert_eq!(m.write("handles", vec![put("k", b"1")]).await.unwrap(), 1);
    let seen = client.scan("handles", "").await.unwrap();
    assert_eq!(seen.entries, vec![("k".into(), Bytes::from_static(b"1"))]);
    assert_eq!(
        client.write("handles", vec![put("k", b"2")]).await.unwrap(),
        2
    );
    let seen = m.scan("handles", "k").await.unwrap();
    assert_eq!(seen.version, 2);
    assert_eq!(seen.entries, vec![("k".into(), Bytes::from_static(b"2"))]);
    let of_client = client.client().unwrap();
    assert_eq!(
        of_client.since("handles", 2).await.unwrap(),
        Since::Changes(2, vec![])
    );
    client.ping().await.unwrap();
}

async fn a_second_gateway_on_a_shared_store_sees_the_first_ones_writes(e: Engine) {
    assert_eq!(e.meta.shared(), e.promises.shared);
    let Some(other) = e.another().await else {
        assert!(!e.promises.shared, "a shared store opens twice");
        return;
    };
    let (a, b) = (&e.meta, &other.meta);
    let (first, second) = three_writes(a).await;
    let everything: Vec<Change> = first.iter().chain(&second).cloned().collect();
    // The other replica, loaded from the log, and its changes read from the log.
    assert_eq!(
        b.scan("round", "").await.unwrap(),
        a.scan("round", "").await.unwrap()
    );
    assert_eq!(
        b.since("round", 0).await.unwrap(),
        Since::Changes(3, everything)
    );
    assert_eq!(
        b.since("round", 1).await.unwrap(),
        Since::Changes(3, second)
    );
    assert_eq!(
        b.since("round", 3).await.unwrap(),
        Since::Changes(3, vec![])
    );
    match b.since("round", 4).await {
        Err(StoreError::Fatal { what, .. }) => assert!(what.contains("past its end"), "{what}"),
        other => panic!("since past the end: {other:?}"),
    }

    // A gateway's write lands after what the other wrote before it.
    assert_eq!(b.write("round", vec![put("x", b"b")]).await.unwrap(), 4);
    assert_eq!(
        a.since("round", 3).await.unwrap(),
        Since::Changes(4, vec![put("x", b"b")])
    );
    assert_eq!(b.write("round", vec![put("x", b"b2")]).await.unwrap(), 5);
    assert_eq!(a.write("round", vec![put("x", b"a")]).await.unwrap(), 6);
    for m in [a, b] {
        let x = m.scan("round", "x").await.unwrap();
        assert_eq!(x.version, 6);
        assert_eq!(x.entries, vec![("x".into(), Bytes::from_static(b"a"))]);
    }
}

async fn ping_and_flush_answer(e: Engine) {
    e.meta.ping().await.unwrap();
    e.meta.flush().await.unwrap();
    e.logs
        .create("flushed".into(), 1, TopicLimits::default())
        .await
        .unwrap();
    e.logs
        .append(tp("flushed", 0), batch(0, 2, |_| 1_700_000_000_000))
        .await
        .unwrap();
    e.meta.write("flushed", vec![put("k", b"v")]).await.unwrap();
    // With something written since: what flush has to persist.
    e.meta.flush().await.unwrap();
    e.meta.client().unwrap().flush().await.unwrap();
    e.meta.client().unwrap().ping().await.unwrap();
    let w = e.logs.watermarks(tp("flushed", 0)).await.unwrap();
    assert_eq!(w.high, 2, "flushing loses nothing");
}

async fn tables_survive_a_restart_of_the_engine(e: Engine) {
    three_writes(&e.meta).await;
    e.meta.write("other", vec![put("o", b"1")]).await.unwrap();
    let before = e.meta.scan("round", "").await.unwrap();
    let e = e.restart().await;
    assert_eq!(e.meta.scan("round", "").await.unwrap(), before);
    assert_eq!(e.meta.scan("other", "").await.unwrap().version, 1);
    assert_eq!(
        e.meta.since("round", 3).await.unwrap(),
        Since::Changes(3, vec![])
    );
    assert_eq!(e.meta.write("round", vec![put("d", b"")]).await.unwrap(), 4);
    let kept = e.meta.since("round", 3).await.unwrap();
    let expected = match e.promises.keeps_changes {
        true => Since::Changes(4, vec![put("d", b"")]),
        false => Since::Gone,
    };
    assert_eq!(kept, expected);
}
