//! Versions as data: every (API, version) pinned in `tests/support/versions.rs` (Kafka
//! 4.4's ranges, written down apart from the gateway's `SERVED`) gets a valid request
//! built with `kafka-protocol` at exactly that version, and its answer must decode at
//! that version and say what a Kafka broker would. ApiVersions must advertise exactly
//! the pinned ranges, so a range narrowed or widened in SERVED fails here; an API added
//! to the pinned table fails until it is taught here.

mod api_versions;
mod cluster;
mod configs;
mod consumer_groups;
mod groups;
mod java;
mod offsets;
mod quotas;
mod records;
mod security;
mod topics;
mod transaction_admin;
mod transactions;

use crate::support;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use support::configs::s;
use support::versions::{api_key, SERVED};
use support::{call, i32_at, topic_name as name, Gateway, RawClient, Store};
use uuid::Uuid;

use api_versions::{api_versions, update_features};
use cluster::{
    alter_partition_reassignments, describe_cluster, describe_log_dirs, describe_topic_partitions,
    elect_leaders, list_partition_reassignments, offset_for_leader_epoch,
};
use configs::{alter_configs, describe_configs, incremental_alter_configs};
use groups::{
    delete_groups, describe_groups, find_coordinator, heartbeat, join_group, leave_group,
    list_groups, sync_group,
};
use offsets::{offset_commit, offset_delete, offset_fetch};
use quotas::{alter_client_quotas, describe_client_quotas};
use records::{fetch, init_producer_id, list_offsets, produce};
use security::{
    alter_user_scram_credentials, create_acls, delete_acls, describe_acls,
    describe_user_scram_credentials, sasl_authenticate, sasl_handshake,
};
use topics::{create_partitions, create_topics, delete_records, delete_topics, metadata};

/// The topic every version reads and writes, and what it holds.
struct Topic {
    name: TopicName,
    id: Uuid,
    /// The value of the record at offset i.
    values: Vec<String>,
    producer_ids: HashSet<i64>,
}

