//! ApiVersions at each version (the pinned ranges, the feature levels) and UpdateFeatures.

use crate::support;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use support::configs::s;
use support::versions::assert_advertised;
use support::{call, RawClient};

pub(super) fn api_versions(c: &mut RawClient, v: i16) {
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
    // From v3 the features: gateway.version levels 1 to 2 supported, 1 finalized;
    // transaction.version 0 to 2, finalized at 2 on every store.
    if v >= 3 {
        let supported = r
            .supported_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version, f.max_version));
        assert_eq!(
            supported.collect::<Vec<_>>(),
            [("gateway.version", 1, 2), ("transaction.version", 0, 2)]
        );
        let finalized = r
            .finalized_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version_level, f.max_version_level));
        assert_eq!(
            finalized.collect::<Vec<_>>(),
            [("gateway.version", 1, 1), ("transaction.version", 2, 2)]
        );
        assert!(r.finalized_features_epoch >= 0, "{r:?}");
    }
}

pub(super) fn update_features(c: &mut RawClient, v: i16) {
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
