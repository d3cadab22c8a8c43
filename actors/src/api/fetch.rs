//! Fetch: batches straight from the backend, as stored, with the partition's
//! watermarks. A fetch that finds less than `min_bytes` sleeps until an append to one
//! of its partitions or `max_wait_ms`, whichever comes first. Fetch sessions
//! (KIP-227, `fetch_sessions`) decide which partitions are read and which answered.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{join_all, select_all};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchResponse, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use tokio::time::{timeout_at, Instant};
use uuid::Uuid;

use crate::authorizer::{Access, Operation};
use crate::fetch_sessions::{Answered, FetchMetadata, FetchParams, Opened, PartitionKey};
use crate::gateway::Gateway;
use crate::late_reads::{PartitionRead, ReadAt};
use crate::partition_read::fitting;
use crate::protocol::fetch_answer::FetchAnswer;
use crate::protocol::versions::since;
use crate::store::{TopicMeta, TopicPartition};

const READ_COMMITTED: i8 = 1;
/// A read gets this long even when the Fetch's own wait is shorter or spent.
const READ_AT_LEAST: Duration = Duration::from_millis(100);
/// Bounds of the re-reads of a waiting fetch when others append to the backend.
const FIRST_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_millis(500);

/// One partition to read, resolved against the topic table.
struct Wanted {
    /// As the request named it; the answer names it the same way.
    key: PartitionKey,
    offset: i64,
    max_bytes: usize,
    /// The partition, or why it cannot be read.
    target: Result<TopicPartition, ResponseError>,
}

/// Each topic needs READ (TOPIC_AUTHORIZATION_FAILED for its partitions otherwise).
/// From v7 a fetch may belong to a session (`fetch_sessions`): then the partitions
/// read are the session's, and the answer holds only those with something new.
pub async fn handle(gw: Gateway, version: i16, req: FetchRequest, access: Access) -> FetchAnswer {
    let opened = match gw.fetch_sessions.open(session_fields(version, &req)) {
        Ok(opened) => opened,
        Err(e) => {
            tracing::debug!(error = %e, "fetch session refused");
            let refused = FetchResponse::default().with_error_code(e.code().code());
            return FetchAnswer::new(refused, Vec::new());
        }
    };
    let wanted = resolve(&gw, version, &opened.wanted, &access);

    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let min_bytes = req.min_bytes.max(0) as usize;
    let max_bytes = req.max_bytes.max(0) as usize;
    let read_committed = req.isolation_level == READ_COMMITTED;
    // Appends by others (native Iggy producers) send no signal: look again now and
    // then, backing off, besides waking at once on this gateway's own appends.
    let mut poll = gw
        .partitions
        .logs()
        .external_appends()
        .then_some(FIRST_POLL);
    let answers = loop {
        // Subscribe before reading, so an append landing in between still wakes us.
        let mut signals: Vec<_> = wanted
            .iter()
            .filter_map(|w| w.target.as_ref().ok())
            .map(|tp| gw.partitions.subscribe(tp))
            .collect();
        let (answers, bytes, failed) =
            read_all(&gw, version, &wanted, max_bytes, read_committed, deadline).await;
        if bytes >= min_bytes || failed || signals.is_empty() || Instant::now() >= deadline {
            break answers;
        }
        let any_append = select_all(signals.iter_mut().map(|rx| Box::pin(rx.changed())));
        let wake_at = match poll {
            Some(every) => deadline.min(Instant::now() + every),
            None => deadline,
        };
        poll = poll.map(|every| (every * 2).min(MAX_POLL));
        if timeout_at(wake_at, any_append).await.is_err() && wake_at == deadline {
            // One last read: the answer carries the latest watermarks.
            break read_all(&gw, version, &wanted, max_bytes, read_committed, deadline)
                .await
                .0;
        }
    };
    answer(&gw, version, opened, answers)
}