fn every_served_version_of_every_api_answers_as_kafka_does(store: Store) {
    // No first-rebalance delay: a lone member's JoinGroup is answered at once. ACLs on,
    // with this test's principal a super user: every API answers, the ACL ones too.
    let settings = [
        ("group_initial_rebalance_delay_ms", "0"),
        ("authorizer", "standard"),
        ("super_users", "User:ANONYMOUS"),
    ];
    let Some(gw) = Gateway::start_on(store, &settings) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let id = create(&mut c, 7, "versions", 1).topic_id;
    let (name, values, producer_ids) = (name("versions"), Vec::new(), HashSet::new());
    let mut t = Topic {
        name,
        id,
        values,
        producer_ids,
    };
    // Data for Fetch and ListOffsets, whichever API the table happens to list first.
    for _ in 0..3 {
        produce(&mut c, 9, &mut t);
    }

    // Every version is tried even after one fails, so one run lists every broken one.
    let mut failures = Vec::new();
    for api in SERVED {
        let key = api_key(api);
        for v in api.min..=api.max {
            let outcome = catch_unwind(AssertUnwindSafe(|| match key {
                ApiKey::Produce => produce(&mut c, v, &mut t),
                ApiKey::Fetch => fetch(&mut c, v, &t),
                ApiKey::ListOffsets => list_offsets(&mut c, v, &t),
                ApiKey::Metadata => metadata(&mut c, v, &t),
                ApiKey::ApiVersions => api_versions(&mut c, v),
                ApiKey::CreateTopics => create_topics(&mut c, v),
                ApiKey::DeleteTopics => delete_topics(&mut c, v),
                ApiKey::CreatePartitions => create_partitions(&mut c, v),
                ApiKey::DeleteRecords => delete_records(&mut c, v),
                ApiKey::InitProducerId => init_producer_id(&mut c, v, &mut t),
                ApiKey::FindCoordinator => find_coordinator(&mut c, v),
                ApiKey::JoinGroup => join_group(&mut c, v),
                ApiKey::SyncGroup => sync_group(&mut c, v),
                ApiKey::Heartbeat => heartbeat(&mut c, v),
                ApiKey::LeaveGroup => leave_group(&mut c, v),
                ApiKey::DescribeGroups => describe_groups(&mut c, v),
                ApiKey::ListGroups => list_groups(&mut c, v, &t),
                ApiKey::DeleteGroups => delete_groups(&mut c, v, &t),
                ApiKey::ConsumerGroupHeartbeat => {
                    consumer_groups::consumer_group_heartbeat(&mut c, v, &t)
                }
                ApiKey::ConsumerGroupDescribe => {
                    consumer_groups::consumer_group_describe(&mut c, v, &t)
                }
                ApiKey::OffsetCommit => offset_commit(&mut c, v, &t),
                ApiKey::OffsetFetch => offset_fetch(&mut c, v, &t),
                ApiKey::OffsetDelete => offset_delete(&mut c, v, &t),
                ApiKey::DescribeConfigs => describe_configs(&mut c, v, &t),
                ApiKey::AlterConfigs => alter_configs(&mut c, v),
                ApiKey::IncrementalAlterConfigs => incremental_alter_configs(&mut c, v),
                ApiKey::UpdateFeatures => update_features(&mut c, v),
                ApiKey::DescribeCluster => describe_cluster(&mut c, v),
                ApiKey::ElectLeaders => elect_leaders(&mut c, v, &t),
                ApiKey::ListPartitionReassignments => list_partition_reassignments(&mut c, v),
                ApiKey::AlterPartitionReassignments => alter_partition_reassignments(&mut c, v, &t),
                ApiKey::OffsetForLeaderEpoch => offset_for_leader_epoch(&mut c, v, &t),
                ApiKey::DescribeLogDirs => describe_log_dirs(&mut c, v, &t),
                ApiKey::DescribeTopicPartitions => describe_topic_partitions(&mut c, v, &t),
                ApiKey::SaslHandshake => sasl_handshake(&mut c, v),
                ApiKey::SaslAuthenticate => sasl_authenticate(&mut c, v),
                ApiKey::AlterUserScramCredentials => alter_user_scram_credentials(&mut c, v),
                ApiKey::DescribeUserScramCredentials => describe_user_scram_credentials(&mut c, v),
                ApiKey::CreateAcls => create_acls(&mut c, v),
                ApiKey::DescribeAcls => describe_acls(&mut c, v),
                ApiKey::DeleteAcls => delete_acls(&mut c, v),
                ApiKey::AlterClientQuotas => alter_client_quotas(&mut c, v),
                ApiKey::DescribeClientQuotas => describe_client_quotas(&mut c, v),
                ApiKey::AddPartitionsToTxn => transactions::add_partitions_to_txn(&mut c, v, &t),
                ApiKey::AddOffsetsToTxn => transactions::add_offsets_to_txn(&mut c, v),
                ApiKey::EndTxn => transactions::end_txn(&mut c, v, &t),
                ApiKey::TxnOffsetCommit => transactions::txn_offset_commit(&mut c, v, &t),
                ApiKey::WriteTxnMarkers => transaction_admin::write_txn_markers(&mut c, v),
                ApiKey::DescribeProducers => transaction_admin::describe_producers(&mut c, v),
                ApiKey::DescribeTransactions => transaction_admin::describe_transactions(&mut c, v),
                ApiKey::ListTransactions => transaction_admin::list_transactions(&mut c, v),
                other => panic!("{other:?} is served but this test builds no request for it"),
            }));
            if let Err(panic) = outcome {
                let text = panic.downcast_ref::<&str>().map(|s| s.to_string());
                let text = text.or_else(|| panic.downcast_ref::<String>().cloned());
                failures.push(format!("{key:?} v{v}: {}", text.unwrap_or_default()));
                c = RawClient::connect(gw.addr); // the old one may hold an unread answer
            }
        }
    }
    assert!(failures.is_empty(), "failed:\n{}", failures.join("\n"));

    // Every served API's answers are counted by error code on /metrics.
    let scrape = support::admin::Scrape::take(gw.admin);
    let uncounted: Vec<&str> = SERVED
        .iter()
        .map(|api| api.name)
        .filter(|api| scrape.sum("iggy_kafka_gateway_errors_total", &[("api", api)]) == 0.0)
        .collect();
    assert!(
        uncounted.is_empty(),
        "no error codes counted for {uncounted:?}: teach actors/src/metrics/error_codes.rs"
    );
}

