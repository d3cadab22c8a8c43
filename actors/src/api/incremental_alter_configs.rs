//! IncrementalAlterConfigs: SET, DELETE (back to the default), APPEND and SUBTRACT (list
//! configurations) applied to each resource's stored configurations, or with
//! validate_only checked only. A bad entry fails its resource only.

use std::future::Future;

use kafka_protocol::messages::incremental_alter_configs_request::IncrementalAlterConfigsRequest;
use kafka_protocol::messages::incremental_alter_configs_response::{
    AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::config_resources::alter;
use crate::authorizer::Access;
use crate::config_catalog::ConfigChange;
use crate::gateway::Gateway;

pub fn handle(
    gw: &Gateway,
    req: IncrementalAlterConfigsRequest,
    access: &Access,
) -> impl Future<Output = IncrementalAlterConfigsResponse> {
    let pending: Vec<_> = req
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
            let change = ConfigChange::Incremental(ops);
            let altered = alter(
                gw,
                access,
                (r.resource_type, &r.resource_name),
                change,
                req.validate_only,
            );
            (r.resource_type, r.resource_name, altered)
        })
        .collect();
    async move {
        let mut responses = Vec::with_capacity(pending.len());
        for (resource_type, resource_name, altered) in pending {
            let (code, message) = match altered.await {
                Ok(()) => (0, None),
                Err((code, message)) => (code.code(), Some(StrBytes::from_string(message))),
            };
            responses.push(
                AlterConfigsResourceResponse::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(resource_name)
                    .with_error_code(code)
                    .with_error_message(message),
            );
        }
        IncrementalAlterConfigsResponse::default().with_responses(responses)
    }
}
