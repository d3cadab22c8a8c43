//! A transactional batch of an epoch that a marker already ended, as a gateway that
//! checked the transaction just before another gateway's coordinator aborted it can
//! append one. A broker that knows the marker refuses the batch (INVALID_PRODUCER_EPOCH
//! 47); one whose producer state forgot it (after a restart its history holds data
//! batches only) appends it, and then read-committed readers neither wait at it nor
//! get it, since no marker will ever decide it (`txn_index.rs`).

use crate::support::kafka::{create_topic, produce, Expected};
use crate::support::transactions::write_markers;
use crate::support::transactions::{add, init, latest, produce as produce_txn, produce_as};
use crate::support::{on_every_store, Gateway, RawClient, Store};

use super::read;

on_every_store!(async: a_batch_of_an_ended_epoch_holds_back_no_reader);

const TOPIC: &str = "txn-fenced";
const TS: i64 = 1_700_000_000_000;

async fn a_batch_of_an_ended_epoch_holds_back_no_reader(store: Store) {
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
    // Refused or appended: either way no reader may wait at it or see it.
    let straggler = produce_as(&mut c, 9, &p, (TOPIC, 0), (2, 1), TS);
    assert!([0, 47].contains(&straggler.error_code), "{straggler:?}");
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
    let n = all.get(&0).map_or(0, Vec::len);
    assert_eq!(n, if straggler.error_code == 0 { 4 } else { 3 }, "{all:?}");
}
