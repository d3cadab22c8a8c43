//! `transactional.id.expiration.ms`, the `transactional_id_expiration_ms` setting: a
//! transactional id with nothing open is forgotten that long after its last change, at
//! the coordinator's next rescan of its ids (every 10 s); one with a transaction open
//! is kept.

use std::time::{Duration, Instant};

use crate::support::configs::create;
use crate::support::transactions::*;
use crate::support::{on_every_store, Gateway, RawClient, Store};

on_every_store!(an_idle_transactional_id_is_forgotten_after_the_setting);

const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

fn an_idle_transactional_id_is_forgotten_after_the_setting(store: Store) {
    let settings = [("transactional_id_expiration_ms", "1000")];
    let Some(gw) = Gateway::start_on(store, &settings) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "txn-expiring", &[], false).error_code, 0);
    init(&mut c, "idle");
    let open = init(&mut c, "open");
    assert_eq!(add(&mut c, &open, "txn-expiring", 0), 0);
    let codes = |c: &mut RawClient| -> Vec<i16> {
        let states = describe_transactions(c, &["idle", "open"]);
        states.iter().map(|s| s.error_code).collect()
    };
    assert_eq!(codes(&mut c), [0, 0]);
    // Past the setting and a rescan; never near the 7 days of Kafka's default.
    let deadline = Instant::now() + Duration::from_secs(30);
    while codes(&mut c)[0] != TRANSACTIONAL_ID_NOT_FOUND {
        assert!(Instant::now() < deadline, "'idle' never expired");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        codes(&mut c),
        [TRANSACTIONAL_ID_NOT_FOUND, 0],
        "the open one kept"
    );
}
