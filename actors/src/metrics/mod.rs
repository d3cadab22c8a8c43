//! What the gateway measures, as Prometheus metrics; the admin listener serves them at
//! `/metrics` in the OpenMetrics text format, which Prometheus scrapes natively.
//!
//! The crate is `prometheus-client`, the Prometheus project's own Rust client, chosen for
//! its footprint: metrics are plain atomic values in an explicit registry (no global
//! recorder, no exporter thread or HTTP server of its own) and it brings in only `dtoa`,
//! `itoa` and a derive macro.
//!
//! Where each metric is recorded (`docs/ARCHITECTURE.md` has the same list):
//! - requests, error codes, latency and bytes: the connection actor ([`Metrics::answered`],
//!   [`Metrics::received`], [`ConnectionMeter`]);
//! - storage calls: [`MeteredLog`], [`MeteredMeta`] and [`MeteredUsers`], the decorators `Gateway::start`
//!   puts around the stores;
//! - slot queues: the [`Queued`] ticket every log- and offset-slot message carries;
//! - groups and rebalances: the group coordinator ([`GroupMetrics`]);
//! - fetch sessions: the session cache ([`FetchSessionMetrics`]);
//! - log compaction: the compactor ([`CompactionMetrics`]).

mod error_codes;
mod metered_stores;

use std::sync::Arc;
use std::time::Instant;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::protocol::Answer;

pub use metered_stores::{MeteredLog, MeteredMeta, MeteredUsers};

/// Every metric name starts with this.
const PREFIX: &str = "iggy_kafka_gateway";

/// Latency buckets in seconds: 0.5 ms to 30 s (a Fetch may wait up to its `max_wait_ms`).
const LATENCY_BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// A Kafka API as a label value: its name (`Produce`, `Fetch`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Api(pub ApiKey);

impl EncodeLabelValue for Api {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&format!("{:?}", self.0).as_str(), encoder)
    }
}

/// A Kafka error code as a label value: Kafka's own name (`NONE`,
/// `UNKNOWN_TOPIC_OR_PARTITION`, ...), the number for codes this build does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i16);

impl ErrorCode {
    pub fn kafka_name(self) -> String {
        match ResponseError::try_from_code(self.0) {
            None => "NONE".into(),
            Some(ResponseError::Unknown(code)) => code.to_string(),
            // The variants are Kafka's names in CamelCase.
            Some(known) => {
                let mut name = String::new();
                for (i, c) in format!("{known:?}").chars().enumerate() {
                    if c.is_ascii_uppercase() && i > 0 {
                        name.push('_');
                    }
                    name.push(c.to_ascii_uppercase());
                }
                name
            }
        }
    }
}

