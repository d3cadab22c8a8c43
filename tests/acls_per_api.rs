//! Each API's ACL check end to end, on both stores: alice (SASL/PLAIN) first gets the
//! answer Kafka 3.9 gives a principal without the binding (29, 30 or 31 where Kafka puts
//! it, per resource or at the top, or a list left short), then, once the super user
//! (the PLAINTEXT listener's anonymous principal) grants it, the request succeeds.
//! Produce, Fetch, ListOffsets, Metadata by name, OffsetCommit, FindCoordinator and the
//! ACL APIs are covered by `tests/acls.rs`.

use crate::support;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::MetadataRequest;

use support::acls::*;
use support::configs::{self, describe, incremental, update_feature, update_features, SET};
use support::describe;
use support::partitions::{count, elect, ends, grow, reassign, reassignments};
use support::records::{delete, list_offset, produce_n};
use support::sasl::plain_login;
use support::{call, Gateway, RawClient, Store};

const ANY_HOST: &str = "*";
/// How UpdateFeatures asks for a level above the current one.
const UPGRADE: i8 = 1;
const BROKER: i8 = 4;
const INVALID_TOPIC_EXCEPTION: i16 = 17;

/// A gateway with ACLs on: the PLAINTEXT listener's anonymous principal is a super user
/// (the admin), SASL users log in with PLAIN on the SASL_PLAINTEXT listener.
fn start(store: Store) -> Option<(Gateway, RawClient)> {
    let gw = Gateway::start_on(
        store,
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            ("authorizer", "standard"),
            ("super_users", "User:ANONYMOUS"),
            ("sasl_enabled_mechanisms", "PLAIN"),
            ("sasl_scram_users", "alice:alice-secret,bob:bob-secret"),
            ("group_initial_rebalance_delay_ms", "0"),
        ],
    )?;
    let admin = RawClient::connect(gw.listener("PLAINTEXT"));
    Some((gw, admin))
}

/// A connection logged in as `user` (password `<user>-secret`).
fn login(gw: &Gateway, user: &str) -> RawClient {
    let mut c = RawClient::connect(gw.listener("SASL_PLAINTEXT"));
    let answer = plain_login(&mut c, user, &format!("{user}-secret"));
    assert_eq!(answer.error_code, 0, "{answer:?}");
    c
}

/// The admin allows `user` `operation` on a literal resource `(type, name)`.
fn grant(admin: &mut RawClient, user: &str, (resource_type, name): (i8, &str), operation: i8) {
    let who = format!("User:{user}");
    let binding = acl(
        (resource_type, name, LITERAL),
        (&who, ANY_HOST),
        operation,
        ALLOW,
    );
    assert_eq!(create_acls(admin, vec![binding]), [0]);
}

