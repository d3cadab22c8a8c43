//! AlterClientQuotas and DescribeClientQuotas answered as Kafka's, kept, and behind cluster ACLs.

use crate::support;

use support::acls::CLUSTER_AUTHORIZATION_FAILED;
use support::{Gateway, RawClient, Store};

use super::{alter, describe, described, entry, set, Entity, ANY, DEFAULT, EXACT};

const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;

const ALICE: Entity = &[("user", Some("alice"))];
const ALICE_APP: Entity = &[("user", Some("alice")), ("client-id", Some("app"))];
const DEFAULT_USER: Entity = &[("user", None)];
const DEFAULT_CLIENT: Entity = &[("client-id", None)];

fn quota_apis_answer_as_kafka_does(store: Store) {
    // A process: the quotas are read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for v in 0..=1 {
        assert_eq!(describe(&mut c, v, &[], false), (0, Some(vec![])));
    }
    set(&mut c, ALICE, "producer_byte_rate", 1024.0);
    set(&mut c, ALICE_APP, "consumer_byte_rate", 2048.0);
    set(&mut c, DEFAULT_USER, "request_percentage", 12.5);
    set(&mut c, DEFAULT_CLIENT, "controller_mutation_rate", 3.0);
    // Several keys at once, at v0; one set then changed.
    let answer = alter(
        &mut c,
        0,
        vec![entry(
            ALICE,
            &[
                ("consumer_byte_rate", Some(4096.0)),
                ("producer_byte_rate", Some(1500.0)),
            ],
        )],
        false,
    );
    assert_eq!(answer, [(0, None)]);

    // validate_only checks and answers, and stores nothing.
    let answer = alter(
        &mut c,
        1,
        vec![
            entry(
                &[("client-id", Some("dry"))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            entry(&[("client-id", Some("dry"))], &[("nope", Some(1.0))]),
        ],
        true,
    );
    assert_eq!(
        answer[0].0, INVALID_REQUEST,
        "the same entity twice: {answer:?}"
    );
    let answer = alter(
        &mut c,
        1,
        vec![entry(
            &[("client-id", Some("dry"))],
            &[("producer_byte_rate", Some(1.0))],
        )],
        true,
    );
    assert_eq!(answer, [(0, None)]);

    // Refusals, each naming the problem, as Kafka's.
    let refused = |c: &mut RawClient, entity: Entity, ops: &[(&str, Option<f64>)]| {
        let answer = alter(c, 1, vec![entry(entity, ops)], false);
        assert_eq!(answer.len(), 1);
        assert_eq!(answer[0].0, INVALID_REQUEST, "{entity:?} {ops:?}");
        answer[0].1.clone().unwrap_or_default()
    };
    let message = refused(&mut c, ALICE, &[("bytes_per_fortnight", Some(5.0))]);
    assert!(message.contains("bytes_per_fortnight"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(-5.0))]);
    assert!(message.contains("greater than 0"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(10.5))]);
    assert!(message.contains("fractional"), "{message}");
    let message = refused(&mut c, ALICE, &[("producer_byte_rate", Some(f64::NAN))]);
    assert!(message.contains("producer_byte_rate"), "{message}");
    let message = refused(
        &mut c,
        &[("group", Some("g"))],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("group"), "{message}");
    let message = refused(&mut c, &[], &[("producer_byte_rate", Some(5.0))]);
    assert!(message.contains("empty"), "{message}");
    let message = refused(
        &mut c,
        &[("user", Some(""))],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("Empty user"), "{message}");
    let message = refused(
        &mut c,
        ALICE,
        &[
            ("producer_byte_rate", Some(5.0)),
            ("producer_byte_rate", None),
        ],
    );
    assert!(message.contains("Duplicate quota key"), "{message}");
    let message = refused(
        &mut c,
        &[("ip", Some("not-an-ip"))],
        &[("connection_creation_rate", Some(5.0))],
    );
    assert!(message.contains("not a valid IP"), "{message}");
    let message = refused(
        &mut c,
        &[("ip", None), ("user", Some("alice"))],
        &[("connection_creation_rate", Some(5.0))],
    );
    assert!(message.contains("combination"), "{message}");
    // IP entities take connection_creation_rate only, the others everything else.
    let message = refused(
        &mut c,
        &[("ip", None)],
        &[("producer_byte_rate", Some(5.0))],
    );
    assert!(message.contains("producer_byte_rate"), "{message}");
    let message = refused(&mut c, ALICE, &[("connection_creation_rate", Some(5.0))]);
    assert!(message.contains("connection_creation_rate"), "{message}");
    // One bad entry leaves the good one beside it applied.
    let answer = alter(
        &mut c,
        1,
        vec![
            entry(
                &[("client-id", Some("good"))],
                &[("producer_byte_rate", Some(7.0))],
            ),
            entry(
                &[("client-id", Some("bad"))],
                &[("producer_byte_rate", Some(0.0))],
            ),
        ],
        false,
    );
    assert_eq!(answer[0], (0, None));
    assert_eq!(answer[1].0, INVALID_REQUEST);
    // Removing a key that is not set is not an error.
    let answer = alter(
        &mut c,
        1,
        vec![entry(
            &[("client-id", Some("good"))],
            &[("consumer_byte_rate", None)],
        )],
        false,
    );
    assert_eq!(answer, [(0, None)]);

    // Sorted by (type, name) pairs, as `describe` sorts them.
    let everything = vec![
        described(DEFAULT_CLIENT, &[("controller_mutation_rate", 3.0)]),
        described(ALICE_APP, &[("consumer_byte_rate", 2048.0)]),
        described(
            &[("client-id", Some("good"))],
            &[("producer_byte_rate", 7.0)],
        ),
        described(DEFAULT_USER, &[("request_percentage", 12.5)]),
        described(
            ALICE,
            &[
                ("consumer_byte_rate", 4096.0),
                ("producer_byte_rate", 1500.0),
            ],
        ),
    ];
    let check_filters = |c: &mut RawClient| {
        for v in 0..=1 {
            assert_eq!(
                describe(c, v, &[], false),
                (0, Some(everything.clone())),
                "v{v}"
            );
        }
        // Exact: every entity naming alice; strict: only the one with no other part.
        let alices = vec![everything[1].clone(), everything[4].clone()];
        let exact = [("user", EXACT, Some("alice"))];
        assert_eq!(describe(c, 1, &exact, false), (0, Some(alices)));
        assert_eq!(
            describe(c, 1, &exact, true),
            (0, Some(vec![everything[4].clone()]))
        );
        let default = [("user", DEFAULT, None)];
        assert_eq!(
            describe(c, 1, &default, false),
            (0, Some(vec![everything[3].clone()]))
        );
        let clients = [("client-id", ANY, None)];
        let with_client = vec![
            everything[0].clone(),
            everything[1].clone(),
            everything[2].clone(),
        ];
        assert_eq!(describe(c, 1, &clients, false), (0, Some(with_client)));
        let only_clients = vec![everything[0].clone(), everything[2].clone()];
        assert_eq!(describe(c, 0, &clients, true), (0, Some(only_clients)));
        let both = [
            ("user", EXACT, Some("alice")),
            ("client-id", EXACT, Some("app")),
        ];
        assert_eq!(
            describe(c, 1, &both, true),
            (0, Some(vec![everything[1].clone()]))
        );
        assert_eq!(
            describe(c, 1, &[("ip", ANY, None)], false),
            (0, Some(vec![]))
        );
    };
    check_filters(&mut c);
    // Bad filters: the whole answer refused, as Kafka's.
    let bad = [
        (vec![("group", ANY, None)], UNSUPPORTED_VERSION),
        (vec![("user", 9, None)], UNSUPPORTED_VERSION),
        (vec![("user", EXACT, None)], INVALID_REQUEST),
        (vec![("user", DEFAULT, Some("alice"))], INVALID_REQUEST),
        (
            vec![("user", ANY, None), ("user", DEFAULT, None)],
            INVALID_REQUEST,
        ),
        (
            vec![("ip", ANY, None), ("user", ANY, None)],
            INVALID_REQUEST,
        ),
        (vec![("", ANY, None)], INVALID_REQUEST),
    ];
    for (components, code) in bad {
        assert_eq!(
            describe(&mut c, 1, &components, false),
            (code, None),
            "{components:?}"
        );
    }

    // Kept across a restart: read back from the store.
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    check_filters(&mut c);
    // Removing the last key removes the entity.
    let answer = alter(
        &mut c,
        1,
        vec![entry(DEFAULT_USER, &[("request_percentage", None)])],
        false,
    );
    assert_eq!(answer, [(0, None)]);
    assert_eq!(
        describe(&mut c, 1, &[("user", DEFAULT, None)], false),
        (0, Some(vec![]))
    );
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        describe(&mut c, 1, &[("user", DEFAULT, None)], false),
        (0, Some(vec![]))
    );
}

