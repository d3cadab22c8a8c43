//! ApiVersions: the list of served APIs and, from v3, the features: `gateway.version`
//! and `transaction.version` (KIP-890), the levels supported and the levels
//! finalized, with their epoch (a feature at level 0 is not listed as finalized). A client asking with a
//! newer version than served gets a v0 answer with UNSUPPORTED_VERSION and the list
//! (KIP-511); that case is built by the connection from [`unsupported`]. From v5 a
//! client names the cluster and node it means to reach, and one meant for another is
//! answered REBOOTSTRAP_REQUIRED (KIP-1242).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::protocol::StrBytes;

use crate::config_catalog::{Finalized, FEATURE, MAX_LEVEL, MIN_LEVEL};
use crate::protocol::versions::since;
use crate::protocol::versions::SERVED;
use crate::transactions::{MAX_TRANSACTION_VERSION, TRANSACTION_VERSION};

pub fn handle(
    version: i16,
    req: &ApiVersionsRequest,
    (finalized, transaction_version): (Finalized, i16),
    this: This<'_>,
) -> ApiVersionsResponse {
    if version >= since::API_VERSIONS_NODE_CHECK && misrouted(req, this) {
        tracing::info!(cluster = ?req.cluster_id.as_deref(), node = req.node_id,
            "ApiVersions meant for another cluster or node: REBOOTSTRAP_REQUIRED");
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::RebootstrapRequired.code());
    }
    let names = [&req.client_software_name, &req.client_software_version];
    if version >= since::API_VERSIONS_CLIENT_INFO && !names.iter().all(|n| valid_client_info(n)) {
        tracing::info!(name = %req.client_software_name.as_str(), version = %req.client_software_version.as_str(),
            "ApiVersions with an invalid client software name or version");
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    let features = [
        (FEATURE, (MIN_LEVEL, MAX_LEVEL), finalized.level),
        (
            TRANSACTION_VERSION,
            (0, MAX_TRANSACTION_VERSION),
            transaction_version,
        ),
    ];
    let supported_features = features.iter().map(|&(name, (min, max), _)| {
        SupportedFeatureKey::default()
            .with_name(StrBytes::from_static_str(name))
            .with_min_version(min)
            .with_max_version(max)
    });
    let finalized_features = features
        .iter()
        .filter(|f| f.2 > 0)
        .map(|&(name, _, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str(name))
                .with_min_version_level(level)
                .with_max_version_level(level)
        });
    supported()
        .with_supported_features(supported_features.collect())
        .with_finalized_features_epoch(finalized.epoch)
        .with_finalized_features(finalized_features.collect())
}

/// The cluster id and node id of the gateway answering.
#[derive(Clone, Copy, Debug)]
pub struct This<'a> {
    pub cluster_id: &'a str,
    pub node_id: i32,
}

/// A v5+ request that names a cluster (not null) or a node (not -1) other than this
/// gateway's: the client's metadata sent it to the wrong place, as after an address was
/// reused, and Kafka answers REBOOTSTRAP_REQUIRED (KIP-1242) so the client goes back to
/// its bootstrap servers (KIP-1102's rebootstrap).
fn misrouted(req: &ApiVersionsRequest, this: This<'_>) -> bool {
    let other_cluster = req
        .cluster_id
        .as_deref()
        .is_some_and(|id| id != this.cluster_id);
    let other_node = req.node_id != -1 && req.node_id != this.node_id;
    other_cluster || other_node
}

/// Kafka's rule for client software names and versions:
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid_client_info(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
}

fn supported() -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_api_keys(
            SERVED
                .iter()
                .map(|&(key, min, max)| {
                    ApiVersion::default()
                        .with_api_key(key as i16)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
        .with_finalized_features_epoch(-1)
}

/// The answer to an ApiVersions request of a version newer than served.
pub fn unsupported() -> ApiVersionsResponse {
    supported().with_error_code(ResponseError::UnsupportedVersion.code())
}

#[cfg(test)]
mod tests {
    use super::{misrouted, valid_client_info, This};
    use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn misrouted_when_another_cluster_or_node_is_named() {
        let this = This {
            cluster_id: "c1",
            node_id: 2,
        };
        let ask = |cluster: Option<&'static str>, node| {
            let req = ApiVersionsRequest::default()
                .with_cluster_id(cluster.map(StrBytes::from_static_str))
                .with_node_id(node);
            misrouted(&req, this)
        };
        assert!(!ask(None, -1), "nothing named");
        assert!(!ask(Some("c1"), 2));
        assert!(!ask(Some("c1"), -1));
        assert!(!ask(None, 2));
        assert!(ask(Some("c0"), 2), "another cluster");
        assert!(ask(Some("c1"), 3), "another node");
        assert!(ask(None, 3), "another node");
    }

    #[test]
    fn client_names_follow_kafka_rules() {
        for ok in ["librdkafka", "apache-kafka-java", "2.12.0", "a"] {
            assert!(valid_client_info(ok), "{ok}");
        }
        for bad in ["", "-x", "x.", "bad name!", "ü"] {
            assert!(!valid_client_info(bad), "{bad}");
        }
    }
}
