//! The topic-admin actor: owns topic creation, deletion and the topic table.
//!
//! A topic is its partition logs (the log store) and its [`definitions`] (a shared
//! table of the metadata store); the table of topics combines the two.
//!
//! Changes go through this one actor, one at a time, so two clients creating the
//! same topic get one topic and one TOPIC_ALREADY_EXISTS. Readers (Metadata,
//! Produce, Fetch) never ask the actor: it publishes an immutable [`TopicTable`]
//! after every change and they read the latest one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::watch;
use uuid::Uuid;

pub mod definitions;
pub mod internal;
mod partitions;

use crate::config_catalog::definitions::MAX_PARTITIONS;
use crate::config_catalog::{
    ChangeTopicConfigs, ClusterConfig, ConfigCatalog, ConfigChange, ConfigError,
    ValidateTopicConfigs,
};
use crate::offsets::{OffsetError, Offsets};
use crate::settings::BrokerSettings;
use crate::store::shared::{CatchUp, Edit, Modify, Rows, SharedTable};
use crate::store::{Logs, Meta};
use crate::store::{StoreError, TopicMeta};
use definitions::{Definition, Definitions};
use internal::is_internal;
pub use partitions::CreatePartitions;

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
    #[error(
        "The topic {topic} currently has {has} partition(s); {asked} would not be an increase."
    )]
    NotAnIncrease { topic: String, has: i32, asked: i32 },
    #[error("Topic already has {0} partition(s).")]
    AlreadyHas(i32),
    #[error("a topic may have at most {MAX_PARTITIONS} partitions, {0} were asked for")]
    TooManyPartitions(i32),
    #[error("Attempted to add {adding} additional partition(s), but only {given} assignment(s) were specified.")]
    BadAssignment { adding: i32, given: usize },
    #[error("replication factor must be at least 1 (or -1 for the default), got {0}")]
    InvalidReplicationFactor(i16),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("topic '{0}' does not exist")]
    Unknown(String),
    #[error(transparent)]
    Backend(#[from] StoreError),
    #[error("topic '{0}' is internal: it stands for the gateway's offset store and cannot be deleted, altered or given partitions")]
    Internal(String),
    #[error("the config catalog is not running")]
    CatalogGone,
    #[error("the topic's committed offsets were not removed: {0}")]
    Offsets(#[from] OffsetError),
}

impl TopicError {
    pub fn code(&self) -> ResponseError {
        match self {
            TopicError::InvalidName { .. } => ResponseError::InvalidTopicException,
            TopicError::Exists(_) => ResponseError::TopicAlreadyExists,
            TopicError::InvalidPartitions(_)
            | TopicError::NotAnIncrease { .. }
            | TopicError::AlreadyHas(_)
            | TopicError::TooManyPartitions(_) => ResponseError::InvalidPartitions,
            TopicError::BadAssignment { .. } => ResponseError::InvalidReplicaAssignment,
            TopicError::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
            TopicError::Config(e) => e.code(),
            TopicError::Unknown(_) => ResponseError::UnknownTopicOrPartition,
            TopicError::Backend(StoreError::TopicExists(_)) => ResponseError::TopicAlreadyExists,
            TopicError::Backend(StoreError::UnknownTopic(_)) => {
                ResponseError::UnknownTopicOrPartition
            }
            TopicError::Backend(e) => e.code(),
            TopicError::Internal(_) => ResponseError::InvalidRequest,
            TopicError::CatalogGone => ResponseError::UnknownServerError,
            TopicError::Offsets(e) => e.code(),
        }
    }
}

/// Kafka's `Topic.validate`: the same names Kafka accepts, with the same reasons.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let reason = if name.is_empty() {
        "the name is empty"
    } else if name.trim() != name {
        "leading or trailing whitespace is not allowed"
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
    /// The backend's topics and the internal one; a backend topic of the internal
    /// one's name (made by a native client) is left out.
    fn new(topics: impl IntoIterator<Item = TopicMeta>, internal: &Arc<TopicMeta>) -> Self {
        let mut table = TopicTable::default();
        for t in topics.into_iter().filter(|t| !is_internal(&t.name)) {
            table.insert(Arc::new(t));
        }
        table.insert(internal.clone());
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

/// Create one topic. The sender resolves -1 (the broker defaults) through
/// [`crate::settings::TopicRules`] first.
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct CreateTopic {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: Vec<(String, Option<String>)>,
    pub validate_only: bool,
}

/// Delete one topic, its records and its committed offsets; the offsets are removed
/// first, within `deadline` (the request's `timeout_ms`).
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct DeleteTopic {
    pub name: String,
    pub deadline: Instant,
}

/// Change one topic's configurations (or, with validate_only, check the change).
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct AlterTopicConfigs {
    pub name: String,
    pub change: ConfigChange,
    pub validate_only: bool,
}

/// Broker configurations changed from `before`: apply the new limits of every topic
/// whose limits that changes.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BrokerConfigsChanged {
    pub before: Arc<ClusterConfig>,
}

pub struct TopicAdmin {
    logs: Logs,
    definitions: Addr<SharedTable<Definitions>>,
    /// A deleted topic's committed offsets go with it.
    offsets: Offsets,
    catalog: Addr<ConfigCatalog>,
    /// The configurations in force, as the catalog publishes them.
    configs: watch::Receiver<Arc<ClusterConfig>>,
    settings: Arc<BrokerSettings>,
    table: watch::Sender<Arc<TopicTable>>,
    /// `__consumer_offsets`, in every table published.
    internal: Arc<TopicMeta>,
    /// When the topics were last read from the backend.
    refreshed: Instant,
    /// Topics new to the table found without a definition, and when first found so:
    /// withheld for `DEFINITION_GRACE`, as another gateway may be making them.
    undefined: HashMap<Arc<str>, Instant>,
}

/// How long a topic new to the table may lack its definition before it is served as a
/// native topic: another gateway makes a topic's logs first, then writes its definition.
const DEFINITION_GRACE: Duration = Duration::from_secs(2);

/// Asked-for refreshes closer together than this wait for one read: a client polling
/// Metadata for a topic nobody made yet costs one backend read per interval.
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_millis(200);

impl TopicAdmin {
    /// Reads the topics (the logs, and the definitions shared with other gateways)
    /// and starts the actor.
    pub async fn start_with(
        (logs, meta, offsets): (Logs, &Meta, Offsets),
        (catalog, configs): (Addr<ConfigCatalog>, watch::Receiver<Arc<ClusterConfig>>),
        settings: Arc<BrokerSettings>,
    ) -> Result<(Addr<TopicAdmin>, watch::Receiver<Arc<TopicTable>>), StoreError> {
        let refresh = settings.topic_refresh_interval;
        let (definitions, _) = SharedTable::<Definitions>::start(meta, refresh).await?;
        let topics = listed(&logs, &definitions).await?;
        let topics: Vec<TopicMeta> = topics.into_iter().map(|(t, _)| t).collect();
        let internal = Arc::new(internal::consumer_offsets(&settings.cluster_id));
        let (table, rx) = watch::channel(Arc::new(TopicTable::new(topics, &internal)));
        let admin = TopicAdmin {
            logs,
            definitions,
            offsets,
            catalog,
            configs,
            settings,
            table,
            internal,
            refreshed: Instant::now(),
            undefined: HashMap::new(),
        }
        .start();
        Ok((admin, rx))
    }

    /// A topic by name, if the name is valid and the topic exists and may change.
    fn existing(&self, name: &str) -> Result<Arc<TopicMeta>, TopicError> {
        validate_topic_name(name)?;
        if is_internal(name) {
            return Err(TopicError::Internal(name.to_string()));
        }
        self.table
            .borrow()
            .get(name)
            .cloned()
            .ok_or_else(|| TopicError::Unknown(name.to_string()))
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
        if !(1..=MAX_PARTITIONS).contains(&msg.partitions) {
            return Err(TopicError::InvalidPartitions(msg.partitions));
        }
        // Any factor is recorded; the backend keeps what it keeps (one copy here).
        if msg.replication_factor < 1 {
            return Err(TopicError::InvalidReplicationFactor(msg.replication_factor));
        }
        Ok(TopicMeta {
            name: msg.name.as_str().into(),
            id: Uuid::new_v4(),
            partitions: msg.partitions,
            replication_factor: msg.replication_factor,
            configs: Default::default(),
        })
    }
}

impl Actor for TopicAdmin {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.settings.topic_refresh_interval, |act, ctx| {
            // `wait`: creates and deletes stay out while the table is re-read.
            ctx.wait(act.refresh())
        });
    }
}