/// DeleteTopics: 29 per topic, without the name of one named by id that alice may not
/// describe; a missing topic answers 3 only to who may describe it; DELETE on the topic
/// or on the cluster deletes.
fn delete_topics(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    for topic in ["doomed", "kept"] {
        assert_eq!(create_topic_code(&mut admin, topic), 0, "{topic}");
    }
    let doomed = topic_id(&mut admin, "doomed");
    let mut alice = login(&gw, "alice");
    let by_name = |c: &mut RawClient, t: &str| delete_topic(c, Ok(t));
    let named = |t: &str, code: i16| (Some(t.to_string()), code);

    assert_eq!(
        by_name(&mut alice, "doomed"),
        named("doomed", TOPIC_AUTHORIZATION_FAILED)
    );
    assert_eq!(
        delete_topic(&mut alice, Err(doomed)),
        (None, TOPIC_AUTHORIZATION_FAILED),
        "named by id, without DESCRIBE: the name stays hidden"
    );
    assert_eq!(
        by_name(&mut alice, "ghost"),
        named("ghost", TOPIC_AUTHORIZATION_FAILED),
        "a missing topic alice may not describe"
    );

    grant(&mut admin, "alice", (TOPIC, "doomed"), DESCRIBE);
    grant(&mut admin, "alice", (TOPIC, "ghost"), DESCRIBE);
    assert_eq!(
        by_name(&mut alice, "ghost"),
        named("ghost", UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert_eq!(
        delete_topic(&mut alice, Err(doomed)),
        named("doomed", TOPIC_AUTHORIZATION_FAILED)
    );
    assert!(configs::exists(&mut admin, "doomed"));

    grant(&mut admin, "alice", (TOPIC, "doomed"), DELETE);
    assert_eq!(by_name(&mut alice, "doomed"), named("doomed", 0));
    assert!(!configs::exists(&mut admin, "doomed"));
    assert_eq!(
        by_name(&mut alice, "kept"),
        named("kept", TOPIC_AUTHORIZATION_FAILED)
    );
    // DELETE on the cluster deletes every topic, as Kafka's controller allows.
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DELETE);
    assert_eq!(by_name(&mut alice, "kept"), named("kept", 0));
    assert!(!configs::exists(&mut admin, "kept"));
}

/// Metadata by topic id, as the Java client asks it (the id with an empty name): 29
/// with the id and no name without DESCRIBE on the topic (Kafka holds ids not to be
/// secret, names to be), the topic once DESCRIBE on it is granted.
fn metadata_by_topic_id(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "hidden"), 0);
    let id = topic_id(&mut admin, "hidden");
    let mut alice = login(&gw, "alice");
    let by_id = |c: &mut RawClient| {
        let wanted = MetadataRequestTopic::default()
            .with_topic_id(id)
            .with_name(Some(support::topic_name("")));
        let request = MetadataRequest::default()
            .with_topics(Some(vec![wanted]))
            .with_allow_auto_topic_creation(false);
        let mut r = call!(c, Metadata, 12, request);
        let t = r.topics.remove(0);
        (t.error_code, t.name.map(|n| n.to_string()), t.topic_id)
    };
    assert_eq!(by_id(&mut alice), (TOPIC_AUTHORIZATION_FAILED, None, id));
    grant(&mut admin, "alice", (TOPIC, "hidden"), DESCRIBE);
    assert_eq!(by_id(&mut alice), (0, Some("hidden".to_string()), id));
}

/// CreatePartitions: 29 for each topic without ALTER on it, existing or not (Kafka
/// checks before it looks the topic up); neither DESCRIBE on it nor ALTER on the
/// cluster is enough. ALTER on the topic grows it, or finds it missing.
fn create_partitions(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "widened"), 0);
    let mut alice = login(&gw, "alice");
    let asked = [("widened", 2, None), ("ghost", 2, None)];
    let codes = |c: &mut RawClient| -> Vec<(String, i16)> {
        let answers = grow(c, 3, &asked, false);
        answers.into_iter().map(|(n, code, _)| (n, code)).collect()
    };
    let both = |widened, ghost| {
        vec![
            ("widened".to_string(), widened),
            ("ghost".to_string(), ghost),
        ]
    };
    assert_eq!(
        codes(&mut alice),
        both(TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED)
    );
    grant(&mut admin, "alice", (TOPIC, "widened"), DESCRIBE);
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), ALTER);
    assert_eq!(
        codes(&mut alice),
        both(TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED)
    );
    assert_eq!(count(&mut admin, "widened"), Some(1));

    grant(&mut admin, "alice", (TOPIC, "widened"), ALTER);
    grant(&mut admin, "alice", (TOPIC, "ghost"), ALTER);
    assert_eq!(codes(&mut alice), both(0, UNKNOWN_TOPIC_OR_PARTITION));
    assert_eq!(count(&mut admin, "widened"), Some(2));
}

/// DeleteRecords: 29 for each partition of a topic without DELETE on it, existing or
/// not; neither DESCRIBE on it nor DELETE on the cluster is enough. DELETE on the topic
/// moves the log start, or finds the topic missing.
fn delete_records(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "trimmed"), 0);
    produce_n(&mut admin, "trimmed", 0, 3);
    let mut alice = login(&gw, "alice");
    let refused = [(0, TOPIC_AUTHORIZATION_FAILED, -1)];
    assert_eq!(delete(&mut alice, 2, "trimmed", &[(0, 2)]), refused);
    assert_eq!(delete(&mut alice, 2, "ghost", &[(0, 2)]), refused);
    grant(&mut admin, "alice", (TOPIC, "trimmed"), DESCRIBE);
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DELETE);
    assert_eq!(delete(&mut alice, 2, "trimmed", &[(0, 2)]), refused);
    assert_eq!(list_offset(&mut admin, "trimmed", 0, -2), 0, "unchanged");

    grant(&mut admin, "alice", (TOPIC, "trimmed"), DELETE);
    grant(&mut admin, "alice", (TOPIC, "ghost"), DELETE);
    assert_eq!(delete(&mut alice, 2, "trimmed", &[(0, 2)]), [(0, 0, 2)]);
    let missing = [(0, UNKNOWN_TOPIC_OR_PARTITION, -1)];
    assert_eq!(delete(&mut alice, 2, "ghost", &[(0, 2)]), missing);
    assert_eq!(list_offset(&mut admin, "trimmed", 0, -2), 2);
}

/// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: 29 for a topic and 31 for
/// the brokers' resource, each on its own resource; DESCRIBE_CONFIGS and ALTER_CONFIGS
/// on the topic, or on the cluster for the brokers, let them through.
fn configurations(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "cfg"), 0);
    let mut alice = login(&gw, "alice");
    let brokers = (BROKER, "");

    let refused = describe(&mut alice, 4, (TOPIC, "cfg"), None, false);
    assert_eq!(
        (refused.error_code, refused.configs.len()),
        (TOPIC_AUTHORIZATION_FAILED, 0)
    );
    let refused = describe(&mut alice, 4, brokers, None, false);
    assert_eq!(
        (refused.error_code, refused.configs.len()),
        (CLUSTER_AUTHORIZATION_FAILED, 0)
    );
    // The right is checked before the name: a refused caller learns nothing of it.
    let bad_name = (TOPIC, "bad/name");
    let refused = describe(&mut alice, 4, bad_name, None, false);
    assert_eq!(refused.error_code, TOPIC_AUTHORIZATION_FAILED);
    let refused = describe(&mut alice, 4, (BROKER, "nine"), None, false);
    assert_eq!(refused.error_code, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(
        describe(&mut admin, 4, bad_name, None, false).error_code,
        INVALID_TOPIC_EXCEPTION
    );
    let hour = [("retention.ms", Some("3600000"))];
    let log_hour = [("log.retention.ms", Some("3600000"))];
    let both = [((TOPIC, "cfg"), &hour[..]), (brokers, &log_hour[..])];
    let answered = configs::alter(&mut alice, 2, &both, false);
    let codes: Vec<i16> = answered.iter().map(|(code, _)| *code).collect();
    assert_eq!(
        codes,
        [TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED]
    );
    let minute = [("retention.ms", SET, Some("60000"))];
    let log_minute = [("log.retention.ms", SET, Some("60000"))];
    let both_incremental = [((TOPIC, "cfg"), &minute[..]), (brokers, &log_minute[..])];
    let answered = incremental(&mut alice, 1, &both_incremental, false);
    let codes: Vec<i16> = answered.iter().map(|(code, _)| *code).collect();
    assert_eq!(
        codes,
        [TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED]
    );
    let retention = |c: &mut RawClient| configs::topic_configs(c, "cfg")["retention.ms"].0.clone();
    assert_eq!(retention(&mut admin), "604800000", "nothing changed");

    grant(&mut admin, "alice", (TOPIC, "cfg"), DESCRIBE_CONFIGS);
    assert_eq!(retention(&mut alice), "604800000");
    grant(&mut admin, "alice", (TOPIC, "cfg"), ALTER_CONFIGS);
    let answered = configs::alter(&mut alice, 2, &both, false);
    assert_eq!(answered[0].0, 0, "{answered:?}");
    assert_eq!(answered[1].0, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(retention(&mut admin), "3600000");
    let answered = incremental(&mut alice, 1, &both_incremental, false);
    assert_eq!(answered[0].0, 0, "{answered:?}");
    assert_eq!(retention(&mut admin), "60000");

    grant(
        &mut admin,
        "alice",
        (CLUSTER, KAFKA_CLUSTER),
        DESCRIBE_CONFIGS,
    );
    assert_eq!(describe(&mut alice, 4, brokers, None, false).error_code, 0);
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), ALTER_CONFIGS);
    assert_eq!(
        incremental(&mut alice, 1, &both_incremental, false),
        [(0, None), (0, None)]
    );
    assert_eq!(
        configs::broker_configs(&mut admin, "")["log.retention.ms"].0,
        "60000"
    );
}

