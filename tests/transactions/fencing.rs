//! A fenced producer is told it is fenced, with Kafka's codes, at every API it can
//! reach and at every version, in hand-built requests on both stores: a zombie whose
//! transactional id a newer InitProducerId took over gets INVALID_PRODUCER_EPOCH (47)
//! from Produce and TxnOffsetCommit (a partition answers, as Kafka's brokers turn the
//! coordinator's answer into it) and PRODUCER_FENCED (90) from the coordinator's APIs,
//! 47 to clients from before KIP-588 (AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
//! below v2, InitProducerId below v4); nothing it sends reaches its successor's
//! transaction. Under transactions v2 a producer's own EndTxn bumps its epoch without
//! fencing it: its next transaction goes on at the new epoch, and only a straggler of
//! the old one is refused. Real clients facing the same: `zombies.rs`.

use crate::support::kafka::{committed, create_topic};
use crate::support::transactions::*;
use crate::support::{on_every_store, Gateway, RawClient, Store};

use super::read;

on_every_store!(
    async: a_fenced_producer_is_told_so_at_every_api_and_version,
    a_producers_own_v2_end_bumps_its_epoch_without_fencing_it,
);

const TS: i64 = 1_700_000_000_000;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const PRODUCER_FENCED: i16 = 90;

/// What Kafka answers an old epoch at `version` of an API whose versions from
/// `first` know PRODUCER_FENCED.
fn fenced_code(version: i16, first: i16) -> i16 {
    match version >= first {
        true => PRODUCER_FENCED,
        false => INVALID_PRODUCER_EPOCH,
    }
}

async fn a_fenced_producer_is_told_so_at_every_api_and_version(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    const TOPIC: &str = "txn-fencing";
    const GROUP: &str = "txn-fencing-group";
    create_topic(&gw.bootstrap(), TOPIC, 2, &[]).await;
    let mut c = RawClient::connect(gw.addr);
    // The zombie-to-be: a transaction open on partition 0 and the group.
    let zombie = init(&mut c, "txn-fencing");
    assert_eq!(add(&mut c, &zombie, TOPIC, 0), 0);
    assert_eq!(produce(&mut c, &zombie, (TOPIC, 0), 0, 2, TS), 0);
    assert_eq!(add_offsets_as(&mut c, 3, &zombie, GROUP), 0);
    assert_eq!(
        commit_offset_as(&mut c, 3, &zombie, (GROUP, (TOPIC, 0)), 1),
        0
    );
    // A new incarnation: the open transaction is aborted, the epoch bumped past it.
    let successor = init(&mut c, "txn-fencing");
    assert_eq!(successor.pid, zombie.pid);
    assert!(
        successor.epoch > zombie.epoch,
        "{successor:?} after {zombie:?}"
    );

    // Partition 0 has the abort marker of the fencing; partition 1 never saw the
    // producer, so only its coordinator knows it is fenced.
    for version in 3..=13 {
        for partition in [0, 1] {
            let r = produce_as(&mut c, version, &zombie, (TOPIC, partition), (2, 1), TS);
            assert_eq!(
                r.error_code, INVALID_PRODUCER_EPOCH,
                "Produce v{version} to partition {partition}: {r:?}"
            );
        }
    }
    for version in 0..=3 {
        let code = add_as(&mut c, version, &zombie, TOPIC, 1);
        assert_eq!(
            code,
            fenced_code(version, 2),
            "AddPartitionsToTxn v{version}"
        );
    }
    for version in 4..=5 {
        for verify_only in [false, true] {
            let code = add_as_broker(&mut c, version, &zombie, (TOPIC, 1), verify_only);
            assert_eq!(
                code, PRODUCER_FENCED,
                "AddPartitionsToTxn v{version}, verify only {verify_only}"
            );
        }
    }
    for version in 0..=4 {
        let code = add_offsets_as(&mut c, version, &zombie, GROUP);
        assert_eq!(code, fenced_code(version, 2), "AddOffsetsToTxn v{version}");
    }
    for version in 0..=5 {
        let code = commit_offset_as(&mut c, version, &zombie, (GROUP, (TOPIC, 1)), 9);
        assert_eq!(code, INVALID_PRODUCER_EPOCH, "TxnOffsetCommit v{version}");
    }
    for version in 0..=5 {
        for commit in [true, false] {
            let r = end_as(&mut c, version, &zombie, commit);
            assert_eq!(
                r.error_code,
                fenced_code(version, 2),
                "EndTxn v{version}, commit {commit}: {r:?}"
            );
        }
    }
    for version in 3..=5 {
        let code = reinit_as(&mut c, version, &zombie);
        assert_eq!(code, fenced_code(version, 4), "InitProducerId v{version}");
    }

    // None of it touched the successor: its transaction commits its own records and
    // offsets only (the zombie's offset for partition 1 was never held for it).
    let described = &describe_transactions(&mut c, &[&successor.id])[0];
    assert_eq!(
        (
            described.transaction_state.as_str(),
            described.producer_epoch
        ),
        ("Empty", successor.epoch),
        "{described:?}"
    );
    assert_eq!(add(&mut c, &successor, TOPIC, 0), 0);
    produce(&mut c, &successor, (TOPIC, 0), 0, 1, TS);
    assert_eq!(add_offsets_as(&mut c, 3, &successor, GROUP), 0);
    let partition_0 = (GROUP, (TOPIC, 0));
    assert_eq!(commit_offset_as(&mut c, 3, &successor, partition_0, 5), 0);
    assert_eq!(end(&mut c, &successor, true), 0);
    assert_eq!(committed(&gw.bootstrap(), GROUP, TOPIC, 2), [5, -1]);
    let got = read(&gw.bootstrap(), TOPIC, 2, "read_committed", 1);
    let want = [format!("{}-0", successor.id)];
    assert_eq!(got.get(&0).map(Vec::as_slice), Some(&want[..]), "{got:?}");
    assert_eq!(got.get(&1), None, "{got:?}");
}

