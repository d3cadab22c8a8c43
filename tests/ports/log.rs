//! The log port on both engines: appends read back at their offsets, watermarks,
//! reads bounded by offset and size, timestamp lookups, idempotent producers'
//! history, and topics made, listed, deleted and made again.

use std::sync::Arc;

use bytes::Bytes;
use iggy_kafka_actors::protocol::records;
use iggy_kafka_actors::store::{
    ProducerBatch, StoreError, StoreResult, TimestampedOffset, TopicLimits, Watermarks,
};
use kafka_protocol::records::{Compression, Record, TimestampType};

use super::{batch, batch_of, idempotent, record, records_read, seen, seen_of, tp, Engine, Seen};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    appends_are_read_back_at_their_offsets,
    batches_appended_together_land_one_after_the_other,
    reads_start_at_the_batch_holding_the_offset_and_stop_near_max_bytes,
    reads_outside_the_log_find_nothing_and_say_where_it_is,
    compressed_batches_read_back_as_their_records,
    log_append_time_batches_read_back_stamped,
    partitions_are_logs_of_their_own,
    unknown_topics_and_partitions_are_refused,
    offset_for_timestamp_is_the_first_record_reaching_it,
    max_timestamp_is_the_first_record_holding_the_largest,
    producer_history_is_the_last_five_batches_of_each_producer,
    topics_are_created_listed_and_deleted,
    a_topic_made_again_is_a_new_incarnation_without_the_old_records,
    limits_apply_to_existing_topics,
    logs_survive_a_restart_of_the_engine,
);

/// A base for record timestamps: in the past, as producers' clocks mostly are.
const T: i64 = 1_700_000_000_000;

async fn create(e: &Engine, name: &str, partitions: i32) {
    let info = e
        .logs
        .create(name.into(), partitions, TopicLimits::default())
        .await
        .unwrap_or_else(|err| panic!("create {name}: {err}"));
    assert_eq!((&*info.name, info.partitions), (name, partitions));
}

/// Everything a read from `offset` with room for all of it returns, as seen.
async fn read_all(e: &Engine, topic: &str, offset: i64) -> Vec<Seen> {
    let read = e.logs.read(tp(topic, 0), offset, 64 << 20).await.unwrap();
    records_read(&read).iter().map(seen).collect()
}

async fn appends_are_read_back_at_their_offsets(e: Engine) {
    create(&e, "appends", 1).await;
    let t = tp("appends", 0);
    // Null and empty keys and values, no headers and a header without a value too.
    let shapes = vec![
        Record {
            key: None,
            value: None,
            ..crate::support::record(None, b"", T)
        },
        Record {
            key: Some(Bytes::new()),
            value: Some(Bytes::new()),
            ..record(7, T + 1)
        },
    ];
    let mut nameless = record(8, T + 2);
    nameless.headers.insert(
        kafka_protocol::protocol::StrBytes::from_static_str("empty"),
        None,
    );
    let batches = [
        batch(0, 1, |n| T + n as i64),
        batch(1, 3, |n| T + n as i64),
        batch_of(shapes, Compression::None),
        batch_of(vec![nameless], Compression::None),
    ];
    let (mut expected, mut placed, mut next) = (Vec::new(), Vec::new(), 0);
    for b in &batches {
        let appended = e.logs.append(t.clone(), b.clone()).await.unwrap();
        assert_eq!(appended.base_offset, next, "each batch lands at the end");
        next += b.header.record_count as i64;
        let after = Watermarks {
            log_start: 0,
            high: next,
        };
        assert_eq!(appended.watermarks, after);
        assert_eq!(e.logs.watermarks(t.clone()).await.unwrap(), after);
        expected.extend(seen_of(b, appended.base_offset));
        placed.push(records::place(b.bytes.clone(), appended.base_offset));
    }
    let read = e.logs.read(t, 0, 1 << 20).await.unwrap();
    assert_eq!(read.watermarks.high, 7);
    let got: Vec<Seen> = records_read(&read).iter().map(seen).collect();
    assert_eq!(got, expected);
    if e.promises.keeps_batches {
        assert_eq!(read.batches, placed, "served exactly as appended");
    }
}

