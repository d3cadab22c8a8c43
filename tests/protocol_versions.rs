//! Versions as data: every (API, version) pinned in `tests/support/versions.rs` (Kafka
//! 4.1's ranges, written down apart from the gateway's `SERVED`) gets a valid request
//! built with `kafka-protocol` at exactly that version, and its answer must decode at
//! that version and say what a Kafka broker would. ApiVersions must advertise exactly
//! the pinned ranges, so a range narrowed or widened in SERVED fails here; an API added
//! to the pinned table fails until it is taught here.

use crate::support;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use support::versions::{api_key, assert_advertised, SERVED};
use support::{batch, call, i32_at, record, topic_name as name, Gateway, RawClient, Store};
use uuid::Uuid;

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
                ApiKey::InitProducerId => init_producer_id(&mut c, v, &mut t),
                ApiKey::FindCoordinator => find_coordinator(&mut c, v),
                ApiKey::JoinGroup => join_group(&mut c, v),
                ApiKey::SyncGroup => sync_group(&mut c, v),
                ApiKey::Heartbeat => heartbeat(&mut c, v),
                ApiKey::LeaveGroup => leave_group(&mut c, v),
                ApiKey::DescribeGroups => describe_groups(&mut c, v),
                ApiKey::ListGroups => list_groups(&mut c, v, &t),
                ApiKey::DeleteGroups => delete_groups(&mut c, v, &t),
                ApiKey::OffsetCommit => offset_commit(&mut c, v, &t),
                ApiKey::OffsetFetch => offset_fetch(&mut c, v, &t),
                ApiKey::OffsetDelete => offset_delete(&mut c, v, &t),
                ApiKey::DescribeConfigs => describe_configs(&mut c, v, &t),
                ApiKey::AlterConfigs => alter_configs(&mut c, v),
                ApiKey::IncrementalAlterConfigs => incremental_alter_configs(&mut c, v),
                ApiKey::UpdateFeatures => update_features(&mut c, v),
                ApiKey::SaslHandshake => sasl_handshake(&mut c, v),
                ApiKey::SaslAuthenticate => sasl_authenticate(&mut c, v),
                ApiKey::AlterUserScramCredentials => alter_user_scram_credentials(&mut c, v),
                ApiKey::DescribeUserScramCredentials => describe_user_scram_credentials(&mut c, v),
                ApiKey::CreateAcls => create_acls(&mut c, v),
                ApiKey::DescribeAcls => describe_acls(&mut c, v),
                ApiKey::DeleteAcls => delete_acls(&mut c, v),
                ApiKey::AlterClientQuotas => alter_client_quotas(&mut c, v),
                ApiKey::DescribeClientQuotas => describe_client_quotas(&mut c, v),
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

// ---- one function per API: a request valid at `v`, and what its answer must say ----

fn produce(c: &mut RawClient, v: i16, t: &mut Topic) {
    let value = format!("produced at v{v}");
    let offset = t.values.len() as i64;
    let batch = one_record(&value, timestamp_of(offset));
    let p = produce_to(c, v, by_name_or_id(v, &t.name, t.id), batch.clone());
    assert_eq!((p.error_code, p.base_offset), (0, offset), "{p:?}");
    t.values.push(value); // written: later checks expect it whatever fails below
    assert_eq!(p.log_append_time_ms, -1, "CreateTime topic");
    if v >= 5 {
        assert_eq!(p.log_start_offset, 0);
    }
    // A topic that does not exist: UNKNOWN_TOPIC_ID (100) by id, else (3) by name.
    let missing = by_name_or_id(v, &name("missing"), Uuid::new_v4());
    let p = produce_to(c, v, missing, batch);
    assert_eq!(p.error_code, if v >= 13 { 100 } else { 3 }, "{p:?}");
}

fn fetch(c: &mut RawClient, v: i16, t: &Topic) {
    // Both isolation levels see everything, as nothing here is transactional.
    for isolation_level in [0, 1] {
        let topic = by_name_or_id(v, &t.name, t.id);
        let p = fetch_from(c, v, topic, isolation_level);
        let end = t.values.len() as i64;
        let watermarks = (p.high_watermark, p.last_stable_offset);
        assert_eq!((p.error_code, watermarks), (0, (end, end)), "{p:?}");
        if v >= 5 {
            assert_eq!(p.log_start_offset, 0);
        }
        // The batches come back as produced: every record at its offset, decodable.
        let mut records = p.records.clone().expect("records");
        let sets = RecordBatchDecoder::decode_all(&mut records).expect("batches decode");
        let got = sets.into_iter().flat_map(|set| set.records).map(|r| {
            let value = String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap();
            (r.offset, r.timestamp, value)
        });
        let want = t.values.iter().enumerate().map(|(i, value)| {
            let offset = i as i64;
            (offset, timestamp_of(offset), value.clone())
        });
        assert_eq!(got.collect::<Vec<_>>(), want.collect::<Vec<_>>());
    }
    let missing = by_name_or_id(v, &name("missing"), Uuid::new_v4());
    let p = fetch_from(c, v, missing, 0);
    assert_eq!(p.error_code, if v >= 13 { 100 } else { 3 }, "{p:?}");
}

fn list_offsets(c: &mut RawClient, v: i16, t: &Topic) {
    let end = t.values.len() as i64;
    // (timestamp asked, offset and timestamp answered): -2 earliest, -1 latest,
    // a time between two records finds the later one, a time after all finds none.
    let mut cases = vec![
        (-2, 0, -1),
        (-1, end, -1),
        (timestamp_of(1) + 1, 2, timestamp_of(2)),
        (timestamp_of(end), -1, -1),
    ];
    if v >= 7 {
        cases.push((-3, end - 1, timestamp_of(end - 1))); // MAX_TIMESTAMP (KIP-734)
    }
    if v >= 8 {
        cases.push((-4, 0, -1)); // EARLIEST_LOCAL_TIMESTAMP (KIP-405)
    }
    for (timestamp, offset, found) in cases {
        let partition = ListOffsetsPartition::default().with_timestamp(timestamp);
        let topic = ListOffsetsTopic::default().with_name(t.name.clone());
        let topics = vec![topic.with_partitions(vec![partition])];
        let request = ListOffsetsRequest::default().with_replica_id(BrokerId(-1));
        let r = call!(c, ListOffsets, v, request.with_topics(topics));
        let p = &r.topics[0].partitions[0];
        let answer = (p.error_code, p.offset, p.timestamp);
        assert_eq!(answer, (0, offset, found), "timestamp {timestamp}: {p:?}");
    }
}

