//! OffsetForLeaderEpoch (23) at every served version: epoch 0, every partition's only
//! one, ends at the high watermark; an epoch after it, or none, has no end (-1, -1,
//! no error, as Kafka answers); a current leader epoch newer than 0 answers
//! UNKNOWN_LEADER_EPOCH (75), an older one FENCED_LEADER_EPOCH (74); unknown topics and
//! partitions UNKNOWN_TOPIC_OR_PARTITION (3), each partition on its own.

use crate::support;

use support::acls::{produce_code, UNKNOWN_TOPIC_OR_PARTITION};
use support::configs::create_with;
use support::partitions::ends;
use support::versions::served;
use support::{Gateway, RawClient, Store};

support::on_every_store!(every_version_ends_epoch_zero_at_the_high_watermark);

const OFFSET_FOR_LEADER_EPOCH: i16 = 23;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

fn every_version_ends_epoch_zero_at_the_high_watermark(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let made = create_with(&mut c, 7, "epochs", 2, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
    for _ in 0..3 {
        assert_eq!(produce_code(&mut c, "epochs"), 0);
    }
    let api = served(OFFSET_FOR_LEADER_EPOCH).expect("OffsetForLeaderEpoch is served");
    let at = |partition, code, epoch, end| ("epochs".to_string(), partition, code, epoch, end);
    for v in api.min..=api.max {
        let asked = [
            ("epochs", 0, -1, 0),
            ("epochs", 1, 0, 0),
            ("epochs", 0, 0, 1),
            ("epochs", 0, 0, -1),
            ("epochs", 0, 1, 0),
            ("epochs", 0, -2, 0),
            ("epochs", 2, 0, 0),
            ("nowhere", 0, 0, 0),
        ];
        let unknown = |topic: &str, p| (topic.to_string(), p, UNKNOWN_TOPIC_OR_PARTITION, -1, -1);
        assert_eq!(
            ends(&mut c, v, &asked),
            [
                at(0, 0, 0, 3),
                at(1, 0, 0, 0),
                at(0, 0, -1, -1),
                at(0, 0, -1, -1),
                at(0, UNKNOWN_LEADER_EPOCH, -1, -1),
                at(0, FENCED_LEADER_EPOCH, -1, -1),
                unknown("epochs", 2),
                unknown("nowhere", 0),
            ],
            "v{v}"
        );
    }
    // The end moves with the high watermark.
    assert_eq!(produce_code(&mut c, "epochs"), 0);
    assert_eq!(
        ends(&mut c, api.max, &[("epochs", 0, 0, 0)]),
        [at(0, 0, 0, 4)]
    );
}
