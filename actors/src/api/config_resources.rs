//! The resources DescribeConfigs, AlterConfigs and IncrementalAlterConfigs name: a
//! topic, or a broker (this gateway by its node id, or "" for every gateway).

use kafka_protocol::error::ResponseError;

use crate::config_catalog::BrokerScope;
use crate::gateway::Gateway;
use crate::topic_admin::validate_topic_name;

/// Kafka's `ConfigResource.Type` codes served here.
pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;

pub enum Resource {
    Topic(String),
    Broker(BrokerScope),
}

/// The resource a request names, or the error Kafka answers for it alone.
pub fn resource(
    gw: &Gateway,
    resource_type: i8,
    name: &str,
) -> Result<Resource, (ResponseError, String)> {
    let node = gw.settings.node_id;
    match resource_type {
        TOPIC => match validate_topic_name(name) {
            Ok(()) => Ok(Resource::Topic(name.to_string())),
            Err(e) => Err((e.code(), e.to_string())),
        },
        BROKER if name.is_empty() => Ok(Resource::Broker(BrokerScope::Cluster)),
        BROKER => match name.parse::<i32>() {
            Ok(id) if id == node => Ok(Resource::Broker(BrokerScope::ThisBroker)),
            Ok(id) => Err((
                ResponseError::InvalidRequest,
                format!("unexpected broker id {id}: expected {node} or an empty name (every broker)"),
            )),
            Err(_) => Err((
                ResponseError::InvalidRequest,
                format!("broker id must be an integer, but it is: '{name}'"),
            )),
        },
        other => Err((
            ResponseError::InvalidRequest,
            format!("unsupported resource type {other}: this gateway serves TOPIC ({TOPIC}) and BROKER ({BROKER})"),
        )),
    }
}
