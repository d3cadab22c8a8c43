//! The config-catalog actor: owner of every configuration definition
//! ([`definitions`]) and of the dynamic broker configurations, which live in the
//! backend so every gateway on it shares them.
//!
//! It checks what clients send (CreateTopics, AlterConfigs, IncrementalAlterConfigs),
//! changes broker configurations one at a time, and publishes the configurations in
//! force as an immutable [`ClusterConfig`] after every change and every re-read of
//! the backend, so readers (DescribeConfigs, Produce, the topic admin) never wait on it.

mod changes;
pub mod definitions;
mod effective;
mod features;
mod in_force;
mod kafka_broker_configs;
mod rules;
mod stored;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::watch;

use crate::settings::BrokerSettings;
use crate::store::shared::{Modify, SharedTable};
use crate::store::Meta;
use crate::store::{ClusterConfigs, StoreError, TopicMeta};
pub use changes::{ConfigChange, Op};
use definitions::{
    broker_config, topic_config, Definition, Mode, ELR_MIN_INSYNC_REPLICAS, UNKNOWN_BROKER_CONFIG,
};
pub use effective::{static_configs, ClusterConfig, ConfigSource, Entry, StaticConfig, Synonym};
pub use features::{Finalized, UpgradeType, FEATURE, MAX_LEVEL, MIN_LEVEL};
pub use in_force::{CompactionInForce, InForce, TopicInForce};
use stored::ClusterMaps;

/// Shared map holding the dynamic broker configurations of every gateway.
const CLUSTER_DEFAULT: &str = "broker-configs";

/// Shared map holding one gateway's own dynamic broker configurations.
fn per_broker(node_id: i32) -> String {
    format!("{CLUSTER_DEFAULT}/{node_id}")
}

/// Shared maps holding each gateway's static settings, reported at startup.
const STATICS: &str = "static-configs/";

/// Which kind of resource a configuration belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKind {
    Topic,
    Broker,
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigKind::Topic => "topic",
            ConfigKind::Broker => "broker",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown {kind} configuration '{name}'")]
    Unknown { kind: ConfigKind, name: String },
    #[error("topic configuration '{0}' has no value")]
    Null(String),
    #[error("null value not supported for: {0}")]
    NullUpdate(String),
    #[error("invalid value '{value}' for {kind} configuration '{name}': {rule}")]
    Invalid {
        kind: ConfigKind,
        name: String,
        value: String,
        rule: String,
    },
    #[error("configuration '{0}' appears more than once in the request")]
    Duplicate(String),
    #[error("unknown operation {code} for configuration '{name}'")]
    UnknownOp { name: String, code: i8 },
    #[error("{op:?} is not allowed for {kind} configuration '{name}': it is not a list")]
    NotList {
        kind: ConfigKind,
        name: String,
        op: Op,
    },
    // Kafka's own messages for the broker configurations its dynamic-config check and
    // its controller refuse (one name a message here: the first refused).
    #[error("Cannot update these configs dynamically: [{0}]")]
    ReadOnly(String),
    #[error("These security configs can be dynamically updated only per-listener using the listener prefix: [{0}]")]
    PerListener(String),
    #[error(
        "Cannot update these configs at default cluster level, broker id must be specified: [{0}]"
    )]
    PerBrokerOnly(String),
    #[error("Broker-level {ELR_MIN_INSYNC_REPLICAS} cannot be altered while ELR is enabled.")]
    ElrPerBroker,
    #[error("Cluster-level {ELR_MIN_INSYNC_REPLICAS} cannot be removed while ELR is enabled.")]
    ElrRemoved,
    #[error("conflicting topic configurations: {0}")]
    Conflict(String),
    #[error("value '{value}' of '{name}' is not allowed at {FEATURE} {level}: {rule}")]
    Level {
        name: String,
        value: String,
        level: i16,
        rule: String,
    },
    #[error(transparent)]
    Backend(#[from] StoreError),
    #[error("the config catalog is not running")]
    CatalogGone,
}

