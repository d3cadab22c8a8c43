//! The Iggy backend: Kafka topics, records and committed offsets kept in an Apache
//! Iggy server through the `iggy` SDK, readable by native Iggy clients.
//!
//! - A Kafka topic is the Iggy topic of the same name in stream `iggy_stream`;
//!   partitions and offsets are the same numbers on both sides.
//! - One Kafka record is one Iggy message ([`mapping`], `docs/IGGY_MAPPING.md`).
//! - What Iggy does not hold (Kafka topic ids and configs, producer-id blocks,
//!   committed offsets as Kafka sends them, shared broker configurations, ACLs) lives in
//!   append-only logs in the gateway's own stream `iggy_gateway_stream`
//!   ([`gateway_log`]); the shared ones are re-read for what other gateways appended.
//!
//! Every call runs on a tokio runtime of its own, so SDK I/O and batch
//! (de)compression never run on the actor threads, and each call is bounded by
//! `iggy_request_timeout_ms`: a stalled server gives clients a retriable error.

mod acls;
mod catalog;
mod cluster;
mod gateway_log;
mod kafka_batch;
mod mapping;
mod meta;
mod names;
mod nodes;
mod offsets;
mod pool;
mod quotas;
mod read_ahead;
mod scram;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use iggy::prelude::{
    Consumer, ConsumerGroupClient, ConsumerOffsetClient, Identifier, IggyByteSize, IggyDuration,
    IggyError, IggyExpiry, IggyMessage, IggyMessageHeader, IggyTimestamp, MaxTopicSize,
    MessageClient, Partitioning, PollingStrategy, SystemClient, TopicClient, TopicCreateOptions,
    TopicUpdateOptions,
};
use iggy_kafka_actors::backend::{
    AclBinding, AppendBatch, Appended, Backend, BackendError, BackendFuture, BackendResult,
    ClientQuotas, ClusterConfigs, CommittedOffset, Node, ProducerBatch, QuotaChange, ReadBatches,
    ScramCredential, ScramCredentials, ScramMechanism, TimestampedOffset, TopicLimits, TopicMeta,
    TopicPartition, Watermarks,
};
use iggy_kafka_actors::store::meta::{MetaAnswer, MetaCall, MetaStore};
use iggy_kafka_actors::store::{LogAnswer, LogCall, LogStore};
use parking_lot::Mutex;

use acls::{AclRecord, Acls};
use catalog::{Catalog, TopicRecord};
use cluster::{ClusterRecord, ClusterState};
use gateway_log::{Compact, Replayed};
use kafka_batch::KafkaRecord;
use mapping::{FromIggy, IggyView, ProducerStamp};
use names::Names;
pub use names::TopicOverride;
use nodes::{NodeRecord, Nodes};
use offsets::{OffsetRecord, Offsets};
pub use pool::ConnectError;
use pool::{Conn, Pools};
use quotas::{QuotaRecord, Quotas};
use read_ahead::{Read, ReadAhead};
use scram::{ScramRecord, ScramState};

/// Producer ids handed out per record appended to the `producer-ids` log.
const PRODUCER_ID_BLOCK: i64 = 1_000;
/// Messages read per poll when scanning a partition.
const SCAN_PAGE: u32 = 1_000;
/// Most messages a Fetch polls for one partition.
const FETCH_MAX_MESSAGES: usize = 16_384;
/// Record size assumed for a partition not read yet, to size its first poll.
const FIRST_RECORD_SIZE_GUESS: usize = 128;
/// How far back from the end producer history is rebuilt after a restart.
const PRODUCER_HISTORY_MESSAGES: u64 = 10_000;
/// Batches kept per idempotent producer, as Kafka does.
const PRODUCER_HISTORY_BATCHES: usize = 5;
/// Unanswered idempotent appends remembered per partition.
const UNCERTAIN_MAX: usize = 64;

fn same_batch(a: &ProducerStamp, b: &ProducerStamp) -> bool {
    (a.producer_id, a.producer_epoch, a.base_sequence)
        == (b.producer_id, b.producer_epoch, b.base_sequence)
}

/// Checks topic overrides as startup would: no Kafka name twice, no Iggy topic twice.
pub fn check_topic_overrides(stream: &str, topics: &[TopicOverride]) -> Result<(), String> {
    Names::new(stream, topics)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// What the backend needs to know; built from the settings.
pub struct IggyConfig {
    pub address: String,
    pub username: String,
    pub password: String,
    pub stream: String,
    pub gateway_stream: String,
    pub produce_clients: usize,
    pub read_clients: usize,
    /// One per offset slot: a slot's commits go through its own connection.
    pub commit_clients: usize,
    /// Most bytes of Fetch reads started ahead of their consumers (0: none).
    pub read_ahead_bytes: usize,
    /// Records after which a gateway log gets a new snapshot (`gateway_log.rs`).
    pub snapshot_records: u64,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// Ask Iggy to fsync every write to topics the gateway creates.
    pub fsync: bool,
    /// Kafka topics kept elsewhere than `stream`/same name.
    pub topics: Vec<TopicOverride>,
    /// TLS to the Iggy server, when enabled.
    pub tls: Option<IggyTls>,
}

/// TLS to the Iggy server (the SDK's TCP client).
#[derive(Clone, Debug)]
pub struct IggyTls {
    /// Name the server certificate must carry; empty: the host of `address`.
    pub domain: String,
    /// CA certificates the server certificate must chain to; else the webpki roots.
    pub ca_file: Option<std::path::PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("cannot prepare Iggy stream '{stream}' at {address}: {source}")]
    Setup {
        stream: String,
        address: String,
        source: IggyError,
    },
    #[error("cannot start the Iggy client runtime: {0}")]
    Runtime(std::io::Error),
    #[error("setting 'iggy_topics': {0}")]
    Names(#[from] names::NamesError),
    #[error("cannot load the gateway's state from Iggy stream '{0}': {1}")]
    Load(String, gateway_log::LoadError),
}

/// Owns the runtime; dropping it (even inside another runtime) never blocks.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

pub struct IggyBackend {
    handle: tokio::runtime::Handle,
    inner: Arc<Inner>,
    request_timeout: Duration,
    _runtime: Runtime,
}

struct Inner {
    config: IggyConfig,
    names: Names,
    pools: Pools,
    catalog: Mutex<Replayed<Catalog>>,
    cluster: Mutex<Replayed<ClusterState>>,
    scram: Mutex<Replayed<ScramState>>,
    /// ACL bindings, caught up with the `acls` log on each read.
    acls: Mutex<Replayed<Acls>>,
    /// Client quotas, caught up with the `client-quotas` log on each read.
    quotas: Mutex<Replayed<Quotas>>,
    offsets: Mutex<Replayed<Offsets>>,
    /// Announcements of the gateways sharing this server, and the next one to read.
    nodes: Mutex<(u64, Nodes)>,
    /// (Kafka group, topic) pairs whose Iggy mirror group exists.
    mirror_groups: Mutex<HashSet<(String, String)>>,
    producer_ids: tokio::sync::Mutex<(i64, i64)>,
    log_starts: Mutex<HashMap<TopicPartition, i64>>,
    /// Average Kafka size of a partition's records in its last read: the next poll
    /// asks for about as many messages as the fetch can take, no more (a poll of
    /// messages that do not fit is Iggy work thrown away).
    record_sizes: Mutex<HashMap<TopicPartition, usize>>,
    read_ahead: ReadAhead,
    /// Idempotent batches whose append failed without an answer: they may have landed.
    uncertain: Mutex<HashMap<TopicPartition, Vec<ProducerStamp>>>,
    /// Partitions appended to since the last flush.
    written: Mutex<HashSet<TopicPartition>>,
    mirror_queue: tokio::sync::mpsc::Sender<MirrorUpdate>,
    /// The metadata tables' replicas (`meta/`).
    meta: meta::Tables,
}

/// A commit to copy into Iggy's consumer offsets: group, partition, offset (or delete).
type MirrorUpdate = (String, TopicPartition, Option<i64>);
type MirrorReceiver = tokio::sync::mpsc::Receiver<MirrorUpdate>;
/// Mirror updates waiting at most; more are dropped (the next commit catches up).
const MIRROR_QUEUE: usize = 10_000;
/// How often the gateway logs are checked for a snapshot due.
const COMPACT_INTERVAL: Duration = Duration::from_secs(2);

impl IggyBackend {
    /// Connects (retrying an unreachable server until `connect_timeout`), prepares
    /// the streams and loads the gateway's state.
    pub async fn start(config: IggyConfig) -> Result<IggyBackend, StartError> {
        let runtime = Runtime(Some(
            tokio::runtime::Builder::new_multi_thread()
                // Batch (de)coding runs here too: a thread per core, within reason.
                .worker_threads(
                    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8)),
                )
                .thread_name("iggy-client")
                .enable_all()
                .build()
                .map_err(StartError::Runtime)?,
        ));
        let handle = runtime.0.as_ref().expect("runtime").handle().clone();
        let request_timeout = config.request_timeout;
        let (inner, mirror) = handle
            .spawn(Inner::connect(config))
            .await
            .map_err(|e| StartError::Runtime(std::io::Error::other(e)))??;
        let inner = Arc::new(inner);
        handle.spawn(Inner::run_mirror(Arc::downgrade(&inner), mirror));
        handle.spawn(Inner::run_snapshots(Arc::downgrade(&inner)));
        Ok(IggyBackend {
            handle,
            inner,
            request_timeout,
            _runtime: runtime,
        })
    }

    /// Runs a call on the client runtime; the caller waits at most the request
    /// timeout. A call that outlives it runs on unseen: dropping an SDK call midway
    /// would leave its answer unread on the connection, for the next call to misread.
    fn run<T, F>(&self, call: impl FnOnce(Arc<Inner>) -> F) -> BackendFuture<'static, T>
    where
        T: Send + 'static,
        F: Future<Output = BackendResult<T>> + Send + 'static,
    {
        run_timed(&self.handle, self.request_timeout, call(self.inner.clone()))
    }
}

