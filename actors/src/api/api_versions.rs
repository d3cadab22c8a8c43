//! ApiVersions: the list of served APIs and, from v3, the features: `gateway.version`
//! and `transaction.version` (KIP-890), the levels supported and the levels
//! finalized, with their epoch (a feature at level 0 is not listed as finalized). A client asking with a
//! newer version than served gets a v0 answer with UNSUPPORTED_VERSION and the list
//! (KIP-511); that case is built by the connection from [`unsupported`].

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
) -> ApiVersionsResponse {
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
    use super::valid_client_info;

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
