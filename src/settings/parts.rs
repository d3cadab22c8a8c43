//! What the rest of the gateway is given from the settings: the engines', the
//! listeners' and the actors' own configurations.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use iggy_kafka_actors::authorizer::AuthorizerSettings;
use iggy_kafka_actors::fetch_sessions::SessionLimits;
use iggy_kafka_actors::limits::ResourceLimits;
use iggy_kafka_actors::sasl::{PlainUsers, SaslSettings};
use iggy_kafka_actors::session::SecurityProtocol;
use iggy_kafka_actors::settings::CompactionSettings;
use iggy_kafka_actors::settings::ConsumerGroupSettings;
use iggy_kafka_actors::{BrokerSettings, TopicRules};

use crate::embedded::SyncPolicy;
use crate::iggy::{IggyConfig, IggyTls};
use crate::listeners::ListenerConfig;
use crate::tls::{ClientAuth, ClientCertificates, TlsFiles};

use super::{AuthorizerKind, Durability, PlainBackend, Settings, SettingsError};

impl Settings {
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
            kept_compressed_bytes: self.iggy_kept_compressed_bytes,
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
            offset_slots: self.offset_slots,
            transaction_slots: self.transaction_slots,
            offsets_commit_timeout: Duration::from_millis(self.offsets_commit_timeout_ms),
            group_initial_rebalance_delay: Duration::from_millis(
                self.group_initial_rebalance_delay_ms,
            ),
            transaction_max_timeout_ms: self.transaction_max_timeout_ms,
            transactional_id_expiration: Duration::from_millis(
                self.transactional_id_expiration_ms as u64,
            ),
            consumer_groups: ConsumerGroupSettings {
                session_timeout: Duration::from_millis(self.group_consumer_session_timeout_ms),
                heartbeat_interval: Duration::from_millis(
                    self.group_consumer_heartbeat_interval_ms,
                ),
                assignors: self.consumer_assignors(),
                max_size: self.group_consumer_max_size,
            },
            topic_refresh_interval: Duration::from_millis(self.topic_refresh_ms),
            fetch_sessions: SessionLimits {
                slots: self.max_incremental_fetch_session_cache_slots,
                eviction_ms: self.min_incremental_fetch_session_eviction_ms,
            },
            compaction: CompactionSettings {
                interval: (self.compaction_interval_ms > 0)
                    .then(|| Duration::from_millis(self.compaction_interval_ms)),
                pass_bytes: usize::try_from(self.compaction_pass_bytes).unwrap_or(usize::MAX),
            },
            txn_index_checkpoint_interval: (self.txn_index_checkpoint_ms > 0)
                .then(|| Duration::from_millis(self.txn_index_checkpoint_ms)),
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
