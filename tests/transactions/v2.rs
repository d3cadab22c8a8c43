//! Transactions v2 (KIP-890) as Kafka 4 clients speak them, in raw requests on both
//! stores: `transaction.version` 2 finalized in ApiVersions, a Produce v12 batch
//! adding its partition with no AddPartitionsToTxn, TxnOffsetCommit v5 adding the
//! group with no AddOffsetsToTxn, and EndTxn v5 bumping the epoch at every end: its
//! retry answered again, the old epoch fenced for data, an abort with nothing open a
//! decision of its own. A read-committed consumer then sees exactly the committed
//! records. Several gateways on one Iggy: `cluster.rs`.

use kafka_protocol::messages::*;

use super::read;
use crate::support::configs::s;
use crate::support::kafka::{committed, create_topic};
use crate::support::transactions::*;
use crate::support::{call, on_every_store, Gateway, RawClient, Store};

on_every_store!(async: transactions_v2_add_where_batches_arrive_and_bump_every_end);

const TOPIC: &str = "txn-v2";
const GROUP: &str = "txn-v2-group";
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const TS: i64 = 1_700_000_000_000;

async fn transactions_v2_add_where_batches_arrive_and_bump_every_end(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let versions = call!(
        c,
        ApiVersions,
        3,
        ApiVersionsRequest::default()
            .with_client_software_name(s("v2-test"))
            .with_client_software_version(s("1"))
    );
    let named = |name: &str| name == "transaction.version";
    let supported = (versions.supported_features.iter()).find(|f| named(f.name.as_str()));
    assert_eq!(
        supported.map(|f| (f.min_version, f.max_version)),
        Some((0, 2))
    );
    let finalized = (versions.finalized_features.iter()).find(|f| named(f.name.as_str()));
    let level = finalized.map(|f| f.max_version_level);
    assert_eq!(level, Some(2), "{versions:?}");
    assert!(
        versions.finalized_features_epoch >= 0,
        "Kafka 4 clients read no epoch -1"
    );

    create_topic(&gw.bootstrap(), TOPIC, 2, &[]).await;
    let p = init(&mut c, "txn-v2-producer");
    // No AddPartitionsToTxn: the batches add their partitions, and the offsets their group.
    for (partition, n) in [(0, 3), (1, 2)] {
        let answer = produce_as(&mut c, 12, &p, (TOPIC, partition), (0, n), TS);
        assert_eq!(answer.error_code, 0, "{answer:?}");
    }
    assert_eq!(commit_offset(&mut c, &p, (GROUP, TOPIC), 3), 0);
    let described = &describe_transactions(&mut c, &[&p.id])[0];
    assert_eq!(described.transaction_state.as_str(), "Ongoing");
    assert_eq!(described.topics[0].partitions.len(), 2, "{described:?}");

    let next = end_bumped(&mut c, &p, true);
    // The retry of that commit carries the old epoch and is answered again.
    let again = end_as(&mut c, 5, &p, true);
    assert_eq!(
        (again.error_code, again.producer_epoch),
        (0, next.epoch),
        "{again:?}"
    );
    assert_eq!(
        committed(&gw.bootstrap(), GROUP, TOPIC, 1),
        [3],
        "the offsets came with the commit"
    );
    // The old epoch is fenced for data now, and a commit of nothing is refused.
    let zombie = produce_as(&mut c, 12, &p, (TOPIC, 0), (3, 1), TS);
    assert_eq!(zombie.error_code, INVALID_PRODUCER_EPOCH, "{zombie:?}");
    assert_eq!(end_as(&mut c, 5, &next, true).error_code, INVALID_TXN_STATE);

    // The next transaction starts its sequences again at the new epoch; aborted.
    let answer = produce_as(&mut c, 12, &next, (TOPIC, 0), (0, 2), TS);
    assert_eq!(answer.error_code, 0, "{answer:?}");
    let after_abort = end_bumped(&mut c, &next, false);
    // v2: an abort with nothing open is a decision too, with its own bump.
    let last = end_bumped(&mut c, &after_abort, false);
    assert_eq!(last.epoch, p.epoch + 3);

    let bootstrap = gw.bootstrap();
    let got = read(&bootstrap, TOPIC, 2, "read_committed", 5);
    let id = &p.id;
    let want = |n: i32| (0..n).map(|i| format!("{id}-{i}")).collect::<Vec<_>>();
    assert_eq!(got.get(&0), Some(&want(3)), "{got:?}");
    assert_eq!(got.get(&1), Some(&want(2)), "{got:?}");
    let everything = read(&bootstrap, TOPIC, 2, "read_uncommitted", 7);
    assert_eq!(everything.get(&0).map(Vec::len), Some(5), "{everything:?}");
}