impl EncodeLabelValue for ErrorCode {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.kafka_name().as_str(), encoder)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    api: Api,
    version: i16,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ErrorLabels {
    api: Api,
    version: i16,
    error: ErrorCode,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ApiLabels {
    api: Api,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QuotaLabels {
    quota: &'static str,
}

/// The gateway's metrics and the registry that encodes them. One per process, shared
/// through [`crate::Gateway`].
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    latency: Family<ApiLabels, Histogram>,
    received_bytes: Counter,
    sent_bytes: Counter,
    connections: Gauge,
    refused_connections: Family<LimitLabels, Counter>,
    throttled: Family<QuotaLabels, Counter>,
    backend: metered_stores::BackendMetrics,
    pub log_slots: SlotQueues,
    pub offset_slots: SlotQueues,
    pub groups: GroupMetrics,
    pub fetch_sessions: Arc<FetchSessionMetrics>,
    pub compaction: CompactionMetrics,
}

impl Metrics {
    pub fn new() -> Arc<Metrics> {
        let mut registry = Registry::with_prefix(PREFIX);
        let requests = Family::default();
        registry.register(
            "requests",
            "Kafka requests answered, by API and version",
            requests.clone(),
        );
        let errors = Family::default();
        registry.register(
            "errors",
            "Error codes in answers, by API, version and code (NONE included): one per \
             partition, topic, group or member result, as Kafka's errorCounts",
            errors.clone(),
        );
        let latency = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "request_duration",
            "Time from a request's decoding to its answer, by API",
            Unit::Seconds,
            latency.clone(),
        );
        let received_bytes = Counter::default();
        registry.register_with_unit(
            "received",
            "Kafka request bytes read, length prefixes included",
            Unit::Bytes,
            received_bytes.clone(),
        );
        let sent_bytes = Counter::default();
        registry.register_with_unit(
            "sent",
            "Kafka answer bytes written",
            Unit::Bytes,
            sent_bytes.clone(),
        );
        let connections = Gauge::default();
        registry.register(
            "open_connections",
            "Kafka client connections open",
            connections.clone(),
        );
        let refused_connections = Family::default();
        registry.register(
            "refused_connections",
            "Kafka connections closed on accept, by the setting that refused them \
             (max_connections, max_connections_per_ip, connection_creation_rate)",
            refused_connections.clone(),
        );
        let throttled = Family::default();
        registry.register(
            "throttled_requests",
            "Produce and Fetch requests answered with a throttle time, by the client quota \
             they exceeded (producer_byte_rate, consumer_byte_rate)",
            throttled.clone(),
        );
        let backend = metered_stores::BackendMetrics::register(&mut registry);
        let log_slots = SlotQueues::register(
            &mut registry,
            "log_slot_queue_depth",
            "Appends sent to a log slot and not finished (waiting or being written)",
        );
        let offset_slots = SlotQueues::register(
            &mut registry,
            "offset_slot_queue_depth",
            "Offset commits and reads sent to an offset slot and not finished",
        );
        let groups = GroupMetrics::register(&mut registry);
        let fetch_sessions = Arc::new(FetchSessionMetrics::register(&mut registry));
        let compaction = CompactionMetrics::register(&mut registry);
        Arc::new(Metrics {
            registry,
            requests,
            errors,
            latency,
            received_bytes,
            sent_bytes,
            connections,
            refused_connections,
            throttled,
            backend,
            log_slots,
            offset_slots,
            groups,
            fetch_sessions,
            compaction,
        })
    }

    /// Every metric in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }

    /// A request frame arrived (`len` bytes after the length prefix).
    pub fn received(&self, len: usize) {
        self.received_bytes.inc_by(len as u64 + 4);
    }

    /// A request decoded at `started` is answered (or deliberately not, for acks=0).
    pub fn answered(&self, key: ApiKey, version: i16, answer: &Answer, started: Instant) {
        let api = Api(key);
        self.requests
            .get_or_create(&RequestLabels { api, version })
            .inc();
        self.latency
            .get_or_create(&ApiLabels { api })
            .observe(started.elapsed().as_secs_f64());
        let mut codes = match answer {
            Answer::Send(response) | Answer::SendAndClose(response, _) => error_codes::of(response),
            Answer::Fetch(fetch) => error_codes::of_fetch(fetch.response()),
            Answer::Nothing | Answer::Close(_) | Answer::Raw(_) => return,
        };
        codes.sort_unstable();
        for run in codes.chunk_by(|a, b| a == b) {
            let error = ErrorCode(run[0]);
            self.errors
                .get_or_create(&ErrorLabels {
                    api,
                    version,
                    error,
                })
                .inc_by(run.len() as u64);
        }
    }

    /// A connection was closed on accept because of the setting `limit`.
    pub fn connection_refused(&self, limit: &'static str) {
        self.refused_connections
            .get_or_create(&LimitLabels { limit })
            .inc();
    }

    /// A request over the client quota `quota` was throttled.
    pub fn throttled(&self, quota: &'static str) {
        self.throttled.get_or_create(&QuotaLabels { quota }).inc();
    }

    /// Counts a connection as open until the returned meter is dropped.
    pub fn connection_opened(&self) -> ConnectionMeter {
        self.connections.inc();
        ConnectionMeter {
            open: self.connections.clone(),
            sent: self.sent_bytes.clone(),
        }
    }
}

/// One connection's share of the metrics, held by its writer task: counts the
/// connection as open until dropped, and the bytes written to it.
pub struct ConnectionMeter {
    open: Gauge,
    sent: Counter,
}

impl ConnectionMeter {
    pub fn sent(&self, len: usize) {
        self.sent.inc_by(len as u64);
    }
}