/// [`IggyBackend::run`], for the handles that share its runtime (`meta::client`).
fn run_timed<T, F>(
    handle: &tokio::runtime::Handle,
    timeout: Duration,
    call: F,
) -> BackendFuture<'static, T>
where
    T: Send + 'static,
    F: Future<Output = BackendResult<T>> + Send + 'static,
{
    let task = handle.spawn(call);
    Box::pin(async move {
        match tokio::time::timeout(timeout, task).await {
            Ok(done) => done.map_err(|e| BackendError::Fatal(format!("Iggy call failed: {e}")))?,
            Err(_) => Err(BackendError::Unavailable(format!(
                "Iggy did not answer within {timeout:?}"
            ))),
        }
    })
}

fn named(name: &str) -> BackendResult<Identifier> {
    Identifier::named(name).map_err(|e| BackendError::Fatal(format!("name '{name}': {e}")))
}

/// Iggy's answer as a backend error; `topic` names what was asked for.
fn backend_error(e: IggyError, tp: Option<&TopicPartition>, topic: &str) -> BackendError {
    match e {
        IggyError::StreamIdNotFound(..)
        | IggyError::StreamNameNotFound(..)
        | IggyError::TopicIdNotFound(..)
        | IggyError::TopicNameNotFound(..) => BackendError::UnknownTopic(topic.to_string()),
        IggyError::PartitionNotFound(..) => BackendError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        // What this server answers for a partition it does not have.
        IggyError::ResourceNotFound(_) if tp.is_some() => BackendError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        IggyError::TopicNameAlreadyExists(..) => BackendError::TopicExists(topic.to_string()),
        // A lost connection or a refusal the server says is passing: worth retrying.
        e if pool::is_connection_error(&e)
            || matches!(
                e,
                IggyError::TransientNotCommitted
                    | IggyError::TransientNotAccepted
                    | IggyError::TaskTimeout
            ) =>
        {
            BackendError::Unavailable(e.to_string())
        }
        other => BackendError::Fatal(format!("Iggy: {other}")),
    }
}

/// Kafka topic names Kafka clients accept; native Iggy topics named otherwise are
/// not served.
fn is_kafka_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn partition_id(tp: &TopicPartition) -> BackendResult<u32> {
    u32::try_from(tp.partition).map_err(|_| BackendError::UnknownPartition {
        topic: tp.topic.to_string(),
        partition: tp.partition,
    })
}

/// Iggy's message expiry for a topic's limits.
fn message_expiry(limits: &TopicLimits) -> IggyExpiry {
    // Iggy counts in microseconds: longer than that can hold is forever.
    match limits
        .retention_ms
        .filter(|ms| ms.checked_mul(1000).is_some())
    {
        Some(ms) => IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_millis(ms))),
        None => IggyExpiry::NeverExpire,
    }
}

/// Iggy's topic size cap for a topic's limits: Kafka's is per partition. Iggy refuses
/// a cap below one segment (`segment`, when known), so a smaller one is raised to it.
fn max_topic_size(limits: &TopicLimits, partitions: u32, segment: Option<u64>) -> MaxTopicSize {
    match limits.retention_bytes {
        Some(b) => {
            let cap = b.saturating_mul(u64::from(partitions.max(1)));
            MaxTopicSize::Custom(IggyByteSize::from(cap.max(segment.unwrap_or(0))))
        }
        None => MaxTopicSize::Unlimited,
    }
}

/// The segment size an Iggy topic was made with, as it reports it.
fn segment_size(details: &iggy::prelude::TopicDetails) -> Option<u64> {
    details
        .options
        .iter()
        .find(|(key, _)| key.as_bytes() == iggy_common::topic_option_keys::SEGMENT_SIZE.as_bytes())
        .and_then(|(_, option)| option.value.as_uint64().ok())
}

/// Iggy options for a new topic (`docs/IGGY_MAPPING.md`, "Topics"). The size cap is
/// set once the topic exists ([`Inner::apply_limits`]): it depends on the segment size
/// Iggy chose.
fn topic_options(meta: &TopicMeta, limits: &TopicLimits, fsync: bool) -> TopicCreateOptions {
    let partitions = meta.partitions.max(1) as u32;
    // Iggy's bounds: a multiple of 512 bytes from 1 MiB to 1 GiB; otherwise its default.
    let segment_size = limits
        .segment_bytes
        .filter(|b| (1 << 20..=1 << 30).contains(b) && b % 512 == 0)
        .map(IggyByteSize::from);
    TopicCreateOptions {
        partitions_count: Some(partitions),
        message_expiry: Some(message_expiry(limits)),
        max_topic_size: Some(MaxTopicSize::Unlimited),
        segment_size,
        enforce_fsync: fsync.then_some(true),
        // Iggy acknowledges writes it holds in memory and saves them every 1024
        // messages by default: a crash of the Iggy process would lose acknowledged
        // records. Saving every write keeps them (fsync is `iggy_fsync`).
        messages_required_to_save: Some(1),
        ..TopicCreateOptions::default()
    }
}