impl ConfigError {
    /// The error Kafka answers: INVALID_CONFIG for a topic configuration that is
    /// unknown or has a bad value; INVALID_REQUEST for malformed changes and for
    /// broker configurations Kafka's dynamic-config check refuses.
    pub fn code(&self) -> ResponseError {
        match self {
            ConfigError::Unknown { .. }
            | ConfigError::Null(_)
            | ConfigError::NotList { .. }
            | ConfigError::Conflict(_)
            | ConfigError::Level { .. }
            | ConfigError::ElrPerBroker
            | ConfigError::ElrRemoved
            | ConfigError::Invalid {
                kind: ConfigKind::Topic,
                ..
            } => ResponseError::InvalidConfig,
            ConfigError::Invalid {
                kind: ConfigKind::Broker,
                ..
            }
            | ConfigError::NullUpdate(_)
            | ConfigError::Duplicate(_)
            | ConfigError::UnknownOp { .. }
            | ConfigError::ReadOnly(_)
            | ConfigError::PerListener(_)
            | ConfigError::PerBrokerOnly(_) => ResponseError::InvalidRequest,
            ConfigError::Backend(e) => e.code(),
            ConfigError::CatalogGone => ResponseError::UnknownServerError,
        }
    }
}

/// Why the catalog, and so the gateway, does not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot read the shared configurations: {0}")]
    Backend(#[from] StoreError),
    #[error("cannot load the committed offsets: {0}")]
    Offsets(#[from] crate::offsets::OffsetError),
    #[error("static settings break {FEATURE} {level}, finalized in the backend: {offenders}")]
    StaticConfig { level: i16, offenders: String },
}

/// Why a feature level was not changed; answered INVALID_UPDATE_VERSION (95) unless
/// the backend failed.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    #[error("feature '{0}' cannot be changed: only {FEATURE} can (transaction.version follows the store, docs/COMPATIBILITY.md)")]
    Unknown(String),
    #[error("{FEATURE} {0} is not supported: levels {MIN_LEVEL} to {MAX_LEVEL}")]
    Unsupported(i16),
    #[error("{FEATURE} {current} cannot go down to {target} without a safe or unsafe downgrade")]
    DowngradeNotAsked { current: i16, target: i16 },
    #[error("{FEATURE} {current} cannot go up to {target} with a downgrade")]
    UpgradeAsDowngrade { current: i16, target: i16 },
    #[error("unknown upgrade type {0}")]
    UpgradeType(i8),
    #[error("{FEATURE} {level} refused: these configurations break it: {offenders}")]
    Offenders { level: i16, offenders: String },
    #[error(transparent)]
    Backend(#[from] StoreError),
    #[error("the config catalog is not running")]
    CatalogGone,
}

impl FeatureError {
    pub fn code(&self) -> ResponseError {
        match self {
            FeatureError::Backend(e) => e.code(),
            FeatureError::CatalogGone => ResponseError::FeatureUpdateFailed,
            _ => ResponseError::InvalidUpdateVersion,
        }
    }
}

/// Change the finalized level of a feature (UpdateFeatures), auditing every stored
/// configuration against it first; with validate_only, audit only.
#[derive(Message)]
#[rtype(result = "Result<(), FeatureError>")]
pub struct UpdateFeature {
    pub feature: String,
    pub level: i16,
    /// UpdateFeatures' upgrade type code (v0's allow_downgrade mapped onto it).
    pub upgrade_type: i8,
    pub validate_only: bool,
    /// The topics as they are now: their configurations are audited too.
    pub topics: Vec<Arc<TopicMeta>>,
}

/// Check the configurations a client sent for a new topic; the answer holds them as
/// they are stored (normalised).
#[derive(Message)]
#[rtype(result = "Result<BTreeMap<String, String>, ConfigError>")]
pub struct ValidateTopicConfigs(pub Vec<(String, Option<String>)>);

/// Work out a topic's stored configurations after a change; nothing is stored here.
#[derive(Message)]
#[rtype(result = "Result<BTreeMap<String, String>, ConfigError>")]
pub struct ChangeTopicConfigs {
    pub current: BTreeMap<String, String>,
    pub change: ConfigChange,
}

/// Which broker resource a change is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerScope {
    /// Resource name "": every gateway.
    Cluster,
    /// Resource name = this gateway's node id.
    ThisBroker,
}

/// Change dynamic broker configurations. The answer is the configuration in force
/// before, so the caller can tell what the change did to topics.
#[derive(Message)]
#[rtype(result = "Result<Arc<ClusterConfig>, ConfigError>")]
pub struct AlterBrokerConfigs {
    pub scope: BrokerScope,
    pub change: ConfigChange,
    pub validate_only: bool,
}

