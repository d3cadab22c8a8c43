//! CreateTopics: each topic is created (or, with validate_only, checked) by the
//! topic-admin actor and answered on its own; from v5 with every configuration of the
//! topic as DescribeConfigs would give it.

use std::collections::HashMap;
use std::future::Future;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse,
};
use kafka_protocol::protocol::StrBytes;

use uuid::Uuid;

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::protocol::versions::since;
use crate::topic_admin::CreateTopic;

/// CREATE on the cluster allows every topic; otherwise each topic needs CREATE
/// (TOPIC_AUTHORIZATION_FAILED), as in Kafka.
pub fn handle(
    gw: &Gateway,
    version: i16,
    req: CreateTopicsRequest,
    access: &Access,
) -> impl Future<Output = CreateTopicsResponse> {
    let rules = gw.topics.rules();
    let any_topic = access.permits(Operation::Create, ResourceType::Cluster, CLUSTER_NAME);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *seen.entry(t.name.to_string()).or_default() += 1;
    }
    // Sent now, in request order; answered below in the same order.
    let pending: Vec<_> = req
        .topics
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            let sent = match creation(&t, seen[t.name.as_str()] > 1) {
                _ if !any_topic && !access.topic(Operation::Create, &t.name) => Err((
                    ResponseError::TopicAuthorizationFailed,
                    "CREATE on the topic is not allowed".to_string(),
                )),
                Err(message) => Err((ResponseError::InvalidRequest, message)),
                Ok((partitions, replication_factor)) => Ok(gw.topics.create(CreateTopic {
                    name: t.name.to_string(),
                    partitions: rules.partitions(partitions),
                    replication_factor: rules.replication_factor(replication_factor),
                    configs: t
                        .configs
                        .into_iter()
                        .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
                        .collect(),
                    validate_only: req.validate_only,
                })),
            };
            (name, sent)
        })
        .collect();
    let topics_now = gw.topics.clone();

    async move {
        let mut topics = Vec::with_capacity(pending.len());
        for (name, sent) in pending {
            let result = CreatableTopicResult::default()
                .with_name(name.clone())
                .with_error_message(None);
            topics.push(match sent {
                Err((code, message)) => failed(result, code, message),
                Ok(request) => match request.await {
                    Ok(Ok(_)) if version < since::CREATE_TOPICS_DETAILS => result,
                    Ok(Ok(topic)) => result
                        .with_topic_id(if version >= since::CREATE_TOPICS_TOPIC_ID {
                            topic.id
                        } else {
                            Uuid::nil()
                        })
                        .with_num_partitions(topic.partitions)
                        .with_replication_factor(topic.replication_factor)
                        .with_configs(Some(
                            topics_now
                                .config()
                                .topic_entries(&topic.configs)
                                .into_iter()
                                .map(|e| {
                                    CreatableTopicConfigs::default()
                                        .with_name(StrBytes::from_string(e.name))
                                        .with_value(e.value.map(StrBytes::from_string))
                                        .with_read_only(e.read_only)
                                        .with_is_sensitive(e.sensitive)
                                        .with_config_source(e.source as i8)
                                })
                                .collect(),
                        )),
                    Ok(Err(e)) => {
                        tracing::info!(topic = %name.as_str(), error = %e, "topic not created");
                        failed(result, e.code(), e.to_string())
                    }
                    Err(_) => failed(
                        result,
                        ResponseError::UnknownServerError,
                        "topic admin unavailable".into(),
                    ),
                },
            });
        }
        CreateTopicsResponse::default().with_topics(topics)
    }
}

/// Partitions and replication factor asked for (-1: the broker default, at every
/// version), taking a manual assignment into account as Kafka does; an error message
/// for a request Kafka refuses outright.
fn creation(t: &CreatableTopic, repeated: bool) -> Result<(i32, i16), String> {
    if repeated {
        return Err(format!(
            "topic '{}' appears more than once in the request",
            t.name.as_str()
        ));
    }
    if t.assignments.is_empty() {
        return Ok((t.num_partitions, t.replication_factor));
    }
    if t.num_partitions != -1 || t.replication_factor != -1 {
        return Err(
            "with a replica assignment, partitions and replication factor must be -1".into(),
        );
    }
    let replicas = t.assignments[0].broker_ids.len() as i16;
    Ok((t.assignments.len() as i32, replicas.max(1)))
}

fn failed(
    result: CreatableTopicResult,
    code: ResponseError,
    message: String,
) -> CreatableTopicResult {
    result
        .with_error_code(code.code())
        .with_error_message(Some(StrBytes::from_string(message)))
}