fn metadata(c: &mut RawClient, v: i16, t: &Topic) {
    // By name (without auto-creation where the request can say so), then all topics:
    // v0 asks for all with an empty list, later versions with null.
    let wanted = MetadataRequestTopic::default().with_name(Some(t.name.clone()));
    let mut by_name = MetadataRequest::default().with_topics(Some(vec![wanted]));
    if v >= 4 {
        by_name = by_name.with_allow_auto_topic_creation(false);
    }
    let all = MetadataRequest::default().with_topics((v == 0).then(Vec::new));
    for request in [by_name, all] {
        let r = call!(c, Metadata, v, request);
        assert_eq!(r.brokers.len(), 1);
        let listed = r.topics.iter().find(|x| x.name.as_ref() == Some(&t.name));
        let topic = listed.expect("the topic is listed");
        assert_eq!((topic.error_code, topic.partitions.len()), (0, 1));
        assert_eq!(topic.partitions[0].leader_id, r.brokers[0].node_id);
        // Topic ids are answered from v10.
        assert_eq!(topic.topic_id, if v >= 10 { t.id } else { Uuid::nil() });
    }
    // Authorized operations (v8+), when asked: with no authorizer, every topic
    // operation, READ (3) and WRITE (4) among them; i32::MIN means "not asked".
    if v >= 8 {
        let wanted = MetadataRequestTopic::default().with_name(Some(t.name.clone()));
        let asked = MetadataRequest::default()
            .with_topics(Some(vec![wanted]))
            .with_allow_auto_topic_creation(false)
            .with_include_topic_authorized_operations(true);
        let ops = call!(c, Metadata, v, asked).topics[0].topic_authorized_operations;
        assert!(
            ops != i32::MIN && ops & (1 << 3) != 0 && ops & (1 << 4) != 0,
            "v{v}: {ops:#b}"
        );
    }
}

fn api_versions(c: &mut RawClient, v: i16) {
    let mut request = ApiVersionsRequest::default();
    if v >= 3 {
        // Kafka checks these from v3 against [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
        request = request
            .with_client_software_name(StrBytes::from_static_str("protocol-versions"))
            .with_client_software_version(StrBytes::from_static_str("1.0"));
    }
    let r = call!(c, ApiVersions, v, request);
    assert_eq!(r.error_code, 0);
    let listed = r
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version));
    assert_advertised(&listed.collect::<Vec<_>>());
    // From v3 the gateway.version feature: levels 1 to 2 supported, 1 finalized.
    if v >= 3 {
        let supported = r
            .supported_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version, f.max_version));
        assert_eq!(supported.collect::<Vec<_>>(), [("gateway.version", 1, 2)]);
        let finalized = r
            .finalized_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version_level, f.max_version_level));
        assert_eq!(finalized.collect::<Vec<_>>(), [("gateway.version", 1, 1)]);
        assert!(r.finalized_features_epoch >= 0, "{r:?}");
    }
}

fn create_topics(c: &mut RawClient, v: i16) {
    let topic = format!("created-v{v}");
    let r = create(c, v, &topic, 3);
    assert_eq!((r.error_code, r.name.0.as_str()), (0, &*topic));
    if v >= 5 {
        assert_eq!((r.num_partitions, r.replication_factor), (3, 1));
    }
    let listed = describe(c, &topic);
    assert_eq!((listed.error_code, listed.partitions.len()), (0, 3));
    if v >= 7 {
        assert_eq!(r.topic_id, listed.topic_id, "topic id");
    }
    // Creating it again is TOPIC_ALREADY_EXISTS (36), answered at this version too.
    assert_eq!(create(c, v, &topic, 3).error_code, 36);
}

fn delete_topics(c: &mut RawClient, v: i16) {
    let topic = format!("deleted-v{v}");
    let id = create(c, 7, &topic, 1).topic_id;
    // v6 names topics by name or id (KIP-516); the id is what it adds, so use that.
    let request = match v {
        6.. => DeleteTopicsRequest::default()
            .with_topics(vec![DeleteTopicState::default().with_topic_id(id)]),
        _ => DeleteTopicsRequest::default().with_topic_names(vec![name(&topic)]),
    };
    let request = request.with_timeout_ms(5000);
    let r = call!(c, DeleteTopics, v, request.clone());
    let d = &r.responses[0];
    assert_eq!((d.error_code, &d.name), (0, &Some(name(&topic))));
    if v >= 6 {
        assert_eq!(d.topic_id, id);
    }
    assert_eq!(describe(c, &topic).error_code, 3, "still listed");
    // Again: UNKNOWN_TOPIC_ID (100) by id, UNKNOWN_TOPIC_OR_PARTITION (3) by name.
    let r = call!(c, DeleteTopics, v, request);
    assert_eq!(r.responses[0].error_code, if v >= 6 { 100 } else { 3 });
}

fn init_producer_id(c: &mut RawClient, v: i16, t: &mut Topic) {
    // No transactional id: an idempotent producer. (The default is Some(""), not null.)
    let request = InitProducerIdRequest::default().with_transactional_id(None);
    let request = request.with_transaction_timeout_ms(60_000);
    let r = call!(c, InitProducerId, v, request);
    assert_eq!(r.error_code, 0);
    assert!(r.producer_id.0 >= 0 && r.producer_epoch >= 0, "{r:?}");
    assert!(t.producer_ids.insert(r.producer_id.0), "given twice: {r:?}");
}

// ---- consumer groups: every version uses groups of its own, named after it -----------