/// The session fields of a fetch; before v7 every fetch is sessionless.
fn session_fields(version: i16, req: &FetchRequest) -> FetchMetadata {
    let key = |topic: &TopicName, topic_id: Uuid, partition: i32| PartitionKey {
        topic: topic.clone(),
        topic_id,
        partition,
    };
    let listed = req.topics.iter().flat_map(|t| {
        t.partitions.iter().map(|p| {
            let params = FetchParams {
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes,
            };
            (key(&t.topic, t.topic_id, p.partition), params)
        })
    });
    let forgotten = req.forgotten_topics_data.iter().flat_map(|t| {
        let ps = t.partitions.iter();
        ps.map(|&p| key(&t.topic, t.topic_id, p))
    });
    let sessions = version >= since::FETCH_SESSIONS;
    FetchMetadata {
        version,
        session_id: if sessions { req.session_id } else { 0 },
        epoch: if sessions { req.session_epoch } else { -1 },
        listed: listed.collect(),
        forgotten: forgotten.collect(),
    }
}

/// A topic as found in the table (if it is there), and whether READ on it is denied.
type Resolved = (Option<Arc<TopicMeta>>, bool);

/// Each partition against the topic table and the caller's READ, once per topic.
fn resolve(
    gw: &Gateway,
    version: i16,
    partitions: &[(PartitionKey, FetchParams)],
    access: &Access,
) -> Vec<Wanted> {
    let table = gw.topics.table();
    let mut topics: HashMap<(&TopicName, Uuid), Resolved> = HashMap::new();
    partitions
        .iter()
        .map(|(key, params)| {
            let (meta, denied) = topics.entry((&key.topic, key.topic_id)).or_insert_with(|| {
                let meta = if version >= since::FETCH_TOPIC_IDS {
                    table.by_id(&key.topic_id).cloned()
                } else {
                    table.get(&key.topic).cloned()
                };
                // Checked before existence, so a denied caller learns nothing of the topic.
                let name = meta.as_ref().map_or(key.topic.as_str(), |m| &m.name);
                let denied = (meta.is_some() || version < since::FETCH_TOPIC_IDS)
                    && !access.topic(Operation::Read, name);
                (meta, denied)
            });
            let target = match meta {
                _ if *denied => Err(ResponseError::TopicAuthorizationFailed),
                Some(m) if (0..m.partitions).contains(&key.partition) => Ok(TopicPartition {
                    topic: m.name.clone(),
                    partition: key.partition,
                }),
                None if version >= since::FETCH_TOPIC_IDS => Err(ResponseError::UnknownTopicId),
                _ => Err(ResponseError::UnknownTopicOrPartition),
            };
            Wanted {
                key: key.clone(),
                offset: params.fetch_offset,
                max_bytes: params.max_bytes.max(0) as usize,
                target,
            }
        })
        .collect()
}

/// The answer: what the session lets through, its partitions grouped by topic as
/// Kafka's `FetchResponse.of` groups them (a topic again after another's partitions,
/// as a rotated session may read them, gets an entry again).
fn answer(
    gw: &Gateway,
    version: i16,
    opened: Opened,
    answers: Vec<PartitionAnswer>,
) -> FetchAnswer {
    let seen: Vec<(PartitionKey, Answered)> = answers
        .iter()
        .map(
            |PartitionAnswer {
                 key,
                 data: p,
                 batches,
             }| {
                let answered = Answered {
                    record_bytes: batches.iter().map(Bytes::len).sum(),
                    high_watermark: p.high_watermark,
                    last_stable_offset: p.last_stable_offset,
                    log_start_offset: p.log_start_offset,
                    error_code: p.error_code,
                };
                (key.clone(), answered)
            },
        )
        .collect();
    let closed = gw
        .fetch_sessions
        .close(opened.context, version, &opened.wanted, &seen);
    let mut out: Vec<FetchableTopicResponse> = Vec::new();
    let mut record_sets = Vec::new();
    for (
        PartitionAnswer {
            key,
            data: p,
            batches,
        },
        keep,
    ) in answers.into_iter().zip(closed.keep)
    {
        if !keep {
            continue;
        }
        record_sets.push(batches);
        match out.last_mut() {
            Some(t) if t.topic == key.topic && t.topic_id == key.topic_id => t.partitions.push(p),
            _ => out.push(
                FetchableTopicResponse::default()
                    .with_topic(key.topic)
                    .with_topic_id(key.topic_id)
                    .with_partitions(vec![p]),
            ),
        }
    }
    let response = FetchResponse::default()
        .with_error_code(closed.error.map_or(0, |e| e.code()))
        .with_session_id(closed.session_id)
        .with_responses(out);
    FetchAnswer::new(response, record_sets)
}

