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
use crate::protocol::fetch_answer::FetchAnswer;
use crate::protocol::records;
use crate::protocol::versions::since;
use crate::store::{ReadBatches, StoreError, TopicMeta, TopicPartition};
use crate::topic_admin::internal::is_internal;
use crate::txn_index::Aborted;

const READ_COMMITTED: i8 = 1;
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
            read_all(&gw, version, &wanted, max_bytes, read_committed).await;
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
            break read_all(&gw, version, &wanted, max_bytes, read_committed)
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

/// Reads every wanted partition within the request's byte budget. Returns each
/// partition's answer (in order), the record bytes in them, and whether any had an
/// error.
///
/// Partitions are read concurrently, then trimmed in order to `max_bytes`; only the
/// first batch of the answer may go over it (KIP-74), so a batch larger than every
/// limit still reaches the consumer.
async fn read_all(
    gw: &Gateway,
    version: i16,
    wanted: &[Wanted],
    max_bytes: usize,
    read_committed: bool,
) -> (Vec<PartitionAnswer>, usize, bool) {
    let reads = wanted.iter().map(|w| async move {
        match &w.target {
            Err(code) => Err(*code),
            Ok(tp) => {
                let max = w.max_bytes.min(max_bytes);
                read_partition(gw, tp, w.offset, max, read_committed).await
            }
        }
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

/// How many leading batches fit in `max_bytes` beside the `used` bytes, an answer's
/// first batch whatever its size (KIP-74).
fn fitting(batches: &[Bytes], used: usize, max_bytes: usize) -> usize {
    let mut total = used;
    let fit = batches.iter().take_while(|b| {
        let first = total == 0;
        total += b.len();
        first || total <= max_bytes
    });
    fit.count()
}

/// The leading batches that fit in what is left of `max_bytes` (the answer's first
/// batch always does): the partition's record set, as the store gave it.
fn within_budget(mut batches: Vec<Bytes>, total: &mut usize, max_bytes: usize) -> Vec<Bytes> {
    batches.truncate(fitting(&batches, *total, max_bytes));
    *total += batches.iter().map(|b| b.len()).sum::<usize>();
    batches
}

/// What one partition gives a fetch.
struct PartitionRead {
    batches: Vec<Bytes>,
    log_start: i64,
    high: i64,
    /// The last stable offset; the high watermark for a read-uncommitted fetch.
    stable: i64,
    /// Aborted transactions among the batches (read committed only).
    aborted: Vec<Aborted>,
}

/// One partition's batches from `offset`. Read committed, they stop at the last
/// stable offset, leave out fenced batches, and come with the aborted transactions
/// among them, whose records consumers drop (`txn_index.rs`).
async fn read_partition(
    gw: &Gateway,
    tp: &TopicPartition,
    offset: i64,
    max_bytes: usize,
    read_committed: bool,
) -> Result<PartitionRead, ResponseError> {
    if is_internal(&tp.topic) {
        // Its contents live in the offset store: an empty log.
        return match offset {
            0 => Ok(PartitionRead {
                batches: Vec::new(),
                log_start: 0,
                high: 0,
                stable: 0,
                aborted: Vec::new(),
            }),
            _ => Err(ResponseError::OffsetOutOfRange),
        };
    }
    let read = if read_committed {
        gw.partitions
            .read_committed(tp, offset, max_bytes.max(1))
            .await
    } else {
        let logs = gw.partitions.logs();
        logs.read(tp.clone(), offset, max_bytes.max(1)).await
    };
    let failed = |e: StoreError| {
        // A topic deleted while a fetch waits on it is routine (Iggy names it an
        // unknown partition: its server says the same for both); anything else is not.
        match e {
            StoreError::UnknownTopic(_) | StoreError::UnknownPartition { .. } => {
                tracing::debug!(partition = %tp, "fetched topic was deleted")
            }
            _ => tracing::warn!(partition = %tp, error = %e, "fetch read failed"),
        }
        e.code()
    };
    let ReadBatches {
        mut batches,
        watermarks: w,
    } = read.map_err(failed)?;
    if offset < w.log_start || offset > w.high {
        tracing::debug!(partition = %tp, offset, log_start = w.log_start, high = w.high, "fetch offset out of range");
        return Err(ResponseError::OffsetOutOfRange);
    }
    let (stable, aborted) = if read_committed {
        let stable = gw
            .partitions
            .stable(tp, (offset, w.high), &batches)
            .await
            .map_err(failed)?;
        // What lies past the stable offset or `max_bytes`, and what the index read past
        // the fetch, is what this reader reads next: kept for it.
        let stable_end = batches.partition_point(|b| records::base_offset(b) < stable.offset);
        let mut unserved = batches.split_off(stable_end.min(fitting(&batches, 0, max_bytes)));
        unserved.extend(stable.read_past);
        gw.partitions.keep_unserved(tp, unserved);
        batches.retain(|b| {
            !stable
                .fenced
                .iter()
                .any(|f| f.base == records::base_offset(b))
        });
        let end = batches.last().map_or(offset, |b| records::end_offset(b));
        let mut aborted = stable.aborted;
        aborted.retain(|a| a.first_offset < end);
        (stable.offset, aborted)
    } else {
        (w.high, Vec::new())
    };
    Ok(PartitionRead {
        batches,
        log_start: w.log_start,
        high: w.high,
        stable,
        aborted,
    })
}
