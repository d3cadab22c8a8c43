//! Produce: each partition's batch is checked here, then appended by the log slot
//! that owns the partition. Every partition is answered on its own.

use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::dev::Request;
use actix::MailboxError;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::protocol::StrBytes;

use super::{Answer, Reply};
use crate::authorizer::{Access, Operation, ResourceType};
use crate::config_catalog::ClusterConfig;
use crate::gateway::Gateway;
use crate::log_slot::{Append, AppendError, LogSlot};
use crate::protocol::keys;
use crate::protocol::records::{self, InflateError};
use crate::protocol::versions::since;
use crate::store::{AppendBatch, TopicMeta, TopicPartition};
use crate::topic_admin::internal::is_internal;

/// A partition's outcome: known at once, or waiting on its log slot.
enum Outcome {
    Done(PartitionProduceResponse),
    Appending {
        index: i32,
        log_append_time: i64,
        /// Boxed: with its timeout it is most of the enum's size.
        append: Pin<Box<Request<LogSlot, Append>>>,
    },
}

/// Each topic needs WRITE (TOPIC_AUTHORIZATION_FAILED for its partitions otherwise).
pub fn handle(gw: &Gateway, version: i16, req: ProduceRequest, access: &Access) -> Reply {
    let table = gw.topics.table();
    let config = gw.topics.config();
    let acks = req.acks;
    // The request's own timeout is its deadline on the log slots: an append not
    // answered by then is answered REQUEST_TIMED_OUT (it may still be written, as on
    // Kafka, where the timeout bounds the wait for the write's acknowledgement). acks=0
    // waits for nothing and is answered nothing; a timeout of 0 or less asks no bound.
    let req_timeout_ms = req.timeout_ms;
    let timeout =
        (acks != 0 && req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms as u64));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let refuse_all = if !matches!(acks, -1..=1) {
        Some((
            ResponseError::InvalidRequiredAcks,
            "acks must be -1, 0 or 1".to_string(),
        ))
    } else if req
        .transactional_id
        .as_deref()
        .is_some_and(|id| !access.allows(Operation::Write, ResourceType::TransactionalId, id))
    {
        Some((
            ResponseError::TransactionalIdAuthorizationFailed,
            "WRITE on the transactional id is not allowed".to_string(),
        ))
    } else {
        None
    };

    let mut inflation = Inflation {
        left: gw.settings.limits.max_decompressed_request_bytes,
        keep: gw.partitions.logs().splits_batches(),
    };
    let mut topics = Vec::with_capacity(req.topic_data.len());
    for topic in req.topic_data {
        let meta = if version >= since::PRODUCE_TOPIC_IDS {
            table.by_id(&topic.topic_id)
        } else {
            table.get(&topic.name)
        };
        // Checked before existence, so a denied caller learns nothing of the topic.
        let name = meta.map_or(topic.name.as_str(), |m| &m.name);
        let denied = (meta.is_some() || version < since::PRODUCE_TOPIC_IDS)
            && !access.topic(Operation::Write, name);
        let outcomes: Vec<Outcome> = topic
            .partition_data
            .into_iter()
            .map(|p| {
                let refused_with = |code: ResponseError, message: String, records| {
                    tracing::debug!(topic = %topic.name.as_str(), partition = p.index, ?code, %message, "produce refused");
                    let answer = partition_error(version, p.index, code, message);
                    Outcome::Done(match version >= since::PRODUCE_ERROR_MESSAGE {
                        true => answer.with_record_errors(records),
                        false => answer,
                    })
                };
                let refused = |code, message| refused_with(code, message, Vec::new());
                if let Some((code, message)) = &refuse_all {
                    return refused(*code, message.clone());
                }
                if denied {
                    let message = "WRITE on the topic is not allowed".to_string();
                    return refused(ResponseError::TopicAuthorizationFailed, message);
                }
                let Some(meta) = meta.filter(|m| (0..m.partitions).contains(&p.index)) else {
                    let code = if version >= since::PRODUCE_TOPIC_IDS && meta.is_none() {
                        ResponseError::UnknownTopicId
                    } else {
                        ResponseError::UnknownTopicOrPartition
                    };
                    return refused(code, "unknown topic or partition".into());
                };
                if is_internal(&meta.name) {
                    let message = format!("cannot append to internal topic {}", meta.name);
                    return refused(ResponseError::InvalidTopicException, message);
                }
                let records = p.records.unwrap_or_default();
                match check_batch(&config, (meta, p.index), records, now, &mut inflation) {
                    Err(r) => refused_with(r.code, r.message, r.records),
                    Ok((batch, log_append_time)) => {
                        let tp = TopicPartition {
                            topic: meta.name.clone(),
                            partition: p.index,
                        };
                        let h = batch.header;
                        let verify = match (h.transactional, req.transactional_id.as_deref()) {
                            (false, _) => None,
                            (true, Some(id)) => {
                                let add = version >= since::PRODUCE_IMPLICIT_TXN_ADD;
                                Some(gw.transactions.verify(id, (h.producer_id, h.producer_epoch), &tp, add))
                            }
                            (true, None) => {
                                let message = "a transactional batch needs the request's transactional id";
                                return refused(ResponseError::TransactionalIdAuthorizationFailed, message.into());
                            }
                        };
                        // Enqueued now, while requests are still in arrival order.
                        let append = gw.partitions.append(tp, batch, verify);
                        let append = Box::pin(match timeout {
                            Some(timeout) => append.timeout(timeout),
                            None => append,
                        });
                        Outcome::Appending {
                            index: p.index,
                            log_append_time,
                            append,
                        }
                    }
                }
            })
            .collect();
        topics.push((topic.name, topic.topic_id, outcomes));
    }

    Box::pin(async move {
        let mut responses = Vec::with_capacity(topics.len());
        for (name, topic_id, outcomes) in topics {
            let mut partitions = Vec::with_capacity(outcomes.len());
            for outcome in outcomes {
                partitions.push(match outcome {
                    Outcome::Done(r) => r,
                    Outcome::Appending {
                        index,
                        log_append_time,
                        append,
                    } => match append.await {
                        Ok(Ok(appended)) => PartitionProduceResponse::default()
                            .with_index(index)
                            .with_base_offset(appended.base_offset)
                            .with_log_append_time_ms(log_append_time)
                            .with_log_start_offset(if version >= since::PRODUCE_LOG_START {
                                appended.watermarks.log_start
                            } else {
                                -1
                            }),
                        Ok(Err(e)) => {
                            match &e {
                                AppendError::Sequence(_) | AppendError::Transaction { .. } => tracing::info!(topic = %name.as_str(), partition = index, error = %e, "batch refused"),
                                _ => tracing::warn!(topic = %name.as_str(), partition = index, error = %e, "append failed"),
                            }
                            partition_error(version, index, e.code(), e.to_string())
                        }
                        Err(MailboxError::Timeout) => {
                            let message = format!("the append was not done within the request's timeout of {} ms", req_timeout_ms);
                            tracing::info!(topic = %name.as_str(), partition = index, %message, "produce timed out");
                            partition_error(version, index, ResponseError::RequestTimedOut, message)
                        }
                        Err(MailboxError::Closed) => partition_error(
                            version,
                            index,
                            ResponseError::NotLeaderOrFollower,
                            "log slot unavailable".into(),
                        ),
                    },
                });
            }
            responses.push(
                TopicProduceResponse::default()
                    .with_name(name)
                    .with_topic_id(topic_id)
                    .with_partition_responses(partitions),
            );
        }
        if acks != 0 {
            let response = ProduceResponse::default().with_responses(responses);
            return Answer::Send(Box::new(ResponseKind::Produce(response)));
        }
        // acks=0: no answer, unless a write failed: then Kafka closes the connection.
        let failed = responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(move |p| (t, p)))
            .find(|(_, p)| p.error_code != 0);
        match failed {
            None => Answer::Nothing,
            Some((t, p)) => Answer::Close(format!(
                "acks=0 produce to {}-{} failed with error {}",
                t.name.as_str(),
                p.index,
                p.error_code
            )),
        }
    })
}

