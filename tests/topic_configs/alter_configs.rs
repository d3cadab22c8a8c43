//! AlterConfigs and IncrementalAlterConfigs on topics at every version, and what Produce enforces.

use crate::support;

use kafka_protocol::messages::ApiKey;
use support::configs::*;
use support::{call, Gateway, RawClient, Store};

use super::{owned_value, value};

/// AlterConfigs replaces a topic's whole set at every version (what is not given goes
/// back to its default); validate_only changes nothing; a bad entry fails its own
/// resource only; the change survives a restart.
fn alter_configs_replaces_the_whole_set(store: Store) {
    // A process: SIGKILLed, then read back.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::AlterConfigs) {
        let (a, b) = (format!("replaced-a-v{v}"), format!("replaced-b-v{v}"));
        let given = [
            ("cleanup.policy", Some("compact")),
            ("retention.ms", Some("1000")),
        ];
        for t in [&a, &b] {
            assert_eq!(create(&mut c, 7, t, &given, false).error_code, 0);
        }
        let new = [("segment.ms", Some("5000"))];
        let checked = alter(&mut c, v, &[((2, &a), &new)], true);
        assert_eq!(checked, [(0, None)], "v{v}");
        assert_eq!(
            value(&mut c, &a, "segment.ms"),
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}: validate_only"
        );
        let bad = [("retention.ms", Some("-9"))];
        let answered = alter(&mut c, v, &[((2, &a), &new), ((2, &b), &bad)], false);
        assert_eq!(answered[0], (0, None), "v{v}");
        let (code, message) = &answered[1];
        assert_eq!(*code, INVALID_CONFIG, "v{v}");
        assert!(
            message
                .as_deref()
                .unwrap_or_default()
                .contains("retention.ms"),
            "v{v}: {message:?}"
        );
        let a_now = topic_configs(&mut c, &a);
        assert_eq!(
            a_now["segment.ms"],
            owned_value("5000", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            a_now["cleanup.policy"],
            owned_value("delete", DEFAULT_CONFIG),
            "v{v}: not given, back to default"
        );
        assert_eq!(
            a_now["retention.ms"],
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}"
        );
        assert_eq!(
            value(&mut c, &b, "retention.ms"),
            owned_value("1000", DYNAMIC_TOPIC_CONFIG),
            "v{v}: b untouched"
        );
        // Missing topic, bad name, unknown resource type, a null value.
        let refused = alter(
            &mut c,
            v,
            &[
                ((2, "missing"), &new),
                ((2, "bad name"), &new),
                ((99, "x"), &new),
                ((2, &b), &[("retention.ms", None)]),
                ((2, &b), &[("no.such", Some("1"))]),
            ],
            false,
        );
        let codes: Vec<i16> = refused.iter().map(|(code, _)| *code).collect();
        assert_eq!(
            codes,
            [
                UNKNOWN_TOPIC,
                INVALID_TOPIC,
                INVALID_REQUEST,
                INVALID_REQUEST,
                INVALID_CONFIG
            ],
            "v{v}: {refused:?}"
        );
        assert!(
            refused.iter().all(|(_, m)| m.is_some()),
            "v{v}: {refused:?}"
        );
    }
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let v = *versions(ApiKey::AlterConfigs).end();
    let kept = value(&mut c, &format!("replaced-a-v{v}"), "segment.ms");
    assert_eq!(
        kept,
        owned_value("5000", DYNAMIC_TOPIC_CONFIG),
        "after a restart"
    );
}

