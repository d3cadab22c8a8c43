//! CreatePartitions (37) on both stores, by hand-built requests at every served
//! version: a topic grows and Metadata lists the new count; a count that is no
//! increase, a missing topic, a bad name, a topic named twice, a malformed replica
//! assignment and the internal topic answer Kafka's codes and messages, each topic on
//! its own; validate_only checks all that and changes nothing. `clients` grows topics
//! through librdkafka and checks producers, consumers, groups and a restart.

mod clients;

use crate::support;

use support::configs::{create_with, INVALID_REQUEST, INVALID_TOPIC, UNKNOWN_TOPIC};
use support::partitions::{count, grow, Grown, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT};
use support::versions::served;
use support::{Gateway, RawClient, Store};

support::on_every_store!(
    every_version_grows_topics_and_refuses_as_kafka_does,
    validate_only_checks_everything_and_changes_nothing,
    each_topic_of_a_request_is_answered_on_its_own,
);

const CREATE_PARTITIONS: i16 = 37;

fn ok(topic: &str) -> Grown {
    (topic.to_string(), 0, None)
}

fn refused(topic: &str, code: i16, message: &str) -> Grown {
    (topic.to_string(), code, Some(message.to_string()))
}

fn versions() -> std::ops::RangeInclusive<i16> {
    let api = served(CREATE_PARTITIONS).expect("CreatePartitions is served");
    api.min..=api.max
}

fn make(c: &mut RawClient, topic: &str, partitions: i32) {
    let made = create_with(c, 7, topic, partitions, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
}

fn every_version_grows_topics_and_refuses_as_kafka_does(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions() {
        let t = format!("grow-v{v}");
        make(&mut c, &t, 1);
        assert_eq!(grow(&mut c, v, &[(&t, 3, None)], false), [ok(&t)], "v{v}");
        assert_eq!(
            count(&mut c, &t),
            Some(3),
            "v{v}: Metadata lists the growth"
        );

        let equal = refused(&t, INVALID_PARTITIONS, "Topic already has 3 partition(s).");
        assert_eq!(grow(&mut c, v, &[(&t, 3, None)], false), [equal], "v{v}");
        let shrink =
            format!("The topic {t} currently has 3 partition(s); 2 would not be an increase.");
        let shrink = refused(&t, INVALID_PARTITIONS, &shrink);
        assert_eq!(grow(&mut c, v, &[(&t, 2, None)], false), [shrink], "v{v}");

        let missing = refused("nowhere", UNKNOWN_TOPIC, "topic 'nowhere' does not exist");
        assert_eq!(grow(&mut c, v, &[("nowhere", 4, None)], false), [missing]);
        let bad = grow(&mut c, v, &[("bad name", 4, None)], false);
        assert_eq!(
            (bad[0].0.as_str(), bad[0].1),
            ("bad name", INVALID_TOPIC),
            "v{v}"
        );

        let twice = refused(&t, INVALID_REQUEST, "Duplicate topic name.");
        let asked = [(t.as_str(), 4, None), (t.as_str(), 5, None)];
        assert_eq!(grow(&mut c, v, &asked, false), [twice], "v{v}: one answer");
        assert_eq!(
            count(&mut c, &t),
            Some(3),
            "v{v}: a duplicate changes nothing"
        );

        // Replica assignments: one per new partition, else Kafka's refusal; followed or
        // not, the backend keeps one copy, so a well-formed one is accepted as it is.
        let malformed = refused(
            &t,
            INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        );
        assert_eq!(grow(&mut c, v, &[(&t, 5, Some(1))], false), [malformed]);
        let empty = grow(&mut c, v, &[(&t, 5, Some(0))], false);
        assert_eq!(
            empty[0].1, INVALID_REPLICA_ASSIGNMENT,
            "v{v}: an empty list"
        );
        assert_eq!(count(&mut c, &t), Some(3));
        assert_eq!(grow(&mut c, v, &[(&t, 5, Some(2))], false), [ok(&t)]);
        assert_eq!(count(&mut c, &t), Some(5), "v{v}");

        let internal = grow(&mut c, v, &[("__consumer_offsets", 60, None)], false);
        let (name, code, message) = &internal[0];
        assert_eq!(
            (name.as_str(), *code),
            ("__consumer_offsets", INVALID_REQUEST)
        );
        assert!(
            message.as_deref().unwrap().contains("internal"),
            "{message:?}"
        );
        assert_eq!(count(&mut c, "__consumer_offsets"), Some(50));
    }
}

fn validate_only_checks_everything_and_changes_nothing(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    make(&mut c, "checked", 2);
    for v in versions() {
        assert_eq!(
            grow(&mut c, v, &[("checked", 6, None)], true),
            [ok("checked")]
        );
        assert_eq!(count(&mut c, "checked"), Some(2), "v{v}: unchanged");
        let shrink = grow(&mut c, v, &[("checked", 1, None)], true);
        assert_eq!(shrink[0].1, INVALID_PARTITIONS, "v{v}");
        let malformed = grow(&mut c, v, &[("checked", 6, Some(3))], true);
        assert_eq!(malformed[0].1, INVALID_REPLICA_ASSIGNMENT, "v{v}");
        let missing = grow(&mut c, v, &[("nowhere", 6, None)], true);
        assert_eq!(missing[0].1, UNKNOWN_TOPIC, "v{v}");
        let over = grow(&mut c, v, &[("checked", 100_001, None)], true);
        assert_eq!(
            over[0].1, INVALID_PARTITIONS,
            "v{v}: over the gateway's cap"
        );
    }
    // Then for real, so the checks passed above were the ones that let it through.
    assert_eq!(
        grow(&mut c, 3, &[("checked", 6, None)], false),
        [ok("checked")]
    );
    assert_eq!(count(&mut c, "checked"), Some(6));
}

fn each_topic_of_a_request_is_answered_on_its_own(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    make(&mut c, "first", 1);
    make(&mut c, "second", 2);
    let asked = [
        ("first", 2, None),
        ("nowhere", 2, None),
        ("second", 2, None),
        ("first", 3, None),
    ];
    let answers = grow(&mut c, 3, &asked, false);
    let codes: Vec<(&str, i16)> = answers
        .iter()
        .map(|(n, code, _)| (n.as_str(), *code))
        .collect();
    assert_eq!(
        codes,
        [
            ("first", INVALID_REQUEST),
            ("nowhere", UNKNOWN_TOPIC),
            ("second", INVALID_PARTITIONS),
        ],
        "one answer a name, in the order first named"
    );
    assert_eq!(count(&mut c, "first"), Some(1));
    let asked = [("first", 4, None), ("second", 3, None)];
    assert_eq!(grow(&mut c, 3, &asked, false), [ok("first"), ok("second")]);
    assert_eq!(
        (count(&mut c, "first"), count(&mut c, "second")),
        (Some(4), Some(3))
    );
}