/// Origin timestamps for a batch's messages: the records' own (in µs) when Iggy can
/// carry them (none negative, all within the u32 µs span one send allows), else now.
/// Where a record's own does not fit, its timestamp travels in `kafka.timestamp`.
fn origin_timestamps(records: &[KafkaRecord]) -> Vec<u64> {
    let micros: Option<Vec<u64>> = records
        .iter()
        .map(|r| u64::try_from(r.timestamp).ok()?.checked_mul(1000))
        .collect();
    match micros {
        Some(m)
            if m.iter().max().unwrap_or(&0) - m.iter().min().unwrap_or(&0)
                <= u64::from(u32::MAX) =>
        {
            m
        }
        _ => vec![IggyTimestamp::now().as_micros(); records.len()],
    }
}

fn decode_message(m: &IggyMessage) -> Result<FromIggy, mapping::MappingError> {
    mapping::from_iggy(IggyView {
        payload: &m.payload,
        user_headers: m.user_headers.as_ref(),
        timestamp_micros: m.header.timestamp,
        origin_micros: m.header.origin_timestamp,
    })
}

impl Inner {
    async fn connect(config: IggyConfig) -> Result<(Inner, MirrorReceiver), StartError> {
        let names = Names::new(&config.stream, &config.topics)?;
        let pools = Pools::connect(&config).await?;
        let setup = |stream: &str| {
            let (stream, address) = (stream.to_string(), config.address.clone());
            move |source| StartError::Setup {
                stream,
                address,
                source,
            }
        };
        gateway_log::ensure_stream(&pools.admin, &config.stream)
            .await
            .map_err(setup(&config.stream))?;
        gateway_log::ensure_logs(&pools.admin, &config.gateway_stream, config.fsync)
            .await
            .map_err(setup(&config.gateway_stream))?;
        let (conn, stream) = (&pools.admin, config.gateway_stream.as_str());
        let loaded = |e| StartError::Load(stream.to_string(), e);
        let catalog: Replayed<Catalog> = gateway_log::load(conn, stream, gateway_log::TOPICS)
            .await
            .map_err(loaded)?;
        let offsets: Replayed<Offsets> =
            gateway_log::load(conn, stream, gateway_log::COMMITTED_OFFSETS)
                .await
                .map_err(loaded)?;
        let cluster: Replayed<ClusterState> =
            gateway_log::load(conn, stream, gateway_log::CLUSTER_CONFIGS)
                .await
                .map_err(loaded)?;
        let scram: Replayed<ScramState> =
            gateway_log::load(conn, stream, gateway_log::SCRAM_CREDENTIALS)
                .await
                .map_err(loaded)?;
        let acls: Replayed<Acls> = gateway_log::load(conn, stream, gateway_log::ACLS)
            .await
            .map_err(loaded)?;
        let quotas: Replayed<Quotas> = gateway_log::load(conn, stream, gateway_log::CLIENT_QUOTAS)
            .await
            .map_err(loaded)?;
        tracing::info!(
            topic_records = catalog.since_snapshot(),
            offset_records = offsets.since_snapshot(),
            "loaded the gateway's state from Iggy (snapshots, then the records after them)"
        );
        let (mirror_queue, mirror_receiver) = tokio::sync::mpsc::channel(MIRROR_QUEUE);
        let read_ahead = ReadAhead::new(config.read_ahead_bytes);
        let meta = meta::Tables::new(&config)?;
        let inner = Inner {
            catalog: Mutex::new(catalog),
            cluster: Mutex::new(cluster),
            scram: Mutex::new(scram),
            acls: Mutex::new(acls),
            quotas: Mutex::new(quotas),
            offsets: Mutex::new(offsets),
            nodes: Mutex::new((0, Nodes::default())),
            config,
            names,
            pools,
            mirror_groups: Mutex::new(HashSet::new()),
            producer_ids: tokio::sync::Mutex::new((0, 0)),
            log_starts: Mutex::new(HashMap::new()),
            record_sizes: Mutex::new(HashMap::new()),
            read_ahead,
            uncertain: Mutex::new(HashMap::new()),
            written: Mutex::new(HashSet::new()),
            mirror_queue,
            meta,
        };
        Ok((inner, mirror_receiver))
    }

    /// Iggy stream and topic of a Kafka topic.
    fn ids(&self, kafka: &str) -> BackendResult<(Identifier, Identifier)> {
        let (stream, topic) = self.names.iggy(kafka);
        Ok((named(stream)?, named(topic)?))
    }

    /// Appends a record to one of the gateway's own logs; the offset it got.
    async fn log(&self, log: &str, record: Bytes) -> BackendResult<u64> {
        self.log_via(&self.pools.admin, log, record).await
    }

    async fn log_via(&self, conn: &Conn, log: &str, record: Bytes) -> BackendResult<u64> {
        gateway_log::append(conn, &self.config.gateway_stream, log, record)
            .await
            .map_err(|e| backend_error(e, None, log))
    }

    /// The offset of the first `node-ids` record naming `address`, appending one if
    /// there is none: a gateway restarted at its address keeps its id (and its
    /// per-broker configurations); a new address gets an id never used before.
    async fn node_id(&self, address: Bytes) -> BackendResult<i32> {
        let stream = &self.config.gateway_stream;
        let err = |e| backend_error(e, None, gateway_log::NODE_IDS);
        let known = gateway_log::read_all(&self.pools.admin, stream, gateway_log::NODE_IDS)
            .await
            .map_err(err)?;
        let offset = match known.iter().find(|(_, a)| *a == address) {
            Some((offset, _)) => *offset,
            None => self.log(gateway_log::NODE_IDS, address).await?,
        };
        i32::try_from(offset).map_err(|_| BackendError::Fatal("node ids exhausted".into()))
    }

    /// Reads the announcements made since the last call, then the commits: a node that
    /// left after committing has its commits read in the same pass.
    async fn live_nodes(&self, timeout: Duration) -> BackendResult<Vec<Node>> {
        let conn = &self.pools.membership;
        let next = self.nodes.lock().0;
        let stream = &self.config.gateway_stream;
        let records = gateway_log::read_timed(conn, stream, gateway_log::NODES, next)
            .await
            .map_err(|e| backend_error(e, None, gateway_log::NODES))?;
        let live = {
            let mut nodes = self.nodes.lock();
            for (offset, micros, record) in &records {
                if *offset >= nodes.0 {
                    nodes.1.apply_timed(*micros, record);
                    nodes.0 = offset + 1;
                }
            }
            nodes.1.live(timeout)
        };
        self.catch_up_via(conn, gateway_log::COMMITTED_OFFSETS, &self.offsets)
            .await?;
        Ok(live)
    }

    /// Applies what this or another gateway appended to a shared log since it was
    /// last read.
    async fn catch_up<S: Compact>(
        &self,
        log: &str,
        state: &Mutex<Replayed<S>>,
    ) -> BackendResult<()> {
        self.catch_up_via(&self.pools.admin, log, state).await
    }

    async fn catch_up_via<S: Compact>(
        &self,
        conn: &Conn,
        log: &str,
        state: &Mutex<Replayed<S>>,
    ) -> BackendResult<()> {
        let stream = &self.config.gateway_stream;
        let next = state.lock().next();
        let records = gateway_log::read_from(conn, stream, log, next)
            .await
            .map_err(|e| backend_error(e, None, log))?;
        let gap = state.lock().check_continues(log, &records);
        if let Err(e) = gap {
            // Trimmed past what this gateway had read (it lagged behind a snapshot):
            // start again from the latest snapshot.
            tracing::warn!(error = %e, "reloading a gateway log from its snapshot");
            let reloaded = gateway_log::load(conn, stream, log)
                .await
                .map_err(|e| BackendError::Fatal(e.to_string()))?;
            *state.lock() = reloaded;
            return Ok(());
        }
        state.lock().extend(&records);
        Ok(())
    }