/// IncrementalAlterConfigs at every version: SET, DELETE (back to the default), APPEND
/// and SUBTRACT on a list; APPEND on a non-list (40), a repeated key, a null SET and an
/// unknown operation (42) fail their resource only; validate_only changes nothing.
fn incremental_alter_configs_applies_every_op(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let (t, other) = (
            format!("incremental-v{v}"),
            format!("incremental-other-v{v}"),
        );
        let given = [
            ("cleanup.policy", Some("delete")),
            ("retention.ms", Some("1000")),
        ];
        for name in [&t, &other] {
            assert_eq!(create(&mut c, 7, name, &given, false).error_code, 0);
        }
        let ops = [
            ("max.message.bytes", SET, Some("2000")),
            ("retention.ms", DELETE, None),
            ("cleanup.policy", APPEND, Some("compact")),
        ];
        assert_eq!(
            incremental(&mut c, v, &[((2, &t), &ops)], true),
            [(0, None)],
            "v{v}"
        );
        assert_eq!(
            value(&mut c, &t, "retention.ms"),
            owned_value("1000", DYNAMIC_TOPIC_CONFIG),
            "v{v}: validate_only"
        );
        let bad: [(Ops, i16); 5] = [
            (&[("retention.ms", APPEND, Some("5"))], INVALID_CONFIG),
            (
                &[("segment.ms", SET, Some("1")), ("segment.ms", DELETE, None)],
                INVALID_REQUEST,
            ),
            (&[("segment.ms", SET, None)], INVALID_REQUEST),
            (&[("segment.ms", 7, Some("1"))], INVALID_REQUEST),
            (&[("cleanup.policy", APPEND, Some("shred"))], INVALID_CONFIG),
        ];
        for (entries, code) in bad {
            let answered =
                incremental(&mut c, v, &[((2, &t), &ops), ((2, &other), entries)], false);
            assert_eq!(answered[0], (0, None), "v{v} {entries:?}");
            assert_eq!(answered[1].0, code, "v{v} {entries:?}: {answered:?}");
            let message = answered[1].1.as_deref().unwrap_or_default();
            assert!(message.contains(entries[0].0), "v{v}: {message:?}");
        }
        let now = topic_configs(&mut c, &t);
        assert_eq!(
            now["max.message.bytes"],
            owned_value("2000", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            now["retention.ms"],
            owned_value("604800000", DEFAULT_CONFIG),
            "v{v}"
        );
        assert_eq!(
            now["cleanup.policy"],
            owned_value("delete,compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        assert_eq!(
            topic_configs(&mut c, &other),
            {
                let mut before = topic_configs(&mut c, &other);
                before.insert(
                    "retention.ms".into(),
                    owned_value("1000", DYNAMIC_TOPIC_CONFIG),
                );
                before
            },
            "v{v}: refused resources keep their values"
        );
        let subtract = [("cleanup.policy", SUBTRACT, Some("delete"))];
        assert_eq!(
            incremental(&mut c, v, &[((2, &t), &subtract)], false),
            [(0, None)]
        );
        assert_eq!(
            value(&mut c, &t, "cleanup.policy"),
            owned_value("compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
        // APPEND to a list nobody set starts from its default.
        let append = [("cleanup.policy", APPEND, Some("compact"))];
        assert_eq!(
            incremental(&mut c, v, &[((2, &other), &append)], false),
            [(0, None)]
        );
        assert_eq!(
            value(&mut c, &other, "cleanup.policy"),
            owned_value("delete,compact", DYNAMIC_TOPIC_CONFIG),
            "v{v}"
        );
    }
}

/// A topic's max.message.bytes, as altered, is what Produce enforces.
fn altered_configs_take_effect_on_produce(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "limited", &[], false).error_code, 0);
    assert_eq!(produce(&mut c, "limited", 500), 0);
    let set = [("max.message.bytes", SET, Some("300"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "limited"), &set)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "limited", 500), 10, "MESSAGE_TOO_LARGE");
    // The broker-wide default applies to topics that do not set their own.
    assert_eq!(create(&mut c, 7, "defaulted", &[], false).error_code, 0);
    let broker = [("message.max.bytes", SET, Some("300"))];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &broker)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "defaulted", 500), 10);
    let unset = [("message.max.bytes", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &unset)], false),
        [(0, None)]
    );
    assert_eq!(produce(&mut c, "defaulted", 500), 0);
}

/// Produce v9 of one record with a value of `bytes` bytes to partition 0: the error code.
fn produce(c: &mut RawClient, topic: &str, bytes: usize) -> i16 {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::ProduceRequest;
    let value = vec![b'x'; bytes];
    let records = support::batch(
        &[support::record(None, &value, 1_700_000_000_000)],
        kafka_protocol::records::Compression::None,
    );
    let data = PartitionProduceData::default().with_records(Some(records));
    let topic = TopicProduceData::default()
        .with_name(support::topic_name(topic))
        .with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![topic]);
    call!(c, Produce, 9, request).responses[0].partition_responses[0].error_code
}

support::on_every_store!(
    alter_configs_replaces_the_whole_set,
    incremental_alter_configs_applies_every_op,
    altered_configs_take_effect_on_produce,
);