/// One call with several batches (a log slot's group commit): each answer is its
/// batch's place, in order, the watermarks after it; a read gives them back in order,
/// and a later single append follows them.
async fn batches_appended_together_land_one_after_the_other(e: Engine) {
    create(&e, "grouped", 1).await;
    let t = tp("grouped", 0);
    e.logs.append(t.clone(), batch(0, 2, |_| T)).await.unwrap();
    let group = vec![
        batch(2, 3, |n| T + n as i64),
        batch_of(vec![record(5, T + 5)], Compression::Lz4),
        batch(6, 4, |n| T + n as i64),
    ];
    let appended = e.logs.append_all(t.clone(), group.clone()).await.unwrap();
    let bases: Vec<i64> = appended.iter().map(|a| a.base_offset).collect();
    let highs: Vec<i64> = appended.iter().map(|a| a.watermarks.high).collect();
    assert_eq!((bases, highs), (vec![2, 5, 6], vec![5, 6, 10]));
    let next = e.logs.append(t.clone(), batch(10, 1, |_| T)).await.unwrap();
    assert_eq!(next.base_offset, 10);
    let mut expected = Vec::new();
    for (b, a) in group.iter().zip(&appended) {
        expected.extend(seen_of(b, a.base_offset));
    }
    let got = read_all(&e, "grouped", 2).await;
    assert_eq!(got[..expected.len()], expected[..]);
}

/// Ten batches of two records of 1 KiB each: offsets 0..20.
async fn ten_batches(e: &Engine, topic: &str) -> Vec<Seen> {
    create(e, topic, 1).await;
    let mut expected = Vec::new();
    for n in 0..10 {
        let records = (2 * n..2 * n + 2)
            .map(|r| Record {
                value: Some(Bytes::from(vec![r as u8; 1024])),
                ..record(r, T + r as i64)
            })
            .collect();
        let b = batch_of(records, Compression::None);
        let appended = e.logs.append(tp(topic, 0), b.clone()).await.unwrap();
        expected.extend(seen_of(&b, appended.base_offset));
    }
    expected
}

async fn reads_start_at_the_batch_holding_the_offset_and_stop_near_max_bytes(e: Engine) {
    let expected = ten_batches(&e, "sized").await;
    let t = tp("sized", 0);

    // From the middle of a batch: that batch's records below the offset at most, then
    // every record from the offset on.
    let got = read_all(&e, "sized", 5).await;
    assert!((4..=5).contains(&got[0].0), "starts at {}", got[0].0);
    let from_5: Vec<Seen> = got.into_iter().filter(|r| r.0 >= 5).collect();
    assert_eq!(from_5, expected[5..]);

    // Room for nothing: still the batch holding the offset (at least one record).
    let read = e.logs.read(t.clone(), 0, 1).await.unwrap();
    let got = records_read(&read);
    assert!((1..=2).contains(&got.len()), "{} records", got.len());
    assert_eq!(seen(&got[0]), expected[0]);

    // A consumer reading 5 KiB at a time gets every record once, in order.
    let (mut all, mut offset) = (Vec::new(), 0);
    while offset < 20 {
        let read = e.logs.read(t.clone(), offset, 5 << 10).await.unwrap();
        let size: usize = read.batches.iter().map(Bytes::len).sum();
        let got: Vec<Seen> = records_read(&read)
            .iter()
            .map(seen)
            .filter(|r| r.0 >= offset)
            .collect();
        assert!(
            (2..=5).contains(&got.len()),
            "{} records at {offset}",
            got.len()
        );
        assert!(size <= (5 << 10) + 100, "{size} bytes read for 5 KiB");
        offset = got.last().unwrap().0 + 1;
        all.extend(got);
    }
    assert_eq!(all, expected);
}