#[test]
fn versions_just_outside_each_served_range_are_refused() {
    // A broker closes the connection on a version it does not serve, except for
    // ApiVersions, which KIP-511 answers at v0 with UNSUPPORTED_VERSION (35).
    let gw = Gateway::start();
    for api in SERVED {
        let (key, min, max) = (api_key(api), api.min, api.max);
        for v in [min - 1, max + 1].into_iter().filter(|&v| v >= 0) {
            let mut header = BytesMut::new();
            header.put_i16(key as i16);
            header.put_i16(v);
            header.put_i32(9); // correlation id
            header.put_i16(-1); // null client id
            if key == ApiKey::ApiVersions && v > max {
                let mut c = RawClient::connect(gw.addr);
                c.send_frame(&header);
                let frame = c.read_frame().expect("a KIP-511 answer");
                assert_eq!(i32_at(&frame, 0), 9, "correlation id");
                assert_eq!(i16::from_be_bytes([frame[4], frame[5]]), 35, "error code");
                continue;
            }
            let mut c = RawClient::connect(gw.addr);
            c.send_frame(&header);
            // Nothing comes back, and the gateway closes (still open at 10 s fails).
            c.assert_closed(&format!("{key:?} v{v}"));
        }
    }
}

/// CreateTopics at `v`: one topic with one configuration set.
fn create(c: &mut RawClient, v: i16, topic: &str, partitions: i32) -> CreatableTopicResult {
    let config = CreatableTopicConfig::default()
        .with_name(StrBytes::from_static_str("retention.ms"))
        .with_value(Some(StrBytes::from_static_str("86400000")));
    let topic = CreatableTopic::default()
        .with_name(name(topic))
        .with_configs(vec![config]);
    let topic = topic
        .with_num_partitions(partitions)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default().with_timeout_ms(5000);
    let r = call!(c, CreateTopics, v, request.with_topics(vec![topic]));
    r.topics.into_iter().next().expect("one result")
}

/// What every member here joins with: the consumer protocol with the range assignor.
const PROTOCOL_TYPE: &str = "consumer";
const ASSIGNOR: &str = "range";
/// Long enough that no member expires while the versions run.
const SESSION_MS: i32 = 30_000;

/// A member alone in its group, and the assignment it gives itself as leader.
#[derive(Clone)]
struct Member {
    group: GroupId,
    id: StrBytes,
    generation: i32,
    assignment: Bytes,
}

/// Consumer-protocol metadata (a version prefix, then the subscription) for the
/// test topic: what a Java consumer sends, though the gateway relays it unread.
fn subscription() -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(3);
    let topics = vec![s("versions")];
    let sub = ConsumerProtocolSubscription::default().with_topics(topics);
    sub.encode(&mut buf, 3).unwrap();
    buf.freeze()
}

/// JoinGroup at `v`, setting only the fields `v` has.
fn join_at(
    c: &mut RawClient,
    v: i16,
    group: &str,
    member_id: &StrBytes,
    instance: Option<&str>,
) -> JoinGroupResponse {
    assert!(instance.is_none() || v >= 5, "no instance ids before v5");
    let protocol = JoinGroupRequestProtocol::default().with_name(s(ASSIGNOR));
    let protocols = vec![protocol.with_metadata(subscription())];
    let mut request = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(SESSION_MS)
        .with_member_id(member_id.clone())
        .with_protocol_type(s(PROTOCOL_TYPE))
        .with_protocols(protocols);
    if v >= 1 {
        request = request.with_rebalance_timeout_ms(SESSION_MS);
    }
    if v >= 5 {
        request = request.with_group_instance_id(instance.map(s));
    }
    if v >= 8 {
        request = request.with_reason(Some(s("protocol-versions")));
    }
    call!(c, JoinGroup, v, request)
}

/// A new member alone in `group`, joined at v9 (both KIP-394 steps), not synced yet.
fn joined(c: &mut RawClient, group: &str) -> Member {
    let first = join_at(c, 9, group, &StrBytes::default(), None);
    assert_eq!(first.error_code, 79, "{first:?}");
    let r = join_at(c, 9, group, &first.member_id, None);
    assert_eq!((r.error_code, &r.leader), (0, &r.member_id), "{r:?}");
    Member {
        group: GroupId(s(group)),
        id: r.member_id,
        generation: r.generation_id,
        assignment: Bytes::from(format!("assignment in {group}")),
    }
}