fn find_coordinator(c: &mut RawClient, v: i16) {
    let b = broker(c);
    let this_node = (0, b.node_id, b.host, b.port);
    let keys = ["coordinated-a", "coordinated-b"];
    // Key type 0 (GROUP, the default) and, from v1 where the field exists, 1 (TRANSACTION).
    for key_type in [0, 1].into_iter().filter(|&k| k == 0 || v >= 1) {
        let request = FindCoordinatorRequest::default().with_key_type(key_type);
        // v0-3 ask for one key; v4+ for a batch, answered key by key (KIP-699).
        let answers = if v >= 4 {
            let request = request.with_coordinator_keys(keys.map(s).to_vec());
            let r = call!(c, FindCoordinator, v, request);
            let answered: Vec<&str> = r.coordinators.iter().map(|x| x.key.as_str()).collect();
            assert_eq!(answered, keys);
            let each = r.coordinators.into_iter();
            each.map(|x| (x.error_code, x.node_id, x.host, x.port))
                .collect()
        } else {
            let r = call!(c, FindCoordinator, v, request.with_key(s(keys[0])));
            vec![(r.error_code, r.node_id, r.host, r.port)]
        };
        for answer in answers {
            if key_type == 0 {
                // This gateway coordinates every group: it names itself.
                assert_eq!(answer, this_node, "GROUP key");
            } else {
                // No transaction coordinator here: an error and no node.
                assert!(answer.0 != 0 && answer.1 == BrokerId(-1), "{answer:?}");
            }
        }
    }
}

fn join_group(c: &mut RawClient, v: i16) {
    let group = format!("join-v{v}");
    let mut r = join_at(c, v, &group, &StrBytes::default(), None);
    if v >= 4 {
        // KIP-394: a member without an id is given one (MEMBER_ID_REQUIRED, 79) and
        // joins again with it.
        assert_eq!(r.error_code, 79, "{r:?}");
        assert!(!r.member_id.is_empty(), "no member id given: {r:?}");
        let id = r.member_id.clone();
        r = join_at(c, v, &group, &id, None);
        assert_eq!(r.member_id, id);
    }
    assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
    assert!(!r.member_id.is_empty());
    // Alone, it leads: it gets every member's metadata to compute the assignment.
    assert_eq!(r.leader, r.member_id);
    assert!(!r.skip_assignment);
    assert_eq!(r.protocol_name, Some(s(ASSIGNOR)));
    assert_eq!(r.protocol_type, (v >= 7).then(|| s(PROTOCOL_TYPE)));
    let members = r
        .members
        .iter()
        .map(|m| (&m.member_id, &m.group_instance_id));
    assert_eq!(members.collect::<Vec<_>>(), [(&r.member_id, &None)]);
    assert_eq!(r.members[0].metadata, subscription());
    if v >= 5 {
        // Static members (KIP-345) join in one step, and the leader sees their instance id.
        let static_group = format!("join-static-v{v}");
        let r = join_at(
            c,
            v,
            &static_group,
            &StrBytes::default(),
            Some("instance-1"),
        );
        assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
        assert_eq!(r.members[0].group_instance_id, Some(s("instance-1")));
        let m = Member {
            group: GroupId(s(&static_group)),
            id: r.member_id,
            generation: r.generation_id,
            assignment: Bytes::from_static(b"static"),
        };
        assert_eq!(sync_at(c, 5, &m).error_code, 0);
        // Restarted (same instance id, no member id) while Stable: a new member id in
        // the same generation, no rebalance. The leader it was learns it from v9 by
        // skip_assignment with the members (KIP-814); before v9 it is named the old
        // leader id, so it follows and keeps its assignment.
        let r = join_at(
            c,
            v,
            &static_group,
            &StrBytes::default(),
            Some("instance-1"),
        );
        assert_eq!((r.error_code, r.generation_id), (0, 1), "{r:?}");
        assert_ne!(r.member_id, m.id, "the old member id again");
        let told = (&r.leader, r.skip_assignment, r.members.len());
        let want = if v >= 9 {
            (&r.member_id, true, 1)
        } else {
            (&m.id, false, 0)
        };
        assert_eq!(told, want, "{r:?}");
    }
}

fn sync_group(c: &mut RawClient, v: i16) {
    let m = joined(c, &format!("sync-v{v}"));
    // The leader sends the assignment and gets its own back; once Stable, a sync
    // answers the same assignment again.
    for _ in 0..2 {
        let r = sync_at(c, v, &m);
        assert_eq!((r.error_code, &r.assignment), (0, &m.assignment), "{r:?}");
        if v >= 5 {
            let names = (r.protocol_type, r.protocol_name);
            assert_eq!(names, (Some(s(PROTOCOL_TYPE)), Some(s(ASSIGNOR))));
        }
    }
    let stale = Member {
        generation: m.generation - 1,
        ..m
    };
    assert_eq!(sync_at(c, v, &stale).error_code, 22, "ILLEGAL_GENERATION");
}

fn heartbeat(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("heartbeat-v{v}"));
    let beat = |c: &mut RawClient, generation: i32, id: &StrBytes| {
        let request = HeartbeatRequest::default()
            .with_group_id(m.group.clone())
            .with_generation_id(generation)
            .with_member_id(id.clone());
        call!(c, Heartbeat, v, request).error_code
    };
    assert_eq!(beat(c, m.generation, &m.id), 0);
    assert_eq!(beat(c, m.generation + 1, &m.id), 22, "ILLEGAL_GENERATION");
    assert_eq!(
        beat(c, m.generation, &s("stranger")),
        25,
        "UNKNOWN_MEMBER_ID"
    );
}

fn leave_group(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("leave-v{v}"));
    // v0-2 name one member; v3+ a list (KIP-345), answered member by member.
    let leave = |c: &mut RawClient| {
        let request = LeaveGroupRequest::default().with_group_id(m.group.clone());
        if v < 3 {
            return call!(c, LeaveGroup, v, request.with_member_id(m.id.clone())).error_code;
        }
        let mut who = MemberIdentity::default().with_member_id(m.id.clone());
        if v >= 5 {
            who = who.with_reason(Some(s("protocol-versions")));
        }
        let r = call!(c, LeaveGroup, v, request.with_members(vec![who]));
        assert_eq!(r.error_code, 0, "{r:?}");
        let answered = r
            .members
            .iter()
            .map(|x| (&x.member_id, &x.group_instance_id));
        assert_eq!(answered.collect::<Vec<_>>(), [(&m.id, &None)]);
        r.members[0].error_code
    };
    assert_eq!(leave(c), 0);
    // Gone: its heartbeat and a second leave answer UNKNOWN_MEMBER_ID (25).
    assert_eq!(heartbeat_error(c, &m), 25);
    assert_eq!(leave(c), 25);
}

