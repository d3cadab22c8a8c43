//! The Iggy backend: Kafka topics, records and committed offsets kept in an Apache
//! Iggy server through the `iggy` SDK, readable by native Iggy clients.
//!
//! - A Kafka topic is the Iggy topic of the same name in stream `iggy_stream`;
//!   partitions and offsets are the same numbers on both sides.
//! - One Kafka record is one Iggy message ([`mapping`], `docs/IGGY_MAPPING.md`).
//! - What Iggy does not hold (Kafka topic definitions, committed offsets as Kafka
//!   sends them, shared configurations, credentials, ACLs, quotas, the gateways
//!   themselves) is the metadata port's tables, one log each in the gateway's own
//!   stream `iggy_gateway_stream` ([`meta`]); committed offsets are also mirrored into
//!   Iggy's consumer offsets ([`mirror`]).
//!
//! By concern: [`topics`] (which Iggy topics are Kafka topics, and their options),
//! [`log`] (append, read, timestamps, producer history), [`meta`] (the tables),
//! [`mirror`], [`errors`], [`pool`] (connections), and here the runtime every call
//! runs on and the two ports' dispatch.
//!
//! Every call runs on a tokio runtime of its own, so SDK I/O and batch
//! (de)compression never run on the actor threads, and each call is bounded by
//! `iggy_request_timeout_ms`: a stalled server gives clients a retriable error.

mod compacted;
mod errors;
mod gateway_log;
mod in_doubt;
mod kafka_batch;
mod kept_sections;
mod log;
mod log_starts;
mod mapping;
mod meta;
mod mirror;
mod names;
mod pool;
mod read_ahead;
mod shared_copy;
mod topics;
mod view;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use iggy::prelude::{Identifier, IggyError, MessageClient};
use iggy_kafka_actors::store::meta::{MetaAnswer, MetaCall, MetaStore};
use iggy_kafka_actors::store::{GroupCommit, LogAnswer, LogCall, LogStore};
use iggy_kafka_actors::store::{
    ReadBatches, StoreError, StoreFuture, StoreResult, TopicPartition, Users,
};
use parking_lot::Mutex;
use tracing::Instrument;

use in_doubt::InDoubt;

use errors::{backend_error, named, partition_id};
use mirror::{MirrorReceiver, MirrorUpdate, MIRROR_QUEUE};
use names::Names;
pub use names::TopicOverride;
pub use pool::ConnectError;
use pool::Pools;
use read_ahead::ReadAhead;

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
    /// Most bytes of Fetch reads started ahead of their consumers (0: none).
    pub read_ahead_bytes: usize,
    /// Most bytes of compressed sections kept from Produce for Fetch (0: none).
    pub kept_compressed_bytes: usize,
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
    in_doubt: InDoubt,
    _runtime: Runtime,
}

struct Inner {
    config: IggyConfig,
    names: Names,
    pools: Pools,
    /// (Kafka group, topic) pairs whose Iggy mirror group exists.
    mirror_groups: Mutex<HashSet<(String, String)>>,
    log_starts: Mutex<HashMap<TopicPartition, i64>>,
    /// Where each partition ended when last seen here: an unanswered append is looked
    /// for from there (`Inner::await_landing`).
    known_ends: Mutex<HashMap<TopicPartition, i64>>,
    /// The log starts DeleteRecords moved, above Iggy's own (`log_starts.rs`).
    log_starts_moved: log_starts::LogStarts,
    /// The offsets compaction removed (`compacted.rs`).
    compacted: compacted::Compaction,
    /// Average Kafka size of a partition's records in its last read: the next poll
    /// asks for about as many messages as the fetch can take, no more (a poll of
    /// messages that do not fit is Iggy work thrown away).
    record_sizes: Mutex<HashMap<TopicPartition, usize>>,
    read_ahead: ReadAhead,
    /// Compressed sections from Produce, for Fetch to serve (`kept_sections.rs`).
    kept_sections: Arc<kept_sections::KeptSections>,
    /// The incarnation each topic was in when last listed or made here: what is kept
    /// of its partitions above is of that one (`topics.rs`).
    incarnations: Mutex<HashMap<Arc<str>, u64>>,
    /// Partitions appended to since the last flush.
    written: Mutex<HashSet<TopicPartition>>,
    mirror_queue: tokio::sync::mpsc::Sender<MirrorUpdate>,
    /// The metadata tables' replicas (`meta/`).
    meta: meta::Tables,
}

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
        Ok(IggyBackend {
            handle,
            inner,
            request_timeout,
            in_doubt: InDoubt::default(),
            _runtime: runtime,
        })
    }

    /// Runs a call on the client runtime; the caller waits at most the request
    /// timeout. A call that outlives it runs on unseen: dropping an SDK call midway
    /// would leave its answer unread on the connection, for the next call to misread.
    fn run<T, F>(&self, call: impl FnOnce(Arc<Inner>) -> F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
    {
        run_timed(&self.handle, self.request_timeout, call(self.inner.clone()))
    }
}

