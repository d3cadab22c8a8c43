//! The topic-admin actor: owns topic creation, deletion and the topic table.
//!
//! Changes go through this one actor, one at a time, so two clients creating the
//! same topic get one topic and one TOPIC_ALREADY_EXISTS. Readers (Metadata,
//! Produce, Fetch) never ask the actor: it publishes an immutable [`TopicTable`]
//! after every change and they read the latest one.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::watch;
use uuid::Uuid;

use crate::backend::{Backend, BackendError, TopicMeta};
use crate::config_catalog::{ConfigCatalog, ConfigError, ValidateTopicConfigs};
use crate::gateway::BrokerSettings;

/// Partitions one topic may have: far above any real use, low enough that a
/// Metadata answer for the topic stays a reasonable size.
pub const MAX_PARTITIONS: i32 = 100_000;
/// Kafka's limit on topic name length (`Topic.MAX_NAME_LENGTH`).
const MAX_NAME_LEN: usize = 249;

#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("invalid topic name '{name}': {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("topic '{0}' already exists")]
    Exists(String),
    #[error("number of partitions must be between 1 and {MAX_PARTITIONS} (or -1 for the default), got {0}")]
    InvalidPartitions(i32),
    #[error("replication factor must be at least 1 (or -1 for the default), got {0}")]
    InvalidReplicationFactor(i16),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("topic '{0}' does not exist")]
    Unknown(String),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("the config catalog is not running")]
    CatalogGone,
}

impl TopicError {
    pub fn code(&self) -> ResponseError {
        match self {
            TopicError::InvalidName { .. } => ResponseError::InvalidTopicException,
            TopicError::Exists(_) => ResponseError::TopicAlreadyExists,
            TopicError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
            TopicError::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
            TopicError::Config(_) => ResponseError::InvalidConfig,
            TopicError::Unknown(_) => ResponseError::UnknownTopicOrPartition,
            TopicError::Backend(BackendError::TopicExists(_)) => ResponseError::TopicAlreadyExists,
            TopicError::Backend(BackendError::UnknownTopic(_)) => {
                ResponseError::UnknownTopicOrPartition
            }
            TopicError::Backend(e) => crate::api::backend_error_code(e),
            TopicError::CatalogGone => ResponseError::UnknownServerError,
        }
    }
}

/// Kafka's `Topic.validate`: the same names Kafka accepts, with the same reasons.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let reason = if name.is_empty() {
        "the name is empty"
    } else if name == "." || name == ".." {
        "'.' and '..' are not allowed"
    } else if name.len() > MAX_NAME_LEN {
        "the name is longer than 249 characters"
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        "only ASCII letters, digits, '.', '_' and '-' are allowed"
    } else {
        return Ok(());
    };
    Err(TopicError::InvalidName {
        name: name.to_string(),
        reason,
    })
}

/// Every topic, by name and by id. Published whole after each change.
#[derive(Default)]
pub struct TopicTable {
    by_name: HashMap<Arc<str>, Arc<TopicMeta>>,
    by_id: HashMap<Uuid, Arc<TopicMeta>>,
}

impl TopicTable {
    fn new(topics: impl IntoIterator<Item = TopicMeta>) -> Self {
        let mut table = TopicTable::default();
        for t in topics {
            table.insert(Arc::new(t));
        }
        table
    }