/// Re-read the topics from the backend (a topic another gateway or a native client
/// just made); answered once the table holds a read begun after `asked`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Refresh {
    pub asked: Instant,
}

impl Handler<Refresh> for TopicAdmin {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: Refresh, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.read_since(msg.asked))
    }
}

impl TopicAdmin {
    /// The table as read after `asked`: as it is when a read begun since has finished
    /// (the reads of several asks made meanwhile share it), else after a new read, no
    /// sooner than `REFRESH_AT_MOST_EVERY` after the last began.
    fn read_since(&mut self, asked: Instant) -> ResponseActFuture<Self, ()> {
        if self.refreshed > asked {
            return Box::pin(fut::ready(()));
        }
        let wait = REFRESH_AT_MOST_EVERY.saturating_sub(self.refreshed.elapsed());
        let waited = tokio::time::sleep(wait).into_actor(self);
        Box::pin(waited.then(|(), act, _| act.refresh()))
    }

    /// `then` on the table as it is, or, when it lacks topic `name`, as read again
    /// first: a change or deletion of a topic another gateway just made finds it.
    fn knowing<R: 'static>(
        &mut self,
        name: &str,
        then: impl FnOnce(&mut Self) -> ResponseActFuture<Self, R> + 'static,
    ) -> AtomicResponse<Self, R> {
        if self.table.borrow().get(name).is_some() {
            return AtomicResponse::new(then(self));
        }
        let read = self.read_since(Instant::now());
        AtomicResponse::new(Box::pin(read.then(move |(), act, _| then(act))))
    }

    /// The non-internal topics of a refresh, but those new to the table without a
    /// definition for less than `DEFINITION_GRACE`: caught between another gateway's
    /// logs and its definition, a topic served now would keep a derived id and no
    /// configurations until the next periodic refresh. A native topic (never defined)
    /// appears once the grace is over.
    fn withholding_undefined(&mut self, listed: Vec<(TopicMeta, bool)>) -> Vec<TopicMeta> {
        let now = Instant::now();
        let table = self.table.borrow().clone();
        let mut undefined = HashMap::new();
        let kept = (listed.into_iter())
            .filter(|(t, _)| !is_internal(&t.name))
            .filter(|(t, defined)| {
                if *defined || table.get(&t.name).is_some() {
                    return true;
                }
                let since = *self.undefined.get(&t.name).unwrap_or(&now);
                undefined.insert(t.name.clone(), since);
                now.duration_since(since) >= DEFINITION_GRACE
            })
            .map(|(t, _)| t)
            .collect();
        self.undefined = undefined;
        kept
    }

    /// Re-reads the backend's topics, so topics made or removed by others (other
    /// gateways, native Iggy clients) appear and disappear.
    fn refresh(&mut self) -> impl ActorFuture<Self, Output = ()> + 'static {
        self.refreshed = Instant::now();
        let (logs, definitions) = (self.logs.clone(), self.definitions.clone());
        async move { listed(&logs, &definitions).await }
            .into_actor(self)
            .map(|listed, act, _| {
                let listed = match listed {
                    Ok(topics) => topics,
                    Err(e) => return tracing::warn!(error = %e, "topic refresh failed"),
                };
                let mut listed = act.withholding_undefined(listed);
                let mut known: Vec<TopicMeta> = act
                    .table
                    .borrow()
                    .all()
                    .into_iter()
                    .filter(|t| !is_internal(&t.name))
                    .map(|t| (**t).clone())
                    .collect();
                listed.sort_by(|a, b| a.name.cmp(&b.name));
                known.sort_by(|a, b| a.name.cmp(&b.name));
                if listed != known {
                    tracing::info!(topics = listed.len(), "topics changed in the backend");
                    act.table
                        .send_replace(Arc::new(TopicTable::new(listed, &act.internal)));
                }
            })
    }
}