/// [`IggyBackend::run`], for the handles that share its runtime (`meta::client`).
fn run_timed<T, F>(
    handle: &tokio::runtime::Handle,
    timeout: Duration,
    call: F,
) -> StoreFuture<'static, T>
where
    T: Send + 'static,
    F: Future<Output = StoreResult<T>> + Send + 'static,
{
    // On the Iggy runtime in the caller's span: a request's store call logs with it.
    let task = handle.spawn(call.instrument(tracing::Span::current()));
    Box::pin(async move {
        match tokio::time::timeout(timeout, task).await {
            Ok(done) => done.map_err(|e| StoreError::fatal_from("Iggy call", e))?,
            Err(_) => Err(StoreError::unavailable(format!(
                "Iggy did not answer within {timeout:?}"
            ))),
        }
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
        for stream in [&config.stream, &config.gateway_stream] {
            gateway_log::ensure_stream(&pools.admin, stream)
                .await
                .map_err(setup(stream))?;
        }
        let (mirror_queue, mirror_receiver) = tokio::sync::mpsc::channel(MIRROR_QUEUE);
        let read_ahead = ReadAhead::new(config.read_ahead_bytes);
        let kept_sections = Arc::new(kept_sections::KeptSections::new(
            config.kept_compressed_bytes,
        ));
        let meta = meta::Tables::new(&config)?;
        let inner = Inner {
            config,
            names,
            pools,
            mirror_groups: Mutex::new(HashSet::new()),
            log_starts: Mutex::new(HashMap::new()),
            known_ends: Mutex::new(HashMap::new()),
            log_starts_moved: log_starts::LogStarts::new(log_starts::TABLE),
            compacted: compacted::Compaction::new(),
            record_sizes: Mutex::new(HashMap::new()),
            read_ahead,
            kept_sections,
            incarnations: Mutex::new(HashMap::new()),
            written: Mutex::new(HashSet::new()),
            mirror_queue,
            meta,
        };
        Ok((inner, mirror_receiver))
    }

    /// Iggy stream and topic of a Kafka topic.
    fn ids(&self, kafka: &str) -> StoreResult<(Identifier, Identifier)> {
        let (stream, topic) = self.names.iggy(kafka);
        Ok((named(stream)?, named(topic)?))
    }

    async fn admin(&self) -> StoreResult<pool::Lease<'_>> {
        self.pools
            .admin
            .ready()
            .await
            .map_err(|e| backend_error(e, None, ""))
    }

    /// Asks Iggy to persist what it holds for every partition written lately.
    async fn flush(&self) -> StoreResult<()> {
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
    fn committed(&self, commits: &[GroupCommit]) {
        self.inner.mirror_commits(commits);
    }

    fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer> {
        // An append that outlived its caller (`in_doubt.rs`): a read of the partition's
        // producer state waits for it; another append is refused until it settled, as
        // it was checked against a producer state that may not show it.
        let unsettled = match &call {
            LogCall::ProducerHistory(tp) | LogCall::Watermarks(tp) => self.in_doubt.unsettled(tp),
            _ => None,
        };
        let appending = match &call {
            LogCall::Append { tp, .. } if self.in_doubt.unsettled(tp).is_some() => {
                let e = StoreError::unavailable(format!(
                    "an earlier append to {tp} is not settled yet"
                ));
                return Box::pin(std::future::ready(Err(e)));
            }
            LogCall::Append { tp, .. } => Some(self.in_doubt.begin(tp)),
            _ => None,
        };
        self.run(move |s| async move {
            if let Some(mut earlier) = unsettled {
                // An error means its task is gone: settled too.
                let _ = earlier.wait_for(|settled| *settled).await;
            }
            let _appending = appending;
            Ok(match call {
                LogCall::List => LogAnswer::Listed(s.list_logs().await?),
                LogCall::Create {
                    name,
                    partitions,
                    limits,
                } => LogAnswer::Created(s.create_log(&name, partitions, limits).await?),
                LogCall::Delete(name) => {
                    s.delete_log(&name).await?;
                    LogAnswer::Done
                }
                LogCall::AddPartitions {
                    name,
                    partitions,
                    limits,
                } => {
                    s.add_partitions(&name, partitions, limits).await?;
                    LogAnswer::Done
                }
                LogCall::SetLimits { name, limits } => {
                    s.set_limits(&name, limits).await?;
                    LogAnswer::Done
                }
                // Each answer carrying watermarks carries them as Kafka sees them
                // (`view.rs`).
                LogCall::Append { tp, batches } => {
                    let view = s.view(&tp).await?;
                    let mut appended = s.append(tp, batches).await?;
                    for a in &mut appended {
                        a.watermarks = view.watermarks(a.watermarks);
                    }
                    LogAnswer::Appended(appended)
                }
                // An Iggy poll brings whole messages: a read of headers is a read.
                LogCall::Read {
                    tp,
                    offset,
                    max_bytes,
                }
                | LogCall::ReadHeaders {
                    tp,
                    offset,
                    max_bytes,
                } => {
                    let view = s.view(&tp).await?;
                    let mut read = if offset < view.deleted_below {
                        // Hidden records: none served, and the watermarks say why.
                        let watermarks = s.watermarks(&tp).await?;
                        ReadBatches {
                            watermarks,
                            ..ReadBatches::default()
                        }
                    } else {
                        s.read(tp, offset, max_bytes, view.removed.clone()).await?
                    };
                    read.watermarks = view.watermarks(read.watermarks);
                    LogAnswer::Read(read)
                }
                LogCall::Watermarks(tp) => LogAnswer::Watermarks(s.kafka_watermarks(&tp).await?),
                LogCall::DeleteRecords { tp, offset } => {
                    LogAnswer::Watermarks(s.delete_records(&tp, offset).await?)
                }
                LogCall::OffsetForTimestamp { tp, timestamp } => {
                    let view = s.view(&tp).await?;
                    LogAnswer::Record(s.offset_for_timestamp(tp, timestamp, &view).await?)
                }
                LogCall::MaxTimestamp(tp) => {
                    let view = s.view(&tp).await?;
                    LogAnswer::Record(s.max_timestamp(tp, &view).await?)
                }
                LogCall::ProducerHistory(tp) => {
                    LogAnswer::ProducerHistory(s.producer_batches(&tp).await?)
                }
                LogCall::Sizes(name) => LogAnswer::Sizes(s.sizes(&name).await?),
                LogCall::Compact { tp, below, keep } => {
                    LogAnswer::Compacted(s.compact(&tp, below, &keep).await?)
                }
            })
        })
    }

    /// The server, as no directory of the gateway's holds the logs.
    fn log_dir(&self) -> String {
        format!("iggy://{}", self.inner.config.address)
    }

    /// Native Iggy producers write to the same topics.
    fn external_appends(&self) -> bool {
        true
    }

    fn splits_batches(&self) -> bool {
        true
    }

    /// Noted and served as a view, with whole segments given back (`compacted.rs`).
    fn compacts(&self) -> bool {
        true
    }
}

/// Every table on its own log (`meta/`); the backend's handle has a connection of
/// its own, and so has each [`MetaStore::client`].
impl MetaStore for IggyBackend {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        self.run(move |s| async move {
            let conn = s.meta.conn();
            meta::serve(s, conn, call).await
        })
    }

    fn client(&self) -> StoreResult<Arc<dyn MetaStore>> {
        meta::client(&self.handle, &self.inner, self.request_timeout)
    }

    /// Every gateway on the server shares its tables.
    fn shared(&self) -> bool {
        true
    }
}

impl Users for IggyBackend {
    /// A login to Iggy's own users (`sasl_plain_backend = "iggy"`).
    fn check_login(&self, username: &str, password: &str) -> StoreFuture<'_, bool> {
        let (username, password) = (username.to_string(), password.to_string());
        self.run(|s| async move {
            pool::check_login(&s.config, &username, &password)
                .await
                .map_err(|e| backend_error(e, None, ""))
        })
    }
}