async fn reads_outside_the_log_find_nothing_and_say_where_it_is(e: Engine) {
    create(&e, "outside", 1).await;
    let t = tp("outside", 0);
    let empty = Watermarks::default();
    assert_eq!(e.logs.watermarks(t.clone()).await.unwrap(), empty);
    let read = e.logs.read(t.clone(), 0, 1 << 20).await.unwrap();
    assert_eq!((read.batches.len(), read.watermarks), (0, empty));

    e.logs.append(t.clone(), batch(0, 3, |_| T)).await.unwrap();
    let three = Watermarks {
        log_start: 0,
        high: 3,
    };
    for offset in [3, 4, 100, -1] {
        let read = e.logs.read(t.clone(), offset, 1 << 20).await.unwrap();
        let got = records_read(&read);
        assert!(got.is_empty(), "read at {offset}: {got:?}");
        if offset >= 3 {
            assert_eq!(read.watermarks, three, "read at {offset}");
        }
    }
}

async fn compressed_batches_read_back_as_their_records(e: Engine) {
    create(&e, "compressed", 1).await;
    let mut expected = Vec::new();
    let codecs = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    for (i, codec) in codecs.into_iter().enumerate() {
        let records = (3 * i..3 * i + 3)
            .map(|n| record(n, T + n as i64))
            .collect();
        let b = batch_of(records, codec);
        let appended = e.logs.append(tp("compressed", 0), b.clone()).await.unwrap();
        assert_eq!(appended.base_offset, 3 * i as i64, "{codec:?}");
        expected.extend(seen_of(&b, appended.base_offset));
    }
    assert_eq!(read_all(&e, "compressed", 0).await, expected);
}

async fn log_append_time_batches_read_back_stamped(e: Engine) {
    create(&e, "appended-at", 1).await;
    let now = chrono::Utc::now().timestamp_millis();
    let mut b = batch(0, 3, |n| T + n as i64);
    b.bytes = records::stamp_log_append_time(b.bytes, &mut b.header, now);
    e.logs
        .append(tp("appended-at", 0), b.clone())
        .await
        .unwrap();
    let got = read_all(&e, "appended-at", 0).await;
    assert_eq!(got, seen_of(&b, 0));
    assert_eq!(got.len(), 3);
    for r in &got {
        assert_eq!(
            (r.1, r.2),
            (now, TimestampType::LogAppend),
            "offset {}",
            r.0
        );
    }
}

async fn partitions_are_logs_of_their_own(e: Engine) {
    create(&e, "parted", 3).await;
    for n in 0..2 {
        let a = e.logs.append(tp("parted", 0), batch(n, 1, |_| T)).await;
        assert_eq!(a.unwrap().base_offset, n as i64);
    }
    let b = batch(10, 1, |_| T);
    let a = e.logs.append(tp("parted", 2), b.clone()).await.unwrap();
    assert_eq!(a.base_offset, 0, "every partition counts from 0");
    for (p, high) in [(0, 2), (1, 0), (2, 1)] {
        let w = e.logs.watermarks(tp("parted", p)).await.unwrap();
        assert_eq!(w, Watermarks { log_start: 0, high }, "partition {p}");
    }
    let read = e.logs.read(tp("parted", 2), 0, 1 << 20).await.unwrap();
    let got: Vec<Seen> = records_read(&read).iter().map(seen).collect();
    assert_eq!(got, seen_of(&b, 0));
}

/// Checks `result` is refused as `expected` would be, naming the same topic: the
/// same Kafka error, UNKNOWN_TOPIC_OR_PARTITION. Iggy cannot always tell a missing
/// topic from a missing partition (it answers `ResourceNotFound` to a send or poll for
/// either), so the two variants are not told apart here.
fn refused<T: std::fmt::Debug>(result: StoreResult<T>, expected: &StoreError, what: &str) {
    let topic = |e: &StoreError| match e {
        StoreError::UnknownTopic(t) | StoreError::UnknownPartition { topic: t, .. } => {
            Some(t.clone())
        }
        _ => None,
    };
    match &result {
        Err(e) if e.code() == expected.code() && topic(e) == topic(expected) => {}
        _ => panic!("{what}: {result:?}, expected {expected:?}"),
    }
}