/// Why a partition's records are refused: Kafka's code and message, and the records
/// at fault (KIP-467) when the refusal names some.
struct Refusal {
    code: ResponseError,
    message: String,
    records: Vec<BatchIndexAndErrorMessage>,
}

impl From<(ResponseError, String)> for Refusal {
    fn from((code, message): (ResponseError, String)) -> Refusal {
        Refusal {
            code,
            message,
            records: Vec::new(),
        }
    }
}

/// Checks one partition's records and prepares them for the log, by the topic's
/// configurations in force; the append time is set when the topic keeps LogAppendTime.
/// The records must decompress within what is left of the request's budget (Kafka's
/// broker decompresses them to validate them too), and on a compacted topic each
/// must have a key (`check_keys`).
fn check_batch(
    config: &ClusterConfig,
    (meta, partition): (&TopicMeta, i32),
    records: Bytes,
    now: i64,
    inflation: &mut Inflation,
) -> Result<(AppendBatch, i64), Refusal> {
    let topic = config.in_force().topic(&meta.configs);
    let max = topic.max_message_bytes;
    if records.len() > max {
        return Err(Refusal::from((
            ResponseError::MessageTooLarge,
            format!(
                "batch of {} bytes is over the topic's limit of {max} bytes",
                records.len()
            ),
        )));
    }
    let mut header = records::validate(&records).map_err(|e| (e.error_code(), e.to_string()))?;
    let compacted = topic.compacted;
    let inflated = inflation
        .records(&records, compacted)
        .map_err(|e| (e.error_code(), e.to_string()))?;
    if compacted {
        let tp = format!("{}-{partition}", meta.name);
        check_keys(&inflated, header.record_count, &tp)?;
    }
    let (bytes, log_append_time) = if topic.log_append_time {
        (
            records::stamp_log_append_time(records, &mut header, now),
            now,
        )
    } else {
        (records, -1)
    };
    let batch = AppendBatch {
        header,
        bytes,
        records: if inflation.keep {
            inflated
        } else {
            Bytes::new()
        },
        whole: topic.whole_batches,
    };
    Ok((batch, log_append_time))
}

