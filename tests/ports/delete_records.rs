//! `LogCall::DeleteRecords` on both engines: the log start moves up to the offset
//! asked for (-1: the high watermark), reads below it find nothing and say so in the
//! watermarks, reads from it serve what is kept, lookups by time skip what is below;
//! an offset past the high watermark is
//! refused, one below the start changes nothing; appends go on above; the start
//! survives a restart, and on a shared store (Iggy) another gateway's engine honours it.

use iggy_kafka_actors::store::{Logs, StoreError, TimestampedOffset, TopicLimits, Watermarks};

use super::{batch, records_read, tp, Engine};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    the_log_start_moves_and_hides_what_is_below,
    out_of_range_and_missing_partitions_are_refused,
);

const T: i64 = 1_700_000_000_000;

/// Offsets of the records a read from `offset` serves, and its watermarks.
async fn read_from(logs: &Logs, topic: &str, offset: i64) -> (Vec<i64>, Watermarks) {
    let read = logs.read(tp(topic, 0), offset, 1 << 20).await.unwrap();
    let offsets = records_read(&read).iter().map(|r| r.offset).collect();
    (offsets, read.watermarks)
}

async fn the_log_start_moves_and_hides_what_is_below(e: Engine) {
    let none = TopicLimits::default();
    e.logs.create("trimmed".into(), 1, none).await.unwrap();
    for first in [0, 4, 8] {
        e.logs
            .append(tp("trimmed", 0), batch(first, 4, |_| T))
            .await
            .unwrap();
    }
    let at = |log_start| Watermarks {
        log_start,
        high: 12,
    };
    let w = e.logs.delete_records(tp("trimmed", 0), 6).await.unwrap();
    assert_eq!(w, at(6));
    assert_eq!(e.logs.watermarks(tp("trimmed", 0)).await.unwrap(), at(6));
    let (below, w) = read_from(&e.logs, "trimmed", 2).await;
    assert_eq!((below, w.log_start), (vec![], 6), "nothing below the start");
    let (kept, _) = read_from(&e.logs, "trimmed", 6).await;
    assert!(kept.contains(&6) && kept.contains(&11), "{kept:?}");
    assert!(
        kept.iter().all(|&o| o >= 4),
        "whole batches below are gone: {kept:?}"
    );

    let found = |r: Option<TimestampedOffset>| r.map(|t| t.offset);
    let by_time = e.logs.offset_for_timestamp(tp("trimmed", 0), T).await;
    assert_eq!(
        found(by_time.unwrap()),
        Some(6),
        "lookups by time skip what is hidden"
    );
    let max = e.logs.max_timestamp(tp("trimmed", 0)).await;
    assert_eq!(found(max.unwrap()), Some(6));

    let w = e.logs.delete_records(tp("trimmed", 0), 3).await.unwrap();
    assert_eq!(w, at(6), "below the start: no move back");

    if let Some(other) = e.another().await {
        other.logs.list().await.unwrap();
        assert_eq!(
            other.logs.watermarks(tp("trimmed", 0)).await.unwrap(),
            at(6),
            "another gateway on the store honours it"
        );
    }

    let e = e.restart().await;
    e.logs.list().await.unwrap();
    assert_eq!(
        e.logs.watermarks(tp("trimmed", 0)).await.unwrap(),
        at(6),
        "it survives a restart"
    );
    let w = e.logs.delete_records(tp("trimmed", 0), -1).await.unwrap();
    assert_eq!(w, at(12), "-1: the high watermark");
    let (none_left, w) = read_from(&e.logs, "trimmed", 12).await;
    assert_eq!((none_left, w), (vec![], at(12)));
    let a = e.logs.append(tp("trimmed", 0), batch(12, 2, |_| T)).await;
    assert_eq!(
        a.unwrap().base_offset,
        12,
        "appends go on where the log ended"
    );
    let (after, _) = read_from(&e.logs, "trimmed", 12).await;
    assert_eq!(after, vec![12, 13]);

    let e = e.restart().await;
    e.logs.list().await.unwrap();
    let w = e.logs.watermarks(tp("trimmed", 0)).await.unwrap();
    assert_eq!(
        w,
        Watermarks {
            log_start: 12,
            high: 14
        }
    );
}

async fn out_of_range_and_missing_partitions_are_refused(e: Engine) {
    let none = TopicLimits::default();
    e.logs.create("short".into(), 1, none).await.unwrap();
    e.logs
        .append(tp("short", 0), batch(0, 3, |_| T))
        .await
        .unwrap();
    for offset in [4, -2] {
        match e.logs.delete_records(tp("short", 0), offset).await {
            Err(StoreError::OffsetOutOfRange { high, .. }) => assert_eq!(high, 3, "{offset}"),
            other => panic!("offset {offset}: {other:?}"),
        }
    }
    let w = e.logs.watermarks(tp("short", 0)).await.unwrap();
    assert_eq!(
        w,
        Watermarks {
            log_start: 0,
            high: 3
        },
        "unchanged"
    );
    let w = e.logs.delete_records(tp("short", 0), 0).await.unwrap();
    assert_eq!(w.log_start, 0, "the start itself: no change");
    match e.logs.delete_records(tp("short", 1), 0).await {
        Err(StoreError::UnknownPartition { .. } | StoreError::UnknownTopic(_)) => {}
        other => panic!("a missing partition: {other:?}"),
    }
    match e.logs.delete_records(tp("nowhere", 0), 0).await {
        Err(StoreError::UnknownPartition { .. } | StoreError::UnknownTopic(_)) => {}
        other => panic!("a missing topic: {other:?}"),
    }
}