/// One partition's answer: its fields, and the stored batches of its record set.
struct PartitionAnswer {
    /// As the request named the partition.
    key: PartitionKey,
    data: PartitionData,
    batches: Vec<Bytes>,
}

/// Reads every wanted partition within the request's byte budget and by its deadline.
/// Returns each partition's answer (in order), the record bytes in them, and whether
/// any had an error.
///
/// Partitions are read concurrently, then trimmed in order to `max_bytes`; only the
/// first batch of the answer may go over it (KIP-74), so a batch larger than every
/// limit still reaches the consumer. A partition whose read is not done by the deadline
/// (`partition_read.rs`) is answered empty, its watermarks unknown (-1), as Kafka
/// answers a partition it has nothing of yet; its consumer fetches again.
async fn read_all(
    gw: &Gateway,
    version: i16,
    wanted: &[Wanted],
    max_bytes: usize,
    read_committed: bool,
    deadline: Instant,
) -> (Vec<PartitionAnswer>, usize, bool) {
    let deadline = deadline.max(Instant::now() + READ_AT_LEAST);
    let reads = wanted.iter().map(|w| async move {
        let tp = w.target.as_ref().map_err(|code: &ResponseError| *code)?;
        let at = ReadAt {
            offset: w.offset,
            max_bytes: w.max_bytes.min(max_bytes),
            read_committed,
        };
        let late = PartitionRead {
            batches: Vec::new(),
            log_start: -1,
            high: -1,
            stable: -1,
            aborted: Vec::new(),
        };
        let read = gw.partitions.read_by(deadline, tp, at).await?;
        Ok::<_, ResponseError>(read.unwrap_or(late))
    });
    let reads = join_all(reads).await;
    let mut total = 0;
    let mut failed = false;
    let mut out = Vec::with_capacity(wanted.len());
    for (w, read) in wanted.iter().zip(reads) {
        let answer = PartitionData::default()
            .with_partition_index(w.key.partition)
            .with_preferred_read_replica(BrokerId(-1));
        let (data, batches) = match read {
            Ok(read) => {
                let batches = within_budget(read.batches, &mut total, max_bytes);
                let aborted = read_committed.then(|| {
                    let aborted = read.aborted.iter().map(|a| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(a.producer_id))
                            .with_first_offset(a.first_offset)
                    });
                    aborted.collect()
                });
                let data = answer
                    .with_high_watermark(read.high)
                    .with_last_stable_offset(read.stable)
                    .with_log_start_offset(if version >= since::FETCH_LOG_START {
                        read.log_start
                    } else {
                        -1
                    })
                    .with_aborted_transactions(aborted);
                (data, batches)
            }
            Err(code) => {
                failed = true;
                let data = answer
                    .with_error_code(code.code())
                    .with_high_watermark(-1)
                    .with_last_stable_offset(-1)
                    .with_log_start_offset(-1);
                (data, Vec::new())
            }
        };
        out.push(PartitionAnswer {
            key: w.key.clone(),
            data,
            batches,
        });
    }
    (out, total, failed)
}

/// The leading batches that fit in what is left of `max_bytes` (the answer's first
/// batch always does): the partition's record set, as the store gave it.
fn within_budget(mut batches: Vec<Bytes>, total: &mut usize, max_bytes: usize) -> Vec<Bytes> {
    batches.truncate(fitting(&batches, *total, max_bytes));
    *total += batches.iter().map(|b| b.len()).sum::<usize>();
    batches
}