pub struct ConfigCatalog {
    /// The shared maps, and the copy its table publishes.
    maps: Addr<SharedTable<ClusterMaps>>,
    stored: watch::Receiver<Arc<ClusterConfigs>>,
    node_id: i32,
    /// The gateway's static settings as broker configurations.
    statics: ClusterConfig,
    published: watch::Sender<Arc<ClusterConfig>>,
}

impl ConfigCatalog {
    /// Reads the stored broker configurations and starts the catalog.
    /// Refuses to start when the gateway's static settings break the finalized feature
    /// level; reports them to the backend for the audits of later level changes.
    pub async fn start_with(
        meta: &Meta,
        settings: &BrokerSettings,
    ) -> Result<(Addr<ConfigCatalog>, watch::Receiver<Arc<ClusterConfig>>), StartError> {
        let (maps, stored) =
            SharedTable::<ClusterMaps>::start(meta, settings.topic_refresh_interval).await?;
        let statics = ClusterConfig::new(settings);
        let node_id = settings.node_id;
        let level = Finalized::from_stored(&stored.borrow()).level;
        let reported = static_configs(settings);
        let offenders: Vec<String> = reported
            .iter()
            .filter_map(|c| {
                let def = broker_config(c.name)?.definition();
                let rule = features::check(def.name, &c.value, level).err()?;
                Some(format!(
                    "'{}' = {} ({}): {rule}",
                    c.setting, c.value, c.name
                ))
            })
            .collect();
        if !offenders.is_empty() {
            return Err(StartError::StaticConfig {
                level,
                offenders: offenders.join("; "),
            });
        }
        let report: BTreeMap<String, String> = reported
            .into_iter()
            .map(|c| (c.name.to_string(), c.value))
            .collect();
        let edit = stored::set(format!("{STATICS}{node_id}"), report);
        maps.send(Modify(Box::new(move |_: &ClusterConfigs| (vec![edit], ()))))
            .await
            .map_err(gone)??;
        let in_force_now = in_force(&statics, node_id, &stored.borrow());
        let (published, rx) = watch::channel(Arc::new(in_force_now));
        let catalog = ConfigCatalog {
            maps,
            stored,
            node_id,
            statics,
            published,
        };
        Ok((catalog.start(), rx))
    }

    fn current(&self) -> Arc<ClusterConfig> {
        self.published.borrow().clone()
    }

    fn level(&self) -> i16 {
        self.current().finalized().level
    }

    /// Kafka's checks across a topic's values (`LogConfig.validateValues` and the
    /// tiered-storage check of a broker without tiered storage).
    fn check_topic(&self, configs: &BTreeMap<String, String>) -> Result<(), ConfigError> {
        let config = self.current();
        let value = |name: &str| config.topic_value(configs, name).map_or("", |(v, _)| v);
        if value("remote.storage.enable") == "true" {
            return Err(ConfigError::Conflict(
                "tiered storage is not available on this gateway; remote.storage.enable must be false"
                    .into(),
            ));
        }
        let lag = |name| value(name).parse::<i64>().unwrap_or_default();
        let (min, max) = (lag("min.compaction.lag.ms"), lag("max.compaction.lag.ms"));
        if min > max {
            return Err(ConfigError::Conflict(format!(
                "min.compaction.lag.ms ({min}) is greater than max.compaction.lag.ms ({max})"
            )));
        }
        Ok(())
    }

    fn change_topic(
        &self,
        current: &BTreeMap<String, String>,
        change: ConfigChange,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let rules = (ConfigKind::Topic, self.level());
        let changed = changes::apply(current, change, rules, settable_topic_config)?;
        self.check_topic(&changed)?;
        Ok(changed)
    }

    /// Publishes what is in force given the shared maps as they are now.
    fn republish(&self) {
        let stored = self.stored.borrow().clone();
        self.publish(in_force(&self.statics, self.node_id, &stored));
    }

    fn publish(&self, next: ClusterConfig) {
        self.published.send_if_modified(|current| {
            let changed = **current != next;
            if changed {
                tracing::info!(
                    cluster = ?next.cluster_default(),
                    this_broker = ?next.this_broker(),
                    "dynamic broker configurations in force"
                );
                *current = Arc::new(next);
            }
            changed
        });
    }
}

/// The configuration in force given what the backend stores.
fn in_force(statics: &ClusterConfig, node_id: i32, stored: &ClusterConfigs) -> ClusterConfig {
    let map = |name: &str| stored.get(name).cloned().unwrap_or_default();
    let cluster = with_elr_min_insync_replicas(map(CLUSTER_DEFAULT));
    statics
        .with_dynamic(cluster, map(&per_broker(node_id)))
        .with_finalized(Finalized::from_stored(stored))
}

