//! CreatePartitions: each topic grows to the partition count asked for (or, with
//! validate_only, is checked only) by the topic-admin actor, and is answered on its
//! own. A topic named twice is refused once, as Kafka's controller refuses it
//! (`ControllerApis.createPartitions`); replica assignments are counted, not followed:
//! the backend keeps one copy of each partition (`docs/COMPATIBILITY.md`).

use std::collections::HashMap;
use std::future::Future;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsRequest;
use kafka_protocol::messages::create_partitions_response::{
    CreatePartitionsResponse, CreatePartitionsTopicResult,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::topic_admin::CreatePartitions;

/// Each topic needs ALTER on it (TOPIC_AUTHORIZATION_FAILED, whether it exists or
/// not), as in Kafka.
pub fn handle(
    gw: &Gateway,
    req: CreatePartitionsRequest,
    access: &Access,
) -> impl Future<Output = CreatePartitionsResponse> {
    let mut named: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *named.entry(t.name.to_string()).or_default() += 1;
    }
    // Sent now, in request order, one answer a name; answered below in that order.
    let pending: Vec<_> = req
        .topics
        .into_iter()
        .filter_map(|t| {
            let times = named.remove(t.name.as_str())?;
            let sent = if times > 1 {
                Err((
                    ResponseError::InvalidRequest,
                    "Duplicate topic name.".into(),
                ))
            } else if !access.topic(Operation::Alter, &t.name) {
                Err((
                    ResponseError::TopicAuthorizationFailed,
                    "ALTER on the topic is not allowed".to_string(),
                ))
            } else {
                Ok(gw.topics.create_partitions(CreatePartitions {
                    name: t.name.to_string(),
                    count: t.count,
                    assignments: t.assignments.as_ref().map(Vec::len),
                    validate_only: req.validate_only,
                }))
            };
            Some((t.name, sent))
        })
        .collect();

    async move {
        let mut results = Vec::with_capacity(pending.len());
        for (name, sent) in pending {
            let outcome = match sent {
                Err(refusal) => Err(refusal),
                Ok(request) => match request.await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err((e.code(), e.to_string())),
                    Err(_) => Err((
                        ResponseError::UnknownServerError,
                        "topic admin unavailable".into(),
                    )),
                },
            };
            let result = CreatePartitionsTopicResult::default().with_name(name.clone());
            results.push(match outcome {
                Ok(()) => result,
                Err((code, message)) => {
                    tracing::info!(topic = %name.as_str(), ?code, %message, "partitions not created");
                    result
                        .with_error_code(code.code())
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            });
        }
        CreatePartitionsResponse::default().with_results(results)
    }
}