async fn a_producers_own_v2_end_bumps_its_epoch_without_fencing_it(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    const TOPIC: &str = "txn-own-bump";
    const GROUP: &str = "txn-own-bump-group";
    create_topic(&gw.bootstrap(), TOPIC, 2, &[]).await;
    let mut c = RawClient::connect(gw.addr);
    let first = init(&mut c, "txn-own-bump");
    let r = produce_as(&mut c, 12, &first, (TOPIC, 0), (0, 2), TS);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(commit_offset(&mut c, &first, (GROUP, TOPIC), 2), 0);
    let bumped = end_bumped(&mut c, &first, true);

    // Its next transaction, at the epoch its end gave it, on the partition it wrote
    // (whose commit marker carries the new epoch) and on one it never wrote.
    for partition in [0, 1] {
        let r = produce_as(&mut c, 12, &bumped, (TOPIC, partition), (0, 1), TS);
        assert_eq!(r.error_code, 0, "partition {partition}: {r:?}");
    }
    assert_eq!(commit_offset(&mut c, &bumped, (GROUP, TOPIC), 3), 0);
    // Stragglers of the epoch before the bump are refused as Kafka refuses them:
    // batches in either protocol's form, offsets, and an end, now that another
    // transaction is open.
    for (version, partition) in [(12, 0), (12, 1), (9, 0), (13, 1)] {
        let r = produce_as(&mut c, version, &first, (TOPIC, partition), (2, 1), TS);
        assert_eq!(
            r.error_code, INVALID_PRODUCER_EPOCH,
            "Produce v{version} to partition {partition}: {r:?}"
        );
    }
    assert_eq!(
        commit_offset(&mut c, &first, (GROUP, TOPIC), 9),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(end_as(&mut c, 5, &first, true).error_code, PRODUCER_FENCED);
    // The open transaction was not disturbed: it commits, and its end's retry (one
    // epoch behind the new bump) is answered again, not fenced (Kafka, which answers
    // before its markers are out, may first answer CONCURRENT_TRANSACTIONS).
    let last = end_bumped(&mut c, &bumped, true);
    let deadline = std::time::Instant::now() + CONCURRENT_LIMIT;
    let again = loop {
        let again = end_as(&mut c, 5, &bumped, true);
        if again.error_code != 51 || std::time::Instant::now() >= deadline {
            break again;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        (again.error_code, again.producer_epoch),
        (0, last.epoch),
        "{again:?}"
    );
    assert_eq!(committed(&gw.bootstrap(), GROUP, TOPIC, 1), [3]);
    let got = read(&gw.bootstrap(), TOPIC, 2, "read_committed", 4);
    let id = &first.id;
    assert_eq!(
        got.get(&0),
        Some(&vec![
            format!("{id}-0"),
            format!("{id}-1"),
            format!("{id}-0")
        ]),
        "{got:?}"
    );
    assert_eq!(got.get(&1), Some(&vec![format!("{id}-0")]), "{got:?}");
}
