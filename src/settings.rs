//! Settings: built-in defaults, then an optional TOML file (`--config PATH`), then
//! `IGGY_KAFKA_*` environment variables (`IGGY_KAFKA_BIND_ADDRESS` sets
//! `bind_address`). An unknown or malformed setting stops startup with its name.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use config::{Config, Environment, File, FileFormat};
use iggy_kafka_actors::BrokerSettings;
use serde::Deserialize;

use crate::embedded::SyncPolicy;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Load(#[from] config::ConfigError),
    #[error("setting '{name}': {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// When appended records are forced to disk (see `docs/STORAGE.md`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// fsync before every acknowledgement.
    Batch,
    /// fsync every `fsync_interval_ms`.
    Interval,
    /// Leave writeback to the OS.
    Off,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Embedded,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Address the Kafka listener binds (port 0 picks a free port).
    pub bind_address: SocketAddr,
    /// Host clients are told to connect to; the bind address's IP when unset.
    pub advertised_host: Option<String>,
    /// Port clients are told to connect to; the bound port when unset.
    pub advertised_port: Option<u16>,
    pub node_id: i32,
    pub cluster_id: String,
    pub backend: BackendKind,
    pub data_dir: PathBuf,
    pub durability: Durability,
    pub fsync_interval_ms: u64,
    pub max_request_bytes: usize,
    pub max_connections: usize,
    pub max_inflight_per_connection: usize,
    pub idle_timeout_ms: u64,
    pub read_timeout_ms: u64,
    pub write_timeout_ms: u64,
    pub shutdown_timeout_ms: u64,
    pub message_max_bytes: usize,
    pub auto_create_topics: bool,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    pub log_slots: usize,
    /// Actors that commit and read consumer-group offsets (a partition always uses the same one).
    pub offset_slots: usize,
    /// How long the first rebalance of an empty group waits for more members.
    pub group_initial_rebalance_delay_ms: u64,
    /// Threads serving connections; 0 means one per core.
    pub workers: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bind_address: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertised_host: None,
            advertised_port: None,
            node_id: 0,
            cluster_id: "iggy-kafka-gateway".into(),
            backend: BackendKind::Embedded,
            data_dir: PathBuf::from("./data"),
            durability: Durability::Interval,
            fsync_interval_ms: 1_000,
            max_request_bytes: 100 * 1024 * 1024,
            max_connections: 10_000,
            max_inflight_per_connection: 5,
            idle_timeout_ms: 600_000,
            read_timeout_ms: 30_000,
            write_timeout_ms: 30_000,
            shutdown_timeout_ms: 10_000,
            message_max_bytes: 1_048_588,
            auto_create_topics: true,
            num_partitions: 1,
            default_replication_factor: 1,
            log_slots: 4,
            offset_slots: 4,
            group_initial_rebalance_delay_ms: 3_000,
            workers: 0,
        }
    }
}

impl Settings {
    /// Defaults, then the file if given, then the environment.
    pub fn load(file: Option<&Path>) -> Result<Settings, SettingsError> {
        let mut builder = Config::builder();
        if let Some(path) = file {
            builder = builder.add_source(File::from(path).format(FileFormat::Toml).required(true));
        }
        let settings: Settings = builder
            .add_source(
                Environment::with_prefix("IGGY_KAFKA")
                    .prefix_separator("_")
                    .try_parsing(true),
            )
            .build()?
            .try_deserialize()?;
        settings.check()?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), SettingsError> {
        let at_least_one = [
            ("max_request_bytes", self.max_request_bytes as i64),
            ("max_connections", self.max_connections as i64),
            (
                "max_inflight_per_connection",
                self.max_inflight_per_connection as i64,
            ),
            ("idle_timeout_ms", self.idle_timeout_ms as i64),
            ("read_timeout_ms", self.read_timeout_ms as i64),
            ("write_timeout_ms", self.write_timeout_ms as i64),
            ("message_max_bytes", self.message_max_bytes as i64),
            ("num_partitions", self.num_partitions as i64),
            (
                "default_replication_factor",
                self.default_replication_factor as i64,
            ),
            ("log_slots", self.log_slots as i64),
            ("offset_slots", self.offset_slots as i64),
            ("fsync_interval_ms", self.fsync_interval_ms as i64),
        ];
        for (name, value) in at_least_one {
            if value < 1 {
                return Err(SettingsError::Invalid {
                    name,
                    reason: format!("must be at least 1, got {value}"),
                });
            }
        }
        if self
            .advertised_host
            .as_deref()
            .is_some_and(|h| h.trim().is_empty())
        {
            return Err(SettingsError::Invalid {
                name: "advertised_host",
                reason: "must not be empty".into(),
            });
        }
        Ok(())
    }

    pub fn sync_policy(&self) -> SyncPolicy {
        match self.durability {
            Durability::Batch => SyncPolicy::EveryBatch,
            Durability::Interval => {
                SyncPolicy::Every(Duration::from_millis(self.fsync_interval_ms))
            }
            Durability::Off => SyncPolicy::Never,
        }
    }

    /// What the actors need, once the listener's real address is known.
    pub fn broker(&self, bound: SocketAddr) -> BrokerSettings {
        BrokerSettings {
            node_id: self.node_id,
            cluster_id: self.cluster_id.clone(),
            advertised_host: self
                .advertised_host
                .clone()
                .unwrap_or_else(|| bound.ip().to_string()),
            advertised_port: self.advertised_port.unwrap_or(bound.port()),
            max_request_bytes: self.max_request_bytes,
            max_inflight_per_connection: self.max_inflight_per_connection,
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            read_timeout: Duration::from_millis(self.read_timeout_ms),
            write_timeout: Duration::from_millis(self.write_timeout_ms),
            message_max_bytes: self.message_max_bytes,
            auto_create_topics: self.auto_create_topics,
            num_partitions: self.num_partitions,
            default_replication_factor: self.default_replication_factor,
            max_connections: self.max_connections,
            log_slots: self.log_slots,
            offset_slots: self.offset_slots,
            group_initial_rebalance_delay: Duration::from_millis(
                self.group_initial_rebalance_delay_ms,
            ),
        }
    }
}
