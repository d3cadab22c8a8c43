//! The backend decorator that times every call and counts its failures, so each
//! storage implementation stays free of metrics.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::{latency_histogram, Metrics};
use crate::backend::*;

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    call: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FailureLabels {
    call: &'static str,
    error: &'static str,
}

pub(super) struct BackendMetrics {
    latency: Family<CallLabels, Histogram>,
    errors: Family<FailureLabels, Counter>,
}

impl BackendMetrics {
    pub(super) fn register(registry: &mut Registry) -> BackendMetrics {
        let latency = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "backend_call_duration",
            "Time each backend call took, failed ones included, by call",
            Unit::Seconds,
            latency.clone(),
        );
        let errors = Family::default();
        registry.register(
            "backend_errors",
            "Backend calls that failed, by call and error (unavailable and fatal are the \
             store's own failures; the others answer what was asked for)",
            errors.clone(),
        );
        BackendMetrics { latency, errors }
    }
}

/// Times and counts every call to the backend it wraps.
pub struct MeteredBackend {
    inner: Arc<dyn Backend>,
    metrics: Arc<Metrics>,
}

impl MeteredBackend {
    pub fn new(inner: Arc<dyn Backend>, metrics: Arc<Metrics>) -> MeteredBackend {
        MeteredBackend { inner, metrics }
    }

    fn timed<'a, T: 'a>(
        &'a self,
        call: &'static str,
        work: BackendFuture<'a, T>,
    ) -> BackendFuture<'a, T> {
        let started = Instant::now();
        Box::pin(async move {
            let result = work.await;
            let m = &self.metrics.backend;
            m.latency
                .get_or_create(&CallLabels { call })
                .observe(started.elapsed().as_secs_f64());
            if let Err(e) = &result {
                let error = match e {
                    BackendError::TopicExists(_) => "topic_exists",
                    BackendError::UnknownTopic(_) => "unknown_topic",
                    BackendError::UnknownPartition { .. } => "unknown_partition",
                    BackendError::Unavailable(_) => "unavailable",
                    BackendError::Fatal(_) => "fatal",
                };
                m.errors.get_or_create(&FailureLabels { call, error }).inc();
            }
            result
        })
    }
}

impl Backend for MeteredBackend {
    fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
        self.timed("topics", self.inner.topics())
    }
    fn create_topic(&self, topic: TopicMeta, limits: TopicLimits) -> BackendFuture<'_, ()> {
        self.timed("create_topic", self.inner.create_topic(topic, limits))
    }
    fn delete_topic(&self, name: &str) -> BackendFuture<'_, ()> {
        self.timed("delete_topic", self.inner.delete_topic(name))
    }
    fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        limits: TopicLimits,
    ) -> BackendFuture<'_, ()> {
        self.timed(
            "alter_topic_configs",
            self.inner.alter_topic_configs(name, configs, limits),
        )
    }
    fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
        self.timed("cluster_configs", self.inner.cluster_configs())
    }
    fn set_cluster_config(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> BackendFuture<'_, ()> {
        self.timed(
            "set_cluster_config",
            self.inner.set_cluster_config(name, values),
        )
    }
    fn append(&self, tp: &TopicPartition, batch: AppendBatch) -> BackendFuture<'_, Appended> {
        self.timed("append", self.inner.append(tp, batch))
    }
    fn read(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> BackendFuture<'_, ReadBatches> {
        self.timed("read", self.inner.read(tp, offset, max_bytes))
    }
    fn watermarks(&self, tp: &TopicPartition) -> BackendFuture<'_, Watermarks> {
        self.timed("watermarks", self.inner.watermarks(tp))
    }
    fn offset_for_timestamp(
        &self,
        tp: &TopicPartition,
        timestamp: i64,
    ) -> BackendFuture<'_, Option<TimestampedOffset>> {
        self.timed(
            "offset_for_timestamp",
            self.inner.offset_for_timestamp(tp, timestamp),
        )
    }
    fn max_timestamp(&self, tp: &TopicPartition) -> BackendFuture<'_, Option<TimestampedOffset>> {
        self.timed("max_timestamp", self.inner.max_timestamp(tp))
    }
    fn producer_batches(&self, tp: &TopicPartition) -> BackendFuture<'_, Vec<ProducerBatch>> {
        self.timed("producer_batches", self.inner.producer_batches(tp))
    }
    fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
        self.timed("allocate_producer_id", self.inner.allocate_producer_id())
    }
    fn commit_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendFuture<'_, ()> {
        self.timed("commit_offset", self.inner.commit_offset(group, tp, offset))
    }
    fn committed_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> BackendFuture<'_, Option<CommittedOffset>> {
        self.timed("committed_offset", self.inner.committed_offset(group, tp))
    }
    fn committed_partitions(&self, group: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
        self.timed(
            "committed_partitions",
            self.inner.committed_partitions(group),
        )
    }
    fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
        self.timed("offset_groups", self.inner.offset_groups())
    }
    fn external_appends(&self) -> bool {
        self.inner.external_appends()
    }
    fn allocate_node_id(&self, address: &str) -> BackendFuture<'_, Option<i32>> {
        self.timed("allocate_node_id", self.inner.allocate_node_id(address))
    }
    fn announce(&self, node: &Node, alive: bool) -> BackendFuture<'_, ()> {
        self.timed("announce", self.inner.announce(node, alive))
    }
    fn live_nodes(&self, timeout: Duration) -> BackendFuture<'_, Vec<Node>> {
        self.timed("live_nodes", self.inner.live_nodes(timeout))
    }
    // SASL: credentials and logins are timed like any call; nothing secret is recorded.
    fn scram_credentials(&self) -> BackendFuture<'_, ScramCredentials> {
        self.timed("scram_credentials", self.inner.scram_credentials())
    }
    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendFuture<'_, ()> {
        self.timed(
            "set_scram_credential",
            self.inner.set_scram_credential(user, mechanism, credential),
        )
    }
    fn check_login(&self, user: &str, password: &str) -> BackendFuture<'_, bool> {
        self.timed("check_login", self.inner.check_login(user, password))
    }
    fn acls(&self) -> BackendFuture<'_, Vec<AclBinding>> {
        self.timed("acls", self.inner.acls())
    }
    fn create_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        self.timed("create_acls", self.inner.create_acls(bindings))
    }
    fn delete_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        self.timed("delete_acls", self.inner.delete_acls(bindings))
    }
    fn client_quotas(&self) -> BackendFuture<'_, ClientQuotas> {
        self.timed("client_quotas", self.inner.client_quotas())
    }
    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendFuture<'_, ()> {
        self.timed(
            "alter_client_quotas",
            self.inner.alter_client_quotas(changes),
        )
    }
    fn ping(&self) -> BackendFuture<'_, ()> {
        self.timed("ping", self.inner.ping())
    }
    fn flush(&self) -> BackendFuture<'_, ()> {
        self.timed("flush", self.inner.flush())
    }
}