/// A compacted topic's records must all have a key, else the batch is refused
/// INVALID_RECORD naming each keyless record by its index, in Kafka's words
/// (`LogValidator.validateKey`, `processRecordErrors`), so clients can tell them from
/// the batch's other records.
fn check_keys(records: &[u8], count: i32, tp: &str) -> Result<(), Refusal> {
    let keyless = keys::keyless(records, count)
        .map_err(|e| Refusal::from((ResponseError::InvalidRecord, e.to_string())))?;
    if keyless.is_empty() {
        return Ok(());
    }
    let why = format!("Compacted topic cannot accept message without key in topic partition {tp}.");
    let shown: Vec<String> = keyless
        .iter()
        .take(3)
        .map(|i| format!("RecordError(batchIndex={i}, message='{why}')"))
        .collect();
    let message = format!(
        "One or more records have been rejected due to {} record errors in total, and only \
         showing the first three errors at most: [{}]",
        keyless.len(),
        shown.join(", ")
    );
    let records = keyless
        .into_iter()
        .map(|i| {
            BatchIndexAndErrorMessage::default()
                .with_batch_index(i)
                .with_batch_index_error_message(Some(StrBytes::from_string(why.clone())))
        })
        .collect();
    Err(Refusal {
        code: ResponseError::InvalidRecord,
        message,
        records,
    })
}

/// How a request's records are decompressed: within the bytes left of its budget,
/// over all its partitions, and kept only for an engine that stores them record by
/// record (`LogStore::splits_batches`); the others store the batch as it came.
struct Inflation {
    left: usize,
    keep: bool,
}

impl Inflation {
    /// The batch's records decompressed when kept or to be `read` here, else empty;
    /// checked either way.
    fn records(&mut self, batch: &Bytes, read: bool) -> Result<Bytes, InflateError> {
        let (records, len) = if self.keep || read {
            let records = records::batch_records(batch, self.left)?;
            let len = records.len();
            (records, len)
        } else {
            (Bytes::new(), records::batch_records_len(batch, self.left)?)
        };
        self.left -= len;
        Ok(records)
    }
}

fn partition_error(
    version: i16,
    index: i32,
    code: ResponseError,
    message: String,
) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_error_code(code.code())
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
        .with_error_message(
            (version >= since::PRODUCE_ERROR_MESSAGE).then(|| StrBytes::from_string(message)),
        )
}
