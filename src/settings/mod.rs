//! Settings: built-in defaults, then an optional TOML file (`--config PATH`), then
//! `IGGY_KAFKA_*` environment variables (`IGGY_KAFKA_BIND_ADDRESS` sets
//! `bind_address`). An unknown or malformed setting stops startup with its name.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use config::{Config, Environment, File, FileFormat};
use serde::Deserialize;

use crate::tls::ClientAuth;

mod checks;
mod parts;

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

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text each, a request's span fields before its message.
    Text,
    /// One JSON object each, with the fields of the spans it is in (`spans`), for log
    /// collectors.
    Json,
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
    /// The embedded store refuses writes (KAFKA_STORAGE_ERROR) while fewer bytes than
    /// this are free on its data directory's disk, and takes them again once there are.
    pub embedded_min_free_bytes: u64,
    /// How often the embedded store lets go of what `retention.ms` and `retention.bytes`
    /// no longer keep (Kafka's `log.retention.check.interval.ms`; Iggy's own cleaner
    /// does it on Iggy).
    pub retention_check_interval_ms: u64,
    /// How often the compactor of `cleanup.policy=compact` topics looks for a partition
    /// to compact (Kafka's `log.cleaner.backoff.ms`); 0 turns it off.
    pub compaction_interval_ms: u64,
    /// Most bytes one compaction pass reads of a partition (bounds its memory and I/O).
    pub compaction_pass_bytes: u64,
    /// How often each partition's transaction index that moved is saved, so a restarted
    /// gateway reads the log on from there for a read-committed ListOffsets rather than
    /// from the log start; 0 never saves.
    pub txn_index_checkpoint_ms: u64,
    /// `text` or `json` (`RUST_LOG` picks what is logged).
    pub log_format: LogFormat,
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
    /// Most bytes of compressed records sections kept from Produce, so Fetch serves
    /// them instead of compressing the records again (0: none).
    pub iggy_kept_compressed_bytes: usize,
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
    /// Kafka's `transaction.max.timeout.ms`: the longest transaction timeout a producer
    /// may ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT beyond it).
    pub transaction_max_timeout_ms: i32,
    /// Kafka's `transactional.id.expiration.ms`: a transactional id with nothing open is
    /// forgotten this long after its last change.
    pub transactional_id_expiration_ms: i32,
    /// Most topics one DeleteTopics request may name; beyond it none is deleted.
    pub delete_topics_max_names: usize,
    pub log_slots: usize,
    /// Actors that commit and read consumer-group offsets (a partition always uses the same one).
    pub offset_slots: usize,
    /// Actors that coordinate transactional ids (an id always uses the same one).
    pub transaction_slots: usize,
    /// Kafka's `offsets.commit.timeout.ms`: how long an offset commit (OffsetCommit, a
    /// transaction's offsets at its commit, admin deletes) and an offset read may wait
    /// for the store before REQUEST_TIMED_OUT.
    pub offsets_commit_timeout_ms: u64,
    /// How long the first rebalance of an empty group waits for more members.
    pub group_initial_rebalance_delay_ms: u64,
    /// KIP-848 groups: a member silent this long leaves (Kafka's
    /// `group.consumer.session.timeout.ms`).
    pub group_consumer_session_timeout_ms: u64,
    /// KIP-848 groups: how often members heartbeat, shorter than the session
    /// (`group.consumer.heartbeat.interval.ms`).
    pub group_consumer_heartbeat_interval_ms: u64,
    /// The bounds of the two above, as Kafka's `group.consumer.min.session.timeout.ms`,
    /// `group.consumer.max.session.timeout.ms`, `group.consumer.min.heartbeat.interval.ms`
    /// and `group.consumer.max.heartbeat.interval.ms`.
    pub group_consumer_min_session_timeout_ms: u64,
    pub group_consumer_max_session_timeout_ms: u64,
    pub group_consumer_min_heartbeat_interval_ms: u64,
    pub group_consumer_max_heartbeat_interval_ms: u64,
    /// KIP-848 groups: the server assignors members may choose, comma-separated, the
    /// first the default (`group.consumer.assignors`): `uniform`, `range`.
    pub group_consumer_assignors: String,
    /// KIP-848 groups: most members of a group (`group.consumer.max.size`).
    pub group_consumer_max_size: usize,
    /// Kafka's `max.incremental.fetch.session.cache.slots`: fetch sessions kept at once.
    pub max_incremental_fetch_session_cache_slots: usize,
    /// How long a fetch session is safe from eviction after its creation and each use
    /// (fixed at 120000 in Kafka).
    pub min_incremental_fetch_session_eviction_ms: u64,
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
            log_format: LogFormat::Text,
            // An append to a file waits while a checkpoint syncs that file (3.5–14 ms
            // on ext4 at 160 MB/s): five small checkpoints a second keep a 1 KiB
            // stream's p99 near 7 ms where one big one let it reach 10–305, at the
            // same throughput (docs/PERFORMANCE.md, "Checkpoints every 200 ms").
            fsync_interval_ms: 200,
            embedded_min_free_bytes: 64 << 20,
            retention_check_interval_ms: 300_000,
            compaction_interval_ms: 15_000,
            compaction_pass_bytes: 256 << 20,
            txn_index_checkpoint_ms: 5_000,
            iggy_address: "127.0.0.1:8090".into(),
            iggy_username: "iggy".into(),
            iggy_password: Secret("iggy".into()),
            iggy_password_file: None,
            iggy_stream: "kafka".into(),
            iggy_gateway_stream: "kafka-gateway".into(),
            iggy_produce_clients: 4,
            iggy_read_clients: 4,
            iggy_read_ahead_bytes: 64 << 20,
            iggy_kept_compressed_bytes: 32 << 20,
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
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            delete_topics_max_names: 100,
            log_slots: 4,
            offset_slots: 4,
            transaction_slots: 4,
            offsets_commit_timeout_ms: 5_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_consumer_session_timeout_ms: 45_000,
            group_consumer_heartbeat_interval_ms: 5_000,
            group_consumer_min_session_timeout_ms: 45_000,
            group_consumer_max_session_timeout_ms: 60_000,
            group_consumer_min_heartbeat_interval_ms: 5_000,
            group_consumer_max_heartbeat_interval_ms: 15_000,
            group_consumer_assignors: "uniform,range".into(),
            group_consumer_max_size: i32::MAX as usize,
            max_incremental_fetch_session_cache_slots: 1_000,
            min_incremental_fetch_session_eviction_ms: 120_000,
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
}
