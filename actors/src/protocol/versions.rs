//! Which APIs are served, and which versions of each: from Kafka 4's minimum
//! (KIP-896) to Kafka 4.4's newest (the vendored `kafka-protocol` is generated from
//! Kafka 4.4's message specs, `vendor/README.md`). ApiVersions advertises exactly
//! this list, and the decoder refuses anything outside it.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;

/// Every API served, with its oldest and newest version served.
pub const SERVED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 11),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::ApiVersions, 0, 5),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 5),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 6),
    // Kafka 4 serves WriteTxnMarkers from v1 only (KIP-896).
    (ApiKey::WriteTxnMarkers, 1, 2),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 3),
    // KIP-848's consumer group protocol; v1 carries SubscribedTopicRegex.
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::OffsetCommit, 2, 10),
    (ApiKey::OffsetFetch, 1, 10),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::UpdateFeatures, 0, 2),
    (ApiKey::DescribeCluster, 0, 2),
    // SASL: served by the connection's `sasl::Session`, not `route`. After SaslHandshake
    // v0 (pre-KIP-152 clients) the tokens come as bare frames, not SaslAuthenticate.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
];

pub fn served_versions(key: ApiKey) -> Option<VersionRange> {
    SERVED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, min, max)| VersionRange { min, max })
}