impl Handler<CreateTopic> for TopicAdmin {
    type Result = AtomicResponse<Self, Result<Arc<TopicMeta>, TopicError>>;

    fn handle(&mut self, msg: CreateTopic, _: &mut Self::Context) -> Self::Result {
        let topic = self.new_topic(&msg);
        let catalog = self.catalog.clone();
        let configs = self.configs.clone();
        let (logs, definitions) = (self.logs.clone(), self.definitions.clone());
        let create = async move {
            let mut topic = topic?;
            topic.configs = catalog
                .send(ValidateTopicConfigs(msg.configs))
                .await
                .map_err(|_| TopicError::CatalogGone)??;
            if !msg.validate_only {
                let limits = configs.borrow().limits(&topic.configs);
                let made = logs
                    .create(topic.name.clone(), topic.partitions, limits)
                    .await?;
                let defined = define(&definitions, &topic, made.incarnation).await;
                if let Err(e) = defined {
                    // Without its definition the topic would come back with another id
                    // and no configs: undo it rather than leave it half made.
                    tracing::warn!(topic = %topic.name, error = %e, "cannot finish making the topic; deleting it again");
                    let _ = logs.delete(topic.name.clone()).await;
                    return Err(e.into());
                }
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
        let name = msg.name.clone();
        self.knowing(&name, move |act| act.delete(msg))
    }
}

impl TopicAdmin {
    fn delete(
        &mut self,
        msg: DeleteTopic,
    ) -> ResponseActFuture<Self, Result<Arc<TopicMeta>, TopicError>> {
        let found = self.existing(&msg.name);
        let (logs, offsets) = (self.logs.clone(), self.offsets.clone());
        let definitions = self.definitions.clone();
        let delete = async move {
            let topic = found?;
            // Offsets first: if this fails the topic is still whole and the client retries.
            offsets.forget_topic(&topic.name, msg.deadline).await?;
            logs.delete(topic.name.clone()).await?;
            // Best effort: a stale definition never matches a later topic of the name.
            let name = topic.name.to_string();
            let forget = move |_: &Rows<Definitions>| (vec![Edit::Delete(name)], ());
            match definitions.send(Modify(Box::new(forget))).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(topic = %topic.name, error = %e, "cannot forget the deleted topic's definition")
                }
                Err(e) => {
                    tracing::warn!(topic = %topic.name, error = %e, "cannot forget the deleted topic's definition")
                }
            }
            Ok(topic)
        };
        Box::pin(delete.into_actor(self).map(
            |deleted: Result<Arc<TopicMeta>, TopicError>, act, _| {
                let topic = deleted?;
                tracing::info!(topic = %topic.name, "topic deleted");
                act.publish(|t| {
                    t.by_name.remove(&topic.name);
                    t.by_id.remove(&topic.id);
                });
                Ok(topic)
            },
        ))
    }
}

