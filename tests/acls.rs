//! Kafka ACLs end to end, through raw requests for the exact codes: bindings created
//! by a super user, then a principal held to them after a restart (so the bindings are
//! read back from the store), on both stores; two gateways on one Iggy sharing them;
//! and the ACL APIs refused without an authorizer, as Kafka refuses them. Last, a SASL
//! user through librdkafka, held to the bindings made for its own principal.

use crate::support;

use std::time::Duration;

use kafka_protocol::protocol::StrBytes;

use support::acls::*;
use support::admin::eventually;
use support::iggy::IggyServer;
use support::kafka::read_values;
use support::{Gateway, RawClient, Store};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};

/// A PLAINTEXT connection's principal.
const ME: &str = "User:ANONYMOUS";
const ANY_HOST: &str = "*";

#[test]
fn acl_apis_are_disabled_without_an_authorizer() {
    let gw = Gateway::start();
    let mut c = RawClient::connect(gw.addr);
    let binding = acl((TOPIC, "t", LITERAL), (ME, ANY_HOST), READ, ALLOW);
    assert_eq!(create_acls(&mut c, vec![binding]), [SECURITY_DISABLED]);
    assert_eq!(all_acls(&mut c).0, SECURITY_DISABLED);
    // And every request is allowed, as in Kafka without an authorizer.
    assert_eq!(create_topic_code(&mut c, "open"), 0);
    assert_eq!(produce_code(&mut c, "open"), 0);
    let every_topic_operation = bits(&[READ, WRITE, CREATE, 6, ALTER, DESCRIBE, 10, 11]);
    assert_eq!(metadata_of(&mut c, "open").1, every_topic_operation);
}

/// Settings of a gateway with ACLs on where this test's principal is a super user.
const AS_SUPER_USER: [(&str, &str); 3] = [
    ("authorizer", "standard"),
    ("super_users", "User:admin;User:ANONYMOUS"),
    ("group_initial_rebalance_delay_ms", "0"),
];

