//! What ApiVersions must advertise, pinned here apart from the gateway's own table
//! (`iggy_kafka_actors::protocol::versions::SERVED`, from which its answer is built) and from the
//! `kafka-protocol` crate: the key, name and version range of every API the gateway
//! serves, as literal numbers. A range narrowed or widened in SERVED, an API added or
//! dropped there, fails the tests that compare an ApiVersions answer with this table,
//! and every "all versions" loop walks this table, not SERVED.

/// One API: its key and name (as `kafka_protocol::messages::ApiKey` spells it, which
/// the tests check against the key) and the versions the gateway serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Api {
    pub key: i16,
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
}

const fn api(key: i16, name: &'static str, min: i16, max: i16) -> Api {
    Api {
        key,
        name,
        min,
        max,
    }
}

/// Every API the gateway serves, with Kafka 4.4's range of versions (from Kafka 4's
/// minimum, KIP-896, to 4.4's newest), which the gateway serves whole. Where it serves
/// less than Kafka 4.4, the entry holds the range served and a comment gives Kafka
/// 4.4's and the reason (`docs/COMPATIBILITY.md`); no range is narrower today.
/// Not served at all (not advertised, so not listed): share groups and the others
/// `docs/COMPATIBILITY.md` names.
pub const SERVED: &[Api] = &[
    api(0, "Produce", 3, 13),
    api(1, "Fetch", 4, 18),
    api(2, "ListOffsets", 1, 11),
    api(3, "Metadata", 0, 13),
    api(8, "OffsetCommit", 2, 10),
    api(9, "OffsetFetch", 1, 10),
    api(10, "FindCoordinator", 0, 6),
    api(11, "JoinGroup", 0, 9),
    api(12, "Heartbeat", 0, 4),
    api(13, "LeaveGroup", 0, 5),
    api(14, "SyncGroup", 0, 5),
    api(15, "DescribeGroups", 0, 6),
    api(16, "ListGroups", 0, 5),
    api(17, "SaslHandshake", 0, 1),
    api(18, "ApiVersions", 0, 5),
    api(19, "CreateTopics", 2, 7),
    api(20, "DeleteTopics", 1, 6),
    api(21, "DeleteRecords", 0, 2),
    api(22, "InitProducerId", 0, 5),
    api(23, "OffsetForLeaderEpoch", 2, 4),
    api(24, "AddPartitionsToTxn", 0, 5),
    api(25, "AddOffsetsToTxn", 0, 4),
    api(26, "EndTxn", 0, 5),
    api(27, "WriteTxnMarkers", 1, 2),
    api(28, "TxnOffsetCommit", 0, 6),
    api(29, "DescribeAcls", 1, 3),
    api(30, "CreateAcls", 1, 3),
    api(31, "DeleteAcls", 1, 3),
    api(32, "DescribeConfigs", 1, 4),
    api(33, "AlterConfigs", 0, 2),
    api(35, "DescribeLogDirs", 1, 5),
    api(36, "SaslAuthenticate", 0, 2),
    api(37, "CreatePartitions", 0, 3),
    api(42, "DeleteGroups", 0, 3),
    api(43, "ElectLeaders", 0, 2),
    api(44, "IncrementalAlterConfigs", 0, 1),
    api(45, "AlterPartitionReassignments", 0, 1),
    api(46, "ListPartitionReassignments", 0, 0),
    api(47, "OffsetDelete", 0, 0),
    api(48, "DescribeClientQuotas", 0, 1),
    api(49, "AlterClientQuotas", 0, 1),
    api(50, "DescribeUserScramCredentials", 0, 0),
    api(51, "AlterUserScramCredentials", 0, 0),
    api(57, "UpdateFeatures", 0, 2),
    api(60, "DescribeCluster", 0, 2),
    api(75, "DescribeTopicPartitions", 0, 0),
    api(61, "DescribeProducers", 0, 0),
    api(65, "DescribeTransactions", 0, 0),
    api(66, "ListTransactions", 0, 2),
    api(68, "ConsumerGroupHeartbeat", 0, 1),
    api(69, "ConsumerGroupDescribe", 0, 1),
];

/// The pinned entry of API `key`.
pub fn served(key: i16) -> Option<Api> {
    SERVED.iter().copied().find(|a| a.key == key)
}

/// Checks an ApiVersions answer's list, (key, min, max) in the order answered, against
/// [`SERVED`]: every API once, each with exactly the pinned range, nothing else.
pub fn assert_advertised(listed: &[(i16, i16, i16)]) {
    let mut sorted = listed.to_vec();
    sorted.sort();
    let before = sorted.len();
    sorted.dedup_by_key(|(key, ..)| *key);
    assert_eq!(sorted.len(), before, "an API listed twice: {listed:?}");
    let mut differences = Vec::new();
    for a in SERVED {
        match sorted.iter().find(|(key, ..)| *key == a.key) {
            None => differences.push(format!("{} ({}) missing", a.name, a.key)),
            Some(&(_, min, max)) if (min, max) != (a.min, a.max) => differences.push(format!(
                "{} ({}) advertised {min}-{max}, pinned {}-{}",
                a.name, a.key, a.min, a.max
            )),
            Some(_) => {}
        }
    }
    for &(key, min, max) in &sorted {
        if served(key).is_none() {
            differences.push(format!("key {key} ({min}-{max}) advertised, not pinned"));
        }
    }
    assert!(
        differences.is_empty(),
        "ApiVersions differs from tests/support/versions.rs:\n{}",
        differences.join("\n")
    );
}

/// Each pinned key is the `ApiKey` of its name, so the key numbers here are checked
/// by a second, independent spelling of every entry.
pub fn api_key(a: &Api) -> kafka_protocol::messages::ApiKey {
    let key = kafka_protocol::messages::ApiKey::try_from(a.key)
        .unwrap_or_else(|_| panic!("{} ({}) is no Kafka API key", a.name, a.key));
    assert_eq!(format!("{key:?}"), a.name, "key {}", a.key);
    key
}
