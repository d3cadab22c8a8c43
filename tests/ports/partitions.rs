//! `LogCall::AddPartitions` on both engines: a topic's logs grow, the new partitions
//! empty logs of their own, the old ones keep their records; a count that is no
//! increase and a missing topic are refused; the growth survives a restart, and on a
//! shared store (Iggy) a second gateway's engine lists it.

use iggy_kafka_actors::store::{StoreError, TopicLimits, Watermarks};

use super::{batch, records_read, seen, seen_of, tp, Engine, Seen};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    partitions_are_added_after_the_last,
    no_increase_and_missing_topics_are_refused,
);

const T: i64 = 1_700_000_000_000;

async fn partitions_are_added_after_the_last(e: Engine) {
    let limits = TopicLimits {
        retention_bytes: Some(10 << 20),
        ..TopicLimits::default()
    };
    let made = e.logs.create("growing".into(), 1, limits).await.unwrap();
    let old = batch(0, 3, |_| T);
    e.logs.append(tp("growing", 0), old.clone()).await.unwrap();
    let before = e.logs.list().await.unwrap();

    e.logs
        .add_partitions("growing".into(), 3, limits)
        .await
        .unwrap();
    let listed = e.logs.list().await.unwrap();
    let info = listed.iter().find(|l| &*l.name == "growing").unwrap();
    assert_eq!(info.partitions, 3);
    assert_eq!(info.incarnation, made.incarnation, "the same topic still");
    assert_eq!(listed.len(), before.len(), "no log made or lost");
    for p in 1..3 {
        let w = e.logs.watermarks(tp("growing", p)).await.unwrap();
        assert_eq!(w, Watermarks::default(), "partition {p} starts empty");
    }
    let new = batch(10, 2, |_| T);
    let a = e.logs.append(tp("growing", 2), new.clone()).await.unwrap();
    assert_eq!(a.base_offset, 0, "a new partition counts from 0");
    let read = |p| e.logs.read(tp("growing", p), 0, 1 << 20);
    let got: Vec<Seen> = records_read(&read(2).await.unwrap())
        .iter()
        .map(seen)
        .collect();
    assert_eq!(got, seen_of(&new, 0));
    let kept: Vec<Seen> = records_read(&read(0).await.unwrap())
        .iter()
        .map(seen)
        .collect();
    assert_eq!(kept, seen_of(&old, 0), "partition 0 keeps its records");

    if let Some(other) = e.another().await {
        let seen_there = other.logs.list().await.unwrap();
        let there = seen_there.iter().find(|l| &*l.name == "growing").unwrap();
        assert_eq!(there.partitions, 3, "another gateway on the store sees it");
    }

    let e = e.restart().await;
    let listed = e.logs.list().await.unwrap();
    let info = listed.iter().find(|l| &*l.name == "growing").unwrap();
    assert_eq!((info.partitions, info.incarnation), (3, made.incarnation));
    let w = e.logs.watermarks(tp("growing", 2)).await.unwrap();
    assert_eq!(w.high, 2, "the new partition's records survive a restart");
    let next = e.logs.append(tp("growing", 1), batch(20, 1, |_| T)).await;
    assert_eq!(next.unwrap().base_offset, 0);
}

async fn no_increase_and_missing_topics_are_refused(e: Engine) {
    let none = TopicLimits::default();
    e.logs.create("fixed".into(), 2, none).await.unwrap();
    for asked in [2, 1] {
        match e.logs.add_partitions("fixed".into(), asked, none).await {
            Err(StoreError::HasPartitions { topic, partitions }) => {
                assert_eq!((&*topic, partitions), ("fixed", 2), "asked {asked}")
            }
            other => panic!("{asked} partitions: {other:?}"),
        }
    }
    let listed = e.logs.list().await.unwrap();
    let info = listed.iter().find(|l| &*l.name == "fixed").unwrap();
    assert_eq!(info.partitions, 2, "unchanged");
    match e.logs.add_partitions("nowhere".into(), 3, none).await {
        Err(StoreError::UnknownTopic(t)) => assert_eq!(t, "nowhere"),
        other => panic!("a missing topic: {other:?}"),
    }
}