fn describe_groups(c: &mut RawClient, v: i16) {
    let m = member(c, &format!("describe-v{v}"));
    let unknown = GroupId(s(&format!("describe-unknown-v{v}")));
    let request = DescribeGroupsRequest::default().with_groups(vec![m.group.clone(), unknown]);
    let r = call!(c, DescribeGroups, v, request);
    let [g, u] = &r.groups[..] else {
        panic!("two groups asked, {} answered", r.groups.len())
    };
    let protocol = (g.protocol_type.as_str(), g.protocol_data.as_str());
    let described = (g.error_code, &g.group_id, g.group_state.as_str(), protocol);
    let want = (0, &m.group, "Stable", (PROTOCOL_TYPE, ASSIGNOR));
    assert_eq!(described, want);
    let members = g.members.iter().map(|x| {
        let ids = (&x.member_id, &x.group_instance_id, x.client_id.as_str());
        (ids, &x.member_metadata, &x.member_assignment)
    });
    let want = ((&m.id, &None, "raw-test"), &subscription(), &m.assignment);
    assert_eq!(members.collect::<Vec<_>>(), [want]);
    assert!(g.members[0].client_host.contains("127.0.0.1"), "{g:?}");
    // An unknown group is Dead; from v6 it is also GROUP_ID_NOT_FOUND (69, KIP-1043).
    let code = if v >= 6 { 69 } else { 0 };
    assert_eq!(
        (u.error_code, u.group_state.as_str()),
        (code, "Dead"),
        "{u:?}"
    );
}

fn list_groups(c: &mut RawClient, v: i16, t: &Topic) {
    let live = format!("list-v{v}");
    member(c, &live);
    // A group known only by its committed offsets is listed too, Empty.
    let idle = format!("list-idle-v{v}");
    admin_commit(c, &idle, t, 1);
    // (group, protocol type, state from v4, type from v5) of these two groups only.
    let list = |c: &mut RawClient, states: &[&str], types: &[&str]| {
        let mut request = ListGroupsRequest::default();
        if v >= 4 {
            request = request.with_states_filter(states.iter().map(|x| s(x)).collect());
        }
        if v >= 5 {
            request = request.with_types_filter(types.iter().map(|x| s(x)).collect());
        }
        let r = call!(c, ListGroups, v, request);
        assert_eq!(r.error_code, 0);
        let mut listed: Vec<_> = (r.groups.into_iter())
            .filter(|g| [&live, &idle].contains(&&g.group_id.to_string()))
            .map(|g| {
                let group = (g.group_id.to_string(), g.protocol_type.to_string());
                (group, g.group_state.to_string(), g.group_type.to_string())
            })
            .collect();
        listed.sort();
        listed
    };
    let from = |since: i16, value: &str| if v >= since { value } else { "" }.to_string();
    let idle_listed = (
        (idle.clone(), String::new()),
        from(4, "Empty"),
        from(5, "classic"),
    );
    let live_group = (live.clone(), PROTOCOL_TYPE.to_string());
    let live_listed = (live_group, from(4, "Stable"), from(5, "classic"));
    let both = vec![idle_listed.clone(), live_listed.clone()];
    assert_eq!(list(c, &[], &[]), both);
    if v >= 4 {
        assert_eq!(
            list(c, &["Stable"], &[]),
            std::slice::from_ref(&live_listed)
        );
        assert_eq!(list(c, &["Empty"], &[]), [idle_listed]);
        assert!(list(c, &["Dead"], &[]).is_empty());
    }
    if v >= 5 {
        // Every group here is a classic group; none uses the KIP-848 consumer protocol.
        assert_eq!(list(c, &[], &["classic"]), both);
        assert!(list(c, &[], &["consumer"]).is_empty());
    }
}

fn delete_groups(c: &mut RawClient, v: i16, t: &Topic) {
    let idle = GroupId(s(&format!("delete-v{v}")));
    admin_commit(c, &idle, t, 3);
    let busy = member(c, &format!("delete-busy-v{v}")).group;
    let unknown = GroupId(s(&format!("delete-unknown-v{v}")));
    let delete = |c: &mut RawClient, names: Vec<GroupId>| {
        let r = call!(
            c,
            DeleteGroups,
            v,
            DeleteGroupsRequest::default().with_groups_names(names)
        );
        let results = r.results.into_iter();
        results
            .map(|x| (x.group_id, x.error_code))
            .collect::<Vec<_>>()
    };
    // An empty group goes, with its offsets; one with members stays (NON_EMPTY_GROUP,
    // 68); an unknown one is GROUP_ID_NOT_FOUND (69).
    let names = vec![idle.clone(), busy.clone(), unknown.clone()];
    let want = [(idle.clone(), 0), (busy, 68), (unknown, 69)];
    assert_eq!(delete(c, names), want);
    assert_eq!(
        committed(c, &idle, t),
        (-1, -1, String::new()),
        "offsets kept"
    );
    assert_eq!(delete(c, vec![idle.clone()]), [(idle, 69)]);
}

fn offset_commit(c: &mut RawClient, v: i16, t: &Topic) {
    let m = member(c, &format!("commit-v{v}"));
    let commit = |c: &mut RawClient, generation: i32, id: &StrBytes, topic: &TopicName| {
        let metadata = format!("committed at v{v}");
        commit_at(
            c,
            v,
            &m.group,
            (generation, id),
            topic,
            (100 + v as i64, 7),
            &metadata,
        )
    };
    assert_eq!(commit(c, m.generation, &m.id, &t.name), 0);
    // Stored as sent; the leader epoch only from v6, where the request has one.
    let epoch = if v >= 6 { 7 } else { -1 };
    let want = (100 + v as i64, epoch, format!("committed at v{v}"));
    assert_eq!(committed(c, &m.group, t), want);
    // Checked like Kafka's validateOffsetCommit: a stale generation is ILLEGAL_GENERATION
    // (22); an unknown member, or none while the group has members, UNKNOWN_MEMBER_ID (25).
    assert_eq!(commit(c, m.generation - 1, &m.id, &t.name), 22);
    assert_eq!(commit(c, m.generation, &s("stranger"), &t.name), 25);
    assert_eq!(commit(c, -1, &StrBytes::default(), &t.name), 25);
    // A topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (3).
    assert_eq!(commit(c, m.generation, &m.id, &name("missing")), 3);
}