/// A member alone in `group`, joined and synced: the group is Stable.
fn member(c: &mut RawClient, group: &str) -> Member {
    let m = joined(c, group);
    let r = sync_at(c, 5, &m);
    assert_eq!((r.error_code, &r.assignment), (0, &m.assignment), "{r:?}");
    m
}

/// SyncGroup at `v` from the leader, assigning `m.assignment` to itself.
fn sync_at(c: &mut RawClient, v: i16, m: &Member) -> SyncGroupResponse {
    let own = SyncGroupRequestAssignment::default().with_member_id(m.id.clone());
    let assignments = vec![own.with_assignment(m.assignment.clone())];
    let mut request = SyncGroupRequest::default()
        .with_group_id(m.group.clone())
        .with_generation_id(m.generation)
        .with_member_id(m.id.clone())
        .with_assignments(assignments);
    if v >= 5 {
        request = request
            .with_protocol_type(Some(s(PROTOCOL_TYPE)))
            .with_protocol_name(Some(s(ASSIGNOR)));
    }
    call!(c, SyncGroup, v, request)
}

/// OffsetCommit at `v` of partition 0 as `(generation, member)`, with `(offset, leader
/// epoch)` (the epoch only from v6); the partition's error code.
fn commit_at(
    c: &mut RawClient,
    v: i16,
    group: &GroupId,
    (generation, member): (i32, &StrBytes),
    (topic, topic_id): (&TopicName, Uuid),
    (offset, epoch): (i64, i32),
    metadata: &str,
) -> i16 {
    let mut p = OffsetCommitRequestPartition::default()
        .with_committed_offset(offset)
        .with_committed_metadata(Some(s(metadata)));
    if v >= 6 {
        p = p.with_committed_leader_epoch(epoch);
    }
    // v10+ names the topic by id (KIP-848), and is answered by id.
    let t = match v >= 10 {
        true => OffsetCommitRequestTopic::default().with_topic_id(topic_id),
        false => OffsetCommitRequestTopic::default().with_name(topic.clone()),
    };
    let request = OffsetCommitRequest::default()
        .with_group_id(group.clone())
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(member.clone())
        .with_topics(vec![t.with_partitions(vec![p])]);
    let r = call!(c, OffsetCommit, v, request);
    let answered = r.topics.iter().flat_map(|x| {
        let ps = x.partitions.iter();
        ps.map(|p| (x.name.clone(), x.topic_id, p.partition_index))
    });
    let want = match v >= 10 {
        true => (TopicName::default(), topic_id, 0),
        false => (topic.clone(), Uuid::nil(), 0),
    };
    assert_eq!(answered.collect::<Vec<_>>(), [want]);
    r.topics[0].partitions[0].error_code
}

/// An admin tool's commit (generation -1, no member) of partition 0, at v9.
fn admin_commit(c: &mut RawClient, group: &str, t: &Topic, offset: i64) {
    let group = GroupId(s(group));
    let admin = (-1, &StrBytes::default());
    let topic = (&t.name, t.id);
    let code = commit_at(c, 9, &group, admin, topic, (offset, 4), "admin");
    assert_eq!(code, 0, "admin commit to {group:?}");
}

/// Partition 0's committed (offset, leader epoch, metadata), by OffsetFetch v7.
fn committed(c: &mut RawClient, group: &str, t: &Topic) -> (i64, i32, String) {
    let topic = OffsetFetchRequestTopic::default().with_name(t.name.clone());
    let topics = Some(vec![topic.with_partition_indexes(vec![0])]);
    let request = OffsetFetchRequest::default().with_group_id(GroupId(s(group)));
    let r = call!(c, OffsetFetch, 7, request.with_topics(topics));
    let p = &r.topics[0].partitions[0];
    assert_eq!((r.error_code, p.error_code), (0, 0), "{r:?}");
    let metadata = p.metadata.as_deref().unwrap_or_default().to_string();
    (p.committed_offset, p.committed_leader_epoch, metadata)
}

support::on_every_store!(every_served_version_of_every_api_answers_as_kafka_does);