async fn unknown_topics_and_partitions_are_refused(e: Engine) {
    create(&e, "two", 2).await;
    let missing = StoreError::UnknownTopic("missing".into());
    let beyond = |partition| StoreError::UnknownPartition {
        topic: "two".into(),
        partition,
    };
    let cases = [
        (tp("missing", 0), missing),
        (tp("two", 2), beyond(2)),
        (tp("two", -1), beyond(-1)),
    ];
    for (at, expected) in cases {
        let l = &e.logs;
        refused(
            l.append(at.clone(), batch(0, 1, |_| T)).await,
            &expected,
            &format!("append to {at}"),
        );
        refused(
            l.read(at.clone(), 0, 1 << 20).await,
            &expected,
            &format!("read {at}"),
        );
        refused(
            l.watermarks(at.clone()).await,
            &expected,
            &format!("watermarks of {at}"),
        );
        let found = l.offset_for_timestamp(at.clone(), T).await;
        refused(found, &expected, &format!("offset for timestamp in {at}"));
        refused(
            l.max_timestamp(at.clone()).await,
            &expected,
            &format!("max timestamp of {at}"),
        );
        let history = l.producer_history(at.clone()).await;
        refused(history, &expected, &format!("producer history of {at}"));
    }
}

async fn offset_for_timestamp_is_the_first_record_reaching_it(e: Engine) {
    create(&e, "timed", 1).await;
    let t = tp("timed", 0);
    assert_eq!(
        e.logs.offset_for_timestamp(t.clone(), 0).await.unwrap(),
        None
    );
    // Offsets 0..6 at T + 10, 20, 30, 25, 50, 40: not in order across batches.
    let times = [[10, 20, 30].as_slice(), &[25, 50], &[40]];
    let mut first = 0;
    for ts in times {
        let b = batch(first, ts.len(), |n| T + ts[n - first]);
        e.logs.append(t.clone(), b).await.unwrap();
        first += ts.len();
    }
    let at = |offset, ts| {
        Some(TimestampedOffset {
            offset,
            timestamp: T + ts,
        })
    };
    let cases = [
        (0, at(0, 10)),
        (10, at(0, 10)),
        (15, at(1, 20)),
        (26, at(2, 30)),
        (30, at(2, 30)),
        (31, at(4, 50)),
        (45, at(4, 50)),
        (50, at(4, 50)),
        (51, None),
    ];
    for (target, expected) in cases {
        let found = e.logs.offset_for_timestamp(t.clone(), T + target).await;
        assert_eq!(
            found.unwrap(),
            expected,
            "first record at or after T + {target}"
        );
    }
}

async fn max_timestamp_is_the_first_record_holding_the_largest(e: Engine) {
    create(&e, "maxed", 1).await;
    let t = tp("maxed", 0);
    assert_eq!(e.logs.max_timestamp(t.clone()).await.unwrap(), None);
    // Offsets 0..5 at T + 10, 30 | 20, 30, 5: the largest twice.
    e.logs
        .append(t.clone(), batch(0, 2, |n| T + [10, 30][n]))
        .await
        .unwrap();
    e.logs
        .append(t.clone(), batch(2, 3, |n| T + [20, 30, 5][n - 2]))
        .await
        .unwrap();
    let max = e.logs.max_timestamp(t.clone()).await.unwrap();
    let expected = TimestampedOffset {
        offset: 1,
        timestamp: T + 30,
    };
    assert_eq!(max, Some(expected));
    e.logs
        .append(t.clone(), batch(5, 1, |_| T + 31))
        .await
        .unwrap();
    let max = e.logs.max_timestamp(t).await.unwrap();
    assert_eq!(max.map(|m| m.offset), Some(5), "a larger one later");
}