/// Every stored configuration that breaks the rules of feature `level`: topics' own,
/// dynamic broker configurations and the static settings gateways reported, each
/// named with where it is set.
fn offenders(level: i16, topics: &[Arc<TopicMeta>], stored: &ClusterConfigs) -> Vec<String> {
    let check = |owner: &str,
                 values: &BTreeMap<String, String>,
                 lookup: &dyn Fn(&str) -> Option<&'static Definition>| {
        values
            .iter()
            .filter_map(|(name, value)| {
                let rule = features::check(lookup(name)?.name, value, level).err()?;
                Some(format!("{owner}: {name}={value} ({rule})"))
            })
            .collect::<Vec<_>>()
    };
    let topic = |name: &str| topic_config(name);
    let broker = |name: &str| broker_config(name).map(|b| b.definition());
    let mut found: Vec<String> = topics
        .iter()
        .flat_map(|t| check(&format!("topic '{}'", t.name), &t.configs, &topic))
        .collect();
    for (map, values) in stored {
        let owner = if map == CLUSTER_DEFAULT {
            "broker configuration of every gateway".to_string()
        } else if let Some(node) = map.strip_prefix(&format!("{CLUSTER_DEFAULT}/")) {
            format!("broker configuration of gateway {node}")
        } else if let Some(node) = map.strip_prefix(STATICS) {
            format!("static setting of gateway {node}")
        } else {
            continue;
        };
        found.extend(check(&owner, values, &broker));
    }
    found
}

/// A topic configuration, or why a client may not set it.
fn settable_topic_config(name: &str) -> Result<&'static Definition, ConfigError> {
    topic_config(name).ok_or_else(|| ConfigError::Unknown {
        kind: ConfigKind::Topic,
        name: name.to_string(),
    })
}

/// A broker configuration a client may change on `scope`, or why not, in the order of
/// Kafka's checks: read-only, security configurations without a listener prefix,
/// per-broker ones for every broker, then its controller's `min.insync.replicas` rule.
/// A name Kafka does not define is stored as given, as Kafka stores it.
fn alterable_broker_config(
    name: &str,
    scope: BrokerScope,
) -> Result<&'static Definition, ConfigError> {
    let Some(b) = broker_config(name) else {
        return Ok(&UNKNOWN_BROKER_CONFIG);
    };
    let name = name.to_string();
    match (b.mode(), scope) {
        (Mode::ReadOnly, _) => Err(ConfigError::ReadOnly(name)),
        (Mode::PerListener, _) => Err(ConfigError::PerListener(name)),
        (Mode::PerBroker, BrokerScope::Cluster) => Err(ConfigError::PerBrokerOnly(name)),
        _ if name == ELR_MIN_INSYNC_REPLICAS && scope == BrokerScope::ThisBroker => {
            Err(ConfigError::ElrPerBroker)
        }
        _ => Ok(b.definition()),
    }
}

/// The cluster-level configurations with the `min.insync.replicas` Kafka's controller
/// writes at bootstrap when ELR is enabled (its default, while nobody set another).
fn with_elr_min_insync_replicas(mut cluster: BTreeMap<String, String>) -> BTreeMap<String, String> {
    if let Some(b) = broker_config(ELR_MIN_INSYNC_REPLICAS) {
        cluster
            .entry(ELR_MIN_INSYNC_REPLICAS.to_string())
            .or_insert_with(|| b.definition().default_text().to_string());
    }
    cluster
}

impl Actor for ConfigCatalog {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Changes other gateways made, as the shared table catches up with them.
        let changes = futures_util::stream::unfold(self.stored.clone(), |mut rx| async {
            rx.changed().await.ok().map(|()| ((), rx))
        });
        ctx.add_stream(changes);
    }
}

impl StreamHandler<()> for ConfigCatalog {
    fn handle(&mut self, _: (), _: &mut Self::Context) {
        self.republish();
    }

    fn finished(&mut self, _: &mut Self::Context) {}
}

impl Handler<ValidateTopicConfigs> for ConfigCatalog {
    type Result = Result<BTreeMap<String, String>, ConfigError>;