fn offset_fetch(c: &mut RawClient, v: i16, t: &Topic) {
    let (group, nothing) = (format!("fetch-v{v}"), format!("fetch-nothing-v{v}"));
    let admin = (-1, &StrBytes::default());
    let code = commit_at(
        c,
        9,
        &GroupId(s(&group)),
        admin,
        &t.name,
        (42, 4),
        "fetched",
    );
    assert_eq!(code, 0);
    // (topic, partition, offset, leader epoch from v5, metadata, error code)
    let stored = (
        t.name.clone(),
        0,
        42,
        if v >= 5 { 4 } else { -1 },
        s("fetched"),
        0,
    );
    let missing = (t.name.clone(), 0, -1, -1, s(""), 0); // no entry: -1, no error
    let partition_0 = Some(vec![(t.name.clone(), vec![0])]);
    // (group, topics asked, what it reads): partition 0 by name; from v2 a null list,
    // which reads every partition the group has an offset for.
    let mut cases = vec![
        (&group, partition_0.clone(), vec![stored.clone()]),
        (&nothing, partition_0, vec![missing]),
    ];
    if v >= 2 {
        cases.push((&group, None, vec![stored]));
        cases.push((&nothing, None, vec![]));
    }
    if v >= 8 {
        // v8+: all groups in one request, answered group by group in order.
        let groups = cases.iter().map(|(g, topics, _)| {
            let topics = topics.clone().map(|ts| {
                let ts = ts.into_iter().map(|(name, ps)| {
                    let t = OffsetFetchRequestTopics::default().with_name(name);
                    t.with_partition_indexes(ps)
                });
                ts.collect()
            });
            let group = OffsetFetchRequestGroup::default().with_group_id(GroupId(s(g)));
            group.with_topics(topics)
        });
        let request = OffsetFetchRequest::default().with_groups(groups.collect());
        let r = call!(c, OffsetFetch, v, request.with_require_stable(true));
        assert_eq!(r.groups.len(), cases.len(), "{r:?}");
        for (answer, (g, _, want)) in r.groups.iter().zip(&cases) {
            assert_eq!(
                (answer.group_id.as_str(), answer.error_code),
                (g.as_str(), 0)
            );
            let read = answer.topics.iter().flat_map(|t| {
                t.partitions.iter().map(|p| {
                    let metadata = p.metadata.clone().unwrap_or_default();
                    let offset = (p.committed_offset, p.committed_leader_epoch);
                    (
                        t.name.clone(),
                        p.partition_index,
                        offset.0,
                        offset.1,
                        metadata,
                        p.error_code,
                    )
                })
            });
            assert_eq!(&read.collect::<Vec<_>>(), want, "group {g}");
        }
        return;
    }
    for (g, topics, want) in &cases {
        let topics = topics.clone().map(|ts| {
            let ts = ts.into_iter().map(|(name, ps)| {
                let t = OffsetFetchRequestTopic::default().with_name(name);
                t.with_partition_indexes(ps)
            });
            ts.collect()
        });
        let request = OffsetFetchRequest::default().with_group_id(GroupId(s(g)));
        let mut request = request.with_topics(topics);
        if v >= 7 {
            request = request.with_require_stable(true);
        }
        let r = call!(c, OffsetFetch, v, request);
        assert_eq!(r.error_code, 0, "{r:?}");
        let read = r.topics.iter().flat_map(|t| {
            t.partitions.iter().map(|p| {
                let metadata = p.metadata.clone().unwrap_or_default();
                let offset = (p.committed_offset, p.committed_leader_epoch);
                (
                    t.name.clone(),
                    p.partition_index,
                    offset.0,
                    offset.1,
                    metadata,
                    p.error_code,
                )
            })
        });
        assert_eq!(&read.collect::<Vec<_>>(), want, "group {g}");
    }
}

fn offset_delete(c: &mut RawClient, v: i16, t: &Topic) {
    let group = GroupId(s(&format!("offset-delete-v{v}")));
    admin_commit(c, &group, t, 9);
    let partition = OffsetDeleteRequestPartition::default().with_partition_index(0);
    let topic = OffsetDeleteRequestTopic::default().with_name(t.name.clone());
    let topics = vec![topic.with_partitions(vec![partition])];
    let request = OffsetDeleteRequest::default().with_topics(topics);
    let r = call!(
        c,
        OffsetDelete,
        v,
        request.clone().with_group_id(group.clone())
    );
    assert_eq!(r.error_code, 0, "{r:?}");
    let answered = r.topics.iter().flat_map(|x| {
        let ps = x.partitions.iter();
        ps.map(|p| (x.name.clone(), p.partition_index, p.error_code))
    });
    assert_eq!(answered.collect::<Vec<_>>(), [(t.name.clone(), 0, 0)]);
    assert_eq!(
        committed(c, &group, t),
        (-1, -1, String::new()),
        "not deleted"
    );
    // A group with neither members nor offsets: GROUP_ID_NOT_FOUND (69).
    let unknown = GroupId(s(&format!("offset-delete-unknown-v{v}")));
    let r = call!(c, OffsetDelete, v, request.with_group_id(unknown));
    assert_eq!(r.error_code, 69, "{r:?}");
}

// ---- configurations ------------------------------------------------------------------

