//! Settings: built-in defaults, then an optional TOML file (`--config PATH`), then
//! `IGGY_KAFKA_*` environment variables (`IGGY_KAFKA_BIND_ADDRESS` sets
//! `bind_address`). An unknown or malformed setting stops startup with its name.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use config::{Config, Environment, File, FileFormat};
use iggy_kafka_actors::authorizer::AuthorizerSettings;
use iggy_kafka_actors::config_catalog::definitions::MAX_PARTITIONS;
use iggy_kafka_actors::limits::ResourceLimits;
use iggy_kafka_actors::sasl::{Mechanism, PlainUsers, SaslSettings};
use iggy_kafka_actors::session::SecurityProtocol;
use iggy_kafka_actors::{BrokerSettings, TopicRules};
use serde::Deserialize;

use crate::embedded::SyncPolicy;
use crate::iggy::{IggyConfig, IggyTls, TopicOverride};
use crate::listeners::ListenerConfig;
use crate::tls::{ClientAuth, ClientCertificates, TlsFiles};

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

/// Which authorizer decides requests (Kafka's `authorizer.class.name`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuthorizerKind {
    /// Every request is allowed; the ACL APIs answer SECURITY_DISABLED.
    None,
    /// Kafka ACLs, decided as Kafka's `StandardAuthorizer` decides (`docs/SECURITY.md`).
    Standard,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Embedded,
    /// An Apache Iggy server (`iggy_*` settings, `docs/IGGY_MAPPING.md`).
    Iggy,
}

/// Where SASL/PLAIN passwords are checked.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PlainBackend {
    /// Against the SCRAM credentials the gateway stores.
    Gateway,
    /// By logging in to the Iggy server as that user (`backend = "iggy"` only).
    Iggy,
}

/// A Kafka topic kept elsewhere in Iggy than `iggy_stream`/same name (file only:
/// `[[iggy_topics]]` with `kafka`, `stream` and `topic`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IggyTopic {
    pub kafka: String,
    pub stream: String,
    pub topic: String,
}