async fn producer_history_is_the_last_five_batches_of_each_producer(e: Engine) {
    create(&e, "producers", 1).await;
    let t = tp("producers", 0);
    assert_eq!(e.logs.producer_history(t.clone()).await.unwrap(), vec![]);
    let append = |b| e.logs.append(t.clone(), b);
    // Producer 7: six batches of two from sequence 0, the plain batch and producer 9
    // (whose sequence wraps) after its second.
    append(idempotent(7, 0, 0, 2)).await.unwrap();
    append(idempotent(7, 0, 2, 2)).await.unwrap();
    append(batch(0, 1, |_| T)).await.unwrap();
    append(idempotent(9, 3, i32::MAX - 1, 3)).await.unwrap();
    for sequence in [4, 6, 8, 10] {
        append(idempotent(7, 0, sequence, 2)).await.unwrap();
    }
    let seven = |first_sequence, base_offset| ProducerBatch {
        producer_id: 7,
        producer_epoch: 0,
        first_sequence,
        last_sequence: first_sequence + 1,
        base_offset,
        last_offset: base_offset + 1,
    };
    let nine = ProducerBatch {
        producer_id: 9,
        producer_epoch: 3,
        first_sequence: i32::MAX - 1,
        last_sequence: 0,
        base_offset: 5,
        last_offset: 7,
    };
    let expected = vec![
        seven(2, 2),
        nine,
        seven(4, 8),
        seven(6, 10),
        seven(8, 12),
        seven(10, 14),
    ];
    assert_eq!(e.logs.producer_history(t).await.unwrap(), expected);
}

async fn topics_are_created_listed_and_deleted(e: Engine) {
    let listed = |e: &Engine| {
        let logs = e.logs.clone();
        async move {
            let mut names: Vec<Arc<str>> = logs
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|l| l.name)
                .collect();
            names.sort();
            names
        }
    };
    assert!(!listed(&e).await.iter().any(|n| &**n == "listed"));
    let info = e
        .logs
        .create("listed".into(), 3, TopicLimits::default())
        .await
        .unwrap();
    assert_eq!((&*info.name, info.partitions), ("listed", 3));
    let all = e.logs.list().await.unwrap();
    assert!(all.contains(&info), "{all:?} lacks {info:?}");
    match e
        .logs
        .create("listed".into(), 1, TopicLimits::default())
        .await
    {
        Err(StoreError::TopicExists(name)) => assert_eq!(name, "listed"),
        other => panic!("created twice: {other:?}"),
    }
    create(&e, "kept", 1).await;
    e.logs.delete("listed".into()).await.unwrap();
    let names = listed(&e).await;
    assert!(names.iter().any(|n| &**n == "kept"), "{names:?}");
    assert!(!names.iter().any(|n| &**n == "listed"), "{names:?}");
    let gone = StoreError::UnknownTopic("listed".into());
    refused(e.logs.delete("listed".into()).await, &gone, "deleted twice");
    let append = e.logs.append(tp("listed", 0), batch(0, 1, |_| T)).await;
    refused(append, &gone, "append after delete");
}

async fn a_topic_made_again_is_a_new_incarnation_without_the_old_records(e: Engine) {
    let other = e.another().await;
    let old = e
        .logs
        .create("again".into(), 1, TopicLimits::default())
        .await
        .unwrap();
    let t = tp("again", 0);
    for n in 0..3 {
        e.logs.append(t.clone(), batch(n, 1, |_| T)).await.unwrap();
    }
    e.logs
        .append(t.clone(), idempotent(7, 0, 0, 1))
        .await
        .unwrap();
    // Another gateway reads the old records, a little at a time, before they go.
    if let Some(other) = &other {
        let read = other.logs.read(t.clone(), 0, 1).await.unwrap();
        assert_eq!(records_read(&read).len(), 1);
    }
    e.logs.delete("again".into()).await.unwrap();
    let new = e
        .logs
        .create("again".into(), 2, TopicLimits::default())
        .await
        .unwrap();
    assert!(
        new.incarnation > old.incarnation,
        "{new:?} made after {old:?}"
    );
    assert_eq!(new.partitions, 2);
    let b = batch(100, 2, |_| T + 1);
    let appended = e.logs.append(t.clone(), b.clone()).await.unwrap();
    assert_eq!(appended.base_offset, 0, "the new log starts afresh");
    // Once an engine lists the new incarnation, nothing of the old one is served
    // from it: not by the gateway that made it again, nor by the other one.
    let engines = std::iter::once(&e).chain(other.as_ref());
    for (n, engine) in engines.enumerate() {
        let l = &engine.logs;
        let listed = l.list().await.unwrap();
        assert!(listed.contains(&new), "engine {n}: {listed:?}");
        let w = l.watermarks(t.clone()).await.unwrap();
        assert_eq!(
            w,
            Watermarks {
                log_start: 0,
                high: 2
            },
            "engine {n}"
        );
        // Offset 1, where the other gateway would read on: the new record.
        let read = l.read(t.clone(), 1, 1).await.unwrap();
        let got: Vec<Seen> = records_read(&read).iter().map(seen).collect();
        let from_1: Vec<Seen> = got.into_iter().filter(|r| r.0 >= 1).collect();
        assert_eq!(from_1, seen_of(&b, 0)[1..], "engine {n}");
        assert_eq!(
            read_all(engine, "again", 0).await,
            seen_of(&b, 0),
            "engine {n}"
        );
        assert_eq!(
            l.producer_history(t.clone()).await.unwrap(),
            vec![],
            "engine {n}"
        );
        let max = l.max_timestamp(t.clone()).await.unwrap();
        assert_eq!(max.map(|m| m.offset), Some(0), "engine {n}");
    }
}

