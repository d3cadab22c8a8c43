//! A backend for the actors' unit tests, behind the storage port (the one real seam;
//! no Kafka or Iggy is involved): committed offsets and SCRAM credentials in memory,
//! with commits slowed and reads failed on purpose, and what a gateway needs to start.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use parking_lot::Mutex;

use crate::backend::*;
use crate::settings::{BrokerSettings, TopicRules};
use crate::store::{LogAnswer, LogCall, LogStore};

/// Committed offsets in memory, and no topics. Commits take `delay`, and with a
/// `gate` each waits for a permit of it, telling `entered` once it is in the store;
/// reads are immediate, or fail as a store that cannot be reached (`failing_reads`).
#[derive(Default)]
pub struct TestOffsets {
    pub delay: Duration,
    pub gate: Option<Arc<Semaphore>>,
    pub entered: Notify,
    pub failing_reads: bool,
    pub stored: Mutex<HashMap<(String, TopicPartition), CommittedOffset>>,
    /// Offsets in the order commits were applied.
    pub applied: Mutex<Vec<i64>>,
    pub scram: Mutex<ScramCredentials>,
    /// ACL bindings, as a set.
    pub acls: Mutex<std::collections::BTreeSet<AclBinding>>,
    pub quotas: Mutex<ClientQuotas>,
}

fn unused<T>() -> BackendFuture<'static, T> {
    Box::pin(async { Err(BackendError::Fatal("not used by the tests".into())) })
}

impl LogStore for TestOffsets {
    fn call(&self, _: LogCall) -> BackendFuture<'_, LogAnswer> {
        unused()
    }
}

impl Backend for TestOffsets {
    fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn create_topic(&self, _: TopicMeta, _: TopicLimits) -> BackendFuture<'_, ()> {
        unused()
    }
    fn delete_topic(&self, _: &str) -> BackendFuture<'_, ()> {
        unused()
    }
    fn alter_topic_configs(
        &self,
        _: &str,
        _: std::collections::BTreeMap<String, String>,
        _: TopicLimits,
    ) -> BackendFuture<'_, ()> {
        unused()
    }
    fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
        Box::pin(async { Ok(ClusterConfigs::new()) })
    }
    /// Gateways report their static settings at startup; nothing here reads them.
    fn set_cluster_config(
        &self,
        _: &str,
        _: std::collections::BTreeMap<String, String>,
    ) -> BackendFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
    fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
        unused()
    }
    fn commit_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendFuture<'_, ()> {
        let key = (group.to_string(), tp.clone());
        Box::pin(async move {
            self.entered.notify_one();
            if let Some(gate) = &self.gate {
                gate.acquire().await.expect("gate open").forget();
            }
            tokio::time::sleep(self.delay).await;
            if let Some(c) = offset {
                self.applied.lock().push(c.offset);
                self.stored.lock().insert(key, c);
            }
            Ok(())
        })
    }
    fn committed_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> BackendFuture<'_, Option<CommittedOffset>> {
        if self.failing_reads {
            return Box::pin(async {
                Err(BackendError::Unavailable("reads fail on purpose".into()))
            });
        }
        let found = self
            .stored
            .lock()
            .get(&(group.to_string(), tp.clone()))
            .cloned();
        Box::pin(async move { Ok(found) })
    }
    fn committed_partitions(&self, _: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
        unused()
    }
    fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
        unused()
    }
    fn scram_credentials(&self) -> BackendFuture<'_, ScramCredentials> {
        let stored = self.scram.lock().clone();
        Box::pin(async move { Ok(stored) })
    }
    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendFuture<'_, ()> {
        let mut stored = self.scram.lock();
        let by_mechanism = stored.entry(user.to_string()).or_default();
        match credential {
            Some(c) => by_mechanism.insert(mechanism, c),
            None => by_mechanism.remove(&mechanism),
        };
        Box::pin(async { Ok(()) })
    }
    fn acls(&self) -> BackendFuture<'_, Vec<AclBinding>> {
        let stored = self.acls.lock().iter().cloned().collect();
        Box::pin(async move { Ok(stored) })
    }
    fn create_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        self.acls.lock().extend(bindings);
        Box::pin(async { Ok(()) })
    }
    fn delete_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        let mut stored = self.acls.lock();
        for b in &bindings {
            stored.remove(b);
        }
        Box::pin(async { Ok(()) })
    }
    fn client_quotas(&self) -> BackendFuture<'_, ClientQuotas> {
        let stored = self.quotas.lock().clone();
        Box::pin(async move { Ok(stored) })
    }
    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendFuture<'_, ()> {
        crate::quotas::apply(&mut self.quotas.lock(), changes);
        Box::pin(async { Ok(()) })
    }
    fn ping(&self) -> BackendFuture<'_, ()> {
        unused()
    }
    fn flush(&self) -> BackendFuture<'_, ()> {
        unused()
    }
}

/// Settings for a gateway under test (no listener: handlers are called directly).
pub fn settings() -> BrokerSettings {
    BrokerSettings {
        node_id: 0,
        cluster_id: "test".into(),
        endpoints: vec![Endpoint {
            listener: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092,
        }],
        max_request_bytes: 1 << 20,
        max_inflight_per_connection: 5,
        idle_timeout: Duration::from_secs(60),
        read_timeout: Duration::from_secs(10),
        write_timeout: Duration::from_secs(10),
        message_max_bytes: 1 << 20,
        topic_rules: TopicRules {
            auto_create_topics_enable: false,
            num_partitions: 1,
            default_replication_factor: 1,
            delete_topics_max_names: 100,
        },
        max_connections: 10,
        limits: crate::limits::ResourceLimits {
            max_connections_per_ip: 10,
            max_connections_per_ip_overrides: Default::default(),
            max_inflight_bytes_per_connection: 1 << 20,
            queued_max_request_bytes: 1 << 20,
            max_decompressed_request_bytes: 1 << 20,
        },
        log_slots: 1,
        offset_slots: 2,
        group_initial_rebalance_delay: Duration::ZERO,
        topic_refresh_interval: Duration::from_secs(60),
        node_heartbeat: Duration::from_secs(1),
        node_timeout: Duration::from_secs(5),
        sasl: Default::default(),
        authorizer: None,
    }
}