fn acls_decide_every_request(store: Store) {
    // A process: the bindings are read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(store, &AS_SUPER_USER) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for topic in ["open", "secret", "pay-eu", "pay-blocked", "hosted"] {
        assert_eq!(create_topic_code(&mut c, topic), 0, "{topic}");
        assert_eq!(produce_code(&mut c, topic), 0, "{topic}");
    }
    let me = (ME, ANY_HOST);
    let created = create_acls(
        &mut c,
        vec![
            acl((TOPIC, "open", LITERAL), me, ALL, ALLOW),
            // Prefixed: WRITE (and so DESCRIBE) on every pay-* topic...
            acl((TOPIC, "pay-", PREFIXED), me, WRITE, ALLOW),
            // ...but a denial beats it.
            acl((TOPIC, "pay-blocked", LITERAL), me, WRITE, DENY),
            // READ only from a host this test never connects from; DESCRIBE from anywhere.
            acl((TOPIC, "hosted", LITERAL), (ME, "10.9.9.9"), READ, ALLOW),
            acl(
                (TOPIC, "hosted", LITERAL),
                ("User:*", ANY_HOST),
                DESCRIBE,
                ALLOW,
            ),
            acl((GROUP, "g", LITERAL), me, READ, ALLOW),
            // Someone else's: it must not open "secret" to this principal.
            acl(
                (TOPIC, "secret", LITERAL),
                ("User:bob", ANY_HOST),
                ALL,
                ALLOW,
            ),
        ],
    );
    assert_eq!(created, [0; 7]);
    // A super user does anything, whatever the bindings say.
    assert_eq!(fetch_code(&mut c, "secret"), 0);
    assert_eq!(produce_code(&mut c, "pay-blocked"), 0);
    assert_eq!(all_acls(&mut c).1.len(), 7);

    // The same principal, no longer a super user: the bindings, read back from the store.
    gw.restart_with("super_users", Some("User:admin"));
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        listed_topics(&mut c),
        ["hosted", "open", "pay-blocked", "pay-eu"]
    );
    let (code, ..) = metadata_of(&mut c, "secret");
    assert_eq!(
        code, TOPIC_AUTHORIZATION_FAILED,
        "a named topic it may not describe"
    );
    assert_eq!(
        metadata_of(&mut c, "no-such-topic").0,
        TOPIC_AUTHORIZATION_FAILED
    );
    let (code, topic_ops, cluster_ops) = metadata_of(&mut c, "open");
    let every_topic_operation = bits(&[READ, WRITE, CREATE, 6, ALTER, DESCRIBE, 10, 11]);
    assert_eq!(
        (code, topic_ops, cluster_ops),
        (0, every_topic_operation, 0)
    );
    assert_eq!(metadata_of(&mut c, "pay-eu").1, bits(&[WRITE, DESCRIBE]));

    let produced: Vec<i16> = ["open", "secret", "pay-eu", "pay-blocked", "hosted"]
        .iter()
        .map(|t| produce_code(&mut c, t))
        .collect();
    assert_eq!(produced, [0, 29, 0, 29, 29]);
    let fetched: Vec<i16> = ["open", "secret", "pay-eu", "hosted"]
        .iter()
        .map(|t| fetch_code(&mut c, t))
        .collect();
    assert_eq!(
        fetched,
        [0, 29, 29, 29],
        "READ: open only (hosted from 10.9.9.9)"
    );
    assert_eq!(
        list_offsets_code(&mut c, "secret"),
        TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(list_offsets_code(&mut c, "hosted"), 0, "DESCRIBE allowed");
    assert_eq!(create_topic_code(&mut c, "new"), TOPIC_AUTHORIZATION_FAILED);

    // Groups: READ on g, nothing on h.
    assert_eq!(commit_code(&mut c, "g", "open"), 0);
    assert_eq!(
        commit_code(&mut c, "g", "secret"),
        TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(commit_code(&mut c, "h", "open"), GROUP_AUTHORIZATION_FAILED);
    assert_eq!(
        find_coordinator_code(&mut c, "g"),
        0,
        "READ implies DESCRIBE"
    );
    assert_eq!(
        find_coordinator_code(&mut c, "h"),
        GROUP_AUTHORIZATION_FAILED
    );
    assert_eq!(describe_group(&mut c, "g"), (0, bits(&[READ, DESCRIBE])));
    assert_eq!(describe_group(&mut c, "h").0, GROUP_AUTHORIZATION_FAILED);

    // The ACL APIs need the cluster: refused, and nothing changed.
    let more = acl((TOPIC, "secret", LITERAL), me, ALL, ALLOW);
    assert_eq!(
        create_acls(&mut c, vec![more]),
        [CLUSTER_AUTHORIZATION_FAILED]
    );
    assert_eq!(all_acls(&mut c).0, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(fetch_code(&mut c, "secret"), TOPIC_AUTHORIZATION_FAILED);
}

#[test]
fn a_resource_without_acls_is_open_only_when_everyone_is_allowed() {
    // A process: restarted (SIGKILL) with other settings on the same data.
    let mut gw = Gateway::process_with(&AS_SUPER_USER);
    let mut c = RawClient::connect(gw.addr);
    for topic in ["named", "unnamed"] {
        assert_eq!(create_topic_code(&mut c, topic), 0);
    }
    let bob = ("User:bob", ANY_HOST);
    assert_eq!(
        create_acls(
            &mut c,
            vec![acl((TOPIC, "named", LITERAL), bob, ALL, ALLOW)]
        ),
        [0]
    );
    gw.restart_with("super_users", None);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(produce_code(&mut c, "unnamed"), TOPIC_AUTHORIZATION_FAILED);
    gw.restart_with("allow_everyone_if_no_acl_found", Some("true"));
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(produce_code(&mut c, "unnamed"), 0, "no ACL names it");
    assert_eq!(
        produce_code(&mut c, "named"),
        TOPIC_AUTHORIZATION_FAILED,
        "ACLs name it"
    );
}

/// A binding made through one gateway holds on another sharing the Iggy server, and a
/// deletion too, within the refresh interval.
#[test]
fn gateways_on_one_iggy_share_their_acls() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let refresh = [("topic_refresh_ms", "200")];
    let admin: Vec<(&str, &str)> = AS_SUPER_USER.iter().chain(&refresh).copied().collect();
    let held = [("authorizer", "standard"), ("topic_refresh_ms", "200")];
    let first = server.gateway_with(&admin);
    let second = server.gateway_with(&held);
    let (mut c1, mut c2) = (
        RawClient::connect(first.addr),
        RawClient::connect(second.addr),
    );
    assert_eq!(create_topic_code(&mut c1, "shared"), 0);
    let within = Duration::from_secs(10);
    assert_eq!(produce_code(&mut c2, "shared"), TOPIC_AUTHORIZATION_FAILED);
    let write = acl((TOPIC, "shared", LITERAL), (ME, ANY_HOST), WRITE, ALLOW);
    assert_eq!(create_acls(&mut c1, vec![write]), [0]);
    assert!(
        eventually(within, || produce_code(&mut c2, "shared") == 0),
        "the other gateway never applied the new binding"
    );
    let request = kafka_protocol::messages::DeleteAclsRequest::default().with_filters(vec![
        kafka_protocol::messages::delete_acls_request::DeleteAclsFilter::default()
            .with_resource_type_filter(TOPIC)
            .with_resource_name_filter(Some(StrBytes::from_static_str("shared")))
            .with_pattern_type_filter(LITERAL)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
    ]);
    let deleted = support::call!(c1, DeleteAcls, 3, request);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1);
    assert!(
        eventually(within, || produce_code(&mut c2, "shared")
            == TOPIC_AUTHORIZATION_FAILED),
        "the other gateway never dropped the deleted binding"
    );
}