/// A setting never shown: `Debug` prints a placeholder.
#[derive(Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Kafka listeners, `NAME://HOST:PORT,...` (`docs/SECURITY.md`); unset: the one
    /// PLAINTEXT listener below.
    pub listeners: Option<String>,
    /// `NAME:PROTOCOL,...` for listener names that are not protocol names.
    pub listener_security_protocol_map: Option<String>,
    /// `NAME://HOST:PORT,...`: what Metadata tells clients per listener.
    pub advertised_listeners: Option<String>,
    /// Address of the PLAINTEXT listener when `listeners` is unset (port 0 picks a
    /// free port); 127.0.0.1:9092 when also unset.
    pub bind_address: Option<SocketAddr>,
    /// Host clients are told to connect to; the bind address's IP when unset.
    pub advertised_host: Option<String>,
    /// Port clients are told to connect to; the bound port when unset.
    pub advertised_port: Option<u16>,
    /// PEM certificate chain of the SSL and SASL_SSL listeners (server certificate first).
    pub ssl_certificate_file: Option<PathBuf>,
    /// PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1, unencrypted).
    pub ssl_key_file: Option<PathBuf>,
    /// Kafka's `ssl.client.auth`: none, requested or required.
    pub ssl_client_auth: ClientAuth,
    /// PEM CA certificates client certificates must chain to.
    pub ssl_ca_file: Option<PathBuf>,
    /// How often the TLS files are checked for changes (also reloaded on SIGHUP).
    pub ssl_reload_interval_ms: u64,
    /// A TLS client must finish its handshake within this long.
    pub ssl_handshake_timeout_ms: u64,
    /// Address of the HTTP admin listener (`/healthz`, `/readyz`, `/metrics`); port 0
    /// picks a free port. Loopback by default, like the Kafka listener.
    pub admin_bind_address: SocketAddr,
    pub node_id: i32,
    pub cluster_id: String,
    pub backend: BackendKind,
    pub data_dir: PathBuf,
    pub durability: Durability,
    pub fsync_interval_ms: u64,
    /// Iggy server (TCP) of the `iggy` backend.
    pub iggy_address: String,
    pub iggy_username: String,
    /// Better set through `IGGY_KAFKA_IGGY_PASSWORD` or `iggy_password_file`.
    pub iggy_password: Secret,
    /// File holding the password (trailing newline ignored); wins over `iggy_password`.
    pub iggy_password_file: Option<PathBuf>,
    /// Iggy stream holding the Kafka topics.
    pub iggy_stream: String,
    /// Iggy stream the gateway keeps its own state in.
    pub iggy_gateway_stream: String,
    /// Produce clients; a partition always uses the same one.
    pub iggy_produce_clients: usize,
    /// Clients for Fetch and ListOffsets.
    pub iggy_read_clients: usize,
    /// Most bytes of Fetch reads started ahead of consumers catching up (0: none).
    pub iggy_read_ahead_bytes: usize,
    /// Records after which a gateway state log gets a new snapshot, so startup replays
    /// at most about this many (`docs/IGGY_MAPPING.md`).
    pub iggy_snapshot_records: u64,
    /// How long startup keeps retrying an unreachable Iggy server.
    pub iggy_connect_timeout_ms: u64,
    /// Longest wait for one Iggy call before clients get a retriable error.
    pub iggy_request_timeout_ms: u64,
    /// Topics the gateway creates fsync every write in Iggy.
    pub iggy_fsync: bool,
    /// Connect to the Iggy server over TLS.
    pub iggy_tls_enabled: bool,
    /// Name the Iggy server's certificate must carry; the host of `iggy_address` when unset.
    pub iggy_tls_domain: Option<String>,
    /// PEM CA certificates the Iggy server's certificate must chain to; the
    /// webpki roots when unset.
    pub iggy_tls_ca_file: Option<PathBuf>,
    /// Per-topic homes in Iggy; two Kafka names may not share one Iggy topic.
    pub iggy_topics: Vec<IggyTopic>,
    pub max_request_bytes: usize,
    pub max_connections: usize,
    /// Kafka's `max.connections.per.ip`: connections one source address may hold open.
    pub max_connections_per_ip: usize,
    /// Kafka's `max.connections.per.ip.overrides`: `IP:COUNT` pairs, comma-separated.
    pub max_connections_per_ip_overrides: String,
    pub max_inflight_per_connection: usize,
    /// Bytes of requests one connection may have read and not yet answered.
    pub max_inflight_bytes_per_connection: usize,
    /// Kafka's `queued.max.request.bytes`: the same over all connections.
    pub queued_max_request_bytes: usize,
    /// Bytes the records of one Produce request may decompress to (compression bombs).
    pub max_decompressed_request_bytes: usize,
    pub idle_timeout_ms: u64,
    pub read_timeout_ms: u64,
    pub write_timeout_ms: u64,
    pub shutdown_timeout_ms: u64,
    pub message_max_bytes: usize,
    /// Kafka's `auto.create.topics.enable`: Metadata creates missing topics (KIP-361).
    pub auto_create_topics_enable: bool,
    /// Partitions of a topic created with -1 or auto-created (`num.partitions`).
    pub num_partitions: i32,
    /// Replication factor recorded for -1 and auto-created topics (`default.replication.factor`).
    pub default_replication_factor: i16,
    /// Most topics one DeleteTopics request may name; beyond it none is deleted.
    pub delete_topics_max_names: usize,
    pub log_slots: usize,
    /// Actors that commit and read consumer-group offsets (a partition always uses the same one).
    pub offset_slots: usize,
    /// How long the first rebalance of an empty group waits for more members.
    pub group_initial_rebalance_delay_ms: u64,
    /// How often topics are re-read from the backend (topics made by native Iggy clients).
    pub topic_refresh_ms: u64,
    /// How often this gateway tells the others sharing the backend it is alive.
    pub node_heartbeat_ms: u64,
    /// A gateway silent this long drops out of Metadata and its groups move.
    pub node_timeout_ms: u64,
    /// Threads serving connections; 0 means one per core.
    pub workers: usize,
    /// SASL mechanisms SASL listeners offer, comma-separated (`sasl.enabled.mechanisms`).
    pub sasl_enabled_mechanisms: String,
    /// Where PLAIN passwords are checked.
    pub sasl_plain_backend: PlainBackend,
    /// Kafka's `connections.max.reauth.ms`: authentications expire after this long
    /// unless the client re-authenticates (KIP-368); 0 never.
    pub connections_max_reauth_ms: u64,
    /// Delay before answering a failed login, doubling per recent failure from the
    /// same address up to `sasl_failed_login_max_delay_ms`.
    pub sasl_failed_login_delay_ms: u64,
    pub sasl_failed_login_max_delay_ms: u64,
    /// Password checks and credential look-ups running at once.
    pub sasl_max_concurrent_verifications: usize,
    /// SCRAM users created at startup when missing: `name:password,...`.
    pub sasl_scram_users: Secret,
    /// File of `name:password` lines, users added like `sasl_scram_users`.
    pub sasl_scram_users_file: Option<PathBuf>,
    /// `none` (every request allowed) or `standard` (Kafka ACLs).
    pub authorizer: AuthorizerKind,
    /// Principals ACLs never refuse, Kafka's `super.users`: `User:admin;User:bob`.
    pub super_users: String,
    /// Kafka's `allow.everyone.if.no.acl.found`: a resource no ACL names is open to all.
    pub allow_everyone_if_no_acl_found: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listeners: None,
            listener_security_protocol_map: None,
            advertised_listeners: None,
            bind_address: None,
            advertised_host: None,
            advertised_port: None,
            ssl_certificate_file: None,
            ssl_key_file: None,
            ssl_client_auth: ClientAuth::None,
            ssl_ca_file: None,
            ssl_reload_interval_ms: 10_000,
            ssl_handshake_timeout_ms: 10_000,
            admin_bind_address: SocketAddr::from(([127, 0, 0, 1], 9644)),
            node_id: 0,
            cluster_id: "iggy-kafka-gateway".into(),
            backend: BackendKind::Embedded,
            data_dir: PathBuf::from("./data"),
            durability: Durability::Interval,
            fsync_interval_ms: 1_000,
            iggy_address: "127.0.0.1:8090".into(),
            iggy_username: "iggy".into(),
            iggy_password: Secret("iggy".into()),
            iggy_password_file: None,
            iggy_stream: "kafka".into(),
            iggy_gateway_stream: "kafka-gateway".into(),
            iggy_produce_clients: 4,
            iggy_read_clients: 4,
            iggy_read_ahead_bytes: 64 << 20,
            iggy_snapshot_records: 10_000,
            iggy_connect_timeout_ms: 30_000,
            iggy_request_timeout_ms: 15_000,
            iggy_fsync: false,
            iggy_tls_enabled: false,
            iggy_tls_domain: None,
            iggy_tls_ca_file: None,
            iggy_topics: Vec::new(),
            max_request_bytes: 100 * 1024 * 1024,
            max_connections: 10_000,
            max_connections_per_ip: 10_000,
            max_connections_per_ip_overrides: String::new(),
            max_inflight_per_connection: 5,
            max_inflight_bytes_per_connection: 100 * 1024 * 1024,
            queued_max_request_bytes: 512 * 1024 * 1024,
            max_decompressed_request_bytes: 256 * 1024 * 1024,
            idle_timeout_ms: 600_000,
            read_timeout_ms: 30_000,
            write_timeout_ms: 30_000,
            shutdown_timeout_ms: 10_000,
            message_max_bytes: 1_048_588,
            auto_create_topics_enable: true,
            num_partitions: 1,
            default_replication_factor: 1,
            delete_topics_max_names: 100,
            log_slots: 4,
            offset_slots: 4,
            group_initial_rebalance_delay_ms: 3_000,
            topic_refresh_ms: 5_000,
            node_heartbeat_ms: 1_000,
            node_timeout_ms: 5_000,
            workers: 0,
            sasl_enabled_mechanisms: "SCRAM-SHA-256,SCRAM-SHA-512".into(),
            sasl_plain_backend: PlainBackend::Gateway,
            connections_max_reauth_ms: 0,
            sasl_failed_login_delay_ms: 100,
            sasl_failed_login_max_delay_ms: 5_000,
            sasl_max_concurrent_verifications: 4,
            sasl_scram_users: Secret::default(),
            sasl_scram_users_file: None,
            authorizer: AuthorizerKind::None,
            super_users: String::new(),
            allow_everyone_if_no_acl_found: false,
        }
    }
}

