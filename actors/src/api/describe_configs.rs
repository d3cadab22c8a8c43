//! DescribeConfigs: a topic's full set or a broker's, from the topic table (read
//! again first when it lacks a topic asked for, which another gateway may just have
//! made) and the configurations in force. Each resource is answered on its own: a
//! missing topic (3), a bad name (17) or an unknown resource type (42) fails that
//! resource only.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
    DescribeConfigsSynonym,
};
use kafka_protocol::protocol::StrBytes;

use super::config_resources::{resource, Resource, TOPIC};
use crate::authorizer::{Access, Operation};
use crate::config_catalog::{BrokerScope, Entry};
use crate::gateway::Gateway;
use crate::protocol::versions::since;
use crate::topic_admin::TopicTable;

/// A topic needs DESCRIBE_CONFIGS on it, a broker DESCRIBE_CONFIGS on the cluster.
pub async fn handle(
    gw: Gateway,
    version: i16,
    req: DescribeConfigsRequest,
    access: Access,
) -> DescribeConfigsResponse {
    let topics = (req.resources.iter())
        .filter(|r| r.resource_type == TOPIC)
        .map(|r| r.resource_name.as_str());
    let table = gw.topics.table_knowing(topics).await;
    let documented = version >= since::DESCRIBE_CONFIGS_DOCUMENTATION && req.include_documentation;
    let results = req
        .resources
        .into_iter()
        .map(|r| {
            let result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_message(None);
            match entries((&gw, &table), &access, &r) {
                Ok(entries) => result.with_configs(
                    entries
                        .into_iter()
                        .filter(|e| wanted(&r, e))
                        .map(|e| described(e, req.include_synonyms, documented))
                        .collect(),
                ),
                Err((code, message)) => {
                    tracing::info!(resource = %r.resource_name.as_str(), ?code, %message, "configurations not described");
                    result
                        .with_error_code(code.code())
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

fn entries(
    (gw, table): (&Gateway, &TopicTable),
    access: &Access,
    r: &DescribeConfigsResource,
) -> Result<Vec<Entry>, (ResponseError, String)> {
    let config = gw.topics.config();
    let authorized = (access, Operation::DescribeConfigs);
    match resource(gw, authorized, r.resource_type, &r.resource_name)? {
        Resource::Topic(name) => match table.get(&name) {
            Some(topic) => Ok(config.topic_entries(&topic.configs)),
            None => Err((
                ResponseError::UnknownTopicOrPartition,
                format!("topic '{name}' does not exist"),
            )),
        },
        Resource::Broker(BrokerScope::ThisBroker) => Ok(config.broker_entries()),
        Resource::Broker(BrokerScope::Cluster) => Ok(config.cluster_default_entries()),
    }
}

/// Null or no keys ask for every configuration, as Kafka reads them.
fn wanted(r: &DescribeConfigsResource, e: &Entry) -> bool {
    match r.configuration_keys.as_deref() {
        None | Some([]) => true,
        Some(keys) => keys.iter().any(|k| k.as_str() == e.name),
    }
}

fn described(e: Entry, synonyms: bool, documented: bool) -> DescribeConfigsResourceResult {
    let synonyms = if synonyms {
        e.synonyms
            .into_iter()
            .map(|s| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(s.name))
                    .with_value(s.value.map(StrBytes::from_string))
                    .with_source(s.source as i8)
            })
            .collect()
    } else {
        Vec::new()
    };
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(e.name))
        .with_value(e.value.map(StrBytes::from_string))
        .with_read_only(e.read_only)
        .with_config_source(e.source as i8)
        .with_is_sensitive(e.sensitive)
        .with_synonyms(synonyms)
        .with_config_type(e.kind as i8)
        .with_documentation(documented.then(|| StrBytes::from_static_str(e.doc)))
}
