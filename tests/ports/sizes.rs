//! `LogCall::Sizes` and `LogStore::log_dir` on both engines: each partition's bytes,
//! by partition number, 0 for an empty one, growing with appends (on the embedded
//! store exactly the batches' bytes, as it keeps them); partitions added are counted;
//! the same after a restart and from another gateway's engine on a shared store; a
//! missing topic is refused. The log directory names where the engine keeps its logs.

use iggy_kafka_actors::store::{StoreError, TopicLimits};

use super::{batch, tp, Engine, Place};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    sizes_count_what_each_partition_keeps,
    the_log_dir_names_the_store,
);

const T: i64 = 1_700_000_000_000;

async fn sizes_count_what_each_partition_keeps(e: Engine) {
    let none = TopicLimits::default();
    e.logs.create("weighed".into(), 3, none).await.unwrap();
    assert_eq!(e.logs.sizes("weighed".into()).await.unwrap(), [0, 0, 0]);
    let (big, small) = (batch(0, 10, |_| T), batch(10, 2, |_| T));
    for _ in 0..2 {
        e.logs.append(tp("weighed", 0), big.clone()).await.unwrap();
    }
    e.logs
        .append(tp("weighed", 2), small.clone())
        .await
        .unwrap();
    let sizes = e.logs.sizes("weighed".into()).await.unwrap();
    assert_eq!(sizes.len(), 3, "{sizes:?}");
    assert!(
        sizes[0] > sizes[2] && sizes[2] > 0 && sizes[1] == 0,
        "{sizes:?}"
    );
    if e.promises.keeps_batches {
        let kept = [2 * big.bytes.len() as u64, 0, small.bytes.len() as u64];
        assert_eq!(sizes, kept, "the batches as appended");
    }

    e.logs
        .add_partitions("weighed".into(), 4, none)
        .await
        .unwrap();
    let grown = e.logs.sizes("weighed".into()).await.unwrap();
    assert_eq!(grown[..3], sizes[..], "the old partitions keep theirs");
    assert_eq!(grown.len(), 4);
    assert_eq!(grown[3], 0, "a new partition is empty");

    if let Some(other) = e.another().await {
        other.logs.list().await.unwrap();
        let there = other.logs.sizes("weighed".into()).await.unwrap();
        assert_eq!(there, grown, "another gateway on the store sees the same");
    }
    let e = e.restart().await;
    e.logs.list().await.unwrap();
    assert_eq!(e.logs.sizes("weighed".into()).await.unwrap(), grown);

    match e.logs.sizes("nowhere".into()).await {
        Err(StoreError::UnknownTopic(t)) => assert_eq!(t, "nowhere"),
        other => panic!("a missing topic: {other:?}"),
    }
}

async fn the_log_dir_names_the_store(e: Engine) {
    let expected = match &e.place {
        Place::Dir(dir) => dir.path().join("data").display().to_string(),
        Place::Iggy(server) => format!("iggy://{}", server.addr),
    };
    assert_eq!(e.logs.log_dir(), expected);
}