impl Handler<AlterTopicConfigs> for TopicAdmin {
    type Result = AtomicResponse<Self, Result<Arc<TopicMeta>, TopicError>>;

    fn handle(&mut self, msg: AlterTopicConfigs, _: &mut Self::Context) -> Self::Result {
        let name = msg.name.clone();
        self.knowing(&name, move |act| act.alter(msg))
    }
}

impl TopicAdmin {
    fn alter(
        &mut self,
        msg: AlterTopicConfigs,
    ) -> ResponseActFuture<Self, Result<Arc<TopicMeta>, TopicError>> {
        let found = self.existing(&msg.name);
        let catalog = self.catalog.clone();
        let configs = self.configs.clone();
        let (logs, definitions) = (self.logs.clone(), self.definitions.clone());
        let alter = async move {
            let topic = found?;
            let changed = catalog
                .send(ChangeTopicConfigs {
                    current: topic.configs.clone(),
                    change: msg.change,
                })
                .await
                .map_err(|_| TopicError::CatalogGone)??;
            let altered = Arc::new(TopicMeta {
                configs: changed,
                ..(*topic).clone()
            });
            if !msg.validate_only && altered.configs != topic.configs {
                let limits = configs.borrow().limits(&altered.configs);
                // The logs' incarnation now: a native topic gets its first definition here.
                let incarnation = incarnation_of(&logs, &topic.name).await?;
                define(&definitions, &altered, incarnation).await?;
                logs.set_limits(topic.name.clone(), limits).await?;
            }
            Ok((altered, msg.validate_only))
        };
        Box::pin(alter.into_actor(self).map(
            |done: Result<_, TopicError>, act, _| {
                let (topic, validate_only) = done?;
                if !validate_only {
                    tracing::info!(topic = %topic.name, configs = ?topic.configs, "topic configurations changed");
                    act.publish(|t| t.insert(topic.clone()));
                }
                Ok(topic)
            },
        ))
    }
}