#[test]
fn quota_apis_need_the_cluster_acls() {
    let acls_on = [("authorizer", "standard"), ("super_users", "User:admin")];
    // A process: restarted (SIGKILL) with other settings on the same data.
    let mut gw = Gateway::process_with(&acls_on);
    let mut c = RawClient::connect(gw.addr);
    let ops = [("producer_byte_rate", Some(10.0))];
    let answer = alter(
        &mut c,
        1,
        vec![entry(ALICE, &ops), entry(DEFAULT_USER, &ops)],
        false,
    );
    assert_eq!(answer.len(), 2);
    assert!(
        answer
            .iter()
            .all(|(code, _)| *code == CLUSTER_AUTHORIZATION_FAILED),
        "{answer:?}"
    );
    assert_eq!(
        describe(&mut c, 1, &[], false),
        (CLUSTER_AUTHORIZATION_FAILED, None)
    );
    // A cluster without ACLs open to everyone: both allowed.
    gw.restart_with("allow_everyone_if_no_acl_found", Some("true"));
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        alter(&mut c, 1, vec![entry(ALICE, &ops)], false),
        [(0, None)]
    );
    let alice = vec![described(ALICE, &[("producer_byte_rate", 10.0)])];
    assert_eq!(describe(&mut c, 1, &[], false), (0, Some(alice)));
}

support::on_every_store!(quota_apis_answer_as_kafka_does);