/// UpdateFeatures (31 at the top, at every version) and InitProducerId (31 for an
/// idempotent producer without IDEMPOTENT_WRITE on the cluster or WRITE on a topic,
/// 53 for a transactional one without WRITE on its id).
fn cluster_operations(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "orders"), 0);
    let (mut alice, mut bob) = (login(&gw, "alice"), login(&gw, "bob"));

    for v in [1, 2] {
        // Refused at the top, without per-feature results, at every version.
        let r = update_features(&mut alice, v, 2, UPGRADE, true);
        assert_eq!(
            (r.error_code, r.results.len()),
            (CLUSTER_AUTHORIZATION_FAILED, 0),
            "v{v}"
        );
    }
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), ALTER);
    for v in [1, 2] {
        assert_eq!(update_feature(&mut alice, v, 2, UPGRADE, true), (0, None));
    }

    for c in [&mut alice, &mut bob] {
        assert_eq!(
            init_producer_id(c, None),
            (CLUSTER_AUTHORIZATION_FAILED, -1)
        );
        assert_eq!(
            init_producer_id(c, Some("tx")),
            (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
        );
    }
    grant(
        &mut admin,
        "alice",
        (CLUSTER, KAFKA_CLUSTER),
        IDEMPOTENT_WRITE,
    );
    let (code, id) = init_producer_id(&mut alice, None);
    assert!(code == 0 && id >= 0, "{code} {id}");
    // Kafka 3+ takes WRITE on any topic instead (KIP-679).
    grant(&mut admin, "bob", (TOPIC, "orders"), WRITE);
    let (code, id) = init_producer_id(&mut bob, None);
    assert!(code == 0 && id >= 0, "{code} {id}");
    // WRITE on its transactional id lets bob start a transactional producer; alice,
    // without it, is still refused.
    grant(&mut admin, "bob", (TRANSACTIONAL_ID, "tx"), WRITE);
    let (code, id) = init_producer_id(&mut bob, Some("tx"));
    assert!(code == 0 && id >= 0, "{code} {id}");
    assert_eq!(
        init_producer_id(&mut alice, Some("tx")),
        (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    );
}

/// OffsetForLeaderEpoch: 29 for each partition of a topic without DESCRIBE on it,
/// unless CLUSTER_ACTION on the cluster (brokers' followers) allows every topic.
fn offset_for_leader_epoch(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "seen"), 0);
    assert_eq!(create_topic_code(&mut admin, "hidden"), 0);
    let mut alice = login(&gw, "alice");
    let codes = |c: &mut RawClient| -> Vec<i16> {
        let asked = [("seen", 0, 0, 0), ("hidden", 0, 0, 0)];
        ends(c, 4, &asked).into_iter().map(|e| e.2).collect()
    };
    let denied = TOPIC_AUTHORIZATION_FAILED;
    assert_eq!(codes(&mut alice), [denied, denied]);
    grant(&mut admin, "alice", (TOPIC, "seen"), DESCRIBE);
    assert_eq!(codes(&mut alice), [0, denied]);
    grant(
        &mut admin,
        "alice",
        (CLUSTER, KAFKA_CLUSTER),
        CLUSTER_ACTION,
    );
    assert_eq!(codes(&mut alice), [0, 0]);
}

/// ElectLeaders: 31 at the top and for every partition without ALTER on the cluster;
/// DESCRIBE on the topic is not enough.
fn elect_leaders(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "elected"), 0);
    let mut alice = login(&gw, "alice");
    let codes = |c: &mut RawClient| {
        let (top, answers) = elect(c, 2, 0, Some(&[("elected", &[0])]));
        (top, answers.into_iter().map(|a| a.2).collect::<Vec<_>>())
    };
    let denied = CLUSTER_AUTHORIZATION_FAILED;
    assert_eq!(codes(&mut alice), (denied, vec![denied]));
    grant(&mut admin, "alice", (TOPIC, "elected"), ALTER);
    assert_eq!(codes(&mut alice), (denied, vec![denied]));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), ALTER);
    assert_eq!(codes(&mut alice), (0, vec![84]));
}