fn describe_configs(c: &mut RawClient, v: i16, t: &Topic) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let resource = |kind: i8, name: &str| {
        DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configuration_keys(Some(vec![s("retention.ms"), s("num.partitions")]))
    };
    let mut request = DescribeConfigsRequest::default()
        .with_resources(vec![
            resource(2, &t.name),
            resource(4, "0"),
            resource(2, "missing"),
        ])
        .with_include_synonyms(true);
    if v >= 3 {
        request = request.with_include_documentation(true);
    }
    let r = call!(c, DescribeConfigs, v, request);
    let [topic, broker, missing] = &r.results[..] else {
        panic!("three resources asked, {} answered", r.results.len())
    };
    assert_eq!(
        (topic.error_code, &topic.error_message),
        (0, &None),
        "{topic:?}"
    );
    // The versions topic was created with retention.ms=86400000 (LONG, type 5).
    let [e] = &topic.configs[..] else {
        panic!("{topic:?}")
    };
    let shown = (
        e.name.as_str(),
        e.value.as_deref(),
        e.config_source,
        e.read_only,
    );
    assert_eq!(shown, ("retention.ms", Some("86400000"), 1, false));
    let sources: Vec<i8> = e.synonyms.iter().map(|x| x.source).collect();
    assert_eq!(sources, [1, 5], "topic value, then the broker default");
    let documented = e.documentation.as_deref().is_some_and(|d| !d.is_empty());
    let typed = (e.config_type, documented);
    assert_eq!(typed, if v >= 3 { (5, true) } else { (0, false) });
    let [n] = &broker.configs[..] else {
        panic!("{broker:?}")
    };
    assert_eq!(
        (n.name.as_str(), n.value.as_deref()),
        ("num.partitions", Some("1"))
    );
    assert_eq!(missing.error_code, 3, "{missing:?}");
}

/// retention.ms of a topic (DescribeConfigs v4): its value and source.
fn retention(c: &mut RawClient, topic: &str) -> (String, i8) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let resource = DescribeConfigsResource::default()
        .with_resource_type(2)
        .with_resource_name(s(topic))
        .with_configuration_keys(Some(vec![s("retention.ms")]));
    let request = DescribeConfigsRequest::default().with_resources(vec![resource]);
    let r = call!(c, DescribeConfigs, 4, request);
    let e = &r.results[0].configs[0];
    (
        e.value.as_deref().unwrap_or_default().to_string(),
        e.config_source,
    )
}

fn alter_configs(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let topic = format!("altered-v{v}");
    assert_eq!(create(c, 7, &topic, 1).error_code, 0);
    let resource = |name: &str| {
        let config = AlterableConfig::default()
            .with_name(s("retention.ms"))
            .with_value(Some(s("1000")));
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s(name))
            .with_configs(vec![config])
    };
    let request =
        AlterConfigsRequest::default().with_resources(vec![resource(&topic), resource("missing")]);
    let r = call!(c, AlterConfigs, v, request);
    let codes: Vec<_> = r
        .responses
        .iter()
        .map(|x| (x.resource_name.as_str(), x.error_code))
        .collect();
    assert_eq!(codes, [(topic.as_str(), 0), ("missing", 3)], "{r:?}");
    assert_eq!(retention(c, &topic), ("1000".into(), 1));
}

fn incremental_alter_configs(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let topic = format!("incremental-v{v}");
    assert_eq!(create(c, 7, &topic, 1).error_code, 0);
    // DELETE (1) takes the topic's retention.ms back to the default.
    let config = AlterableConfig::default()
        .with_name(s("retention.ms"))
        .with_config_operation(1)
        .with_value(None);
    let resource = AlterConfigsResource::default()
        .with_resource_type(2)
        .with_resource_name(s(&topic))
        .with_configs(vec![config]);
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
    let r = call!(c, IncrementalAlterConfigs, v, request);
    assert_eq!(
        (r.responses[0].error_code, &r.responses[0].error_message),
        (0, &None),
        "{r:?}"
    );
    assert_eq!(retention(c, &topic), ("604800000".into(), 5));
}

fn update_features(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
    let update = |feature: &str, level: i16| {
        FeatureUpdateKey::default()
            .with_feature(s(feature))
            .with_max_version_level(level)
    };
    // v0 has no validate_only: finalizing the level in force changes nothing. Later
    // versions check an upgrade to 2 without making it.
    let (level, validate_only) = if v == 0 { (1, false) } else { (2, true) };
    let updates = vec![
        update("gateway.version", level),
        update("metadata.version", 20),
    ];
    let request = UpdateFeaturesRequest::default()
        .with_timeout_ms(5000)
        .with_feature_updates(updates)
        .with_validate_only(validate_only);
    let r = call!(c, UpdateFeatures, v, request);
    if v >= 2 {
        // The top-level error: the unknown feature (INVALID_UPDATE_VERSION, 95).
        assert_eq!((r.error_code, r.results.len()), (95, 0), "{r:?}");
    } else {
        let answered: Vec<_> = r
            .results
            .iter()
            .map(|x| (x.feature.as_str(), x.error_code))
            .collect();
        assert_eq!(
            answered,
            [("gateway.version", 0), ("metadata.version", 95)],
            "{r:?}"
        );
    }
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("protocol-versions"))
        .with_client_software_version(s("1.0"));
    let levels = call!(c, ApiVersions, 3, request).finalized_features;
    assert_eq!(
        levels[0].max_version_level, 1,
        "validate_only changed the level"
    );
}

/// On a PLAINTEXT listener Kafka's KafkaApis answers the SASL requests with
/// ILLEGAL_SASL_STATE (34) and keeps the connection (tests/sasl.rs: SASL listeners).
fn sasl_handshake(c: &mut RawClient, v: i16) {
    let request = SaslHandshakeRequest::default().with_mechanism(s("SCRAM-SHA-256"));
    let r = call!(c, SaslHandshake, v, request);
    assert_eq!(r.error_code, 34, "{r:?}");
}

fn sasl_authenticate(c: &mut RawClient, v: i16) {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"x"));
    let r = call!(c, SaslAuthenticate, v, request);
    assert_eq!(r.error_code, 34, "{r:?}");
    assert_eq!(
        r.error_message.as_deref(),
        Some("SaslAuthenticate request received after successful authentication")
    );
}

/// Upserts a SCRAM-SHA-512 credential for `user-v{v}`; DescribeUserScramCredentials reads it back.
fn alter_user_scram_credentials(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    let user = format!("user-v{v}");
    let upsertion = ScramCredentialUpsertion::default()
        .with_name(s(&user))
        .with_mechanism(2)
        .with_iterations(4096)
        .with_salt(Bytes::from_static(b"salt"))
        .with_salted_password(Bytes::from(vec![7; 64]));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let r = call!(c, AlterUserScramCredentials, v, request);
    let results: Vec<_> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code))
        .collect();
    assert_eq!(results, [(user.as_str(), 0)], "{r:?}");
    let described = described(c, &user);
    assert_eq!(described, Ok(vec![(2, 4096)]));
}

