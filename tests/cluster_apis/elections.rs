//! ElectLeaders (43) at every served version: no election is ever needed here, so
//! each partition named answers ELECTION_NOT_NEEDED (84), a missing topic or partition
//! UNKNOWN_TOPIC_OR_PARTITION (3) with Kafka's controller's messages; every partition
//! (a null list) answers an empty list; an unknown election type INVALID_REQUEST.

use crate::support;

use support::acls::UNKNOWN_TOPIC_OR_PARTITION;
use support::configs::{create_with, INVALID_REQUEST};
use support::partitions::{elect, Elected};
use support::versions::served;
use support::{Gateway, RawClient, Store};

support::on_every_store!(every_version_answers_no_election_needed);

const ELECT_LEADERS: i16 = 43;
const ELECTION_NOT_NEEDED: i16 = 84;

fn answer(topic: &str, partition: i32, code: i16, message: &str) -> Elected {
    (
        topic.to_string(),
        partition,
        code,
        Some(message.to_string()),
    )
}

fn every_version_answers_no_election_needed(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let made = create_with(&mut c, 7, "elected", 2, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
    let not_needed = "Leader election not needed for topic partition.";
    let api = served(ELECT_LEADERS).expect("ElectLeaders is served");
    for v in api.min..=api.max {
        // v0 carries no election type (preferred); later versions preferred and unclean.
        let types: &[i8] = if v == 0 { &[0] } else { &[0, 1] };
        for &election_type in types {
            let asked: &[(&str, &[i32])] = &[("elected", &[0, 1, 2]), ("nowhere", &[0])];
            let (code, answers) = elect(&mut c, v, election_type, Some(asked));
            assert_eq!(code, 0, "v{v}");
            assert_eq!(
                answers,
                [
                    answer("elected", 0, ELECTION_NOT_NEEDED, not_needed),
                    answer("elected", 1, ELECTION_NOT_NEEDED, not_needed),
                    answer(
                        "elected",
                        2,
                        UNKNOWN_TOPIC_OR_PARTITION,
                        "No such partition as elected-2"
                    ),
                    answer(
                        "nowhere",
                        0,
                        UNKNOWN_TOPIC_OR_PARTITION,
                        "No such topic as nowhere"
                    ),
                ],
                "v{v} type {election_type}"
            );
            // Every partition: only those an election was needed for, none.
            assert_eq!(elect(&mut c, v, election_type, None), (0, vec![]), "v{v}");
        }
        if v >= 1 {
            let (code, answers) = elect(&mut c, v, 2, Some(&[("elected", &[0])]));
            let refused = answer("elected", 0, INVALID_REQUEST, "Invalid election type 2");
            assert_eq!((code, answers), (INVALID_REQUEST, vec![refused]), "v{v}");
        }
    }
}