support::on_every_store!(acls_decide_every_request);

/// alice logs in with SCRAM through librdkafka on a SASL listener; the super user (the
/// PLAINTEXT listener's anonymous principal) lets her use one topic and her groups only
/// (without the group binding, her consumer gets GROUP_AUTHORIZATION_FAILED).
#[tokio::test(flavor = "multi_thread")]
async fn a_sasl_user_gets_only_what_her_acls_allow() {
    let gw = Gateway::start_with(&[
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("authorizer", "standard"),
        ("super_users", "User:ANONYMOUS"),
        ("sasl_enabled_mechanisms", "SCRAM-SHA-256"),
        ("sasl_scram_users", "alice:alice-secret"),
    ]);
    let mut admin = RawClient::connect(gw.listener("PLAINTEXT"));
    for topic in ["alices", "others"] {
        assert_eq!(create_topic_code(&mut admin, topic), 0, "{topic}");
        assert_eq!(produce_code(&mut admin, topic), 0, "{topic}");
    }
    let alice = ("User:alice", ANY_HOST);
    let created = create_acls(
        &mut admin,
        vec![
            acl((TOPIC, "alices", LITERAL), alice, ALL, ALLOW),
            acl((GROUP, "alices-", PREFIXED), alice, READ, ALLOW),
        ],
    );
    assert_eq!(created, vec![0, 0]);

    let mut config = ClientConfig::new();
    config
        .set(
            "bootstrap.servers",
            gw.listener("SASL_PLAINTEXT").to_string(),
        )
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanisms", "SCRAM-SHA-256")
        .set("sasl.username", "alice")
        .set("sasl.password", "alice-secret")
        .set("message.timeout.ms", "10000");
    let producer: FutureProducer = config.create().expect("producer");
    let send = |topic: &'static str| {
        producer.send(
            FutureRecord::<(), str>::to(topic).payload("from alice"),
            Duration::from_secs(10),
        )
    };
    send("alices").await.expect("alice writes her topic");
    let refused = send("others")
        .await
        .expect_err("alice may not write others");
    assert_eq!(
        refused.0,
        KafkaError::MessageProduction(RDKafkaErrorCode::TopicAuthorizationFailed)
    );

    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", "alices-metadata")
        .create()
        .expect("consumer");
    let listed = consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata");
    let names: Vec<&str> = listed.topics().iter().map(|t| t.name()).collect();
    assert!(names.contains(&"alices"), "{names:?}");
    assert!(
        !names.contains(&"others"),
        "alice sees a topic she may not describe: {names:?}"
    );
    // Her own record and the super user's.
    assert_eq!(read_values(&config, "alices", 2).len(), 2);
}