    /// Every [`COMPACT_INTERVAL`], snapshots the state logs that grew by
    /// `snapshot_records` since their last snapshot.
    async fn run_snapshots(inner: std::sync::Weak<Inner>) {
        let mut tick = tokio::time::interval(COMPACT_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = inner.upgrade() else { return };
            let snapshots = [
                inner.snapshot(gateway_log::TOPICS, &inner.catalog).await,
                inner
                    .snapshot(gateway_log::COMMITTED_OFFSETS, &inner.offsets)
                    .await,
                inner
                    .snapshot(gateway_log::CLUSTER_CONFIGS, &inner.cluster)
                    .await,
                inner
                    .snapshot(gateway_log::SCRAM_CREDENTIALS, &inner.scram)
                    .await,
                inner.snapshot(gateway_log::ACLS, &inner.acls).await,
                inner
                    .snapshot(gateway_log::CLIENT_QUOTAS, &inner.quotas)
                    .await,
            ];
            for e in snapshots.into_iter().filter_map(Result::err) {
                tracing::warn!(error = %e, "gateway log snapshot not written");
            }
        }
    }

    /// Writes a snapshot of `log` once it has grown enough since the last one.
    async fn snapshot<S: Compact>(
        &self,
        log: &str,
        state: &Mutex<Replayed<S>>,
    ) -> BackendResult<()> {
        let conn = &self.pools.snapshots;
        self.catch_up_via(conn, log, state).await?;
        let (upto, records) = {
            let s = state.lock();
            if s.since_snapshot() < self.config.snapshot_records {
                return Ok(());
            }
            (s.next(), s.state().compacted())
        };
        let stream = &self.config.gateway_stream;
        gateway_log::write_snapshot(conn, stream, log, upto, &records)
            .await
            .map_err(|e| backend_error(e, None, log))?;
        state.lock().snapshot_written(upto);
        tracing::info!(
            log,
            upto,
            records = records.len(),
            "gateway log snapshot written"
        );
        Ok(())
    }