    fn insert(&mut self, t: Arc<TopicMeta>) {
        self.by_id.insert(t.id, t.clone());
        self.by_name.insert(t.name.clone(), t);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<TopicMeta>> {
        self.by_name.get(name)
    }

    pub fn by_id(&self, id: &Uuid) -> Option<&Arc<TopicMeta>> {
        self.by_id.get(id)
    }

    /// All topics, sorted by name.
    pub fn all(&self) -> Vec<&Arc<TopicMeta>> {
        let mut all: Vec<_> = self.by_name.values().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

/// Create one topic; -1 partitions or replication factor mean the broker defaults.
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct CreateTopic {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: Vec<(String, Option<String>)>,
    pub validate_only: bool,
}

/// Delete one topic and its records.
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct DeleteTopic(pub String);

pub struct TopicAdmin {
    backend: Arc<dyn Backend>,
    catalog: Addr<ConfigCatalog>,
    settings: Arc<BrokerSettings>,
    table: watch::Sender<Arc<TopicTable>>,
}

impl TopicAdmin {
    pub fn start_with(
        topics: Vec<TopicMeta>,
        backend: Arc<dyn Backend>,
        catalog: Addr<ConfigCatalog>,
        settings: Arc<BrokerSettings>,
    ) -> (Addr<TopicAdmin>, watch::Receiver<Arc<TopicTable>>) {
        let (table, rx) = watch::channel(Arc::new(TopicTable::new(topics)));
        let admin = TopicAdmin {
            backend,
            catalog,
            settings,
            table,
        }
        .start();
        (admin, rx)
    }

    /// Publishes a new table with `change` applied.
    fn publish(&self, change: impl FnOnce(&mut TopicTable)) {
        self.table.send_modify(|current| {
            let mut next = TopicTable {
                by_name: current.by_name.clone(),
                by_id: current.by_id.clone(),
            };
            change(&mut next);
            *current = Arc::new(next);
        });
    }

    fn new_topic(&self, msg: &CreateTopic) -> Result<TopicMeta, TopicError> {
        validate_topic_name(&msg.name)?;
        if self.table.borrow().get(&msg.name).is_some() {
            return Err(TopicError::Exists(msg.name.clone()));
        }
        let partitions = match msg.partitions {
            -1 => self.settings.num_partitions,
            n if (1..=MAX_PARTITIONS).contains(&n) => n,
            n => return Err(TopicError::InvalidPartitions(n)),
        };
        let replication_factor = match msg.replication_factor {
            -1 => self.settings.default_replication_factor,
            n if n >= 1 => n,
            n => return Err(TopicError::InvalidReplicationFactor(n)),
        };
        Ok(TopicMeta {
            name: msg.name.as_str().into(),
            id: Uuid::new_v4(),
            partitions,
            replication_factor,
            configs: Default::default(),
        })
    }
}

impl Actor for TopicAdmin {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.settings.topic_refresh_interval, |act, ctx| {
            act.refresh(ctx)
        });
    }
}

impl TopicAdmin {
    /// Re-reads the backend's topics, so topics made or removed by others (native Iggy
    /// clients) appear and disappear. `wait` keeps creates and deletes out meanwhile.
    fn refresh(&mut self, ctx: &mut Context<Self>) {
        let backend = self.backend.clone();
        ctx.wait(
            async move { backend.topics().await }
                .into_actor(self)
                .map(|listed, act, _| {
                    let mut listed = match listed {
                        Ok(topics) => topics,
                        Err(e) => return tracing::warn!(error = %e, "topic refresh failed"),
                    };
                    let mut known: Vec<TopicMeta> = act
                        .table
                        .borrow()
                        .all()
                        .into_iter()
                        .map(|t| (**t).clone())
                        .collect();
                    listed.sort_by(|a, b| a.name.cmp(&b.name));
                    known.sort_by(|a, b| a.name.cmp(&b.name));
                    if listed != known {
                        tracing::info!(topics = listed.len(), "topics changed in the backend");
                        act.table.send_replace(Arc::new(TopicTable::new(listed)));
                    }
                }),
        );
    }
}

impl Handler<CreateTopic> for TopicAdmin {
    type Result = AtomicResponse<Self, Result<Arc<TopicMeta>, TopicError>>;

    fn handle(&mut self, msg: CreateTopic, _: &mut Self::Context) -> Self::Result {
        let topic = self.new_topic(&msg);
        let catalog = self.catalog.clone();
        let backend = self.backend.clone();
        let create = async move {
            let mut topic = topic?;
            topic.configs = catalog
                .send(ValidateTopicConfigs(msg.configs))
                .await
                .map_err(|_| TopicError::CatalogGone)??;
            if !msg.validate_only {
                backend.create_topic(topic.clone()).await?;
            }
            Ok((Arc::new(topic), msg.validate_only))
        };
        AtomicResponse::new(Box::pin(create.into_actor(self).map(
            |created: Result<_, TopicError>, act, _| {
                let (topic, validate_only) = created?;
                if !validate_only {
                    tracing::info!(topic = %topic.name, partitions = topic.partitions, "topic created");
                    act.publish(|t| t.insert(topic.clone()));
                }
                Ok(topic)
            },
        )))
    }
}

impl Handler<DeleteTopic> for TopicAdmin {
    type Result = AtomicResponse<Self, Result<Arc<TopicMeta>, TopicError>>;

    fn handle(&mut self, msg: DeleteTopic, _: &mut Self::Context) -> Self::Result {
        let found = validate_topic_name(&msg.0).and_then(|_| {
            self.table
                .borrow()
                .get(&msg.0)
                .cloned()
                .ok_or(TopicError::Unknown(msg.0))
        });
        let backend = self.backend.clone();
        let delete = async move {
            let topic = found?;
            backend.delete_topic(&topic.name).await?;
            Ok(topic)
        };
        AtomicResponse::new(Box::pin(delete.into_actor(self).map(
            |deleted: Result<Arc<TopicMeta>, TopicError>, act, _| {
                let topic = deleted?;
                tracing::info!(topic = %topic.name, "topic deleted");
                act.publish(|t| {
                    t.by_name.remove(&topic.name);
                    t.by_id.remove(&topic.id);
                });
                Ok(topic)
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        for ok in ["a", "orders.v1", "A_b-9", &"x".repeat(249)] {
            assert!(validate_topic_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            " lead",
            "trail ",
            "sp ace",
            "ü",
            &"x".repeat(250),
        ] {
            let e = validate_topic_name(bad).unwrap_err();
            assert_eq!(e.code(), ResponseError::InvalidTopicException, "{bad}");
        }
    }
}
