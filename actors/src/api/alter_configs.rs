//! AlterConfigs: each resource's stored configurations replaced by the ones given
//! (what is not given goes back to its default), or with validate_only checked only.
//! A resource that fails is answered on its own.

use std::future::Future;

use kafka_protocol::messages::alter_configs_request::AlterConfigsRequest;
use kafka_protocol::messages::alter_configs_response::{
    AlterConfigsResourceResponse, AlterConfigsResponse,
};

use super::config_resources::alter_each;
use crate::authorizer::Access;
use crate::config_catalog::ConfigChange;
use crate::gateway::Gateway;

pub fn handle(
    gw: &Gateway,
    req: AlterConfigsRequest,
    access: &Access,
) -> impl Future<Output = AlterConfigsResponse> {
    let changes = req
        .resources
        .into_iter()
        .map(|r| {
            let values = r
                .configs
                .into_iter()
                .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                .collect();
            (
                r.resource_type,
                r.resource_name,
                ConfigChange::Replace(values),
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
        AlterConfigsResponse::default().with_responses(responses.collect())
    }
}
