//! DeleteRecords (21) on both stores, by hand-built requests at every served version:
//! the log start moves to the offset asked for and the answer's low watermark says
//! so; -1 means the high watermark; past it is OFFSET_OUT_OF_RANGE, below the start a
//! no-op answering the start; Fetch below it answers OFFSET_OUT_OF_RANGE and reports
//! it as `log_start_offset`, ListOffsets EARLIEST answers it; unknown partitions and
//! topics answer UNKNOWN_TOPIC_OR_PARTITION, each partition on its own; the internal
//! `__consumer_offsets` is an empty log. `clients` deletes through librdkafka, reads
//! what is kept and restarts the gateway.

mod clients;

use crate::support;

use support::configs::{create_with, UNKNOWN_TOPIC};
use support::records::{delete, fetch_from, list_offset, produce_n, OFFSET_OUT_OF_RANGE};
use support::versions::served;
use support::{Gateway, RawClient, Store};

support::on_every_store!(
    every_version_moves_the_log_start_as_kafka_does,
    each_partition_is_answered_on_its_own,
);

const DELETE_RECORDS: i16 = 21;
const EARLIEST: i64 = -2;
const LATEST: i64 = -1;

fn versions() -> std::ops::RangeInclusive<i16> {
    let api = served(DELETE_RECORDS).expect("DeleteRecords is served");
    api.min..=api.max
}

fn make(c: &mut RawClient, topic: &str, partitions: i32) {
    let made = create_with(c, 7, topic, partitions, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
}

fn every_version_moves_the_log_start_as_kafka_does(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions() {
        let t = format!("trim-v{v}");
        make(&mut c, &t, 1);
        for _ in 0..3 {
            produce_n(&mut c, &t, 0, 4);
        }
        assert_eq!(delete(&mut c, v, &t, &[(0, 6)]), [(0, 0, 6)], "v{v}");
        assert_eq!(list_offset(&mut c, &t, 0, EARLIEST), 6, "v{v}: EARLIEST");
        assert_eq!(list_offset(&mut c, &t, 0, LATEST), 12, "v{v}: LATEST");
        let (code, log_start, high, _) = fetch_from(&mut c, &t, 0, 2);
        assert_eq!(
            (code, log_start, high),
            (OFFSET_OUT_OF_RANGE, -1, -1),
            "v{v}: below"
        );
        let (code, log_start, high, _) = fetch_from(&mut c, &t, 0, 6);
        assert_eq!((code, log_start, high), (0, 6, 12), "v{v}");
        assert_eq!(
            read_all(&mut c, &t, 0),
            (6..12).collect::<Vec<_>>(),
            "v{v}: kept"
        );

        assert_eq!(
            delete(&mut c, v, &t, &[(0, 3)]),
            [(0, 0, 6)],
            "v{v}: no move back"
        );
        let past = delete(&mut c, v, &t, &[(0, 13)]);
        assert_eq!(
            past,
            [(0, OFFSET_OUT_OF_RANGE, -1)],
            "v{v}: past the high watermark"
        );
        let negative = delete(&mut c, v, &t, &[(0, -2)]);
        assert_eq!(negative, [(0, OFFSET_OUT_OF_RANGE, -1)], "v{v}");
        assert_eq!(list_offset(&mut c, &t, 0, EARLIEST), 6, "v{v}: unchanged");

        assert_eq!(delete(&mut c, v, &t, &[(0, -1)]), [(0, 0, 12)], "v{v}: -1");
        assert_eq!(list_offset(&mut c, &t, 0, EARLIEST), 12, "v{v}");
        assert_eq!(produce_n(&mut c, &t, 0, 2), 12, "v{v}: appends go on");
        let (code, log_start, high, offsets) = fetch_from(&mut c, &t, 0, 12);
        assert_eq!(
            (code, log_start, high, offsets),
            (0, 12, 14, vec![12, 13]),
            "v{v}"
        );

        let internal = delete(&mut c, v, "__consumer_offsets", &[(0, 0), (1, -1), (2, 1)]);
        assert_eq!(
            internal,
            [(0, 0, 0), (1, 0, 0), (2, OFFSET_OUT_OF_RANGE, -1)],
            "v{v}: an empty log"
        );
    }
}

/// Offsets of every record Fetch serves from the log start of `partition` on.
fn read_all(c: &mut RawClient, topic: &str, partition: i32) -> Vec<i64> {
    let mut next = list_offset(c, topic, partition, EARLIEST);
    let mut all = Vec::new();
    loop {
        let (code, _, high, offsets) = fetch_from(c, topic, partition, next);
        assert_eq!(code, 0, "fetch from {next}");
        all.extend(&offsets);
        match offsets.last() {
            Some(&last) if last + 1 < high => next = last + 1,
            _ => return all,
        }
    }
}

fn each_partition_is_answered_on_its_own(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    make(&mut c, "pair", 2);
    produce_n(&mut c, "pair", 0, 5);
    produce_n(&mut c, "pair", 1, 3);
    let answers = delete(&mut c, 2, "pair", &[(0, 2), (1, 9), (2, 0), (1, 3)]);
    assert_eq!(
        answers,
        [
            (0, 0, 2),
            (1, OFFSET_OUT_OF_RANGE, -1),
            (2, UNKNOWN_TOPIC, -1),
            (1, 0, 3)
        ]
    );
    assert_eq!(read_all(&mut c, "pair", 0), [2, 3, 4]);
    assert_eq!(read_all(&mut c, "pair", 1), Vec::<i64>::new());
    assert_eq!(
        delete(&mut c, 2, "nowhere", &[(0, 0)]),
        [(0, UNKNOWN_TOPIC, -1)]
    );
}
