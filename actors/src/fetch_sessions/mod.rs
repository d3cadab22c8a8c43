//! Incremental fetch sessions (KIP-227), as Kafka's `FetchManager` keeps them: a
//! consumer's full fetch (epoch 0) opens a session, later fetches (epoch 1, 2, …)
//! list only the partitions that changed on the client's side and hear only of the
//! partitions with something new, and epoch -1 fetches without one.
//!
//! The sessions are this gateway's, in memory, shared by all its connections (a
//! client may move a session from one connection to another): a plain cache behind
//! one lock, held only while a fetch opens or closes its session, never while it
//! reads or waits. A client that comes to another gateway, or back after a restart,
//! finds no session (FETCH_SESSION_ID_NOT_FOUND) and opens a new one, as after a
//! broker restart.

mod cache;
mod session;

use std::time::Instant;

use kafka_protocol::error::ResponseError;
use parking_lot::Mutex;

use crate::metrics::FetchSessionMetrics;

use cache::{Created, SessionCache};
use session::{next_epoch, Session};
pub use session::{Answered, FetchParams, PartitionKey};

/// The epoch of a fetch without a session (`FetchMetadata.FINAL_EPOCH`).
const FINAL_EPOCH: i32 = -1;
/// The epoch of a full fetch that opens a session.
const INITIAL_EPOCH: i32 = 0;

/// How the cache is bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Kafka's `max.incremental.fetch.session.cache.slots`.
    pub slots: usize,
    /// How long a session is safe from eviction, after its creation and after each
    /// use (Kafka's fixed `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`).
    pub eviction_ms: u64,
}

/// Why a fetch's session fields are refused; the answer is empty with this code.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SessionError {
    #[error("fetch session {0} not found")]
    NotFound(i32),
    #[error("fetch session {id}: epoch {got}, expected {expected}")]
    WrongEpoch { id: i32, expected: i32, got: i32 },
    #[error("fetch session {id} was opened {}", if *.uses_ids { "by topic id, at v13+" } else { "by topic name, before v13" })]
    TopicIds { id: i32, uses_ids: bool },
}

impl SessionError {
    pub fn code(&self) -> ResponseError {
        match self {
            SessionError::NotFound(_) => ResponseError::FetchSessionIdNotFound,
            SessionError::WrongEpoch { .. } => ResponseError::InvalidFetchSessionEpoch,
            SessionError::TopicIds { .. } => ResponseError::FetchSessionTopicIdError,
        }
    }
}

/// A fetch's session fields and the partitions it lists.
pub struct FetchMetadata {
    pub version: i16,
    pub session_id: i32,
    pub epoch: i32,
    pub listed: Vec<(PartitionKey, FetchParams)>,
    pub forgotten: Vec<PartitionKey>,
}

/// How a fetch is served, decided before it reads.
#[derive(Debug, PartialEq, Eq)]
pub enum Context {
    /// No session: the answer holds every listed partition, with session id 0.
    Sessionless,
    /// A full fetch that opens a session if the cache has room.
    Full,
    /// An incremental fetch of session `id`, now at `epoch`.
    Incremental { id: i32, epoch: i32 },
}

/// What a fetch reads: its partitions in order, and how its answer is made.
pub struct Opened {
    pub context: Context,
    pub wanted: Vec<(PartitionKey, FetchParams)>,
}

/// What a fetch answers.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed {
    pub session_id: i32,
    /// Which answers go to the client, in the order read.
    pub keep: Vec<bool>,
    pub error: Option<ResponseError>,
}

/// The gateway's fetch sessions. Cheap to clone.
#[derive(Clone)]
pub struct FetchSessions {
    cache: std::sync::Arc<Mutex<SessionCache>>,
    started: Instant,
    metrics: std::sync::Arc<FetchSessionMetrics>,
}