impl Drop for ConnectionMeter {
    fn drop(&mut self) {
        self.open.dec();
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SlotLabels {
    slot: usize,
}

/// Queue depth of each slot of one kind (log or offset).
pub struct SlotQueues(Family<SlotLabels, Gauge>);

impl SlotQueues {
    fn register(registry: &mut Registry, name: &str, help: &str) -> SlotQueues {
        let depth = Family::default();
        registry.register(name, help, depth.clone());
        SlotQueues(depth)
    }

    /// Shows `count` slots at depth 0 before any traffic.
    pub fn show(&self, count: usize) {
        for slot in 0..count {
            let _ = self.0.get_or_create(&SlotLabels { slot });
        }
    }

    /// A message bound for `slot` enters its queue; it leaves when the ticket is dropped.
    pub fn enter(&self, slot: usize) -> Queued {
        let depth = self.0.get_or_create_owned(&SlotLabels { slot });
        depth.inc();
        Queued(depth)
    }
}

/// Carried by a slot message from its sending until the slot is done with it, so a
/// message the slot never handles (its sender gave up) leaves the queue all the same.
pub struct Queued(Gauge);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

/// Consumer groups by state, and rebalances begun.
pub struct GroupMetrics {
    by_state: Family<StateLabels, Gauge>,
    rebalances: Counter,
}

impl GroupMetrics {
    fn register(registry: &mut Registry) -> GroupMetrics {
        let by_state = Family::default();
        registry.register(
            "consumer_groups",
            "Consumer groups this gateway coordinates, by state",
            by_state.clone(),
        );
        let rebalances = Counter::default();
        registry.register(
            "group_rebalances",
            "Rebalances begun (a group entering PreparingRebalance)",
            rebalances.clone(),
        );
        GroupMetrics {
            by_state,
            rebalances,
        }
    }

    /// Sets the number of groups in each state, by the state's Kafka name; the
    /// coordinator lists every state, at 0 when no group is in it.
    pub fn set_counts(&self, counts: impl IntoIterator<Item = (&'static str, usize)>) {
        for (state, count) in counts {
            self.by_state
                .get_or_create(&StateLabels { state })
                .set(count as i64);
        }
    }

    /// A handle that counts one rebalance per call, kept by each group.
    pub fn rebalance_counter(&self) -> Counter {
        self.rebalances.clone()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PartitionLabels {
    topic: String,
    partition: i32,
}

/// The compactor's progress (`compactor`), as Kafka's `LogCleaner` metrics show it.
pub struct CompactionMetrics {
    passes: Counter,
    reclaimed: Counter,
    dirty_ratio: Family<PartitionLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
}

impl CompactionMetrics {
    fn register(registry: &mut Registry) -> CompactionMetrics {
        let passes = Counter::default();
        registry.register(
            "compaction_passes",
            "Compaction passes over a partition of a compacted topic",
            passes.clone(),
        );
        let reclaimed = Counter::default();
        registry.register_with_unit(
            "compaction_reclaimed",
            "Bytes of partition logs compaction gave back",
            Unit::Bytes,
            reclaimed.clone(),
        );
        let dirty_ratio = Family::default();
        registry.register(
            "compaction_dirty_ratio",
            "Share of a compacted partition's bytes written since its last compaction \
             (Kafka's max-dirty-percent, per partition), as of the compactor's last look",
            dirty_ratio.clone(),
        );
        CompactionMetrics {
            passes,
            reclaimed,
            dirty_ratio,
        }
    }

    /// A pass over a partition ended, giving back `reclaimed` bytes.
    pub fn passed(&self, reclaimed: u64) {
        self.passes.inc();
        self.reclaimed.inc_by(reclaimed);
    }

    pub fn dirty_ratio(&self, topic: &str, partition: i32, ratio: f64) {
        let labels = PartitionLabels {
            topic: topic.to_string(),
            partition,
        };
        self.dirty_ratio.get_or_create(&labels).set(ratio);
    }
}

/// The fetch session cache, as Kafka's `FetchSessionCache` metrics show it.
pub struct FetchSessionMetrics {
    sessions: Gauge,
    partitions: Gauge,
    evictions: Counter,
    incremental: Counter,
}

impl FetchSessionMetrics {
    fn register(registry: &mut Registry) -> FetchSessionMetrics {
        let sessions = Gauge::default();
        registry.register(
            "fetch_sessions",
            "Incremental fetch sessions cached (Kafka's NumIncrementalFetchSessions)",
            sessions.clone(),
        );
        let partitions = Gauge::default();
        registry.register(
            "fetch_session_partitions",
            "Partitions cached over every fetch session (NumIncrementalFetchPartitionsCached)",
            partitions.clone(),
        );
        let evictions = Counter::default();
        registry.register(
            "fetch_session_evictions",
            "Fetch sessions evicted to make room for new ones \
             (IncrementalFetchSessionEvictionsPerSec, as a count)",
            evictions.clone(),
        );
        let incremental = Counter::default();
        registry.register(
            "incremental_fetches",
            "Incremental fetches answered within their session",
            incremental.clone(),
        );
        FetchSessionMetrics {
            sessions,
            partitions,
            evictions,
            incremental,
        }
    }

    /// The cache's counts now.
    pub fn show(&self, sessions: usize, partitions: usize) {
        self.sessions.set(sessions as i64);
        self.partitions.set(partitions as i64);
    }

    pub fn evicted(&self) {
        self.evictions.inc();
    }

    pub fn incremental_served(&self) {
        self.incremental.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_carry_kafkas_names() {
        assert_eq!(ErrorCode(0).kafka_name(), "NONE");
        assert_eq!(ErrorCode(3).kafka_name(), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(ErrorCode(-1).kafka_name(), "UNKNOWN_SERVER_ERROR");
        assert_eq!(ErrorCode(56).kafka_name(), "KAFKA_STORAGE_ERROR");
        assert_eq!(ErrorCode(9999).kafka_name(), "9999");
    }

    #[test]
    fn a_dropped_ticket_leaves_the_queue() {
        let metrics = Metrics::new();
        metrics.log_slots.show(2);
        let first = metrics.log_slots.enter(1);
        let second = metrics.log_slots.enter(1);
        let depth = |slot| {
            metrics
                .log_slots
                .0
                .get_or_create(&SlotLabels { slot })
                .get()
        };
        assert_eq!((depth(0), depth(1)), (0, 2));
        drop(first);
        assert_eq!(depth(1), 1);
        drop(second);
        assert_eq!(depth(1), 0);
        let text = metrics.encode();
        assert!(
            text.contains("iggy_kafka_gateway_log_slot_queue_depth{slot=\"1\"} 0"),
            "{text}"
        );
    }
}
