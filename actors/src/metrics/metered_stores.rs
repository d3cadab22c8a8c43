//! The backend decorator that times every call and counts its failures, so each
//! storage implementation stays free of metrics.

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::{latency_histogram, Metrics};
use crate::store::meta::{MetaAnswer, MetaCall};
use crate::store::*;
use crate::store::{LogAnswer, LogCall, LogStore, MetaStore};

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    call: &'static str,
    /// The metadata table a call is to; empty for the log store's calls.
    table: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SectionLabels {
    /// `kept` from the batch's Produce, or `made` for the read.
    section: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FailureLabels {
    call: &'static str,
    table: &'static str,
    error: &'static str,
}

pub(super) struct BackendMetrics {
    latency: Family<CallLabels, Histogram>,
    errors: Family<FailureLabels, Counter>,
    read_bytes: Family<CallLabels, Counter>,
    stored_read_bytes: Family<CallLabels, Counter>,
    read_ahead_hits: Counter,
    compressed_batches: Family<SectionLabels, Counter>,
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
        let read_bytes = Family::default();
        registry.register_with_unit(
            "backend_read",
            "Bytes of record batches the log store gave reads, by call (read, read_headers): \
             beside the bytes consumers fetched, how often the log is read",
            Unit::Bytes,
            read_bytes.clone(),
        );
        let stored_read_bytes = Family::default();
        registry.register_with_unit(
            "backend_stored_read",
            "Bytes of stored data the log store read to answer reads, by call (Iggy: every \
             message it polled): over backend_read, its read amplification",
            Unit::Bytes,
            stored_read_bytes.clone(),
        );
        let read_ahead_hits = Counter::default();
        registry.register(
            "backend_read_ahead_hits",
            "Reads the log store answered from a read it had started ahead (Iggy's \
             read-ahead): over the read calls, the read-ahead's hit rate",
            read_ahead_hits.clone(),
        );
        let compressed_batches = Family::default();
        registry.register(
            "backend_compressed_batches",
            "Compressed batches a log store that keeps records one by one (Iggy's) put back \
             together for reads, by where their records section came from: kept from their \
             Produce, or made (compressed again) for the read; kept over both is the hit \
             rate of iggy_kept_compressed_bytes",
            compressed_batches.clone(),
        );
        BackendMetrics {
            latency,
            errors,
            read_bytes,
            stored_read_bytes,
            read_ahead_hits,
            compressed_batches,
        }
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
    fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer> {
        let labels = CallLabels {
            call: call.name(),
            table: "",
        };
        let answer = timed(&self.metrics, (labels.call, ""), self.inner.call(call));
        Box::pin(async move {
            let answer = answer.await;
            if let Ok(LogAnswer::Read(read)) = &answer {
                let bytes = read.batches.iter().map(|b| b.len() as u64).sum();
                let backend = &self.metrics.backend;
                backend.read_bytes.get_or_create(&labels).inc_by(bytes);
                (backend.stored_read_bytes.get_or_create(&labels)).inc_by(read.stored_read);
                if read.read_ahead {
                    backend.read_ahead_hits.inc();
                }
                let sections = &backend.compressed_batches;
                let c = read.compressions;
                // Only reads that put compressed batches back together count here: most
                // reads (every one on the embedded store) skip the family's lookup.
                for (section, n) in [("kept", c.kept), ("made", c.made)] {
                    if n == 0 {
                        continue;
                    }
                    sections
                        .get_or_create(&SectionLabels { section })
                        .inc_by(n.into());
                }
            }
            answer
        })
    }

    fn log_dir(&self) -> String {
        self.inner.log_dir()
    }

    fn external_appends(&self) -> bool {
        self.inner.external_appends()
    }

    fn splits_batches(&self) -> bool {
        self.inner.splits_batches()
    }

    fn compacts(&self) -> bool {
        self.inner.compacts()
    }

    fn committed(&self, commits: &[GroupCommit]) {
        self.inner.committed(commits)
    }
}

/// Times and counts every call to the metadata store it wraps, by the call's name;
/// the clients it gives out are metered too.
pub struct MeteredMeta {
    inner: Arc<dyn MetaStore>,
    metrics: Arc<Metrics>,
}

impl MeteredMeta {
    pub fn new(inner: Arc<dyn MetaStore>, metrics: Arc<Metrics>) -> MeteredMeta {
        MeteredMeta { inner, metrics }
    }
}

impl MetaStore for MeteredMeta {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        let labels = (call.name(), call.table());
        timed(&self.metrics, labels, self.inner.call(call))
    }

    fn client(&self) -> StoreResult<Arc<dyn MetaStore>> {
        let client = self.inner.client()?;
        Ok(Arc::new(MeteredMeta::new(client, self.metrics.clone())))
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }
}

/// Times and counts every call to the backend it wraps.
pub struct MeteredUsers {
    inner: Arc<dyn Users>,
    metrics: Arc<Metrics>,
}

impl MeteredUsers {
    pub fn new(inner: Arc<dyn Users>, metrics: Arc<Metrics>) -> MeteredUsers {
        MeteredUsers { inner, metrics }
    }
}

/// `work`, timed and, when it fails, counted under `call` (and `table`).
fn timed<'a, T: 'a>(
    metrics: &'a Metrics,
    (call, table): (&'static str, &'static str),
    work: StoreFuture<'a, T>,
) -> StoreFuture<'a, T> {
    let started = Instant::now();
    Box::pin(async move {
        let result = work.await;
        let m = &metrics.backend;
        m.latency
            .get_or_create(&CallLabels { call, table })
            .observe(started.elapsed().as_secs_f64());
        if let Err(e) = &result {
            let error = match e {
                StoreError::TopicExists(_) => "topic_exists",
                StoreError::UnknownTopic(_) => "unknown_topic",
                StoreError::UnknownPartition { .. } => "unknown_partition",
                StoreError::HasPartitions { .. } => "has_partitions",
                StoreError::OffsetOutOfRange { .. } => "offset_out_of_range",
                StoreError::Unavailable { .. } => "unavailable",
                StoreError::Fatal { .. } => "fatal",
            };
            m.errors
                .get_or_create(&FailureLabels { call, table, error })
                .inc();
        }
        result
    })
}

impl Users for MeteredUsers {
    fn check_login(&self, user: &str, password: &str) -> StoreFuture<'_, bool> {
        timed(
            &self.metrics,
            ("check_login", ""),
            self.inner.check_login(user, password),
        )
    }
}
