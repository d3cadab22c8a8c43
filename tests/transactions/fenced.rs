//! A producer an abort marker of a newer epoch fenced (as its coordinator writes one
//! when a new incarnation starts or the transaction times out) is refused
//! INVALID_PRODUCER_EPOCH 47, as Kafka refuses it, and still after a SIGKILL: the
//! producer history a restart reads holds the marker. Readers wait for none of its
//! records. The log shape a second gateway can leave, a straggler appended after that
//! marker, is `cluster.rs`'s.

use crate::support::kafka::{create_topic, produce, Expected};
use crate::support::transactions::write_markers;
use crate::support::transactions::{add, init, latest, produce as produce_txn, produce_as};
use crate::support::{on_every_store, Gateway, RawClient, Store};

use super::read;

on_every_store!(async: a_producer_a_marker_fenced_stays_fenced_after_a_restart);

const TOPIC: &str = "txn-fenced";
const TS: i64 = 1_700_000_000_000;

async fn a_producer_a_marker_fenced_stays_fenced_after_a_restart(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    create_topic(&gw.bootstrap(), TOPIC, 1, &[]).await;
    let mut c = RawClient::connect(gw.addr);
    let p = init(&mut c, "fenced");
    assert_eq!(add(&mut c, &p, TOPIC, 0), 0);
    assert_eq!(produce_txn(&mut c, &p, (TOPIC, 0), 0, 2, TS), 0);
    // An abort of the next epoch, as a coordinator fencing this producer writes it.
    let written = write_markers(&mut c, &[(p.pid, p.epoch + 1, false, &[(TOPIC, &[0])])]);
    assert_eq!(written, [[(TOPIC.to_string(), 0, 0)]]);
    let straggler = produce_as(&mut c, 9, &p, (TOPIC, 0), (2, 1), TS);
    assert_eq!(straggler.error_code, 47, "{straggler:?}");

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let straggler = produce_as(&mut c, 9, &p, (TOPIC, 0), (2, 1), TS);
    assert_eq!(straggler.error_code, 47, "after the restart: {straggler:?}");
    let plain = Expected {
        key: None,
        value: Some(b"after".to_vec()),
        headers: Vec::new(),
        timestamp: TS,
    };
    produce(&gw.bootstrap(), TOPIC, "none", &[(0, plain)]);

    let high = latest(&mut c, TOPIC, 0, 0);
    assert_eq!(latest(&mut c, TOPIC, 0, 1), high, "the last stable offset");
    let got = read(&gw.bootstrap(), TOPIC, 1, "read_committed", 1);
    assert_eq!(
        got.get(&0).map(Vec::as_slice),
        Some(&["after".to_string()][..])
    );
    let all = read(&gw.bootstrap(), TOPIC, 1, "read_uncommitted", 3);
    assert_eq!(all.get(&0).map_or(0, Vec::len), 3, "{all:?}");
}
