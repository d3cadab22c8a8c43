//! Metadata: the live gateways as brokers, each partition led by one of them.
//!
//! A missing topic is created when both the request (v4+) and the broker allow it
//! (KIP-361), and answered LEADER_NOT_AVAILABLE that time, as Kafka does.

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::membership::Cluster;
use crate::protocol::versions::since;
use crate::session::Caller;
use crate::store::{TopicMeta, TopicPartition};
use crate::topic_admin::internal::is_internal;
use crate::topic_admin::{validate_topic_name, CreateTopic};

/// "Not requested" in authorized-operations fields.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

/// Brokers are named by their address on the listener the request came through.
/// Topics the caller may not DESCRIBE are left out of a list of all topics and answer
/// TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs CREATE on the cluster or
/// the topic, as in Kafka.
pub async fn handle(
    gw: Gateway,
    version: i16,
    req: MetadataRequest,
    caller: Caller,
    access: Access,
) -> MetadataResponse {
    let cluster = gw.groups.cluster();
    let table = gw.topics.table();
    let topic_ops = |name: &str| {
        if req.include_topic_authorized_operations {
            access.operations(ResourceType::Topic, name)
        } else {
            OPERATIONS_NOT_REQUESTED
        }
    };
    // v0 sends an empty list for "all topics"; later versions send null.
    let wanted = match req.topics {
        Some(t) if !(t.is_empty() && version < since::METADATA_NULL_MEANS_ALL) => Some(t),
        _ => None,
    };
    let topics = match wanted {
        None => table
            .all()
            .into_iter()
            .filter(|t| access.permits(Operation::Describe, ResourceType::Topic, &t.name))
            .map(|t| describe(t, version, &cluster, topic_ops(&t.name)))
            .collect(),
        Some(wanted) => {
            // A topic this gateway has not seen may have just been made through another
            // gateway or a native client: look again before calling it unknown.
            let unseen = wanted.iter().any(|t| match by_name(t) {
                Some(name) => table.get(name).is_none(),
                None => table.by_id(&t.topic_id).is_none(),
            });
            let table = if unseen {
                gw.topics.refresh().await
            } else {
                table
            };
            // KIP-361: from v4 the request must allow it too; before, the setting decides.
            let may_create = gw.topics.rules().auto_create_topics_enable
                && (version < since::METADATA_AUTO_CREATE_FLAG || req.allow_auto_topic_creation);
            let mut out = Vec::with_capacity(wanted.len());
            for t in wanted {
                let asked_name = by_name(&t).cloned();
                let found = match &asked_name {
                    Some(name) => table.get(name).cloned(),
                    None => table.by_id(&t.topic_id).cloned(),
                };
                let named = asked_name.as_ref().map(|n| n.to_string());
                let name = named.or_else(|| found.as_ref().map(|f| f.name.to_string()));
                if let Some(name) = name.filter(|n| !access.topic(Operation::Describe, n)) {
                    // Without DESCRIBE the caller learns nothing, not even whether it exists.
                    let name = asked_name.map(|_| TopicName(StrBytes::from_string(name)));
                    let denied = ResponseError::TopicAuthorizationFailed;
                    out.push(missing(name, t.topic_id, denied));
                    continue;
                }
                out.push(match (found, asked_name) {
                    (Some(topic), _) => describe(&topic, version, &cluster, topic_ops(&topic.name)),
                    (None, None) => missing(None, t.topic_id, ResponseError::UnknownTopicId),
                    (None, Some(name)) => {
                        let code = if let Err(e) = validate_topic_name(&name) {
                            tracing::debug!(error = %e, "metadata for an invalid topic name");
                            ResponseError::InvalidTopicException
                        } else if may_create
                            && !access.cluster(Operation::Create)
                            && !access.topic(Operation::Create, &name)
                        {
                            ResponseError::TopicAuthorizationFailed
                        } else if may_create {
                            auto_create(&gw, &name).await
                        } else {
                            ResponseError::UnknownTopicOrPartition
                        };
                        missing(Some(name), Uuid::nil(), code)
                    }
                });
            }
            out
        }
    };
    MetadataResponse::default()
        .with_brokers(
            cluster
                .brokers()
                .iter()
                .filter_map(|n| {
                    let at = n.endpoint(&caller.listener)?;
                    Some(
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(n.id))
                            .with_host(StrBytes::from_string(at.host.clone()))
                            .with_port(at.port as i32),
                    )
                })
                .collect(),
        )
        .with_cluster_id(
            (version >= since::METADATA_CLUSTER_ID)
                .then(|| StrBytes::from_string(gw.settings.cluster_id.clone())),
        )
        .with_controller_id(BrokerId(if version >= since::METADATA_CONTROLLER_ID {
            cluster.controller().id
        } else {
            -1
        }))
        .with_topics(topics)
        .with_cluster_authorized_operations(if req.include_cluster_authorized_operations {
            access.operations(ResourceType::Cluster, CLUSTER_NAME)
        } else {
            OPERATIONS_NOT_REQUESTED
        })
}