    fn handle(&mut self, msg: ValidateTopicConfigs, _: &mut Self::Context) -> Self::Result {
        if let Some((name, _)) = msg.0.iter().find(|(_, v)| v.is_none()) {
            return Err(ConfigError::Null(name.clone()));
        }
        self.change_topic(&BTreeMap::new(), ConfigChange::Replace(msg.0))
    }
}

impl Handler<ChangeTopicConfigs> for ConfigCatalog {
    type Result = Result<BTreeMap<String, String>, ConfigError>;

    fn handle(&mut self, msg: ChangeTopicConfigs, _: &mut Self::Context) -> Self::Result {
        self.change_topic(&msg.current, msg.change)
    }
}

impl Handler<AlterBrokerConfigs> for ConfigCatalog {
    type Result = AtomicResponse<Self, Result<Arc<ClusterConfig>, ConfigError>>;

    fn handle(&mut self, msg: AlterBrokerConfigs, _: &mut Self::Context) -> Self::Result {
        let rules = (ConfigKind::Broker, self.level());
        let name = match msg.scope {
            BrokerScope::Cluster => CLUSTER_DEFAULT.to_string(),
            BrokerScope::ThisBroker => per_broker(self.node_id),
        };
        let scope = msg.scope;
        // Decided on the latest stored values: another gateway may have changed them.
        let decide = move |stored: &ClusterConfigs| {
            let stored_now = stored.get(&name).cloned().unwrap_or_default();
            let current = match scope {
                BrokerScope::Cluster => with_elr_min_insync_replicas(stored_now.clone()),
                BrokerScope::ThisBroker => stored_now.clone(),
            };
            let known = |name: &str| alterable_broker_config(name, scope);
            let changed =
                changes::apply(&current, msg.change, rules, known).and_then(
                    |changed| match scope {
                        BrokerScope::Cluster if !changed.contains_key(ELR_MIN_INSYNC_REPLICAS) => {
                            Err(ConfigError::ElrRemoved)
                        }
                        _ => Ok(changed),
                    },
                );
            match changed {
                Ok(changed) if !msg.validate_only && changed != stored_now => {
                    (vec![stored::set(name, changed)], Ok(()))
                }
                Ok(_) => (Vec::new(), Ok(())),
                Err(e) => (Vec::new(), Err(e)),
            }
        };
        let maps = self.maps.clone();
        let alter = async move { maps.send(Modify(Box::new(decide))).await };
        AtomicResponse::new(Box::pin(alter.into_actor(self).map(|done, act, _| {
            // Mailbox, store, then the change's own outcome.
            let outcome = done.map_err(gone)??;
            outcome?;
            let before = act.current();
            act.republish();
            Ok(before)
        })))
    }
}

impl Handler<UpdateFeature> for ConfigCatalog {
    type Result = AtomicResponse<Self, Result<(), FeatureError>>;

    fn handle(&mut self, msg: UpdateFeature, _: &mut Self::Context) -> Self::Result {
        let maps = self.maps.clone();
        let update = async move {
            if msg.feature != FEATURE {
                return Err(FeatureError::Unknown(msg.feature));
            }
            let target = msg.level;
            if !(MIN_LEVEL..=MAX_LEVEL).contains(&target) {
                return Err(FeatureError::Unsupported(target));
            }
            let upgrade = UpgradeType::from_code(msg.upgrade_type)
                .ok_or(FeatureError::UpgradeType(msg.upgrade_type))?;
            let topics = msg.topics;
            // Decided on the latest stored state: another gateway may have changed it.
            let decide = move |stored: &ClusterConfigs| match feature_change(
                stored,
                &topics,
                target,
                upgrade,
                msg.validate_only,
            ) {
                Ok(Some(map)) => (vec![stored::set(features::FEATURES.into(), map)], Ok(())),
                Ok(None) => (Vec::new(), Ok(())),
                Err(e) => (Vec::new(), Err(e)),
            };
            maps.send(Modify(Box::new(decide))).await.map_err(gone)??
        };
        AtomicResponse::new(Box::pin(update.into_actor(self).map(
            |done: Result<(), FeatureError>, act, _| {
                done?;
                act.republish();
                Ok(())
            },
        )))
    }
}

