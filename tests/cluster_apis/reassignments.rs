//! ListPartitionReassignments (46) and AlterPartitionReassignments (45) at every served
//! version: nothing is ever being reassigned, so the list is empty (unknown partitions
//! left out, as Kafka does); a target is refused with INVALID_REPLICA_ASSIGNMENT (39)
//! saying why, a cancel answers NO_REASSIGNMENT_IN_PROGRESS (85), a missing partition
//! UNKNOWN_TOPIC_OR_PARTITION (3).

use crate::support;

use support::acls::UNKNOWN_TOPIC_OR_PARTITION;
use support::configs::create_with;
use support::partitions::{count, reassign, reassignments, INVALID_REPLICA_ASSIGNMENT};
use support::versions::served;
use support::{Gateway, RawClient, Store};

support::on_every_store!(nothing_is_ever_reassigned);

const ALTER_PARTITION_REASSIGNMENTS: i16 = 45;
const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;

fn nothing_is_ever_reassigned(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let made = create_with(&mut c, 7, "placed", 2, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
    assert_eq!(reassignments(&mut c, None), (0, vec![]));
    let asked: &[(&str, &[i32])] = &[("placed", &[0, 1, 7]), ("nowhere", &[0])];
    assert_eq!(reassignments(&mut c, Some(asked)), (0, vec![]));

    let api = served(ALTER_PARTITION_REASSIGNMENTS).expect("served");
    let why = "the backend keeps each partition's data; replicas are not placed by this gateway";
    for v in api.min..=api.max {
        let asked = [
            ("placed", 0, Some(&[0, 1][..])),
            ("placed", 1, None),
            ("placed", 2, Some(&[0][..])),
            ("nowhere", 0, None),
        ];
        let (code, answers) = reassign(&mut c, v, &asked);
        let codes: Vec<_> = answers.iter().map(|a| (a.1, a.2)).collect();
        assert_eq!(
            (code, codes),
            (
                0,
                vec![
                    (0, INVALID_REPLICA_ASSIGNMENT),
                    (1, NO_REASSIGNMENT_IN_PROGRESS),
                    (2, UNKNOWN_TOPIC_OR_PARTITION),
                    (0, UNKNOWN_TOPIC_OR_PARTITION),
                ]
            ),
            "v{v}: {answers:?}"
        );
        assert_eq!(answers[0].3.as_deref(), Some(why), "v{v}");
        assert_eq!(reassignments(&mut c, None), (0, vec![]), "v{v}");
    }
    assert_eq!(count(&mut c, "placed"), Some(2));
}
