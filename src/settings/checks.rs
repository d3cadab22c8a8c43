//! Each setting checked when loaded, so a malformed one stops startup naming it.

use std::collections::HashMap;
use std::net::IpAddr;

use iggy_kafka_actors::config_catalog::definitions::MAX_PARTITIONS;
use iggy_kafka_actors::sasl::Mechanism;

use crate::iggy::TopicOverride;

use super::{BackendKind, PlainBackend, Settings, SettingsError};

impl Settings {
    pub(super) fn check(&self) -> Result<(), SettingsError> {
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
                "transaction_max_timeout_ms",
                self.transaction_max_timeout_ms as i64,
            ),
            (
                "transactional_id_expiration_ms",
                self.transactional_id_expiration_ms as i64,
            ),
            (
                "delete_topics_max_names",
                self.delete_topics_max_names as i64,
            ),
            ("log_slots", self.log_slots as i64),
            ("offset_slots", self.offset_slots as i64),
            ("transaction_slots", self.transaction_slots as i64),
            (
                "offsets_commit_timeout_ms",
                self.offsets_commit_timeout_ms as i64,
            ),
            ("topic_refresh_ms", self.topic_refresh_ms as i64),
            ("node_heartbeat_ms", self.node_heartbeat_ms as i64),
            (
                "group_consumer_heartbeat_interval_ms",
                self.group_consumer_heartbeat_interval_ms as i64,
            ),
            (
                "group_consumer_max_size",
                self.group_consumer_max_size as i64,
            ),
            ("node_timeout_ms", self.node_timeout_ms as i64),
            ("fsync_interval_ms", self.fsync_interval_ms as i64),
            (
                "retention_check_interval_ms",
                self.retention_check_interval_ms as i64,
            ),
            ("compaction_pass_bytes", self.compaction_pass_bytes as i64),
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
        // As Kafka's KafkaConfig: each within its bounds, the heartbeat shorter than
        // the session.
        let bounded = [
            (
                (
                    "group_consumer_session_timeout_ms",
                    self.group_consumer_session_timeout_ms,
                ),
                (
                    "group_consumer_min_session_timeout_ms",
                    self.group_consumer_min_session_timeout_ms,
                ),
                (
                    "group_consumer_max_session_timeout_ms",
                    self.group_consumer_max_session_timeout_ms,
                ),
            ),
            (
                (
                    "group_consumer_heartbeat_interval_ms",
                    self.group_consumer_heartbeat_interval_ms,
                ),
                (
                    "group_consumer_min_heartbeat_interval_ms",
                    self.group_consumer_min_heartbeat_interval_ms,
                ),
                (
                    "group_consumer_max_heartbeat_interval_ms",
                    self.group_consumer_max_heartbeat_interval_ms,
                ),
            ),
        ];
        for ((name, value), (min_name, min), (max_name, max)) in bounded {
            let (name, reason) = if min > max {
                (
                    min_name,
                    format!("must not exceed {max_name} ({max}), got {min}"),
                )
            } else if value < min {
                (
                    name,
                    format!("must be at least {min_name} ({min}), got {value}"),
                )
            } else if value > max {
                (
                    name,
                    format!("must be at most {max_name} ({max}), got {value}"),
                )
            } else {
                continue;
            };
            return Err(SettingsError::Invalid { name, reason });
        }
        // As Kafka: the heartbeat interval must be shorter than the session.
        if self.group_consumer_session_timeout_ms <= self.group_consumer_heartbeat_interval_ms {
            return Err(SettingsError::Invalid {
                name: "group_consumer_session_timeout_ms",
                reason: format!(
                    "must be longer than group_consumer_heartbeat_interval_ms ({}), got {}",
                    self.group_consumer_heartbeat_interval_ms,
                    self.group_consumer_session_timeout_ms
                ),
            });
        }
        let assignors = self.consumer_assignors();
        if assignors.is_empty()
            || assignors
                .iter()
                .any(|a| !["uniform", "range"].contains(&a.as_str()))
        {
            return Err(SettingsError::Invalid {
                name: "group_consumer_assignors",
                reason: format!(
                    "must name one or more of uniform, range; got '{}'",
                    self.group_consumer_assignors
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

    pub(super) fn check_sasl(&self) -> Result<(), SettingsError> {
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

    /// The configured KIP-848 server assignors, in order.
    pub(super) fn consumer_assignors(&self) -> Vec<String> {
        (self.group_consumer_assignors.split(','))
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect()
    }

    pub(super) fn sasl_mechanisms(&self) -> Result<Vec<Mechanism>, SettingsError> {
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
    pub(super) fn super_users(&self) -> Result<Vec<String>, SettingsError> {
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

    pub(super) fn check_iggy(&self) -> Result<(), SettingsError> {
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
    pub(super) fn connections_per_ip_overrides(
        &self,
    ) -> Result<HashMap<IpAddr, usize>, SettingsError> {
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

    pub(super) fn topic_overrides(&self) -> Vec<TopicOverride> {
        self.iggy_topics
            .iter()
            .map(|t| TopicOverride {
                kafka: t.kafka.clone(),
                stream: t.stream.clone(),
                topic: t.topic.clone(),
            })
            .collect()
    }
}