impl FetchSessions {
    pub fn new(limits: SessionLimits, metrics: std::sync::Arc<FetchSessionMetrics>) -> Self {
        FetchSessions {
            cache: std::sync::Arc::new(Mutex::new(SessionCache::new(
                limits.slots,
                limits.eviction_ms,
            ))),
            started: Instant::now(),
            metrics,
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Kafka's `FetchManager.newContext`: a full fetch closes the session it names;
    /// an incremental one must name a session this gateway has, at its next epoch,
    /// with topics named as when it was opened, and applies its changes to it (a
    /// session left with no partitions is closed, and the fetch served without one).
    pub fn open(&self, fetch: FetchMetadata) -> Result<Opened, SessionError> {
        let FetchMetadata {
            version,
            session_id,
            epoch,
            listed,
            forgotten,
        } = fetch;
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != 0 && self.locked(|c| c.remove(session_id)) {
                tracing::debug!(session = session_id, "fetch session closed by a full fetch");
            }
            let context = match epoch {
                INITIAL_EPOCH => Context::Full,
                _ => Context::Sessionless,
            };
            return Ok(Opened {
                context,
                wanted: listed,
            });
        }
        let now = self.now();
        self.locked(|cache| {
            let session = cache
                .get_mut(session_id)
                .ok_or(SessionError::NotFound(session_id))?;
            if session.epoch != epoch {
                return Err(SessionError::WrongEpoch {
                    id: session_id,
                    expected: session.epoch,
                    got: epoch,
                });
            }
            let by_ids = version >= crate::protocol::versions::since::FETCH_TOPIC_IDS;
            if session.uses_topic_ids != by_ids {
                return Err(SessionError::TopicIds {
                    id: session_id,
                    uses_ids: session.uses_topic_ids,
                });
            }
            session.update(listed.iter().cloned(), &forgotten);
            if session.len() == 0 {
                cache.remove(session_id);
                tracing::debug!(
                    session = session_id,
                    "fetch session closed: no partitions left"
                );
                return Ok(Opened {
                    context: Context::Sessionless,
                    wanted: listed,
                });
            }
            session.epoch = next_epoch(session.epoch);
            let (epoch, wanted) = (session.epoch, session.wanted());
            cache.touch(session_id, now);
            Ok(Opened {
                context: Context::Incremental {
                    id: session_id,
                    epoch,
                },
                wanted,
            })
        })
    }

    /// Kafka's `updateAndGenerateResponseData`: given what each wanted partition
    /// answered (in order), opens the full fetch's session or says which answers an
    /// incremental fetch's client must hear.
    pub fn close(
        &self,
        context: Context,
        version: i16,
        wanted: &[(PartitionKey, FetchParams)],
        answered: &[(PartitionKey, Answered)],
    ) -> Closed {
        let all = |session_id| Closed {
            session_id,
            keep: vec![true; answered.len()],
            error: None,
        };
        match context {
            Context::Sessionless => all(0),
            Context::Full => {
                let now = self.now();
                let uses_ids = version >= crate::protocol::versions::since::FETCH_TOPIC_IDS;
                let partitions = wanted
                    .iter()
                    .zip(answered)
                    .map(|((key, params), (_, a))| (key.clone(), *params, *a));
                let created = self.locked(|c| {
                    c.create(now, wanted.len(), || {
                        Session::new(uses_ids, now, partitions)
                    })
                });
                match created {
                    Created::Session { id, evicted } => {
                        if evicted {
                            self.metrics.evicted();
                        }
                        tracing::debug!(
                            session = id,
                            partitions = wanted.len(),
                            "fetch session opened"
                        );
                        all(id)
                    }
                    Created::NoRoom => {
                        tracing::debug!("fetch session cache full: full fetch without a session");
                        all(0)
                    }
                }
            }
            Context::Incremental { id, epoch } => self.locked(|cache| {
                match cache.get_mut(id) {
                    // Closed or evicted meanwhile: everything read is a valid answer,
                    // and the next fetch learns the session is gone.
                    None => all(id),
                    Some(session) if session.epoch != epoch => {
                        tracing::info!(
                            session = id,
                            expected = epoch,
                            now = session.epoch,
                            "fetch session moved on while a fetch was served: a duplicate request?"
                        );
                        Closed {
                            session_id: id,
                            keep: vec![false; answered.len()],
                            error: Some(ResponseError::InvalidFetchSessionEpoch),
                        }
                    }
                    Some(session) => {
                        self.metrics.incremental_served();
                        Closed {
                            session_id: id,
                            keep: session.answer(answered),
                            error: None,
                        }
                    }
                }
            }),
        }
    }

    /// Runs `f` on the cache, then shows its counts.
    fn locked<T>(&self, f: impl FnOnce(&mut SessionCache) -> T) -> T {
        let mut cache = self.cache.lock();
        let out = f(&mut cache);
        self.metrics.show(cache.len(), cache.partitions());
        out
    }
}
