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
use crate::store::{LogAnswer, LogCall, LogStore};

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

/// Times and counts every call to the log store it wraps, by the call's name.
pub struct MeteredLog {
    inner: Arc<dyn LogStore>,
    metrics: Arc<Metrics>,
}

impl MeteredLog {
    pub fn new(inner: Arc<dyn LogStore>, metrics: Arc<Metrics>) -> MeteredLog {
        MeteredLog { inner, metrics }
    }
}

impl LogStore for MeteredLog {
    fn call(&self, call: LogCall) -> BackendFuture<'_, LogAnswer> {
        let name = call.name();
        timed(&self.metrics, name, self.inner.call(call))
    }

    fn external_appends(&self) -> bool {
        self.inner.external_appends()
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
}

/// `work`, timed and, when it fails, counted under `call`.
fn timed<'a, T: 'a>(
    metrics: &'a Metrics,
    call: &'static str,
    work: BackendFuture<'a, T>,
) -> BackendFuture<'a, T> {
    let started = Instant::now();
    Box::pin(async move {
        let result = work.await;
        let m = &metrics.backend;
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

impl Backend for MeteredBackend {
    fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
        timed(&self.metrics, "topics", self.inner.topics())
    }
    fn create_topic(&self, topic: TopicMeta, limits: TopicLimits) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "create_topic",
            self.inner.create_topic(topic, limits),
        )
    }
    fn delete_topic(&self, name: &str) -> BackendFuture<'_, ()> {
        timed(&self.metrics, "delete_topic", self.inner.delete_topic(name))
    }
    fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        limits: TopicLimits,
    ) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "alter_topic_configs",
            self.inner.alter_topic_configs(name, configs, limits),
        )
    }
    fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
        timed(
            &self.metrics,
            "cluster_configs",
            self.inner.cluster_configs(),
        )
    }
    fn set_cluster_config(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "set_cluster_config",
            self.inner.set_cluster_config(name, values),
        )
    }
    fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
        timed(
            &self.metrics,
            "allocate_producer_id",
            self.inner.allocate_producer_id(),
        )
    }
    fn commit_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "commit_offset",
            self.inner.commit_offset(group, tp, offset),
        )
    }
    fn committed_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> BackendFuture<'_, Option<CommittedOffset>> {
        timed(
            &self.metrics,
            "committed_offset",
            self.inner.committed_offset(group, tp),
        )
    }
    fn committed_partitions(&self, group: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
        timed(
            &self.metrics,
            "committed_partitions",
            self.inner.committed_partitions(group),
        )
    }
    fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
        timed(&self.metrics, "offset_groups", self.inner.offset_groups())
    }
    fn allocate_node_id(&self, address: &str) -> BackendFuture<'_, Option<i32>> {
        timed(
            &self.metrics,
            "allocate_node_id",
            self.inner.allocate_node_id(address),
        )
    }
    fn announce(&self, node: &Node, alive: bool) -> BackendFuture<'_, ()> {
        timed(&self.metrics, "announce", self.inner.announce(node, alive))
    }
    fn live_nodes(&self, timeout: Duration) -> BackendFuture<'_, Vec<Node>> {
        timed(&self.metrics, "live_nodes", self.inner.live_nodes(timeout))
    }
    // SASL: credentials and logins are timed like any call; nothing secret is recorded.
    fn scram_credentials(&self) -> BackendFuture<'_, ScramCredentials> {
        timed(
            &self.metrics,
            "scram_credentials",
            self.inner.scram_credentials(),
        )
    }
    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "set_scram_credential",
            self.inner.set_scram_credential(user, mechanism, credential),
        )
    }
    fn check_login(&self, user: &str, password: &str) -> BackendFuture<'_, bool> {
        timed(
            &self.metrics,
            "check_login",
            self.inner.check_login(user, password),
        )
    }
    fn acls(&self) -> BackendFuture<'_, Vec<AclBinding>> {
        timed(&self.metrics, "acls", self.inner.acls())
    }
    fn create_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "create_acls",
            self.inner.create_acls(bindings),
        )
    }
    fn delete_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "delete_acls",
            self.inner.delete_acls(bindings),
        )
    }
    fn client_quotas(&self) -> BackendFuture<'_, ClientQuotas> {
        timed(&self.metrics, "client_quotas", self.inner.client_quotas())
    }
    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendFuture<'_, ()> {
        timed(
            &self.metrics,
            "alter_client_quotas",
            self.inner.alter_client_quotas(changes),
        )
    }
    fn ping(&self) -> BackendFuture<'_, ()> {
        timed(&self.metrics, "ping", self.inner.ping())
    }
    fn flush(&self) -> BackendFuture<'_, ()> {
        timed(&self.metrics, "flush", self.inner.flush())
    }
}
