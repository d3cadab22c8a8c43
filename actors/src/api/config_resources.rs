//! The resources DescribeConfigs, AlterConfigs and IncrementalAlterConfigs name: a
//! topic, or a broker (this gateway by its node id, or "" for every gateway).

use std::future::Future;

use futures_util::future::{ready, LocalBoxFuture};
use futures_util::FutureExt;
use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::config_catalog::{AlterBrokerConfigs, BrokerScope, ConfigChange};
use crate::gateway::Gateway;
use crate::topic_admin::{validate_topic_name, AlterTopicConfigs, BrokerConfigsChanged};

/// Kafka's `ConfigResource.Type` codes served here.
pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;

pub enum Resource {
    Topic(String),
    Broker(BrokerScope),
}

/// The resource a request names if the caller may do `operation` on it (the topic,
/// or the cluster for a broker), or the error Kafka answers for it alone. As in
/// Kafka, the caller's right comes first: a refused caller learns nothing of whether
/// the name is valid.
pub fn resource(
    gw: &Gateway,
    (access, operation): (&Access, Operation),
    resource_type: i8,
    name: &str,
) -> Result<Resource, (ResponseError, String)> {
    let refused = |code| Err((code, format!("{operation:?} is not allowed")));
    match resource_type {
        TOPIC if !access.topic(operation, name) => refused(ResponseError::TopicAuthorizationFailed),
        BROKER if !access.cluster(operation) => refused(ResponseError::ClusterAuthorizationFailed),
        _ => named(gw, resource_type, name),
    }
}

fn named(gw: &Gateway, resource_type: i8, name: &str) -> Result<Resource, (ResponseError, String)> {
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

/// Why a resource was not altered: the error code and message it is answered with.
pub type Refusal = (ResponseError, String);

/// One resource's outcome, as AlterConfigs and IncrementalAlterConfigs answer it.
pub struct Altered {
    pub resource_type: i8,
    pub resource_name: StrBytes,
    pub error_code: i16,
    pub error_message: Option<StrBytes>,
}

/// Changes each resource's configurations (or, with `validate_only`, checks the
/// changes); a resource that fails is answered on its own. Every change is sent to its
/// owner now, so changes apply in request order.
pub fn alter_each(
    gw: &Gateway,
    access: &Access,
    changes: Vec<(i8, StrBytes, ConfigChange)>,
    validate_only: bool,
) -> impl Future<Output = Vec<Altered>> {
    let pending: Vec<_> = changes
        .into_iter()
        .map(|(resource_type, name, change)| {
            let altered = alter(gw, access, (resource_type, &name), change, validate_only);
            (resource_type, name, altered)
        })
        .collect();
    async move {
        let mut answers = Vec::with_capacity(pending.len());
        for (resource_type, resource_name, altered) in pending {
            let (error_code, error_message) = match altered.await {
                Ok(()) => (0, None),
                Err((code, message)) => (code.code(), Some(StrBytes::from_string(message))),
            };
            answers.push(Altered {
                resource_type,
                resource_name,
                error_code,
                error_message,
            });
        }
        answers
    }
}

/// Changes one resource's configurations (or checks the change). A broker change has
/// reached every topic it affects when the future resolves.
fn alter(
    gw: &Gateway,
    access: &Access,
    (resource_type, name): (i8, &str),
    change: ConfigChange,
    validate_only: bool,
) -> LocalBoxFuture<'static, Result<(), Refusal>> {
    let authorized = (access, Operation::AlterConfigs);
    let outcome = match resource(gw, authorized, resource_type, name) {
        Err(refusal) => ready(Err(refusal)).boxed_local(),
        Ok(Resource::Topic(topic)) => {
            let sent = gw.topics.alter_configs(AlterTopicConfigs {
                name: topic,
                change,
                validate_only,
            });
            async move {
                match sent.await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err((e.code(), e.to_string())),
                    Err(_) => Err(unavailable("topic admin")),
                }
            }
            .boxed_local()
        }
        Ok(Resource::Broker(scope)) => {
            let sent = gw.topics.alter_broker_configs(AlterBrokerConfigs {
                scope,
                change,
                validate_only,
            });
            let topics = gw.topics.clone();
            async move {
                match sent.await {
                    Ok(Ok(_)) if validate_only => Ok(()),
                    Ok(Ok(before)) => topics
                        .broker_configs_changed(BrokerConfigsChanged { before })
                        .await
                        .map_err(|_| unavailable("topic admin")),
                    Ok(Err(e)) => Err((e.code(), e.to_string())),
                    Err(_) => Err(unavailable("config catalog")),
                }
            }
            .boxed_local()
        }
    };
    let what = format!("{resource_type}:{name}");
    outcome
        .inspect(move |done| {
            if let Err((code, message)) = done {
                tracing::info!(resource = %what, ?code, %message, "configurations not altered");
            }
        })
        .boxed_local()
}

fn unavailable(owner: &str) -> Refusal {
    (
        ResponseError::UnknownServerError,
        format!("the {owner} is not running"),
    )
}