    async fn admin(&self) -> BackendResult<pool::Lease<'_>> {
        self.pools
            .admin
            .ready()
            .await
            .map_err(|e| backend_error(e, None, ""))
    }

    async fn topics(&self) -> BackendResult<Vec<TopicMeta>> {
        self.catch_up(gateway_log::TOPICS, &self.catalog).await?;
        let err = |e| backend_error(e, None, "");
        let default = self.names.default_stream();
        let c = self.admin().await?;
        let mut found: Vec<(String, String, u64, u32)> = c
            .check(c.get_topics(&named(default)?).await)
            .map_err(err)?
            .into_iter()
            .filter_map(|t| {
                let kafka = self.names.kafka(default, &t.name)?.to_string();
                let created = t.created_at.as_micros();
                Some((kafka, default.to_string(), created, t.partitions_count))
            })
            .collect();
        for (kafka, stream, topic) in self.names.elsewhere() {
            let details = c.check(c.get_topic(&named(stream)?, &named(topic)?).await);
            match details {
                Ok(Some(t)) => found.push((
                    kafka.to_string(),
                    stream.to_string(),
                    t.created_at.as_micros(),
                    t.partitions_count,
                )),
                Ok(None)
                | Err(IggyError::StreamIdNotFound(..) | IggyError::StreamNameNotFound(..)) => {}
                Err(e) => return Err(err(e)),
            }
        }
        let catalog = self.catalog.lock();
        let catalog = catalog.state();
        Ok(found
            .into_iter()
            .filter(|(kafka, ..)| is_kafka_name(kafka))
            .map(|(kafka, stream, created, partitions)| {
                catalog.meta(&stream, &kafka, created, partitions)
            })
            .collect())
    }

    async fn create_topic(&self, meta: TopicMeta, limits: TopicLimits) -> BackendResult<()> {
        let name = meta.name.to_string();
        let err = |e| backend_error(e, None, &name);
        let (stream, topic) = self.names.iggy(&name);
        gateway_log::ensure_stream(&self.pools.admin, stream)
            .await
            .map_err(err)?;
        let (stream_id, topic_name) = (named(stream)?, topic.to_string());
        let options = topic_options(&meta, &limits, self.config.fsync);
        let c = self.admin().await?;
        let details = c
            .check(c.create_topic(&stream_id, &topic_name, &options).await)
            .map_err(err)?;
        drop(c);
        let topic_id = named(&topic_name)?;
        let record = TopicRecord {
            name: name.clone(),
            deleted: false,
            id: meta.id,
            replication_factor: meta.replication_factor,
            configs: meta.configs.clone(),
            iggy_created_at: details.created_at.as_micros(),
        };
        // The size cap needs the segment size the topic got (see `max_topic_size`).
        let capped = match limits.retention_bytes {
            Some(_) => {
                self.apply_limits((&stream_id, &topic_id, &topic_name), &details, &limits)
                    .await
            }
            None => Ok(()),
        };
        let recorded = match capped {
            Ok(()) => self
                .log(gateway_log::TOPICS, record.encode())
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = recorded {
            // Without its record the topic would come back with another id and no
            // configs, without its cap it would keep too much: undo it rather than
            // leave it half made.
            tracing::warn!(topic = %name, error = %e, "cannot finish making the topic; deleting it again");
            if let Ok(c) = self.admin().await {
                let _ = c.check(c.delete_topic(&stream_id, &topic_id).await);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Sets an Iggy topic's message expiry and size cap from `limits`.
    async fn apply_limits(
        &self,
        (stream_id, topic_id, topic_name): (&Identifier, &Identifier, &str),
        details: &iggy::prelude::TopicDetails,
        limits: &TopicLimits,
    ) -> BackendResult<()> {
        let partitions = details.partitions_count;
        let options = TopicUpdateOptions {
            message_expiry: Some(message_expiry(limits)),
            max_topic_size: Some(max_topic_size(limits, partitions, segment_size(details))),
            ..TopicUpdateOptions::default()
        };
        let c = self.admin().await?;
        c.check(
            c.update_topic(stream_id, topic_id, topic_name, &options)
                .await,
        )
        .map_err(|e| backend_error(e, None, topic_name))
    }

    /// Records the new configurations, then applies the limits Iggy enforces. A native
    /// topic gets its first record here (with the id it was served under).
    async fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        limits: TopicLimits,
    ) -> BackendResult<()> {
        let err = |e| backend_error(e, None, name);
        self.catch_up(gateway_log::TOPICS, &self.catalog).await?;
        let (stream, topic) = self.names.iggy(name);
        let (stream_id, topic_id) = (named(stream)?, named(topic)?);
        let c = self.admin().await?;
        let details = c
            .check(c.get_topic(&stream_id, &topic_id).await)
            .map_err(err)?
            .ok_or_else(|| BackendError::UnknownTopic(name.to_string()))?;
        drop(c);
        let record = TopicRecord {
            configs,
            ..self.catalog.lock().state().record_of(
                stream,
                name,
                details.created_at.as_micros(),
                details.partitions_count,
            )
        };
        self.log(gateway_log::TOPICS, record.encode()).await?;
        self.apply_limits((&stream_id, &topic_id, topic), &details, &limits)
            .await
    }

    async fn cluster_configs(&self) -> BackendResult<ClusterConfigs> {
        self.catch_up(gateway_log::CLUSTER_CONFIGS, &self.cluster)
            .await?;
        Ok(self.cluster.lock().state().configs().clone())
    }

    async fn set_cluster_config(
        &self,
        name: String,
        values: BTreeMap<String, String>,
    ) -> BackendResult<()> {
        let record = ClusterRecord { name, values };
        self.log(gateway_log::CLUSTER_CONFIGS, record.encode())
            .await
            .map(drop)
    }

    async fn scram_credentials(&self) -> BackendResult<ScramCredentials> {
        self.catch_up(gateway_log::SCRAM_CREDENTIALS, &self.scram)
            .await?;
        Ok(self.scram.lock().state().credentials().clone())
    }

    async fn set_scram_credential(&self, record: ScramRecord) -> BackendResult<()> {
        self.log(gateway_log::SCRAM_CREDENTIALS, record.encode())
            .await
            .map(drop)
    }

    async fn check_login(&self, username: &str, password: &str) -> BackendResult<bool> {
        pool::check_login(&self.config, username, password)
            .await
            .map_err(|e| backend_error(e, None, ""))
    }

    async fn acls(&self) -> BackendResult<Vec<AclBinding>> {
        self.catch_up(gateway_log::ACLS, &self.acls).await?;
        Ok(self.acls.lock().state().bindings())
    }

    async fn change_acls(&self, bindings: Vec<AclBinding>, create: bool) -> BackendResult<()> {
        let record = AclRecord::new(create, &bindings);
        self.log(gateway_log::ACLS, record.encode()).await.map(drop)
    }

    async fn client_quotas(&self) -> BackendResult<ClientQuotas> {
        self.catch_up(gateway_log::CLIENT_QUOTAS, &self.quotas)
            .await?;
        Ok(self.quotas.lock().state().quotas().clone())
    }

    async fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendResult<()> {
        let record = QuotaRecord::new(&changes);
        self.log(gateway_log::CLIENT_QUOTAS, record.encode())
            .await
            .map(drop)
    }

    async fn delete_topic(&self, name: &str) -> BackendResult<()> {
        let err = |e| backend_error(e, None, name);
        // Offsets first: if this fails the topic is still whole and the client retries.
        let forget = self.offsets.lock().state().has_topic(name);
        if forget {
            let record = OffsetRecord::ForgetTopic {
                topic: name.to_string(),
            };
            self.log(gateway_log::COMMITTED_OFFSETS, record.encode())
                .await?;
            self.catch_up(gateway_log::COMMITTED_OFFSETS, &self.offsets)
                .await?;
        }
        let (stream_id, topic_id) = self.ids(name)?;
        let c = self.admin().await?;
        c.check(c.delete_topic(&stream_id, &topic_id).await)
            .map_err(err)?;
        drop(c);
        // Best effort: a stale record never matches a later topic of the same name.
        let record = TopicRecord {
            name: name.to_string(),
            deleted: true,
            id: uuid::Uuid::nil(),
            replication_factor: 0,
            configs: Default::default(),
            iggy_created_at: 0,
        };
        if let Err(e) = self.log(gateway_log::TOPICS, record.encode()).await {
            tracing::warn!(topic = name, error = %e, "cannot record the topic deletion");
        }
        self.log_starts.lock().retain(|tp, _| &*tp.topic != name);
        self.record_sizes.lock().retain(|tp, _| &*tp.topic != name);
        self.read_ahead.forget_topic(name);
        self.uncertain.lock().retain(|tp, _| &*tp.topic != name);
        self.mirror_groups.lock().retain(|(_, t)| t != name);
        Ok(())
    }

    async fn append(&self, tp: TopicPartition, batch: AppendBatch) -> BackendResult<Appended> {
        let partition = partition_id(&tp)?;
        let decoded = kafka_batch::decode(&batch.bytes)
            .map_err(|e| BackendError::Fatal(format!("unreadable record batch: {e}")))?;
        let h = batch.header;
        let stamp = h.is_idempotent().then_some(ProducerStamp {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            record_count: h.record_count,
        });
        if let Some(stamp) = stamp.filter(|s| self.is_uncertain(&tp, s)) {
            let found = self.find_batch(&tp, stamp).await?;
            self.settle(&tp, &stamp);
            if let Some(base_offset) = found {
                tracing::info!(partition = %tp, base_offset, "a batch whose append went unanswered had landed");
                let watermarks = self.watermarks(&tp).await?;
                return Ok(Appended {
                    base_offset,
                    watermarks,
                });
            }
        }
        let origins = origin_timestamps(&decoded.records);
        let count = decoded.records.len() as u64;
        let mut messages: Vec<IggyMessage> = decoded
            .records
            .into_iter()
            .zip(origins)
            .enumerate()
            .map(|(i, (r, origin_timestamp))| {
                let parts = mapping::to_iggy(
                    r,
                    decoded.log_append_time,
                    if i == 0 { stamp } else { None },
                    origin_timestamp,
                );
                IggyMessage {
                    header: IggyMessageHeader {
                        origin_timestamp,
                        user_headers_length: parts.headers.len() as u32,
                        payload_length: parts.payload.len() as u32,
                        ..IggyMessageHeader::default()
                    },
                    payload: parts.payload,
                    user_headers: Some(parts.headers),
                }
            })
            .collect();
        let conn = self.pools.producer(&tp);
        let (stream, topic) = self.ids(&tp.topic)?;
        // Until Iggy answers, the partition may hold this batch unacknowledged.
        if let Some(s) = stamp {
            let mut uncertain = self.uncertain.lock();
            let list = uncertain.entry(tp.clone()).or_default();
            if list.len() < UNCERTAIN_MAX {
                list.push(s);
            }
        }
        let sent = async {
            let partitioning = Partitioning::partition_id(partition);
            let c = conn.ready().await?;
            c.check(
                c.send_messages(&stream, &topic, &partitioning, &mut messages)
                    .await,
            )
        }
        .await;
        let sent = match sent {
            Ok(sent) => sent,
            Err(e) => {
                let e = backend_error(e, Some(&tp), &tp.topic);
                if let (false, Some(s)) = (matches!(e, BackendError::Unavailable(_)), stamp) {
                    // Refused outright: nothing landed.
                    self.settle(&tp, &s);
                }
                return Err(e);
            }
        };
        if let Some(s) = stamp {
            self.settle(&tp, &s);
        }
        self.written.lock().insert(tp.clone());
        let base_offset = match sent.confirmations.first() {
            Some(c) => c.base_offset as i64,
            None => {
                // Only servers that confirm no offsets: exact while the gateway is
                // the partition's only writer (its log slot serializes appends).
                let w = self.watermarks(&tp).await?;
                tracing::warn!(partition = %tp, "Iggy confirmed no offset; derived it from the partition state");
                w.high - count as i64
            }
        };
        let log_start = self.log_starts.lock().get(&tp).copied().unwrap_or(0);
        Ok(Appended {
            base_offset,
            watermarks: Watermarks {
                log_start,
                high: base_offset + count as i64,
            },
        })
    }

    async fn poll(
        &self,
        conn: &Conn,
        tp: &TopicPartition,
        strategy: PollingStrategy,
        count: u32,
    ) -> BackendResult<iggy::prelude::PolledMessages> {
        let partition = partition_id(tp)?;
        let err = |e| backend_error(e, Some(tp), &tp.topic);
        let (stream, topic) = self.ids(&tp.topic)?;
        let c = conn.ready().await.map_err(err)?;
        c.check(
            c.poll_messages(
                &stream,
                &topic,
                Some(partition),
                &Consumer::default(),
                &strategy,
                count,
                false,
            )
            .await,
        )
        .map_err(err)
    }

    /// Batches from `offset`, from the read started ahead for it when there is one; a
    /// read that leaves data behind starts the next (`read_ahead.rs`).
    async fn read(
        self: Arc<Self>,
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> BackendResult<ReadBatches> {
        let ahead = match self.read_ahead.take(&tp, offset, max_bytes) {
            // A read ahead that failed or found nothing is simply done again.
            Some(task) => task.await.ok().and_then(Result::ok),
            None => None,
        };
        let read = match ahead.filter(|r| !r.batches.batches.is_empty()) {
            Some(read) => read,
            None => self.read_now(&tp, offset, max_bytes).await?,
        };
        if let Some(next) = read.more_from.filter(|_| self.read_ahead.fits(max_bytes)) {
            let (me, at) = (self.clone(), tp.clone());
            let task = tokio::spawn(async move { me.read_now(&at, next, max_bytes).await });
            self.read_ahead.keep(tp, next, max_bytes, task);
        }
        Ok(read.batches)
    }

    async fn read_now(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> BackendResult<Read> {
        let tp = tp.clone();
        let done = |batches| Read {
            batches,
            more_from: None,
        };
        if offset < 0 {
            let watermarks = self.watermarks(&tp).await?;
            return Ok(done(ReadBatches {
                batches: Vec::new(),
                watermarks,
            }));
        }
        let size = (self.record_sizes.lock().get(&tp).copied()).unwrap_or(FIRST_RECORD_SIZE_GUESS);
        let count = (max_bytes / size.max(1)).clamp(1, FETCH_MAX_MESSAGES) as u32;
        let conn = self.pools.reader();
        let polled = self
            .poll(conn, &tp, PollingStrategy::offset(offset as u64), count)
            .await?;
        // Iggy answers in offset order, so what is at or after `offset` is a tail.
        let wanted = (polled.messages.iter()).position(|m| m.header.offset >= offset as u64);
        let Some(fetched) = wanted.map(|at| &polled.messages[at..]) else {
            // Nothing at or after `offset`: the partition state says why.
            let watermarks = self.watermarks(&tp).await?;
            return Ok(done(ReadBatches {
                batches: Vec::new(),
                watermarks,
            }));
        };
        let first = fetched[0].header.offset as i64;
        let high = polled.current_offset as i64 + 1;
        let log_start = match self.log_starts.lock().get(&tp) {
            Some(&start) => start.min(first),
            None => first,
        };
        if first > offset {
            // Older messages were removed (expiry): the fetch is out of range.
            self.log_starts.lock().insert(tp.clone(), first);
            return Ok(done(ReadBatches {
                batches: Vec::new(),
                watermarks: Watermarks {
                    log_start: first,
                    high,
                },
            }));
        }
        // What the polled messages weigh, about: the batches' buffers are sized from it.
        let expected = (fetched.iter())
            .map(|m| 20 + m.payload.len() + m.user_headers.as_ref().map_or(0, Bytes::len))
            .sum();
        let mut writer = kafka_batch::BatchWriter::new(max_bytes, expected);
        for m in fetched {
            let r = self.decode_for_kafka(&tp, m)?;
            if !writer.push(m.header.offset, &r.record, r.log_append_time) {
                break;
            }
        }
        self.record_sizes
            .lock()
            .insert(tp.clone(), writer.average_record_size());
        let (batches, next) = writer.finish();
        Ok(Read {
            batches: ReadBatches {
                batches,
                watermarks: Watermarks { log_start, high },
            },
            more_from: (next < high as u64).then_some(next as i64),
        })
    }

    /// A message as Kafka sees it; gateway data Iggy garbled is served as a native
    /// message rather than blocking the partition.
    fn decode_for_kafka(&self, tp: &TopicPartition, m: &IggyMessage) -> BackendResult<FromIggy> {
        match decode_message(m) {
            Ok(r) => Ok(r),
            Err(mapping::MappingError::Version(v)) => Err(BackendError::Fatal(format!(
                "{tp} offset {}: written by mapping version {v}, newer than this gateway",
                m.header.offset
            ))),
            Err(e) => {
                tracing::warn!(partition = %tp, offset = m.header.offset, error = %e, "serving an undecodable message as a native one");
                Ok(FromIggy {
                    record: KafkaRecord {
                        timestamp: (m.header.timestamp / 1000) as i64,
                        key: None,
                        value: Some(m.payload.clone()),
                        headers: Vec::new(),
                    },
                    log_append_time: false,
                    producer: None,
                })
            }
        }
    }

    async fn watermarks(&self, tp: &TopicPartition) -> BackendResult<Watermarks> {
        let partition = partition_id(tp)?;
        let err = |e| backend_error(e, Some(tp), &tp.topic);
        let (stream, topic) = self.ids(&tp.topic)?;
        let c = self.pools.reader().ready().await.map_err(err)?;
        let details = c
            .check(c.get_topic(&stream, &topic).await)
            .map_err(err)?
            .ok_or_else(|| BackendError::UnknownTopic(tp.topic.to_string()))?;
        drop(c);
        let p = details
            .partitions
            .iter()
            .find(|p| p.id == partition)
            .ok_or_else(|| BackendError::UnknownPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            })?;
        // Iggy reports the last offset written, 0 for an empty partition too.
        let high = if p.messages_count == 0 && p.current_offset == 0 {
            0
        } else {
            p.current_offset as i64 + 1
        };
        let log_start = (high - p.messages_count as i64).max(0);
        self.log_starts.lock().insert(tp.clone(), log_start);
        Ok(Watermarks { log_start, high })
    }

    /// Calls `visit` on every message from `from` on, until it breaks or the log ends.
    async fn scan(
        &self,
        tp: &TopicPartition,
        from: u64,
        mut visit: impl FnMut(u64, FromIggy) -> ControlFlow<()>,
    ) -> BackendResult<()> {
        let mut next = from;
        loop {
            let polled = self
                .poll(
                    self.pools.reader(),
                    tp,
                    PollingStrategy::offset(next),
                    SCAN_PAGE,
                )
                .await?;
            let Some(last) = polled.messages.last().map(|m| m.header.offset) else {
                return Ok(());
            };
            for m in polled.messages.iter().filter(|m| m.header.offset >= next) {
                if visit(m.header.offset, self.decode_for_kafka(tp, m)?).is_break() {
                    return Ok(());
                }
            }
            next = last + 1;
        }
    }

    /// Kafka's answer: the first record whose timestamp reaches `timestamp`. Iggy's
    /// timestamp polling (by append time) finds where to start; records before that
    /// were appended earlier, so their own timestamps are older unless producers
    /// set timestamps in the future. From there the records' timestamps decide.
    async fn offset_for_timestamp(
        &self,
        tp: TopicPartition,
        timestamp: i64,
    ) -> BackendResult<Option<TimestampedOffset>> {
        let micros = (timestamp.max(0) as u64).saturating_mul(1000);
        let start = self
            .poll(
                self.pools.reader(),
                &tp,
                PollingStrategy::timestamp(IggyTimestamp::from(micros)),
                1,
            )
            .await?;
        let Some(start) = start.messages.first().map(|m| m.header.offset) else {
            return Ok(None);
        };
        let mut found = None;
        self.scan(&tp, start, |offset, m| {
            if m.record.timestamp >= timestamp {
                found = Some(TimestampedOffset {
                    offset: offset as i64,
                    timestamp: m.record.timestamp,
                });
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await?;
        Ok(found)
    }

    /// The record with the largest timestamp: a scan of the whole partition.
    async fn max_timestamp(&self, tp: TopicPartition) -> BackendResult<Option<TimestampedOffset>> {
        let mut max: Option<TimestampedOffset> = None;
        self.scan(&tp, 0, |offset, m| {
            if max.is_none_or(|t| m.record.timestamp > t.timestamp) {
                max = Some(TimestampedOffset {
                    offset: offset as i64,
                    timestamp: m.record.timestamp,
                });
            }
            ControlFlow::Continue(())
        })
        .await?;
        Ok(max)
    }

    /// Idempotent batches near the end of the partition, from their stamps.
    async fn producer_batches(&self, tp: &TopicPartition) -> BackendResult<Vec<ProducerBatch>> {
        let w = self.watermarks(tp).await?;
        let from = (w.high as u64)
            .saturating_sub(PRODUCER_HISTORY_MESSAGES)
            .max(w.log_start as u64);
        let mut batches = Vec::new();
        self.scan(tp, from, |offset, m| {
            if let Some(s) = m.producer {
                let last_delta = s.record_count.max(1) - 1;
                let last_sequence = (s.base_sequence as i64 + last_delta as i64)
                    .rem_euclid(i32::MAX as i64 + 1) as i32;
                batches.push(ProducerBatch {
                    producer_id: s.producer_id,
                    producer_epoch: s.producer_epoch,
                    first_sequence: s.base_sequence,
                    last_sequence,
                    base_offset: offset as i64,
                    last_offset: offset as i64 + last_delta as i64,
                });
            }
            ControlFlow::Continue(())
        })
        .await?;
        // The last few of each producer, oldest first.
        let mut per_producer: HashMap<i64, usize> = HashMap::new();
        let mut kept: Vec<ProducerBatch> = batches
            .into_iter()
            .rev()
            .filter(|b| {
                let n = per_producer.entry(b.producer_id).or_default();
                *n += 1;
                *n <= PRODUCER_HISTORY_BATCHES
            })
            .collect();
        kept.reverse();
        Ok(kept)
    }

    /// Whether an earlier append of this very batch went unanswered.
    fn is_uncertain(&self, tp: &TopicPartition, s: &ProducerStamp) -> bool {
        self.uncertain
            .lock()
            .get(tp)
            .is_some_and(|list| list.iter().any(|u| same_batch(u, s)))
    }

    /// The batch's fate is known: stop tracking it.
    fn settle(&self, tp: &TopicPartition, s: &ProducerStamp) {
        let mut uncertain = self.uncertain.lock();
        if let Some(list) = uncertain.get_mut(tp) {
            list.retain(|u| !same_batch(u, s));
            if list.is_empty() {
                uncertain.remove(tp);
            }
        }
    }

    /// Where a batch with this stamp landed, if it is in the partition's recent history.
    async fn find_batch(
        &self,
        tp: &TopicPartition,
        stamp: ProducerStamp,
    ) -> BackendResult<Option<i64>> {
        Ok(self
            .producer_batches(tp)
            .await?
            .into_iter()
            .find(|b| {
                b.producer_id == stamp.producer_id
                    && b.producer_epoch == stamp.producer_epoch
                    && b.first_sequence == stamp.base_sequence
            })
            .map(|b| b.base_offset))
    }

    /// Ids come in blocks: record `n` of the `producer-ids` log owns ids
    /// `n * PRODUCER_ID_BLOCK ..` (Iggy gives every record its own offset).
    async fn allocate_producer_id(&self) -> BackendResult<i64> {
        let mut ids = self.producer_ids.lock().await;
        let (next, end) = &mut *ids;
        if *next >= *end {
            let n = self
                .log(
                    gateway_log::PRODUCER_IDS,
                    Bytes::from_static(b"producer-id-block"),
                )
                .await?;
            *next = n as i64 * PRODUCER_ID_BLOCK;
            *end = *next + PRODUCER_ID_BLOCK;
        }
        *next += 1;
        Ok(*next - 1)
    }

    async fn commit_offset(
        &self,
        group: String,
        tp: TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendResult<()> {
        let record = OffsetRecord::commit(&group, &tp, offset.as_ref());
        let conn = self.pools.committer(&tp);
        self.log_via(conn, gateway_log::COMMITTED_OFFSETS, record.encode())
            .await?;
        // Read the log up to this commit rather than applying it alone: commits other
        // gateways appended before it then land first, as on every other gateway.
        self.catch_up_via(conn, gateway_log::COMMITTED_OFFSETS, &self.offsets)
            .await?;
        // The commit stands; the mirror only informs Iggy tools, so it runs behind,
        // in commit order, without adding to the commit's latency.
        if self
            .mirror_queue
            .try_send((group, tp, offset.map(|c| c.offset)))
            .is_err()
        {
            tracing::debug!("Iggy consumer-offset mirror queue full; skipping an update");
        }
        Ok(())
    }

    /// Applies queued commits to the Iggy mirror, one at a time, until the backend goes.
    async fn run_mirror(inner: std::sync::Weak<Inner>, mut queue: MirrorReceiver) {
        while let Some((group, tp, offset)) = queue.recv().await {
            let Some(inner) = inner.upgrade() else { return };
            if let Err(e) = inner.mirror(&group, &tp, offset).await {
                tracing::debug!(%group, partition = %tp, error = %e, "Iggy consumer-offset mirror not updated");
            }
        }
    }

    /// Keeps the Iggy consumer offset of the group's mirror in step (see [`offsets`]).
    async fn mirror(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<i64>,
    ) -> Result<(), IggyError> {
        match self.mirror_once(group, tp, offset).await {
            Err(IggyError::InvalidOffset(_)) => Ok(()), // past the end: Iggy cannot hold it
            Err(_) => {
                // The session may have been evicted while idle: start afresh, once.
                let key = (group.to_string(), tp.topic.to_string());
                self.mirror_groups.lock().remove(&key);
                self.pools.mirror.reset().await;
                self.mirror_once(group, tp, offset).await
            }
            ok => ok,
        }
    }

    async fn mirror_once(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<i64>,
    ) -> Result<(), IggyError> {
        let name = offsets::iggy_group_name(group);
        let (stream, topic) = self.names.iggy(&tp.topic);
        let (stream, topic) = (Identifier::named(stream)?, Identifier::named(topic)?);
        let group_id = Identifier::named(&name)?;
        let c = self.pools.mirror.ready().await?;
        let key = (group.to_string(), tp.topic.to_string());
        if !self.mirror_groups.lock().contains(&key) {
            match c.check(c.create_consumer_group(&stream, &topic, &name).await) {
                Ok(_) | Err(IggyError::ConsumerGroupNameAlreadyExists(..)) => {}
                Err(e) => return Err(e),
            }
            // Iggy stores a group's offsets only for one of its members.
            c.check(c.join_consumer_group(&stream, &topic, &group_id).await)?;
            self.mirror_groups.lock().insert(key);
        }
        let consumer = Consumer::group(group_id);
        let partition = Some(tp.partition as u32);
        let done = match offset {
            Some(k) if k > 0 => {
                c.store_consumer_offset(&consumer, &stream, &topic, partition, k as u64 - 1)
                    .await
            }
            _ => {
                c.delete_consumer_offset(&consumer, &stream, &topic, partition)
                    .await
            }
        };
        match c.check(done) {
            Err(IggyError::ConsumerOffsetNotFound(_)) if !matches!(offset, Some(k) if k > 0) => {
                Ok(())
            }
            other => other,
        }
    }

    async fn ping(&self) -> BackendResult<()> {
        let c = self.admin().await?;
        c.check(c.ping().await)
            .map_err(|e| backend_error(e, None, ""))
    }

    /// Asks Iggy to persist what it holds for every partition written lately.
    async fn flush(&self) -> BackendResult<()> {
        let written: Vec<TopicPartition> = self.written.lock().drain().collect();
        for tp in written {
            let (stream, topic) = self.ids(&tp.topic)?;
            let c = self.admin().await?;
            match c.check(
                c.flush_unsaved_buffer(&stream, &topic, partition_id(&tp)?, true)
                    .await,
            ) {
                Ok(()) => {}
                Err(IggyError::FeatureUnavailable) => {
                    tracing::info!("this Iggy server saves by its own policy (no flush call)");
                    break;
                }
                Err(e) => tracing::warn!(partition = %tp, error = %e, "Iggy flush failed"),
            }
        }
        Ok(())
    }
}

impl LogStore for IggyBackend {
    fn call(&self, call: LogCall) -> BackendFuture<'_, LogAnswer> {
        self.run(move |s| async move {
            Ok(match call {
                LogCall::Append { tp, batch } => LogAnswer::Appended(s.append(tp, batch).await?),
                LogCall::Read {
                    tp,
                    offset,
                    max_bytes,
                } => LogAnswer::Read(s.read(tp, offset, max_bytes).await?),
                LogCall::Watermarks(tp) => LogAnswer::Watermarks(s.watermarks(&tp).await?),
                LogCall::OffsetForTimestamp { tp, timestamp } => {
                    LogAnswer::Record(s.offset_for_timestamp(tp, timestamp).await?)
                }
                LogCall::MaxTimestamp(tp) => LogAnswer::Record(s.max_timestamp(tp).await?),
                LogCall::ProducerHistory(tp) => {
                    LogAnswer::ProducerHistory(s.producer_batches(&tp).await?)
                }
            })
        })
    }

    fn external_appends(&self) -> bool {
        true
    }
}

/// Every table on its own log (`meta/`); the backend's handle has a connection of
/// its own, and so has each [`MetaStore::client`].
impl MetaStore for IggyBackend {
    fn call(&self, call: MetaCall) -> BackendFuture<'_, MetaAnswer> {
        self.run(move |s| async move {
            let conn = s.meta.conn();
            meta::serve(s, conn, call).await
        })
    }

    fn client(&self) -> Arc<dyn MetaStore> {
        meta::client(&self.handle, &self.inner, self.request_timeout)
    }
}

impl Backend for IggyBackend {
    /// Native Iggy producers write to the same topics.
    fn allocate_node_id(&self, address: &str) -> BackendFuture<'_, Option<i32>> {
        let address = Bytes::from(address.to_string());
        self.run(|s| async move { s.node_id(address).await.map(Some) })
    }

    fn announce(&self, node: &Node, alive: bool) -> BackendFuture<'_, ()> {
        let record = NodeRecord::new(node, alive).encode();
        self.run(move |s| async move {
            s.log_via(&s.pools.membership, gateway_log::NODES, record)
                .await
                .map(drop)
        })
    }

    fn live_nodes(&self, timeout: Duration) -> BackendFuture<'_, Vec<Node>> {
        self.run(move |s| async move { s.live_nodes(timeout).await })
    }

    fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
        self.run(|s| async move { s.topics().await })
    }

    fn create_topic(&self, topic: TopicMeta, limits: TopicLimits) -> BackendFuture<'_, ()> {
        self.run(|s| async move { s.create_topic(topic, limits).await })
    }

    fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        limits: TopicLimits,
    ) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        self.run(|s| async move { s.alter_topic_configs(&name, configs, limits).await })
    }

    fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
        self.run(|s| async move { s.cluster_configs().await })
    }

    fn set_cluster_config(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        self.run(|s| async move { s.set_cluster_config(name, values).await })
    }

    fn delete_topic(&self, name: &str) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        self.run(|s| async move { s.delete_topic(&name).await })
    }

    fn scram_credentials(&self) -> BackendFuture<'_, ScramCredentials> {
        self.run(|s| async move { s.scram_credentials().await })
    }

    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendFuture<'_, ()> {
        let record = ScramRecord::new(user, mechanism, credential.as_ref());
        self.run(|s| async move { s.set_scram_credential(record).await })
    }

    fn check_login(&self, username: &str, password: &str) -> BackendFuture<'_, bool> {
        let (username, password) = (username.to_string(), password.to_string());
        self.run(|s| async move { s.check_login(&username, &password).await })
    }




    fn client_quotas(&self) -> BackendFuture<'_, ClientQuotas> {
        self.run(|s| async move { s.client_quotas().await })
    }

    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendFuture<'_, ()> {
        self.run(|s| async move { s.alter_client_quotas(changes).await })
    }

    fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
        self.run(|s| async move { s.allocate_producer_id().await })
    }

    fn commit_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendFuture<'_, ()> {
        let (group, tp) = (group.to_string(), tp.clone());
        self.run(|s| async move { s.commit_offset(group, tp, offset).await })
    }

    fn committed_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> BackendFuture<'_, Option<CommittedOffset>> {
        let found = self.inner.offsets.lock().state().get(group, tp);
        Box::pin(async move { Ok(found) })
    }

    fn committed_partitions(&self, group: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
        let found = self.inner.offsets.lock().state().partitions(group);
        Box::pin(async move { Ok(found) })
    }

    fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
        let found = self.inner.offsets.lock().state().groups();
        Box::pin(async move { Ok(found) })
    }

    fn ping(&self) -> BackendFuture<'_, ()> {
        self.run(|s| async move { s.ping().await })
    }

    fn flush(&self) -> BackendFuture<'_, ()> {
        self.run(|s| async move { s.flush().await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> TopicMeta {
        TopicMeta {
            name: "t".into(),
            id: uuid::Uuid::nil(),
            partitions: 3,
            replication_factor: 1,
            configs: Default::default(),
        }
    }

    #[test]
    fn topic_limits_map_onto_iggy_topic_options() {
        let limits = TopicLimits {
            retention_ms: Some(60_000),
            retention_bytes: Some(1000),
            segment_bytes: Some(1 << 20),
        };
        let o = topic_options(&meta(), &limits, false);
        assert_eq!(o.partitions_count, Some(3));
        assert_eq!(
            o.message_expiry,
            Some(IggyExpiry::ExpireDuration(IggyDuration::new(
                Duration::from_secs(60)
            )))
        );
        assert_eq!(o.max_topic_size, Some(MaxTopicSize::Unlimited));
        assert_eq!(
            max_topic_size(&limits, 3, None),
            MaxTopicSize::Custom(IggyByteSize::from(3000))
        );
        assert_eq!(
            max_topic_size(&limits, 3, Some(1 << 20)),
            MaxTopicSize::Custom(IggyByteSize::from(1 << 20)),
            "at least one segment"
        );
        assert_eq!(o.segment_size, Some(IggyByteSize::from(1 << 20)));
        let kept = topic_options(&meta(), &TopicLimits::default(), true);
        assert_eq!(kept.message_expiry, Some(IggyExpiry::NeverExpire));
        assert_eq!(kept.max_topic_size, Some(MaxTopicSize::Unlimited));
        assert_eq!(kept.enforce_fsync, Some(true));
        assert_eq!(kept.messages_required_to_save, Some(1));
        let odd = TopicLimits {
            // Kafka's Long.MAX_VALUE "forever", and a size Iggy cannot take.
            retention_ms: Some(i64::MAX as u64),
            segment_bytes: Some(100),
            ..TopicLimits::default()
        };
        let o = topic_options(&meta(), &odd, false);
        assert_eq!(o.message_expiry, Some(IggyExpiry::NeverExpire));
        assert_eq!(o.segment_size, None);
    }

    #[test]
    fn origins_use_record_times_only_when_iggy_can_carry_them() {
        let r = |ts| KafkaRecord {
            timestamp: ts,
            key: None,
            value: None,
            headers: vec![],
        };
        assert_eq!(
            origin_timestamps(&[r(1_000), r(2_000)]),
            vec![1_000_000, 2_000_000]
        );
        let far = origin_timestamps(&[r(0), r(10_000_000)]);
        assert_eq!(far[0], far[1], "spread too wide: both now");
        let negative = origin_timestamps(&[r(-1)]);
        assert!(negative[0] > 0);
    }
}
