//! AlterConfigs: each resource's stored configurations replaced by the ones given
//! (what is not given goes back to its default), or with validate_only checked only.
//! A resource that fails is answered on its own.

use std::future::Future;

use kafka_protocol::messages::alter_configs_request::AlterConfigsRequest;
use kafka_protocol::messages::alter_configs_response::{
    AlterConfigsResourceResponse, AlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::config_resources::alter;
use crate::authorizer::Access;
use crate::config_catalog::ConfigChange;
use crate::gateway::Gateway;

pub fn handle(
    gw: &Gateway,
    req: AlterConfigsRequest,
    access: &Access,
) -> impl Future<Output = AlterConfigsResponse> {
    let pending: Vec<_> = req
        .resources
        .into_iter()
        .map(|r| {
            let values = r
                .configs
                .into_iter()
                .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                .collect();
            let change = ConfigChange::Replace(values);
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
        AlterConfigsResponse::default().with_responses(responses)
    }
}
