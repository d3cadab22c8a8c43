//! A gateway SIGKILLed under transactions: a transaction whose commit was answered is
//! read in full after the restart; one left open is aborted by the restarted
//! coordinator once its timeout passes, never half read; and a consume-transform-
//! produce loop killed mid-transaction carries on with no record lost or doubled.

use std::time::Duration;

use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};

use super::{group_metadata, read, send, txn_producer, values};
use crate::support::kafka::{committed, create_topic, produce, Expected};
use crate::support::{on_every_store, Gateway, Store};

on_every_store!(
    async: answered_commits_survive_and_open_transactions_are_aborted,
    a_transform_loop_killed_mid_transaction_loses_and_doubles_nothing,
);

async fn answered_commits_survive_and_open_transactions_are_aborted(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, "txn-kill", 2, &[]).await;
    let done = txn_producer(&bootstrap, "txn-kill-done", 60_000);
    done.begin_transaction().unwrap();
    send(&done, "txn-kill", 2, &values("done-", 50));
    done.commit_transaction(Duration::from_secs(30)).unwrap();
    let open = txn_producer(&bootstrap, "txn-kill-open", 3_000);
    open.begin_transaction().unwrap();
    send(&open, "txn-kill", 2, &values("open-", 20));
    drop((done, open));
    gw.restart_after_kill();

    let bootstrap = gw.bootstrap();
    let got = read(&bootstrap, "txn-kill", 2, "read_committed", 50);
    let n: usize = got.values().map(Vec::len).sum();
    assert_eq!(
        n, 50,
        "the answered commit in full, nothing of the open one: {got:?}"
    );
    // Once the open transaction's timeout passed, the restarted coordinator aborted it:
    // what follows it becomes readable.
    std::thread::sleep(Duration::from_secs(4));
    let after = txn_producer(&bootstrap, "txn-kill-after", 60_000);
    after.begin_transaction().unwrap();
    send(&after, "txn-kill", 2, &values("after-", 4));
    after.commit_transaction(Duration::from_secs(30)).unwrap();
    let got = read(&bootstrap, "txn-kill", 2, "read_committed", 54);
    let all: Vec<&String> = got.values().flatten().collect();
    assert_eq!(all.len(), 54, "{got:?}");
    assert!(all.iter().all(|v| !v.starts_with("open-")), "{got:?}");
}

const INPUT: usize = 400;
const CHUNK: usize = 40;

async fn a_transform_loop_killed_mid_transaction_loses_and_doubles_nothing(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, "ctp-in", 1, &[]).await;
    create_topic(&bootstrap, "ctp-out", 1, &[]).await;
    let input: Vec<(i32, Expected)> = (0..INPUT)
        .map(|i| {
            let e = Expected {
                key: None,
                value: Some(format!("{i}").into_bytes()),
                headers: Vec::new(),
                timestamp: 1_700_000_000_000,
            };
            (0, e)
        })
        .collect();
    produce(&bootstrap, "ctp-in", "none", &input);
    let group = group_metadata(&bootstrap, "ctp-group");
    let mut killed = false;
    loop {
        let bootstrap = gw.bootstrap();
        let at = committed(&bootstrap, "ctp-group", "ctp-in", 1)[0].max(0) as usize;
        if at >= INPUT {
            break;
        }
        let producer = txn_producer(&bootstrap, "ctp-producer", 60_000);
        let chunk: Vec<String> = (at..(at + CHUNK).min(INPUT))
            .map(|i| format!("out-{i}"))
            .collect();
        producer.begin_transaction().unwrap();
        send(&producer, "ctp-out", 1, &chunk);
        if !killed && at >= INPUT / 2 {
            // Killed with the transaction's records written and its end not asked.
            killed = true;
            drop(producer);
            gw.restart_after_kill();
            continue;
        }
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset("ctp-in", 0, Offset::Offset((at + chunk.len()) as i64))
            .unwrap();
        producer
            .send_offsets_to_transaction(&offsets, &group, Duration::from_secs(30))
            .unwrap();
        producer
            .commit_transaction(Duration::from_secs(30))
            .unwrap();
    }
    assert!(killed);
    let got = read(&gw.bootstrap(), "ctp-out", 1, "read_committed", INPUT);
    let want: Vec<String> = (0..INPUT).map(|i| format!("out-{i}")).collect();
    assert_eq!(got.get(&0), Some(&want), "each input once, in order");
}