/// The versions from which a request or its answer changes shape in a way a handler
/// follows (Kafka's message specs), named by API: one table, so no handler retypes a
/// version number.
pub mod since {
    /// AddOffsetsToTxn: an old epoch is PRODUCER_FENCED, not INVALID_PRODUCER_EPOCH.
    pub const ADD_OFFSETS_TO_TXN_PRODUCER_FENCED: i16 = 2;
    /// AddPartitionsToTxn: transactions come batched, from brokers (KIP-890).
    pub const ADD_PARTITIONS_TO_TXN_BATCHED: i16 = 4;
    /// AddPartitionsToTxn: an old epoch is PRODUCER_FENCED, not INVALID_PRODUCER_EPOCH.
    pub const ADD_PARTITIONS_TO_TXN_PRODUCER_FENCED: i16 = 2;
    /// ApiVersions: client software name and version checked (KIP-511).
    pub const API_VERSIONS_CLIENT_INFO: i16 = 3;
    /// ApiVersions: the cluster and node the client means to reach, checked
    /// (REBOOTSTRAP_REQUIRED, KIP-1242).
    pub const API_VERSIONS_NODE_CHECK: i16 = 5;
    /// CreateTopics: partitions, replication factor and configurations answered.
    pub const CREATE_TOPICS_DETAILS: i16 = 5;
    /// CreateTopics: the topic id answered.
    pub const CREATE_TOPICS_TOPIC_ID: i16 = 7;
    /// DeleteTopics: an error message answered.
    pub const DELETE_TOPICS_ERROR_MESSAGE: i16 = 5;
    /// DeleteTopics: `topics` (name or id) instead of `topic_names`.
    pub const DELETE_TOPICS_TOPIC_STATES: i16 = 6;
    /// DescribeConfigs: documentation asked for, and types answered.
    pub const DESCRIBE_CONFIGS_DOCUMENTATION: i16 = 3;
    /// DescribeGroups: static members' instance ids.
    pub const DESCRIBE_GROUPS_INSTANCE_ID: i16 = 4;
    /// DescribeGroups: an unknown group is GROUP_ID_NOT_FOUND, not Dead (KIP-1043).
    pub const DESCRIBE_GROUPS_NOT_FOUND: i16 = 6;
    /// EndTxn: transactions v2 (KIP-890), every end bumps the epoch and answers it.
    pub const END_TXN_EPOCH_BUMP: i16 = 5;
    /// EndTxn: an old epoch is PRODUCER_FENCED, not INVALID_PRODUCER_EPOCH.
    pub const END_TXN_PRODUCER_FENCED: i16 = 2;
    /// Fetch: the log start offset answered.
    pub const FETCH_LOG_START: i16 = 5;
    /// Fetch: incremental fetch sessions (KIP-227).
    pub const FETCH_SESSIONS: i16 = 7;
    /// Fetch: topics named by id (KIP-516).
    pub const FETCH_TOPIC_IDS: i16 = 13;
    /// FindCoordinator: keys come batched.
    pub const FIND_COORDINATOR_BATCHED: i16 = 4;
    /// FindCoordinator: an error message answered.
    pub const FIND_COORDINATOR_ERROR_MESSAGE: i16 = 1;
    /// InitProducerId: an old epoch is PRODUCER_FENCED, not INVALID_PRODUCER_EPOCH.
    pub const INIT_PRODUCER_ID_PRODUCER_FENCED: i16 = 4;
    /// JoinGroup: static members' instance ids (KIP-345).
    pub const JOIN_GROUP_INSTANCE_ID: i16 = 5;
    /// JoinGroup: a member id is handed out with MEMBER_ID_REQUIRED first (KIP-394).
    pub const JOIN_GROUP_MEMBER_ID_REQUIRED: i16 = 4;
    /// JoinGroup: the protocol type answered.
    pub const JOIN_GROUP_PROTOCOL_TYPE: i16 = 7;
    /// JoinGroup: a rebalance timeout apart from the session timeout.
    pub const JOIN_GROUP_REBALANCE_TIMEOUT: i16 = 1;
    /// JoinGroup: the leader may skip assignment (KIP-814).
    pub const JOIN_GROUP_SKIP_ASSIGNMENT: i16 = 9;
    /// LeaveGroup: members come batched (KIP-345).
    pub const LEAVE_GROUP_BATCHED: i16 = 3;
    /// ListGroups: group states answered (KIP-518).
    pub const LIST_GROUPS_STATE: i16 = 4;
    /// ListGroups: group types answered (KIP-848).
    pub const LIST_GROUPS_TYPE: i16 = 5;
    /// ListOffsets: leader epochs answered.
    pub const LIST_OFFSETS_LEADER_EPOCH: i16 = 4;
    /// Metadata: `allow_auto_topic_creation` carried (KIP-361).
    pub const METADATA_AUTO_CREATE_FLAG: i16 = 4;
    /// Metadata: the cluster id answered.
    pub const METADATA_CLUSTER_ID: i16 = 2;
    /// Metadata: the controller id answered.
    pub const METADATA_CONTROLLER_ID: i16 = 1;
    /// Metadata: leader epochs answered.
    pub const METADATA_LEADER_EPOCH: i16 = 7;
    /// Metadata: "all topics" is a null list (an empty one before).
    pub const METADATA_NULL_MEANS_ALL: i16 = 1;
    /// Metadata: topic ids answered.
    pub const METADATA_TOPIC_ID: i16 = 10;
    /// OffsetCommit: leader epochs carried.
    pub const OFFSET_COMMIT_LEADER_EPOCH: i16 = 6;
    /// OffsetCommit: topics named by id, not by name (KIP-848).
    pub const OFFSET_COMMIT_TOPIC_IDS: i16 = 10;
    /// OffsetFetch: several groups in one request.
    pub const OFFSET_FETCH_GROUPS: i16 = 8;
    /// OffsetFetch: a group-level error (before, each partition carries it).
    pub const OFFSET_FETCH_GROUP_ERROR: i16 = 2;
    /// OffsetFetch: topics named by id, not by name (KIP-848).
    pub const OFFSET_FETCH_TOPIC_IDS: i16 = 10;
    /// OffsetFetch names the fetching member and its epoch (KIP-848).
    pub const OFFSET_FETCH_MEMBER_EPOCH: i16 = 9;
    /// OffsetFetch: leader epochs answered.
    pub const OFFSET_FETCH_LEADER_EPOCH: i16 = 5;
    /// Produce: record errors and an error message answered.
    pub const PRODUCE_ERROR_MESSAGE: i16 = 8;
    /// Produce: a transactional batch adds its partition to the transaction
    /// (transactions v2, KIP-890).
    pub const PRODUCE_IMPLICIT_TXN_ADD: i16 = 12;
    /// Produce: the log start offset answered.
    pub const PRODUCE_LOG_START: i16 = 5;
    /// Produce: topics named by id (KIP-516).
    pub const PRODUCE_TOPIC_IDS: i16 = 13;
    /// SaslAuthenticate: the session lifetime answered (KIP-368).
    pub const SASL_AUTHENTICATE_SESSION_LIFETIME: i16 = 1;
    /// SaslHandshake: tokens follow in SaslAuthenticate requests, not bare frames (KIP-152).
    pub const SASL_HANDSHAKE_AUTHENTICATE_REQUESTS: i16 = 1;
    /// SyncGroup: the protocol type and name answered.
    pub const SYNC_GROUP_PROTOCOL: i16 = 5;
    /// TxnOffsetCommit: the group joins the transaction without AddOffsetsToTxn
    /// (transactions v2, KIP-890).
    pub const TXN_OFFSET_COMMIT_IMPLICIT_ADD: i16 = 5;
    /// TxnOffsetCommit: topics named by id, not by name (KIP-1319).
    pub const TXN_OFFSET_COMMIT_TOPIC_IDS: i16 = 6;
    /// UpdateFeatures: the top-level error only.
    pub const UPDATE_FEATURES_TOP_LEVEL_ONLY: i16 = 2;
    /// UpdateFeatures: an upgrade type instead of `allow_downgrade`.
    pub const UPDATE_FEATURES_UPGRADE_TYPE: i16 = 1;
}