async fn limits_apply_to_existing_topics(e: Engine) {
    let limits = TopicLimits {
        retention_ms: Some(7 * 24 * 3_600_000),
        retention_bytes: Some(1 << 30),
        segment_bytes: Some(16 << 20),
    };
    e.logs.create("limited".into(), 2, limits).await.unwrap();
    let t = tp("limited", 0);
    let b = batch(0, 3, |n| T + n as i64);
    e.logs.append(t.clone(), b.clone()).await.unwrap();
    let tighter = TopicLimits {
        retention_ms: Some(24 * 3_600_000),
        retention_bytes: Some(64 << 20),
        segment_bytes: None,
    };
    for limits in [tighter, TopicLimits::default()] {
        e.logs.set_limits("limited".into(), limits).await.unwrap();
        // Well within them, nothing goes.
        assert_eq!(
            read_all(&e, "limited", 0).await,
            seen_of(&b, 0),
            "{limits:?}"
        );
        let w = e.logs.watermarks(t.clone()).await.unwrap();
        assert_eq!(
            w,
            Watermarks {
                log_start: 0,
                high: 3
            },
            "{limits:?}"
        );
    }
    let missing = e.logs.set_limits("missing".into(), tighter).await;
    refused(
        missing,
        &StoreError::UnknownTopic("missing".into()),
        "limits of no topic",
    );
}

async fn logs_survive_a_restart_of_the_engine(e: Engine) {
    create(&e, "lasting", 2).await;
    create(&e, "empty", 1).await;
    let t = tp("lasting", 1);
    let b = batch(0, 3, |n| T + n as i64);
    e.logs.append(t.clone(), b.clone()).await.unwrap();
    e.logs
        .append(t.clone(), idempotent(7, 1, 0, 2))
        .await
        .unwrap();
    let mut before = e.logs.list().await.unwrap();
    let history = e.logs.producer_history(t.clone()).await.unwrap();
    let read = e.logs.read(t.clone(), 0, 1 << 20).await.unwrap();
    let records: Vec<Seen> = records_read(&read).iter().map(seen).collect();

    let e = e.restart().await;
    let mut after = e.logs.list().await.unwrap();
    before.sort_by(|a, b| a.name.cmp(&b.name));
    after.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(after, before, "the same logs, the same incarnations");
    let read = e.logs.read(t.clone(), 0, 1 << 20).await.unwrap();
    let again: Vec<Seen> = records_read(&read).iter().map(seen).collect();
    assert_eq!(again, records);
    assert_eq!(
        read.watermarks,
        Watermarks {
            log_start: 0,
            high: 5
        }
    );
    assert_eq!(e.logs.producer_history(t.clone()).await.unwrap(), history);
    let next = e.logs.append(t, batch(5, 1, |_| T)).await.unwrap();
    assert_eq!(next.base_offset, 5);
}
