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
    if v >= 5 {
        rebootstrap_when_misrouted(c, v);
    }
}

/// v5 (KIP-1242): a client names the cluster and node it means to reach; the right
/// ones (or none) are answered as usual, another cluster or node REBOOTSTRAP_REQUIRED
/// (129), the signal KIP-1102's clients rebootstrap on.
fn rebootstrap_when_misrouted(c: &mut RawClient, v: i16) {
    let metadata = MetadataRequest::default().with_topics(Some(Vec::new()));
    let m = call!(c, Metadata, 12, metadata);
    let cluster = m.cluster_id.expect("a cluster id");
    let node = m.brokers[0].node_id.0;
    let ask = |c: &mut RawClient, cluster: Option<StrBytes>, node: i32| {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("protocol-versions"))
            .with_client_software_version(StrBytes::from_static_str("1.0"))
            .with_cluster_id(cluster)
            .with_node_id(node);
        let r = call!(c, ApiVersions, v, request);
        (r.error_code, !r.api_keys.is_empty())
    };
    assert_eq!(ask(c, Some(cluster.clone()), node), (0, true), "this node");
    assert_eq!(ask(c, Some(cluster.clone()), -1), (0, true), "this cluster");
    assert_eq!(ask(c, None, node), (0, true), "this node, no cluster");
    let elsewhere = StrBytes::from_static_str("another-cluster");
    assert_eq!(ask(c, Some(elsewhere), node).0, 129, "another cluster");
    assert_eq!(ask(c, Some(cluster), node + 1).0, 129, "another node");
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
