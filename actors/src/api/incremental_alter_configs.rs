//! IncrementalAlterConfigs: SET, DELETE (back to the default), APPEND and SUBTRACT (list
//! configurations) applied to each resource's stored configurations, or with
//! validate_only checked only. A bad entry fails its resource only.

use std::future::Future;

use kafka_protocol::messages::incremental_alter_configs_request::IncrementalAlterConfigsRequest;
use kafka_protocol::messages::incremental_alter_configs_response::{
    AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
};

use super::config_resources::alter_each;
use crate::authorizer::Access;
use crate::config_catalog::ConfigChange;
use crate::gateway::Gateway;

pub fn handle(
    gw: &Gateway,
    req: IncrementalAlterConfigsRequest,
    access: &Access,
) -> impl Future<Output = IncrementalAlterConfigsResponse> {
    let changes = req
        .resources
        .into_iter()
        .map(|r| {
            let ops = r
                .configs
                .into_iter()
                .map(|c| {
                    let value = c.value.map(|v| v.to_string());
                    (c.name.to_string(), c.config_operation, value)
                })
                .collect();
            (
                r.resource_type,
                r.resource_name,
                ConfigChange::Incremental(ops),
            )
        })
        .collect();
    let altered = alter_each(gw, access, changes, req.validate_only);
    async move {
        let responses = altered.await.into_iter().map(|a| {
            AlterConfigsResourceResponse::default()
                .with_resource_type(a.resource_type)
                .with_resource_name(a.resource_name)
                .with_error_code(a.error_code)
                .with_error_message(a.error_message)
        });
        IncrementalAlterConfigsResponse::default().with_responses(responses.collect())
    }
}