fn describe_user_scram_credentials(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    // A user of its own, whichever API the table lists first.
    let user = format!("described-v{v}");
    let upsertion = ScramCredentialUpsertion::default()
        .with_name(s(&user))
        .with_mechanism(1)
        .with_iterations(4096)
        .with_salt(Bytes::from_static(b"salt"))
        .with_salted_password(Bytes::from(vec![7; 32]));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let r = call!(c, AlterUserScramCredentials, 0, request);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let users = [user.as_str(), "nobody"].map(|u| UserName::default().with_name(s(u)));
    let request = DescribeUserScramCredentialsRequest::default().with_users(Some(users.to_vec()));
    let r = call!(c, DescribeUserScramCredentials, v, request);
    let results: Vec<_> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code, x.credential_infos.len()))
        .collect();
    // RESOURCE_NOT_FOUND (91) for a user without credentials.
    assert_eq!(results, [(user.as_str(), 0, 1), ("nobody", 91, 0)], "{r:?}");
}

/// The binding each ACL version test makes: READ on topics prefixed `acl-v<v>-`.
fn acl_creation(v: i16) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(s(&format!("acl-v{v}-")))
        .with_resource_pattern_type(4)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(3)
        .with_permission_type(3)
}

/// Kafka's filter for the topic `acl-v<v>-x`: every pattern that applies to it.
fn acls_of(v: i16) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(s(&format!("acl-v{v}-x"))))
        .with_pattern_type_filter(2)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1)
}

/// A request setting (or, with `remove`, removing) `key` of client id `quota-v<v>`.
fn quota_alteration(v: i16, key: &str, remove: bool) -> AlterClientQuotasRequest {
    use alter_client_quotas_request::{EntityData, EntryData, OpData};
    let entity = EntityData::default()
        .with_entity_type(s("client-id"))
        .with_entity_name(Some(s(&format!("quota-v{v}"))));
    let op = OpData::default()
        .with_key(s(key))
        .with_value(4096.0)
        .with_remove(remove);
    AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
        .with_entity(vec![entity])
        .with_ops(vec![op])])
}

/// The quotas of client id `quota-v<id>`, described at version `v`: (key, value) pairs.
fn quotas_of(c: &mut RawClient, id: i16, v: i16) -> Vec<(String, f64)> {
    use describe_client_quotas_request::ComponentData;
    let component = ComponentData::default()
        .with_entity_type(s("client-id"))
        .with_match_type(0)
        .with_match(Some(s(&format!("quota-v{id}"))));
    let request = DescribeClientQuotasRequest::default().with_components(vec![component]);
    let r = call!(c, DescribeClientQuotas, v, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    let entries = r.entries.unwrap_or_default();
    entries
        .iter()
        .flat_map(|e| &e.values)
        .map(|x| (x.key.to_string(), x.value))
        .collect()
}

fn alter_client_quotas(c: &mut RawClient, v: i16) {
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "producer_byte_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(quotas_of(c, v, 1), [("producer_byte_rate".into(), 4096.0)]);
    // An unknown key: INVALID_REQUEST (42), nothing changed.
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "bogus_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 42, "{r:?}");
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "producer_byte_rate", true)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(quotas_of(c, v, 1), []);
}

fn describe_client_quotas(c: &mut RawClient, v: i16) {
    let r = call!(
        c,
        AlterClientQuotas,
        1,
        quota_alteration(v + 10, "consumer_byte_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(
        quotas_of(c, v + 10, v),
        [("consumer_byte_rate".into(), 4096.0)]
    );
    // An unknown entity type in the filter: UNSUPPORTED_VERSION (35), as Kafka answers.
    let component = describe_client_quotas_request::ComponentData::default()
        .with_entity_type(s("group"))
        .with_match_type(2);
    let request = DescribeClientQuotasRequest::default().with_components(vec![component]);
    let r = call!(c, DescribeClientQuotas, v, request);
    assert_eq!((r.error_code, r.entries), (35, None));
}

fn create_acls(c: &mut RawClient, v: i16) {
    let bad = acl_creation(v).with_principal(s("alice"));
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v), bad]);
    let r = call!(c, CreateAcls, v, request);
    let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
    // The unparsable principal: INVALID_REQUEST (42), the other one stored.
    assert_eq!(codes, [0, 42], "{r:?}");
    assert_eq!(
        r.results[0].error_message, None,
        "success carries no message"
    );
    let found = call!(c, DescribeAcls, 1, acls_of(v)).resources;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].resource_name.as_str(), format!("acl-v{v}-"));
}

fn describe_acls(c: &mut RawClient, v: i16) {
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v + 10)]);
    assert_eq!(call!(c, CreateAcls, 1, request).results[0].error_code, 0);
    let r = call!(c, DescribeAcls, v, acls_of(v + 10));
    assert_eq!(r.error_code, 0, "{r:?}");
    let found: Vec<_> = r
        .resources
        .iter()
        .flat_map(|res| res.acls.iter().map(move |a| (res, a)))
        .map(|(res, a)| {
            let resource = (
                res.resource_type,
                res.resource_name.to_string(),
                res.pattern_type,
            );
            (
                resource,
                a.principal.to_string(),
                a.host.to_string(),
                a.operation,
                a.permission_type,
            )
        })
        .collect();
    let want = (
        (2, format!("acl-v{}-", v + 10), 4),
        "User:alice".into(),
        "*".into(),
        3,
        3,
    );
    assert_eq!(found, [want]);
    // An unknown pattern type in the filter: INVALID_REQUEST.
    let r = call!(c, DescribeAcls, v, acls_of(v).with_pattern_type_filter(9));
    assert_eq!(r.error_code, 42, "{r:?}");
}