/// ListPartitionReassignments: 31 at the top without DESCRIBE on the cluster;
/// AlterPartitionReassignments: 31 at the top and per partition without ALTER on it.
fn partition_reassignments(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "placed"), 0);
    let mut alice = login(&gw, "alice");
    let denied = CLUSTER_AUTHORIZATION_FAILED;
    let alter = |c: &mut RawClient| {
        let (top, answers) = reassign(c, 1, &[("placed", 0, None)]);
        (top, answers.into_iter().map(|a| a.2).collect::<Vec<_>>())
    };
    assert_eq!(reassignments(&mut alice, None), (denied, vec![]));
    assert_eq!(alter(&mut alice), (denied, vec![denied]));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DESCRIBE);
    assert_eq!(reassignments(&mut alice, None), (0, vec![]));
    assert_eq!(alter(&mut alice), (denied, vec![denied]));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), ALTER);
    assert_eq!(alter(&mut alice), (0, vec![85]));
}

/// DescribeLogDirs: 31 at the top (v3+) and no log directory without DESCRIBE on the
/// cluster; DESCRIBE on a topic is not enough.
fn log_dirs(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "logged"), 0);
    let mut alice = login(&gw, "alice");
    let answer = |c: &mut RawClient, v: i16| {
        let (code, dirs) = describe::log_dirs(c, v, None);
        (code, dirs.len())
    };
    let denied = CLUSTER_AUTHORIZATION_FAILED;
    assert_eq!(answer(&mut alice, 4), (denied, 0));
    assert_eq!(answer(&mut alice, 2), (0, 0), "v2 has no error code");
    grant(&mut admin, "alice", (TOPIC, "logged"), DESCRIBE);
    assert_eq!(answer(&mut alice, 4), (denied, 0));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DESCRIBE);
    assert_eq!(answer(&mut alice, 4), (0, 1));
}

/// DescribeTopicPartitions: 29 without a topic id for a topic named without DESCRIBE
/// on it, whether it exists or not, after the topics described; a request for every
/// topic leaves such topics out.
fn describe_topic_partitions(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    assert_eq!(create_topic_code(&mut admin, "hidden"), 0);
    let mut alice = login(&gw, "alice");
    let named = |c: &mut RawClient| {
        let r = describe::topic_partitions(c, &["missing", "hidden"], 10, None);
        assert!(r
            .topics
            .iter()
            .all(|t| t.error_code == 0 || t.topic_id.is_nil()));
        describe::page(&r).0
    };
    let every = |c: &mut RawClient| describe::page(&describe::topic_partitions(c, &[], 10, None)).0;
    let denied = TOPIC_AUTHORIZATION_FAILED;
    let answer =
        |t: &str, code: i16, partitions: &[i32]| (t.to_string(), code, partitions.to_vec());
    assert_eq!(
        named(&mut alice),
        [
            answer("hidden", denied, &[]),
            answer("missing", denied, &[])
        ]
    );
    assert_eq!(every(&mut alice), []);
    grant(&mut admin, "alice", (TOPIC, "hidden"), DESCRIBE);
    assert_eq!(
        named(&mut alice),
        [answer("hidden", 0, &[0]), answer("missing", denied, &[])]
    );
    assert_eq!(every(&mut alice), [answer("hidden", 0, &[0])]);
}

/// DescribeCluster needs no ACL; the cluster's authorized operations, when asked, are 0
/// without DESCRIBE on the cluster, and then what alice may do there.
fn describe_cluster(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    let mut alice = login(&gw, "alice");
    let asked = kafka_protocol::messages::DescribeClusterRequest::default()
        .with_endpoint_type(1)
        .with_include_cluster_authorized_operations(true);
    let answer = |c: &mut RawClient| {
        let r = support::call!(c, DescribeCluster, 2, asked.clone());
        (
            r.error_code,
            r.brokers.len(),
            r.cluster_authorized_operations,
        )
    };
    assert_eq!(answer(&mut alice), (0, 1, 0));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), CREATE);
    assert_eq!(
        answer(&mut alice),
        (0, 1, 0),
        "CREATE does not imply DESCRIBE"
    );
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DESCRIBE);
    assert_eq!(answer(&mut alice), (0, 1, bits(&[CREATE, DESCRIBE])));
}

