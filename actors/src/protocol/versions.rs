//! Which APIs are served, and which versions of each: from Kafka 4's minimum
//! (KIP-896) to the newest `kafka-protocol` encodes. ApiVersions advertises exactly
//! this list, and the decoder refuses anything outside it.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;

/// Every API served, with its oldest and newest version served.
pub const SERVED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::UpdateFeatures, 0, 2),
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