fn delete_acls(c: &mut RawClient, v: i16) {
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v + 20)]);
    assert_eq!(call!(c, CreateAcls, 1, request).results[0].error_code, 0);
    let filter = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(s(&format!("acl-v{}-", v + 20))))
        .with_pattern_type_filter(4)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let request = DeleteAclsRequest::default().with_filters(vec![filter.clone(), filter]);
    let r = call!(c, DeleteAcls, v, request);
    let matched: Vec<usize> = r
        .filter_results
        .iter()
        .map(|f| f.matching_acls.len())
        .collect();
    // Both filters match the binding; it is deleted once.
    assert_eq!(matched, [1, 1], "{r:?}");
    assert!(call!(c, DescribeAcls, 1, acls_of(v + 20))
        .resources
        .is_empty());
}

// ---- helpers -------------------------------------------------------------------------

/// A user's SCRAM credentials as (mechanism, iterations), or the error code.
fn described(c: &mut RawClient, user: &str) -> Result<Vec<(i8, i32)>, i16> {
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    let request = DescribeUserScramCredentialsRequest::default()
        .with_users(Some(vec![UserName::default().with_name(s(user))]));
    let r = call!(c, DescribeUserScramCredentials, 0, request);
    let result = &r.results[0];
    if result.error_code != 0 {
        return Err(result.error_code);
    }
    Ok(result
        .credential_infos
        .iter()
        .map(|i| (i.mechanism, i.iterations))
        .collect())
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

/// Metadata v12 for one topic, without creating it.
fn describe(c: &mut RawClient, topic: &str) -> MetadataResponseTopic {
    let wanted = MetadataRequestTopic::default().with_name(Some(name(topic)));
    let request = MetadataRequest::default().with_topics(Some(vec![wanted]));
    let request = request.with_allow_auto_topic_creation(false);
    let r = call!(c, Metadata, 12, request);
    r.topics.into_iter().next().expect("one topic")
}

/// Produce v13 and Fetch v13+ name topics by id (KIP-516); earlier versions by name.
fn by_name_or_id(v: i16, name: &TopicName, id: Uuid) -> (Option<TopicName>, Uuid) {
    if v >= 13 {
        (None, id)
    } else {
        (Some(name.clone()), Uuid::nil())
    }
}

fn produce_to(
    c: &mut RawClient,
    v: i16,
    (name, id): (Option<TopicName>, Uuid),
    batch: Bytes,
) -> PartitionProduceResponse {
    let data = PartitionProduceData::default().with_records(Some(batch));
    let topic = TopicProduceData::default().with_name(name.clone().unwrap_or_default());
    let topic = topic.with_topic_id(id).with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000);
    let r = call!(c, Produce, v, request.with_topic_data(vec![topic]));
    let answered = (r.responses[0].name.clone(), r.responses[0].topic_id);
    assert_eq!(answered, (name.unwrap_or_default(), id));
    r.responses[0].partition_responses[0].clone()
}

/// A full fetch (no session: id 0, epoch -1) of partition 0 from offset 0.
fn fetch_from(
    c: &mut RawClient,
    v: i16,
    (name, id): (Option<TopicName>, Uuid),
    isolation_level: i8,
) -> PartitionData {
    let partition = FetchPartition::default().with_partition_max_bytes(1 << 20);
    let topic = FetchTopic::default().with_topic(name.clone().unwrap_or_default());
    let topic = topic.with_topic_id(id).with_partitions(vec![partition]);
    let request = FetchRequest::default().with_isolation_level(isolation_level);
    let request = request.with_min_bytes(1).with_topics(vec![topic]);
    let r = call!(c, Fetch, v, request);
    assert_eq!(r.error_code, 0);
    let answered = (r.responses[0].topic.clone(), r.responses[0].topic_id);
    assert_eq!(answered, (name.unwrap_or_default(), id));
    r.responses[0].partitions[0].clone()
}

/// Record i of the test topic was written at this time (one second apart).
fn timestamp_of(offset: i64) -> i64 {
    1_700_000_000_000 + 1000 * offset
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

/// The gateway's address as Metadata lists it: what FindCoordinator must answer.
struct Broker {
    node_id: BrokerId,
    host: StrBytes,
    port: i32,
}

fn broker(c: &mut RawClient) -> Broker {
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(Some(Vec::new()))
    );
    let b = r.brokers.into_iter().next().expect("one broker");
    Broker {
        node_id: b.node_id,
        host: b.host,
        port: b.port,
    }
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

/// Heartbeat v4 of `m`: its error code.
fn heartbeat_error(c: &mut RawClient, m: &Member) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(m.group.clone())
        .with_generation_id(m.generation)
        .with_member_id(m.id.clone());
    call!(c, Heartbeat, 4, request).error_code
}

/// OffsetCommit at `v` of partition 0 as `(generation, member)`, with `(offset, leader
/// epoch)` (the epoch only from v6); the partition's error code.
fn commit_at(
    c: &mut RawClient,
    v: i16,
    group: &GroupId,
    (generation, member): (i32, &StrBytes),
    topic: &TopicName,
    (offset, epoch): (i64, i32),
    metadata: &str,
) -> i16 {
    let mut p = OffsetCommitRequestPartition::default()
        .with_committed_offset(offset)
        .with_committed_metadata(Some(s(metadata)));
    if v >= 6 {
        p = p.with_committed_leader_epoch(epoch);
    }
    let t = OffsetCommitRequestTopic::default().with_name(topic.clone());
    let request = OffsetCommitRequest::default()
        .with_group_id(group.clone())
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(member.clone())
        .with_topics(vec![t.with_partitions(vec![p])]);
    let r = call!(c, OffsetCommit, v, request);
    let answered = r.topics.iter().flat_map(|x| {
        let ps = x.partitions.iter();
        ps.map(|p| (x.name.clone(), p.partition_index))
    });
    assert_eq!(answered.collect::<Vec<_>>(), [(topic.clone(), 0)]);
    r.topics[0].partitions[0].error_code
}

/// An admin tool's commit (generation -1, no member) of partition 0, at v9.
fn admin_commit(c: &mut RawClient, group: &str, t: &Topic, offset: i64) {
    let group = GroupId(s(group));
    let admin = (-1, &StrBytes::default());
    let code = commit_at(c, 9, &group, admin, &t.name, (offset, 4), "admin");
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

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn one_record(value: &str, timestamp: i64) -> Bytes {
    batch(
        &[record(Some(b"k"), value.as_bytes(), timestamp)],
        Compression::None,
    )
}

support::on_every_store!(every_served_version_of_every_api_answers_as_kafka_does,);
