//! DeleteTopics: by name, or by topic id from v6. Each name is answered on its own
//! (an invalid one INVALID_TOPIC_EXCEPTION without reaching the backend, a missing one
//! UNKNOWN_TOPIC_OR_PARTITION); a name repeated in one request is deleted once, then
//! found missing. A request naming more topics than `delete_topics_max_names` deletes
//! none: POLICY_VIOLATION for each. Only the topic a name maps to goes, with its
//! stored configurations and committed offsets (`Backend::delete_topic`).

use std::future::Future;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_topics_request::DeleteTopicsRequest;
use kafka_protocol::messages::delete_topics_response::{
    DeletableTopicResult, DeleteTopicsResponse,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::protocol::versions::since;
use crate::topic_admin::DeleteTopic;

/// Each topic needs DELETE, on it or on the cluster, as Kafka's controller decides
/// (`ControllerApis.deleteTopics`): a name the caller may not DESCRIBE answers
/// TOPIC_AUTHORIZATION_FAILED whether it exists or not, a describable missing one
/// UNKNOWN_TOPIC_OR_PARTITION; a topic named by id that may not be described is
/// refused without its name.
pub fn handle(
    gw: &Gateway,
    version: i16,
    req: DeleteTopicsRequest,
    access: &Access,
) -> impl Future<Output = DeleteTopicsResponse> {
    let table = gw.topics.table();
    // The request's own timeout bounds each deletion (its offsets' removal).
    let wait = std::time::Duration::from_millis(req.timeout_ms.max(0) as u64);
    let deadline = std::time::Instant::now() + wait;
    let targets: Vec<(Option<TopicName>, Uuid)> = if version >= since::DELETE_TOPICS_TOPIC_STATES {
        req.topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n), Uuid::nil()))
            .collect()
    };
    // Over the limit nothing is sent: every name answers the same refusal.
    let limit = gw.topics.rules().delete_topics_max_names;
    let refused = (targets.len() > limit).then(|| {
        let message = format!(
            "the request names {} topics; at most {limit} may be deleted at once",
            targets.len()
        );
        (ResponseError::PolicyViolation, message)
    });
    let every_topic = access.permits(Operation::Delete, ResourceType::Cluster, CLUSTER_NAME);
    let may = |operation, topic: &str| every_topic || access.topic(operation, topic);
    let denied = || {
        Err((
            ResponseError::TopicAuthorizationFailed,
            "DELETE on the topic is not allowed".to_string(),
        ))
    };
    let pending: Vec<_> = targets
        .into_iter()
        .map(|(name, id)| {
            let by_id = name.is_none();
            let mut name = name
                .map(|n| n.to_string())
                .or_else(|| table.by_id(&id).map(|t| t.name.to_string()));
            let sent = match (&refused, name.clone()) {
                (Some(refusal), _) => Err(refusal.clone()),
                (None, None) => Err((
                    ResponseError::UnknownTopicId,
                    format!("no topic has id {id}"),
                )),
                (None, Some(n)) => {
                    let described = may(Operation::Describe, &n);
                    let deletable = may(Operation::Delete, &n);
                    match (deletable, described) {
                        // A topic named by id exists and was found by it.
                        (true, _) if by_id => {
                            Ok(gw.topics.delete(DeleteTopic { name: n, deadline }))
                        }
                        (false, false) if by_id => {
                            name = None;
                            denied()
                        }
                        (_, false) => denied(),
                        (true, true) => Ok(gw.topics.delete(DeleteTopic { name: n, deadline })),
                        (false, true) if table.get(&n).is_none() => Err((
                            ResponseError::UnknownTopicOrPartition,
                            format!("topic '{n}' does not exist"),
                        )),
                        (false, true) => denied(),
                    }
                }
            };
            (name, id, sent)
        })
        .collect();
    let partitions = gw.partitions.clone();

    async move {
        let mut responses = Vec::with_capacity(pending.len());
        for (name, id, sent) in pending {
            let result = DeletableTopicResult::default()
                .with_name(name.map(|n| TopicName(StrBytes::from_string(n))))
                .with_topic_id(id);
            let outcome = match sent {
                Err(refusal) => Err(refusal),
                Ok(request) => match request.await {
                    Ok(Ok(topic)) => {
                        partitions.forget_topic(&topic.name);
                        Ok(topic.id)
                    }
                    Ok(Err(e)) => Err((e.code(), e.to_string())),
                    Err(actix::MailboxError::Timeout) => Err((
                        ResponseError::RequestTimedOut,
                        "the deletion was not done within the request's timeout".into(),
                    )),
                    Err(actix::MailboxError::Closed) => Err((
                        ResponseError::UnknownServerError,
                        "topic admin unavailable".into(),
                    )),
                },
            };
            responses.push(match outcome {
                Ok(id) if version >= since::DELETE_TOPICS_TOPIC_STATES => result.with_topic_id(id),
                Ok(_) => result,
                Err((code, message)) => {
                    tracing::info!(?code, %message, "topic not deleted");
                    result.with_error_code(code.code()).with_error_message(
                        (version >= since::DELETE_TOPICS_ERROR_MESSAGE)
                            .then(|| StrBytes::from_string(message)),
                    )
                }
            });
        }
        DeleteTopicsResponse::default().with_responses(responses)
    }
}