impl Handler<BrokerConfigsChanged> for TopicAdmin {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, msg: BrokerConfigsChanged, _: &mut Self::Context) -> Self::Result {
        let now = self.configs.borrow().clone();
        let changed: Vec<_> = self
            .table
            .borrow()
            .all()
            .into_iter()
            .filter(|t| !is_internal(&t.name))
            .filter_map(|t| {
                let limits = now.limits(&t.configs);
                (limits != msg.before.limits(&t.configs)).then(|| (t.clone(), limits))
            })
            .collect();
        let logs = self.logs.clone();
        AtomicResponse::new(Box::pin(
            async move {
                for (t, limits) in changed {
                    let applied = logs.set_limits(t.name.clone(), limits).await;
                    match applied {
                        Ok(()) => tracing::info!(topic = %t.name, ?limits, "broker configuration change applied to the topic"),
                        Err(e) => tracing::warn!(topic = %t.name, error = %e, "broker configuration change not applied to the topic"),
                    }
                }
            }
            .into_actor(self),
        ))
    }
}

/// Every topic: the logs the store holds, each with its definition when one describes
/// it, and whether one did.
async fn listed(
    logs: &Logs,
    definitions: &Addr<SharedTable<Definitions>>,
) -> Result<Vec<(TopicMeta, bool)>, StoreError> {
    let listed = logs.list().await?;
    let rows = definitions
        .send(CatchUp::default())
        .await
        .map_err(|_| StoreError::unavailable("topic definitions unavailable"))??;
    Ok(listed
        .iter()
        .map(|log| definitions::topic(log, &rows))
        .collect())
}

/// The incarnation of a topic's logs as the store holds them now.
async fn incarnation_of(logs: &Logs, name: &str) -> Result<u64, StoreError> {
    logs.list()
        .await?
        .into_iter()
        .find(|l| &*l.name == name)
        .map(|l| l.incarnation)
        .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))
}

/// Stores `topic`'s definition, for the logs of `incarnation`.
async fn define(
    definitions: &Addr<SharedTable<Definitions>>,
    topic: &TopicMeta,
    incarnation: u64,
) -> Result<(), StoreError> {
    let definition = Definition {
        id: topic.id,
        replication_factor: topic.replication_factor,
        configs: topic.configs.clone(),
        incarnation,
    };
    let edit = Edit::Put(topic.name.to_string(), definition);
    definitions
        .send(Modify(Box::new(move |_: &Rows<Definitions>| {
            (vec![edit], ())
        })))
        .await
        .map_err(|_| StoreError::unavailable("topic definitions unavailable"))?
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
