//! UpdateFeatures: changes the finalized `gateway.version` as Kafka's Admin
//! `updateFeatures` asks (upgrade, safe or unsafe downgrade, validate only). The config
//! catalog audits every stored configuration against the target level first and
//! refuses, naming each offender. v0-1 answer per feature; v2 at the top only.

use std::collections::HashSet;
use std::future::Future;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::update_features_request::UpdateFeaturesRequest;
use kafka_protocol::messages::update_features_response::{
    UpdatableFeatureResult, UpdateFeaturesResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::config_catalog::{FeatureError, UpdateFeature, UpgradeType};
use crate::gateway::Gateway;
use crate::protocol::versions::since;

pub fn handle(
    gw: &Gateway,
    version: i16,
    req: UpdateFeaturesRequest,
    access: &Access,
) -> impl Future<Output = UpdateFeaturesResponse> {
    // ALTER on the cluster, or nothing changes: Kafka's controller refuses the whole
    // request at the top, without per-feature results, at every version.
    let denied = !access.cluster(Operation::Alter);
    let updates = if denied {
        Vec::new()
    } else {
        req.feature_updates
    };
    let mut seen = HashSet::new();
    let pending: Vec<_> = updates
        .into_iter()
        .map(|u| {
            let upgrade_type = match (
                version >= since::UPDATE_FEATURES_UPGRADE_TYPE,
                u.allow_downgrade,
            ) {
                (true, _) => u.upgrade_type,
                (false, true) => UpgradeType::SafeDowngrade as i8,
                (false, false) => UpgradeType::Upgrade as i8,
            };
            let sent = seen.insert(u.feature.clone()).then(|| {
                gw.topics.update_feature(UpdateFeature {
                    feature: u.feature.to_string(),
                    level: u.max_version_level,
                    upgrade_type,
                    validate_only: req.validate_only,
                    topics: gw.topics.table().all().into_iter().cloned().collect(),
                })
            });
            (u.feature, sent)
        })
        .collect();
    async move {
        if denied {
            return UpdateFeaturesResponse::default()
                .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                .with_error_message(Some(StrBytes::from_static_str(
                    "ALTER on the cluster is not allowed",
                )));
        }
        let mut results = Vec::with_capacity(pending.len());
        for (feature, sent) in pending {
            let outcome = match sent {
                None => Err((
                    ResponseError::InvalidRequest,
                    format!("feature '{}' appears more than once", feature.as_str()),
                )),
                Some(sent) => match sent.await.unwrap_or(Err(FeatureError::CatalogGone)) {
                    Ok(()) => Ok(()),
                    Err(e) => Err((e.code(), e.to_string())),
                },
            };
            if let Err((code, message)) = &outcome {
                tracing::info!(feature = %feature.as_str(), ?code, %message, "feature not updated");
            }
            results.push((feature, outcome));
        }
        let response = UpdateFeaturesResponse::default().with_error_message(None);
        if version >= since::UPDATE_FEATURES_TOP_LEVEL_ONLY {
            return match results.into_iter().find_map(|(_, r)| r.err()) {
                Some((code, message)) => response
                    .with_error_code(code.code())
                    .with_error_message(Some(StrBytes::from_string(message))),
                None => response,
            };
        }
        response.with_results(
            results
                .into_iter()
                .map(|(feature, outcome)| {
                    let result = UpdatableFeatureResult::default().with_feature(feature);
                    match outcome {
                        Ok(()) => result.with_error_message(None),
                        Err((code, message)) => result
                            .with_error_code(code.code())
                            .with_error_message(Some(StrBytes::from_string(message))),
                    }
                })
                .collect(),
        )
    }
}