/// ListGroups leaves out groups alice may not describe (all with DESCRIBE on the
/// cluster); DescribeGroups and DeleteGroups answer 30 per group; OffsetFetch 30 for the
/// group, then 29 for topics named without DESCRIBE, which a request for every topic
/// leaves out; OffsetDelete 30 at the top, then 29 for a topic without READ.
fn groups(store: Store) {
    let Some((gw, mut admin)) = start(store) else {
        return;
    };
    for topic in ["seen", "hidden"] {
        assert_eq!(create_topic_code(&mut admin, topic), 0, "{topic}");
    }
    for (group, topic) in [
        ("mine", "seen"),
        ("mine", "hidden"),
        ("other", "seen"),
        ("doomed", "seen"),
    ] {
        assert_eq!(commit_code(&mut admin, group, topic), 0, "{group} {topic}");
    }
    let mut alice = login(&gw, "alice");
    let everything = |groups: &[&str]| (0, groups.iter().map(|g| g.to_string()).collect());

    assert_eq!(list_groups(&mut alice), everything(&[]));
    assert_eq!(
        describe_group(&mut alice, "mine").0,
        GROUP_AUTHORIZATION_FAILED
    );
    assert_eq!(
        delete_group_code(&mut alice, "doomed"),
        GROUP_AUTHORIZATION_FAILED
    );
    assert_eq!(
        fetch_offsets(&mut alice, "mine", Some(&["seen"])),
        (GROUP_AUTHORIZATION_FAILED, vec![])
    );
    assert_eq!(
        fetch_offsets_v7_code(&mut alice, "mine", "seen"),
        GROUP_AUTHORIZATION_FAILED
    );
    assert_eq!(
        delete_offset(&mut alice, "mine", "seen"),
        (GROUP_AUTHORIZATION_FAILED, None)
    );

    grant(&mut admin, "alice", (GROUP, "mine"), DESCRIBE);
    assert_eq!(list_groups(&mut alice), everything(&["mine"]));
    let (code, operations) = describe_group(&mut alice, "mine");
    assert_eq!((code, operations), (0, bits(&[DESCRIBE])));
    let refused = |t: &str| (t.to_string(), vec![(0, -1, TOPIC_AUTHORIZATION_FAILED)]);
    let offset = |t: &str| (t.to_string(), vec![(0, 0, 0)]);
    assert_eq!(
        fetch_offsets(&mut alice, "mine", Some(&["seen", "hidden"])),
        (0, vec![refused("seen"), refused("hidden")])
    );
    assert_eq!(fetch_offsets(&mut alice, "mine", None), (0, vec![]));
    grant(&mut admin, "alice", (TOPIC, "seen"), DESCRIBE);
    assert_eq!(
        fetch_offsets(&mut alice, "mine", Some(&["seen", "hidden"])),
        (0, vec![offset("seen"), refused("hidden")])
    );
    assert_eq!(
        fetch_offsets(&mut alice, "mine", None),
        (0, vec![offset("seen")])
    );
    assert_eq!(fetch_offsets_v7_code(&mut alice, "mine", "seen"), 0);

    grant(&mut admin, "alice", (GROUP, "mine"), DELETE);
    assert_eq!(
        delete_offset(&mut alice, "mine", "hidden"),
        (0, Some(TOPIC_AUTHORIZATION_FAILED))
    );
    grant(&mut admin, "alice", (TOPIC, "hidden"), READ);
    assert_eq!(delete_offset(&mut alice, "mine", "hidden"), (0, Some(0)));
    assert_eq!(
        fetch_offsets(&mut admin, "mine", Some(&["hidden"])).1,
        [("hidden".to_string(), vec![(0, -1, 0)])],
        "the offset is gone"
    );

    grant(&mut admin, "alice", (GROUP, "doomed"), DELETE);
    assert_eq!(delete_group_code(&mut alice, "doomed"), 0);
    assert_eq!(list_groups(&mut admin), everything(&["mine", "other"]));
    grant(&mut admin, "alice", (CLUSTER, KAFKA_CLUSTER), DESCRIBE);
    assert_eq!(list_groups(&mut alice), everything(&["mine", "other"]));
}

support::on_every_store!(
    delete_topics,
    metadata_by_topic_id,
    create_partitions,
    delete_records,
    configurations,
    cluster_operations,
    describe_cluster,
    offset_for_leader_epoch,
    elect_leaders,
    partition_reassignments,
    log_dirs,
    describe_topic_partitions,
    groups
);