/// The name a requested topic is looked up by: none when it carries a topic id (v10+).
/// Kafka looks a topic named by id up by the id whatever the name says (`KafkaApis`
/// takes the ids when any is set), and the Java client's `describeTopics` by id sends
/// the id with an empty name, which must not read as the invalid topic name "".
fn by_name(t: &MetadataRequestTopic) -> Option<&TopicName> {
    if t.topic_id.is_nil() {
        t.name.as_ref()
    } else {
        None
    }
}

/// Creates a topic with the broker defaults; the answer for it this time.
async fn auto_create(gw: &Gateway, name: &TopicName) -> ResponseError {
    let rules = gw.topics.rules();
    let created = gw
        .topics
        .create(CreateTopic {
            name: name.to_string(),
            partitions: rules.num_partitions,
            replication_factor: rules.default_replication_factor,
            configs: Vec::new(),
            validate_only: false,
        })
        .await;
    match created {
        Ok(Ok(_)) => ResponseError::LeaderNotAvailable,
        Ok(Err(e)) if e.code() == ResponseError::TopicAlreadyExists => {
            ResponseError::LeaderNotAvailable
        }
        Ok(Err(e)) => {
            tracing::warn!(topic = %name.as_str(), error = %e, "auto-creation failed");
            e.code()
        }
        Err(_) => ResponseError::CoordinatorNotAvailable,
    }
}

/// The leader epoch of every partition: leaders never change here.
pub(super) const LEADER_EPOCH: i32 = 0;

/// Where clients are told a partition lives, as Metadata and DescribeTopicPartitions
/// both answer it: led by one of the live gateways, which is also its only replica and
/// in sync, whatever replication factor the topic was created with (the backend keeps
/// the data; any gateway serves any partition).
pub(super) struct Placement {
    pub leader: BrokerId,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
}

pub(super) fn placement(cluster: &Cluster, topic: &Arc<str>, partition: i32) -> Placement {
    let tp = TopicPartition {
        topic: topic.clone(),
        partition,
    };
    let leader = BrokerId(cluster.leader_of(&tp).id);
    Placement {
        leader,
        replicas: vec![leader],
        isr: vec![leader],
    }
}

/// A topic with its partitions placed over the live gateways ([`placement`]).
fn describe(
    t: &Arc<TopicMeta>,
    version: i16,
    cluster: &Cluster,
    operations: i32,
) -> MetadataResponseTopic {
    // Leader epochs are answered from v7.
    let epoch = if version >= since::METADATA_LEADER_EPOCH {
        LEADER_EPOCH
    } else {
        -1
    };
    let partitions = (0..t.partitions)
        .map(|p| {
            let placed = placement(cluster, &t.name, p);
            MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(placed.leader)
                .with_leader_epoch(epoch)
                .with_replica_nodes(placed.replicas)
                .with_isr_nodes(placed.isr)
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(t.name.to_string()))))
        .with_topic_id(if version >= since::METADATA_TOPIC_ID {
            t.id
        } else {
            Uuid::nil()
        })
        .with_is_internal(is_internal(&t.name))
        .with_partitions(partitions)
        .with_topic_authorized_operations(operations)
}

fn missing(name: Option<TopicName>, id: Uuid, code: ResponseError) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_error_code(code.code())
        .with_name(name)
        .with_topic_id(id)
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
}