/// The features map that finalizes `target`, after Kafka's checks and the audit of
/// what is stored; `None` when nothing is to be written.
fn feature_change(
    stored: &ClusterConfigs,
    topics: &[Arc<TopicMeta>],
    target: i16,
    upgrade: UpgradeType,
    validate_only: bool,
) -> Result<Option<BTreeMap<String, String>>, FeatureError> {
    let current = Finalized::from_stored(stored);
    match (target.cmp(&current.level), upgrade) {
        (std::cmp::Ordering::Less, UpgradeType::Upgrade) => {
            return Err(FeatureError::DowngradeNotAsked {
                current: current.level,
                target,
            })
        }
        (
            std::cmp::Ordering::Greater,
            UpgradeType::SafeDowngrade | UpgradeType::UnsafeDowngrade,
        ) => {
            return Err(FeatureError::UpgradeAsDowngrade {
                current: current.level,
                target,
            })
        }
        _ => {}
    }
    let found = offenders(target, topics, stored);
    if !found.is_empty() {
        return Err(FeatureError::Offenders {
            level: target,
            offenders: found.join("; "),
        });
    }
    if validate_only || target == current.level {
        return Ok(None);
    }
    let (next, map) = current.next(target);
    tracing::info!(
        level = next.level,
        epoch = next.epoch,
        "{FEATURE} finalized"
    );
    Ok(Some(map))
}

/// The catalog's table went away: the gateway is stopping.
fn gone(_: MailboxError) -> StoreError {
    StoreError::unavailable("configuration table unavailable")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(pairs: &[(&str, &str)]) -> Result<BTreeMap<String, String>, ConfigError> {
        let changes = ConfigChange::Replace(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                .collect(),
        );
        changes::apply(
            &BTreeMap::new(),
            changes,
            (ConfigKind::Topic, 1),
            settable_topic_config,
        )
    }

    #[test]
    fn accepts_what_frameworks_send() {
        let ok = validate(&[
            ("cleanup.policy", "compact,delete"),
            ("retention.bytes", "-1"),
            ("retention.ms", "604800000"),
            ("message.timestamp.type", "LogAppendTime"),
            ("min.cleanable.dirty.ratio", "0.5"),
        ])
        .unwrap();
        assert_eq!(ok["cleanup.policy"], "compact,delete");
    }

    #[test]
    fn names_the_key_and_the_rule_it_broke() {
        let e = validate(&[("no.such", "1")]).unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidConfig);
        assert!(e.to_string().contains("no.such"), "{e}");
        let e = validate(&[("retention.ms", "-7")]).unwrap_err();
        assert_eq!(e.code(), ResponseError::InvalidConfig);
        let e = e.to_string();
        assert!(
            e.contains("retention.ms") && e.contains("at least -1"),
            "{e}"
        );
    }

    #[test]
    fn broker_changes_are_refused_as_kafka_does() {
        use BrokerScope::{Cluster, ThisBroker};
        let refused = [
            ("delete.topic.enable", ThisBroker, ResponseError::InvalidRequest,
                "Cannot update these configs dynamically: [delete.topic.enable]"),
            ("num.partitions", Cluster, ResponseError::InvalidRequest,
                "Cannot update these configs dynamically: [num.partitions]"),
            ("transactional.id.expiration.ms", ThisBroker, ResponseError::InvalidRequest,
                "Cannot update these configs dynamically: [transactional.id.expiration.ms]"),
            ("ssl.keystore.password", ThisBroker, ResponseError::InvalidRequest,
                "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.password]"),
            ("sasl.kerberos.min.time.before.relogin", Cluster, ResponseError::InvalidRequest,
                "Cannot update these configs at default cluster level, broker id must be specified: [sasl.kerberos.min.time.before.relogin]"),
            ("min.insync.replicas", ThisBroker, ResponseError::InvalidConfig,
                "Broker-level min.insync.replicas cannot be altered while ELR is enabled."),
        ];
        for (name, scope, code, message) in refused {
            let e = alterable_broker_config(name, scope).unwrap_err();
            assert_eq!((e.code(), e.to_string().as_str()), (code, message));
        }
        for (name, scope) in [
            ("sasl.kerberos.min.time.before.relogin", ThisBroker),
            ("log.cleaner.threads", Cluster),
            ("log.cleaner.threads", ThisBroker),
            ("min.insync.replicas", Cluster),
            ("log.retention.ms", ThisBroker),
        ] {
            assert!(alterable_broker_config(name, scope).is_ok(), "{name}");
        }
        // Unknown names are stored as given, as Kafka does.
        let d = alterable_broker_config("no.such", Cluster).unwrap();
        assert_eq!(d.kind, definitions::ConfigType::Unknown);
    }
}
