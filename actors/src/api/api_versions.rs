//! ApiVersions: the list of served APIs. A client asking with a newer version than
//! served gets a v0 answer with UNSUPPORTED_VERSION and the list (KIP-511); that
//! case is built by the connection from [`unsupported`].

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};

use super::SERVED;

pub fn handle(_version: i16) -> ApiVersionsResponse {
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
    handle(0).with_error_code(ResponseError::UnsupportedVersion.code())
}