impl Settings {
    /// Defaults, then the file if given, then the environment.
    pub fn load(file: Option<&Path>) -> Result<Settings, SettingsError> {
        Self::load_from(file, None)
    }

    /// Defaults, then `vars` read as the environment is read (`IGGY_KAFKA_BIND_ADDRESS`
    /// and so on, every other name ignored), the process's own left alone: for gateways
    /// started inside another program, such as the tests' in-process gateways.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, SettingsError> {
        Self::load_from(None, Some(vars.into_iter().collect()))
    }

    /// Defaults, then the file if given, then `env` or, if `None`, the environment.
    fn load_from(
        file: Option<&Path>,
        env: Option<config::Map<String, String>>,
    ) -> Result<Settings, SettingsError> {
        let mut builder = Config::builder();
        if let Some(path) = file {
            builder = builder.add_source(File::from(path).format(FileFormat::Toml).required(true));
        }
        let settings: Settings = builder
            .add_source(
                Environment::with_prefix("IGGY_KAFKA")
                    .prefix_separator("_")
                    .try_parsing(true)
                    .source(env),
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
            ("max_connections_per_ip", self.max_connections_per_ip as i64),
            (
                "max_inflight_bytes_per_connection",
                self.max_inflight_bytes_per_connection as i64,
            ),
            (
                "queued_max_request_bytes",
                self.queued_max_request_bytes as i64,
            ),
            (
                "max_decompressed_request_bytes",
                self.max_decompressed_request_bytes as i64,
            ),
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
            (
                "delete_topics_max_names",
                self.delete_topics_max_names as i64,
            ),
            ("log_slots", self.log_slots as i64),
            ("offset_slots", self.offset_slots as i64),
            ("topic_refresh_ms", self.topic_refresh_ms as i64),
            ("node_heartbeat_ms", self.node_heartbeat_ms as i64),
            ("node_timeout_ms", self.node_timeout_ms as i64),
            ("fsync_interval_ms", self.fsync_interval_ms as i64),
            (
                "sasl_max_concurrent_verifications",
                self.sasl_max_concurrent_verifications as i64,
            ),
        ];
        for (name, value) in at_least_one {
            if value < 1 {
                return Err(SettingsError::Invalid {
                    name,
                    reason: format!("must be at least 1, got {value}"),
                });
            }
        }
        self.connections_per_ip_overrides()?;
        if self.num_partitions > MAX_PARTITIONS {
            return Err(SettingsError::Invalid {
                name: "num_partitions",
                reason: format!(
                    "must be at most {MAX_PARTITIONS}, got {}",
                    self.num_partitions
                ),
            });
        }
        if self.node_timeout_ms <= self.node_heartbeat_ms {
            return Err(SettingsError::Invalid {
                name: "node_timeout_ms",
                reason: format!(
                    "must be longer than node_heartbeat_ms ({}), got {}",
                    self.node_heartbeat_ms, self.node_timeout_ms
                ),
            });
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
        self.tls()?;
        self.super_users()?;
        if self.backend == BackendKind::Iggy {
            self.check_iggy()?;
        }
        self.check_sasl()
    }

    fn check_sasl(&self) -> Result<(), SettingsError> {
        self.sasl_mechanisms()?;
        self.sasl_scram_users()?;
        if self.sasl_plain_backend == PlainBackend::Iggy && self.backend != BackendKind::Iggy {
            return Err(SettingsError::Invalid {
                name: "sasl_plain_backend",
                reason: "'iggy' checks passwords against Iggy's users: it needs backend = \"iggy\""
                    .into(),
            });
        }
        if self.sasl_failed_login_max_delay_ms < self.sasl_failed_login_delay_ms {
            return Err(SettingsError::Invalid {
                name: "sasl_failed_login_max_delay_ms",
                reason: "must be at least sasl_failed_login_delay_ms".into(),
            });
        }
        Ok(())
    }

    fn sasl_mechanisms(&self) -> Result<Vec<Mechanism>, SettingsError> {
        let mut out = Vec::new();
        for name in self.sasl_enabled_mechanisms.split(',').map(str::trim) {
            let m = Mechanism::from_name(name).ok_or_else(|| SettingsError::Invalid {
                name: "sasl_enabled_mechanisms",
                reason: format!("unknown mechanism '{name}' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"),
            })?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The bootstrap SCRAM users, `(name, password)`, from `sasl_scram_users` and the
    /// file. Errors name the entry, never a password.
    pub fn sasl_scram_users(&self) -> Result<Vec<(String, String)>, SettingsError> {
        let mut entries: Vec<(&'static str, String)> = self
            .sasl_scram_users
            .0
            .split(',')
            .filter(|e| !e.trim().is_empty())
            .map(|e| ("sasl_scram_users", e.to_string()))
            .collect();
        if let Some(path) = &self.sasl_scram_users_file {
            let text = std::fs::read_to_string(path).map_err(|e| SettingsError::Invalid {
                name: "sasl_scram_users_file",
                reason: format!("cannot read {}: {e}", path.display()),
            })?;
            entries.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| ("sasl_scram_users_file", l.to_string())),
            );
        }
        let mut users = Vec::new();
        for (i, (name, entry)) in entries.into_iter().enumerate() {
            match entry.split_once(':') {
                Some((user, password)) if !user.trim().is_empty() && !password.is_empty() => {
                    users.push((user.trim().to_string(), password.to_string()))
                }
                _ => {
                    return Err(SettingsError::Invalid {
                        name,
                        reason: format!("entry {} is not name:password", i + 1),
                    })
                }
            }
        }
        Ok(users)
    }

    /// `super_users` split at `;`, each a `type:name` principal.
    fn super_users(&self) -> Result<Vec<String>, SettingsError> {
        let each = self
            .super_users
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty());
        each.map(|p| match p.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(p.to_string()),
            _ => Err(SettingsError::Invalid {
                name: "super_users",
                reason: format!("'{p}' is not a principal (type:name, as User:admin)"),
            }),
        })
        .collect()
    }

    fn check_iggy(&self) -> Result<(), SettingsError> {
        let positive = [
            ("iggy_produce_clients", self.iggy_produce_clients as u64),
            ("iggy_read_clients", self.iggy_read_clients as u64),
            ("iggy_connect_timeout_ms", self.iggy_connect_timeout_ms),
            ("iggy_request_timeout_ms", self.iggy_request_timeout_ms),
            ("iggy_snapshot_records", self.iggy_snapshot_records),
        ];
        for (name, value) in positive {
            if value < 1 {
                return Err(SettingsError::Invalid {
                    name,
                    reason: "must be at least 1".into(),
                });
            }
        }
        let names = [
            ("iggy_address", &self.iggy_address),
            ("iggy_username", &self.iggy_username),
            ("iggy_stream", &self.iggy_stream),
            ("iggy_gateway_stream", &self.iggy_gateway_stream),
        ];
        for (name, value) in names {
            if value.trim().is_empty() || value.len() > 255 {
                return Err(SettingsError::Invalid {
                    name,
                    reason: "must be 1 to 255 bytes".into(),
                });
            }
        }
        for t in &self.iggy_topics {
            let bad = [&t.kafka, &t.stream, &t.topic]
                .iter()
                .any(|n| n.trim().is_empty() || n.len() > 255);
            if bad || t.stream == self.iggy_gateway_stream {
                return Err(SettingsError::Invalid {
                    name: "iggy_topics",
                    reason: format!(
                        "'{}' → '{}/{}': names must be 1 to 255 bytes, outside iggy_gateway_stream",
                        t.kafka, t.stream, t.topic
                    ),
                });
            }
        }
        crate::iggy::check_topic_overrides(&self.iggy_stream, &self.topic_overrides()).map_err(
            |reason| SettingsError::Invalid {
                name: "iggy_topics",
                reason,
            },
        )?;
        if self.iggy_stream == self.iggy_gateway_stream {
            return Err(SettingsError::Invalid {
                name: "iggy_gateway_stream",
                reason: "must differ from iggy_stream".into(),
            });
        }
        Ok(())
    }

    /// `max_connections_per_ip_overrides` read: `IP:COUNT,IP:COUNT` (IPv6 too: the
    /// count follows the last colon). Kafka also takes host names; addresses only here.
    fn connections_per_ip_overrides(&self) -> Result<HashMap<IpAddr, usize>, SettingsError> {
        let pairs = self.max_connections_per_ip_overrides.split(',');
        pairs
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let parsed = pair.rsplit_once(':').and_then(|(ip, count)| {
                    let ip = ip.trim_start_matches('[').trim_end_matches(']');
                    Some((ip.parse().ok()?, count.parse().ok()?))
                });
                parsed.ok_or_else(|| SettingsError::Invalid {
                    name: "max_connections_per_ip_overrides",
                    reason: format!("'{pair}' is not IP:COUNT"),
                })
            })
            .collect()
    }

    fn topic_overrides(&self) -> Vec<TopicOverride> {
        self.iggy_topics
            .iter()
            .map(|t| TopicOverride {
                kafka: t.kafka.clone(),
                stream: t.stream.clone(),
                topic: t.topic.clone(),
            })
            .collect()
    }

    /// The Iggy backend's configuration; reads the password file if one is set.
    pub fn iggy(&self) -> Result<IggyConfig, SettingsError> {
        let password = match &self.iggy_password_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| SettingsError::Invalid {
                    name: "iggy_password_file",
                    reason: format!("cannot read {}: {e}", path.display()),
                })?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
            None => self.iggy_password.0.clone(),
        };
        Ok(IggyConfig {
            address: self.iggy_address.clone(),
            username: self.iggy_username.clone(),
            password,
            stream: self.iggy_stream.clone(),
            gateway_stream: self.iggy_gateway_stream.clone(),
            produce_clients: self.iggy_produce_clients,
            read_clients: self.iggy_read_clients,
            read_ahead_bytes: self.iggy_read_ahead_bytes,
            snapshot_records: self.iggy_snapshot_records,
            connect_timeout: Duration::from_millis(self.iggy_connect_timeout_ms),
            request_timeout: Duration::from_millis(self.iggy_request_timeout_ms),
            fsync: self.iggy_fsync,
            topics: self.topic_overrides(),
            tls: self.iggy_tls_enabled.then(|| IggyTls {
                domain: self.iggy_tls_domain.clone().unwrap_or_default(),
                ca_file: self.iggy_tls_ca_file.clone(),
            }),
        })
    }

    /// The TLS files of the SSL and SASL_SSL listeners; `None` when no listener uses TLS.
    pub fn tls(&self) -> Result<Option<TlsFiles>, SettingsError> {
        let tls_listener = self
            .listeners()?
            .into_iter()
            .find(|l| l.protocol.uses_tls());
        let Some(listener) = tls_listener else {
            return Ok(None);
        };
        let required = |name: &'static str, value: &Option<PathBuf>| {
            value.clone().ok_or_else(|| SettingsError::Invalid {
                name,
                reason: format!("must be set for the {} listener", listener.name),
            })
        };
        let certificate = required("ssl_certificate_file", &self.ssl_certificate_file)?;
        let key = required("ssl_key_file", &self.ssl_key_file)?;
        let clients = match self.ssl_client_auth {
            ClientAuth::None => ClientCertificates::NotAsked,
            ClientAuth::Requested => ClientCertificates::Requested {
                ca: required("ssl_ca_file", &self.ssl_ca_file)?,
            },
            ClientAuth::Required => ClientCertificates::Required {
                ca: required("ssl_ca_file", &self.ssl_ca_file)?,
            },
        };
        let bounds = [
            ("ssl_reload_interval_ms", self.ssl_reload_interval_ms, 100),
            ("ssl_handshake_timeout_ms", self.ssl_handshake_timeout_ms, 1),
        ];
        for (name, value, least) in bounds {
            if value < least {
                return Err(SettingsError::Invalid {
                    name,
                    reason: format!("must be at least {least}, got {value}"),
                });
            }
        }
        Ok(Some(TlsFiles {
            certificate,
            key,
            clients,
        }))
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

    /// The listeners to bind, in configured order: from `listeners` when set, else the
    /// one PLAINTEXT listener of `bind_address`, `advertised_host`, `advertised_port`.
    pub fn listeners(&self) -> Result<Vec<ListenerConfig>, SettingsError> {
        let invalid = |(name, reason)| SettingsError::Invalid { name, reason };
        let Some(listeners) = &self.listeners else {
            let (name, reason) = if self.listener_security_protocol_map.is_some() {
                ("listener_security_protocol_map", "needs listeners")
            } else if self.advertised_listeners.is_some() {
                ("advertised_listeners", "needs listeners")
            } else {
                return Ok(vec![ListenerConfig {
                    name: "PLAINTEXT".into(),
                    protocol: SecurityProtocol::Plaintext,
                    bind: self
                        .bind_address
                        .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 9092))),
                    advertised_host: self.advertised_host.clone(),
                    advertised_port: self.advertised_port,
                }]);
            };
            return Err(invalid((name, reason.into())));
        };
        let legacy = [
            ("bind_address", self.bind_address.is_some()),
            ("advertised_host", self.advertised_host.is_some()),
            ("advertised_port", self.advertised_port.is_some()),
        ];
        if let Some((name, _)) = legacy.iter().find(|(_, set)| *set) {
            return Err(invalid((
                name,
                "cannot be combined with listeners: use listeners and advertised_listeners".into(),
            )));
        }
        crate::listeners::resolve(
            listeners,
            self.listener_security_protocol_map.as_deref(),
            self.advertised_listeners.as_deref(),
        )
        .map_err(invalid)
    }

    /// What the actors need, once the listeners' real addresses are known.
    pub fn broker(&self, bound: &[(ListenerConfig, SocketAddr)]) -> BrokerSettings {
        BrokerSettings {
            node_id: self.node_id,
            cluster_id: self.cluster_id.clone(),
            endpoints: bound.iter().map(|(l, at)| l.endpoint(*at)).collect(),
            max_request_bytes: self.max_request_bytes,
            max_inflight_per_connection: self.max_inflight_per_connection,
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            read_timeout: Duration::from_millis(self.read_timeout_ms),
            write_timeout: Duration::from_millis(self.write_timeout_ms),
            message_max_bytes: self.message_max_bytes,
            topic_rules: TopicRules {
                auto_create_topics_enable: self.auto_create_topics_enable,
                num_partitions: self.num_partitions,
                default_replication_factor: self.default_replication_factor,
                delete_topics_max_names: self.delete_topics_max_names,
            },
            max_connections: self.max_connections,
            limits: ResourceLimits {
                max_connections_per_ip: self.max_connections_per_ip,
                max_connections_per_ip_overrides: self
                    .connections_per_ip_overrides()
                    .expect("checked on load"),
                max_inflight_bytes_per_connection: self.max_inflight_bytes_per_connection,
                queued_max_request_bytes: self.queued_max_request_bytes,
                max_decompressed_request_bytes: self.max_decompressed_request_bytes,
            },
            log_slots: self.log_slots,
            offset_slots: self.offset_slots,
            group_initial_rebalance_delay: Duration::from_millis(
                self.group_initial_rebalance_delay_ms,
            ),
            topic_refresh_interval: Duration::from_millis(self.topic_refresh_ms),
            node_heartbeat: Duration::from_millis(self.node_heartbeat_ms),
            node_timeout: Duration::from_millis(self.node_timeout_ms),
            sasl: SaslSettings {
                mechanisms: self.sasl_mechanisms().expect("checked when loaded"),
                plain_users: match self.sasl_plain_backend {
                    PlainBackend::Gateway => PlainUsers::Scram,
                    PlainBackend::Iggy => PlainUsers::Backend,
                },
                max_reauth: (self.connections_max_reauth_ms > 0)
                    .then(|| Duration::from_millis(self.connections_max_reauth_ms)),
                failed_login_delay: Duration::from_millis(self.sasl_failed_login_delay_ms),
                max_failed_login_delay: Duration::from_millis(self.sasl_failed_login_max_delay_ms),
                max_verifications: self.sasl_max_concurrent_verifications,
            },
            authorizer: match self.authorizer {
                AuthorizerKind::None => None,
                AuthorizerKind::Standard => Some(AuthorizerSettings {
                    // Checked at load.
                    super_users: self.super_users().unwrap_or_default(),
                    allow_everyone_if_no_acl_found: self.allow_everyone_if_no_acl_found,
                }),
            },
        }
    }
}
