//! The Iggy engine as a log store: Kafka batches in, Iggy messages out and back
//! ([`mapping`](super::mapping)), watermarks from the partition state, timestamp
//! lookups by polling, and the idempotent producers' recent batches from the stamps
//! the mapping keeps. Transactional batches are read back whole and markers as their
//! own control batches, from the same stamps.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy::prelude::{
    Consumer, IggyMessage, IggyMessageHeader, IggyTimestamp, MessageClient, Partition,
    Partitioning, PollingStrategy, TopicClient,
};
use iggy_kafka_actors::protocol::records;
use iggy_kafka_actors::store::{
    AppendBatch, Appended, ProducerBatch, ReadBatches, StoreError, StoreResult, TimestampedOffset,
    TopicPartition, Watermarks,
};

use super::compacted::Removed;
use super::errors::{backend_error, partition_id};
use super::kafka_batch::{self, BatchCodecError, BatchWriter, InBatch, KafkaRecord, ProducerStamp};
use super::mapping::{self, FromIggy, IggyParts, IggyView, Stored};
use super::pool::{is_connection_error, Conn};
use super::read_ahead::Read;
use super::topics::segment_size;
use super::view::View;
use super::Inner;

/// Origin timestamps for a batch's messages: the records' own (in µs) when Iggy can
/// carry them (none negative, all within the u32 µs span one send allows), else now.
/// Where a record's own does not fit, its timestamp travels in `kafka.timestamp`.
fn origin_timestamps<T>(records: &[T], timestamp: impl Fn(&T) -> i64) -> Vec<u64> {
    let micros: Option<Vec<u64>> = records
        .iter()
        .map(|r| u64::try_from(timestamp(r)).ok()?.checked_mul(1000))
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

fn message(parts: IggyParts, origin_timestamp: u64) -> IggyMessage {
    with_id(parts, origin_timestamp, 0)
}

/// A message with the id `id` (0: Iggy picks a random one).
fn with_id(parts: IggyParts, origin_timestamp: u64, id: u128) -> IggyMessage {
    IggyMessage {
        header: IggyMessageHeader {
            id,
            origin_timestamp,
            user_headers_length: parts.headers.len() as u32,
            payload_length: parts.payload.len() as u32,
            ..IggyMessageHeader::default()
        },
        payload: parts.payload,
        user_headers: Some(parts.headers),
    }
}

/// A batch's Iggy messages: one per record, the first of an idempotent or
/// transactional batch stamped, the rest of a transactional one numbered (`kafka.txn`)
/// so a read from inside it finds its start; a marker is one message.
fn to_messages(batch: &AppendBatch) -> Result<Vec<IggyMessage>, BatchCodecError> {
    let h = batch.header;
    let stamp = ProducerStamp {
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        record_count: h.record_count,
        transactional: h.transactional,
    };
    if h.control {
        let marker = kafka_batch::decode_marker(batch)?;
        let origin = origin_timestamps(&[h.max_timestamp], |t| *t)[0];
        let parts =
            mapping::marker_to_iggy(marker, stamp, h.max_timestamp, h.log_append_time, origin);
        return Ok(vec![message(parts, origin)]);
    }
    if batch.whole {
        return whole(batch);
    }
    let decoded = kafka_batch::decode(batch)?;
    let origins = origin_timestamps(&decoded.records, |r| r.timestamp);
    let transactional = h.transactional && h.is_idempotent();
    // Kafka's codes fit the header's one byte.
    let codec = records::codec(&batch.bytes) as u8;
    let messages = (decoded.records.into_iter().zip(origins).enumerate())
        .map(|(i, (r, origin_timestamp))| {
            let in_batch = match i {
                0 if h.is_idempotent() => InBatch::First(stamp),
                0 => InBatch::Loose,
                _ if transactional => InBatch::Continues(i as u32),
                _ => InBatch::Loose,
            };
            let first_codec = if i == 0 { codec } else { 0 };
            let parts = mapping::to_iggy(
                r,
                decoded.log_append_time,
                (in_batch, first_codec),
                origin_timestamp,
            );
            message(parts, origin_timestamp)
        })
        .collect();
    Ok(messages)
}

/// The batch form: the batch as produced in one message, then a header-less filler for
/// each of its other records, so the next batch's offset is the Kafka one. Each message
/// carries its record's timestamp (`origin_timestamps`), so lookups by time read the
/// fillers as they read records.
fn whole(batch: &AppendBatch) -> Result<Vec<IggyMessage>, BatchCodecError> {
    let timestamps = kafka_batch::timestamps(batch)?;
    let origins = origin_timestamps(&timestamps, |t| *t);
    let batch_id = uuid::Uuid::new_v4().as_u64_pair().0;
    let mut messages = Vec::with_capacity(origins.len());
    let mut origins = origins.into_iter();
    let first = origins
        .next()
        .unwrap_or_else(|| IggyTimestamp::now().as_micros());
    messages.push(message(mapping::batch_to_iggy(batch.bytes.clone()), first));
    for (place, origin) in (1..).zip(origins) {
        let filler = IggyParts {
            payload: Bytes::new(),
            headers: Bytes::new(),
        };
        messages.push(with_id(filler, origin, mapping::filler_id(batch_id, place)));
    }
    Ok(messages)
}

fn decode_message(m: &IggyMessage) -> Result<FromIggy, mapping::MappingError> {
    mapping::from_iggy(IggyView {
        id: m.header.id,
        payload: &m.payload,
        user_headers: m.user_headers.as_ref(),
        timestamp_micros: m.header.timestamp,
        origin_micros: m.header.origin_timestamp,
    })
}

/// Whether compaction removed the message at `offset`: every record it holds.
fn hidden(removed: Option<&Removed>, offset: u64, r: &FromIggy) -> bool {
    let held = match r.stored {
        Stored::Batch(count) => i64::from(count),
        _ => 1,
    };
    removed.is_some_and(|x| x.hides(offset as i64, held))
}

/// What `messages` hold beyond Iggy's own headers: what a poll of them read.
fn stored_size(messages: &[IggyMessage]) -> u64 {
    (messages.iter())
        .map(|m| (m.payload.len() + m.user_headers.as_ref().map_or(0, Bytes::len)) as u64)
        .sum()
}

/// Polls a read of a compacted partition makes past removed ranges.
const COMPACTED_POLLS: u32 = 8;
/// Messages read per poll when scanning a partition.
const SCAN_PAGE: u32 = 1_000;
/// Most messages a Fetch polls for one partition.
const FETCH_MAX_MESSAGES: usize = 16_384;
/// Record size assumed for a partition not read yet, to size its first poll.
const FIRST_RECORD_SIZE_GUESS: usize = 128;
/// Most messages the first poll of a partition not read yet asks for. Their size is
/// unknown, and what a poll brings beyond the answer's room is Iggy's work and the
/// gateway's memory thrown away (with 1 KiB records a guessed-size poll brought 8
/// times the answer); the read polls on for what fits by the size measured.
const FIRST_POLL_MESSAGES: usize = 256;
/// How long an unanswered append may still land (`await_landing`): Linux retries an
/// orphaned connection's data 8 times from a 200 ms timeout, for about 100 s.
const LATE_APPEND_WINDOW: Duration = Duration::from_secs(120);
/// How often the partition is looked at for it meanwhile.
const LANDING_CHECK_EVERY: Duration = Duration::from_millis(200);
/// How far back from the end producer history is rebuilt after a restart.
const PRODUCER_HISTORY_MESSAGES: u64 = 10_000;

impl Inner {
    /// Appends `batches` as one `send_messages` call: their messages land in order, one
    /// after the other, so each batch's offsets follow from the first one's.
    pub(super) async fn append(
        &self,
        tp: TopicPartition,
        batches: Vec<AppendBatch>,
    ) -> StoreResult<Vec<Appended>> {
        let partition = partition_id(&tp)?;
        let mut messages = Vec::new();
        let mut counts = Vec::with_capacity(batches.len());
        for batch in &batches {
            let batch_messages = to_messages(batch)
                .map_err(|e| StoreError::fatal_from("unreadable record batch", e))?;
            counts.push(batch_messages.len() as i64);
            messages.extend(batch_messages);
        }
        let count: i64 = counts.iter().sum();
        tracing::debug!(partition = %tp, batches = batches.len(), messages = count, "appending to Iggy");
        let conn = self.pools.producer(&tp);
        let (stream, topic) = self.ids(&tp.topic)?;
        let err = |e| backend_error(e, Some(&tp), &tp.topic);
        let c = conn.ready().await.map_err(err)?;
        // Iggy picks the messages' ids: the first message's content is what finds it.
        let first = (messages.first()).map(|m| (m.payload.clone(), m.user_headers.clone()));
        let sending = Instant::now();
        let partitioning = Partitioning::partition_id(partition);
        let sent = c.check(
            c.send_messages(&stream, &topic, &partitioning, &mut messages)
                .await,
        );
        // Released before any wait for a late landing: other partitions share it.
        drop(c);
        // Unanswered (Unavailable), the batches may have landed: the log slot reads the
        // producer history again before the retry (`log_slot.rs`). Sent and left
        // unanswered past the caller's deadline, they may even land later.
        let sent = match (sent, first) {
            (Err(e), Some(first))
                if is_connection_error(&e) && sending.elapsed() >= self.config.request_timeout =>
            {
                self.await_landing(&tp, first).await;
                return Err(err(e));
            }
            (sent, _) => sent.map_err(err)?,
        };
        self.written.lock().insert(tp.clone());
        self.keep_sections(&batches);
        let mut base_offset = match sent.confirmations.first() {
            Some(c) => c.base_offset as i64,
            None => {
                // Only servers that confirm no offsets: exact while the gateway is
                // the partition's only writer (its log slot serializes appends).
                let w = self.watermarks(&tp).await?;
                tracing::warn!(partition = %tp, "Iggy confirmed no offset; derived it from the partition state");
                w.high - count
            }
        };
        let log_start = self.log_starts.lock().get(&tp).copied().unwrap_or(0);
        self.known_ends
            .lock()
            .insert(tp.clone(), base_offset + count);
        let appended = counts.into_iter().map(|count| {
            let appended = Appended {
                base_offset,
                watermarks: Watermarks {
                    log_start,
                    high: base_offset + count,
                },
            };
            base_offset += count;
            appended
        });
        Ok(appended.collect())
    }

    /// Keeps the compressed sections of the batches just appended one record a message,
    /// for reads that put them back together (`kept_sections.rs`).
    fn keep_sections(&self, batches: &[AppendBatch]) {
        if !self.kept_sections.enabled() {
            return;
        }
        for b in batches.iter().filter(|b| !b.whole && !b.header.control) {
            let codec = records::codec(&b.bytes);
            if codec != 0 {
                (self.kept_sections).keep(codec, &b.records, &b.bytes[records::HEADER_LEN..]);
            }
        }
    }

    /// An append sent, then left unanswered past its caller's deadline until its
    /// connection failed (a link cut longer than the SDK's 30 s wait for an answer):
    /// its bytes may still be on the way, as TCP delivers what the kernel took until it
    /// gives up retransmitting, which goes on after the SDK closed the connection. A
    /// retry written meanwhile would be overtaken by it and stored twice, so the append
    /// stays in doubt (`in_doubt.rs`: the partition's appends are refused, retriably)
    /// until its first message is found in the partition past where it last ended
    /// here, or for [`LATE_APPEND_WINDOW`].
    async fn await_landing(&self, tp: &TopicPartition, (payload, headers): (Bytes, Option<Bytes>)) {
        let deadline = Instant::now() + LATE_APPEND_WINDOW;
        tracing::warn!(partition = %tp, "an append went unanswered; the partition takes no other until it is seen landing, or for {LATE_APPEND_WINDOW:?}");
        let known_end = self.known_ends.lock().get(tp).copied();
        let mut next = known_end
            .or_else(|| self.log_starts.lock().get(tp).copied())
            .unwrap_or(0) as u64;
        while Instant::now() < deadline {
            let polled = self.poll(
                self.pools.reader(),
                tp,
                PollingStrategy::offset(next),
                SCAN_PAGE,
            );
            if let Ok(polled) = polled.await {
                let page = polled.messages.iter().filter(|m| m.header.offset >= next);
                if (page.clone()).any(|m| m.payload == payload && m.user_headers == headers) {
                    tracing::warn!(partition = %tp, "the unanswered append landed");
                    return;
                }
                if let Some(last) = page.last() {
                    next = last.header.offset + 1;
                    continue;
                }
            }
            tokio::time::sleep(LANDING_CHECK_EVERY).await;
        }
        tracing::warn!(partition = %tp, "the unanswered append was not seen landing within {LATE_APPEND_WINDOW:?}; taken as lost");
    }

    pub(super) async fn poll(
        &self,
        conn: &Conn,
        tp: &TopicPartition,
        strategy: PollingStrategy,
        count: u32,
    ) -> StoreResult<iggy::prelude::PolledMessages> {
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
    pub(super) async fn read(
        self: Arc<Self>,
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
        removed: Option<Arc<Removed>>,
    ) -> StoreResult<ReadBatches> {
        let ahead = match self.read_ahead.take(&tp, offset, max_bytes) {
            // A read ahead that failed or found nothing is simply done again.
            Some(task) => task.await.ok().and_then(Result::ok),
            None => None,
        };
        let read = match ahead.filter(|r| !r.batches.batches.is_empty()) {
            Some(mut read) => {
                read.batches.read_ahead = true;
                read
            }
            None => {
                self.read_now(&tp, offset, max_bytes, removed.as_deref())
                    .await?
            }
        };
        if let Some(next) = read.more_from.filter(|_| self.read_ahead.fits(max_bytes)) {
            let (me, at) = (self.clone(), tp.clone());
            let task = tokio::spawn(async move {
                (me.read_now(&at, next, max_bytes, removed.as_deref())).await
            });
            self.read_ahead.keep(tp, next, max_bytes, task);
        }
        Ok(read.batches)
    }

    pub(super) async fn read_now(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        removed: Option<&Removed>,
    ) -> StoreResult<Read> {
        let tp = tp.clone();
        let done = |batches| Read {
            batches,
            more_from: None,
        };
        if offset < 0 {
            let watermarks = self.watermarks(&tp).await?;
            return Ok(done(ReadBatches {
                watermarks,
                ..ReadBatches::default()
            }));
        }
        // What compaction removed is not polled: a read starts at the next record that
        // stayed, and polls no further than the next removed range.
        let offset = removed.map_or(offset, |r| r.skip(offset));
        let size = self.record_sizes.lock().get(&tp).copied();
        let mut measuring = size.is_none();
        let count = match size {
            Some(size) => (max_bytes / size.max(1)).clamp(1, FETCH_MAX_MESSAGES),
            None => (max_bytes / FIRST_RECORD_SIZE_GUESS).clamp(1, FIRST_POLL_MESSAGES),
        } as u32;
        let span = |from: u64, count: u32| match removed.and_then(|r| r.next_start(from as i64)) {
            Some(start) => count.min((start as u64 - from) as u32),
            None => count,
        };
        let conn = self.pools.reader();
        let polled = self
            .poll(
                conn,
                &tp,
                PollingStrategy::offset(offset as u64),
                span(offset as u64, count),
            )
            .await?;
        let mut stored_read = stored_size(&polled.messages);
        // Iggy answers in offset order, so what is at or after `offset` is a tail.
        let wanted = (polled.messages.iter()).position(|m| m.header.offset >= offset as u64);
        let Some(fetched) = wanted.map(|at| &polled.messages[at..]) else {
            // Nothing at or after `offset`: the partition state says why.
            let watermarks = self.watermarks(&tp).await?;
            return Ok(done(ReadBatches {
                watermarks,
                stored_read,
                ..ReadBatches::default()
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
                watermarks: Watermarks {
                    log_start: first,
                    high,
                },
                stored_read,
                ..ReadBatches::default()
            }));
        }
        // Kafka serves whole the batch a read starts inside: from inside a transactional
        // batch, its records before `first` are polled too (its `kafka.txn` says how many);
        // from inside a whole batch, the message holding it (a filler's id says where).
        let at = self.decode_for_kafka(&tp, &fetched[0])?;
        let head = match at.in_batch {
            InBatch::Continues(n) if u64::from(n) <= first as u64 => {
                let from = PollingStrategy::offset(first as u64 - u64::from(n));
                let count = if at.stored == Stored::Filler { 1 } else { n };
                let head = self.poll(conn, &tp, from, count).await?.messages;
                stored_read += stored_size(&head);
                head
            }
            _ => Vec::new(),
        };
        let head = head.iter().filter(|m| m.header.offset < first as u64);
        // What the polled messages weigh, about: the batches' buffers are sized from it.
        let expected = stored_size(fetched) as usize + 20 * fetched.len();
        let mut writer =
            BatchWriter::new(max_bytes, expected).serving_kept(self.kept_sections.clone());
        let mut high = high;
        let last = fetched[fetched.len() - 1].header.offset;
        let all_taken = self.feed(&tp, &mut writer, head.chain(fetched), removed)?;
        let mut next = all_taken.then_some(last + 1);
        // The answer's first batch goes whole: the rest of a transactional one the poll
        // cut is read on for. A first poll of a guessed size is read on from once, for
        // what fits by the size it measured. A compacted partition is read on past
        // removed ranges while the answer has room for a quarter of a poll, a few polls
        // at most, each for no more than fits: what does not is polled again by the next
        // read. Nothing is polled at or past the partition's end.
        let mut compacted_polls = if removed.is_some() {
            COMPACTED_POLLS
        } else {
            0
        };
        while let Some(from) = next.filter(|&from| (from as i64) < high) {
            let from = removed.map_or(from, |r| r.skip(from as i64) as u64);
            let room = writer.room() as u32;
            let count = match writer.missing() {
                0 if measuring && room > 0 => {
                    measuring = false;
                    span(from, room.min(FETCH_MAX_MESSAGES as u32))
                }
                0 if compacted_polls > 0 && room >= (count / 4).max(1) => {
                    compacted_polls -= 1;
                    span(from, room.min(count))
                }
                0 => break,
                missing => missing.min(FETCH_MAX_MESSAGES) as u32,
            };
            let polled = self.poll(conn, &tp, PollingStrategy::offset(from), count);
            let polled = polled.await?;
            stored_read += stored_size(&polled.messages);
            high = high.max(polled.current_offset as i64 + 1);
            let rest = polled.messages.iter().filter(|m| m.header.offset >= from);
            next = match polled.messages.last().map(|m| m.header.offset + 1) {
                Some(end) if end > from && self.feed(&tp, &mut writer, rest, removed)? => Some(end),
                _ => None,
            };
        }
        self.record_sizes
            .lock()
            .insert(tp.clone(), writer.average_record_size());
        let (batches, next, compressions) = writer.finish();
        Ok(Read {
            batches: ReadBatches {
                batches,
                watermarks: Watermarks { log_start, high },
                read_ahead: false,
                stored_read,
                compressions,
            },
            more_from: (next < high as u64).then_some(next as i64),
        })
    }

    /// Gives `messages` to `writer` in order, but those compaction removed; false
    /// once its budget is spent.
    fn feed<'m>(
        &self,
        tp: &TopicPartition,
        writer: &mut BatchWriter,
        messages: impl IntoIterator<Item = &'m IggyMessage>,
        removed: Option<&Removed>,
    ) -> StoreResult<bool> {
        for m in messages {
            let r = self.decode_for_kafka(tp, m)?;
            let offset = m.header.offset;
            if hidden(removed, offset, &r) {
                continue;
            }
            let taken = match (r.stored, r.control, r.in_batch) {
                (Stored::Batch(count), ..) => {
                    let batch = r.record.value.unwrap_or_default();
                    writer.push_whole(offset, batch, count)
                }
                (Stored::Filler, ..) => writer.push_filler(offset, r.record.timestamp),
                (_, Some(marker), InBatch::First(producer)) => writer.push_marker(
                    offset,
                    marker,
                    producer,
                    r.record.timestamp,
                    r.log_append_time,
                ),
                _ => {
                    let codec = (r.codec != 0).then_some(i16::from(r.codec));
                    let in_batch = (r.in_batch, codec);
                    writer.push(offset, &r.record, r.log_append_time, in_batch)
                }
            };
            if !taken {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A message as Kafka sees it; gateway data Iggy garbled is served as a native
    /// message rather than blocking the partition.
    pub(super) fn decode_for_kafka(
        &self,
        tp: &TopicPartition,
        m: &IggyMessage,
    ) -> StoreResult<FromIggy> {
        match decode_message(m) {
            Ok(r) => Ok(r),
            Err(mapping::MappingError::Version(v)) => Err(StoreError::fatal(format!(
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
                    in_batch: InBatch::Loose,
                    control: None,
                    stored: Stored::Record,
                    codec: 0,
                })
            }
        }
    }

    pub(super) async fn watermarks(&self, tp: &TopicPartition) -> StoreResult<Watermarks> {
        let (p, _) = self.partition_details(tp).await?;
        Ok(self.watermarks_of(tp, &p))
    }

    /// The partition as Iggy reports it, and its topic's segment size when reported.
    pub(super) async fn partition_details(
        &self,
        tp: &TopicPartition,
    ) -> StoreResult<(Partition, Option<u64>)> {
        let partition = partition_id(tp)?;
        let err = |e| backend_error(e, Some(tp), &tp.topic);
        let (stream, topic) = self.ids(&tp.topic)?;
        let c = self.pools.reader().ready().await.map_err(err)?;
        let details = c
            .check(c.get_topic(&stream, &topic).await)
            .map_err(err)?
            .ok_or_else(|| StoreError::UnknownTopic(tp.topic.to_string()))?;
        drop(c);
        let segment_size = segment_size(&details);
        let p = (details.partitions.into_iter())
            .find(|p| p.id == partition)
            .ok_or_else(|| StoreError::UnknownPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            })?;
        Ok((p, segment_size))
    }

    /// Iggy's watermarks of a partition from its details; noted as its known start.
    pub(super) fn watermarks_of(&self, tp: &TopicPartition, p: &Partition) -> Watermarks {
        // Iggy reports the last offset written, 0 for an empty partition too.
        let high = if p.messages_count == 0 && p.current_offset == 0 {
            0
        } else {
            p.current_offset as i64 + 1
        };
        let log_start = (high - p.messages_count as i64).max(0);
        self.log_starts.lock().insert(tp.clone(), log_start);
        self.known_ends.lock().insert(tp.clone(), high);
        Watermarks { log_start, high }
    }

    /// Calls `visit` on every message from `from` on but those compaction removed,
    /// until it breaks or the log ends.
    pub(super) async fn scan(
        &self,
        tp: &TopicPartition,
        (from, removed): (u64, Option<&Removed>),
        mut visit: impl FnMut(u64, FromIggy) -> ControlFlow<()>,
    ) -> StoreResult<()> {
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
                let r = self.decode_for_kafka(tp, m)?;
                if !hidden(removed, m.header.offset, &r) && visit(m.header.offset, r).is_break() {
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
    /// Records Kafka clients do not see (`view.rs`) are not looked at.
    pub(super) async fn offset_for_timestamp(
        &self,
        tp: TopicPartition,
        timestamp: i64,
        view: &View,
    ) -> StoreResult<Option<TimestampedOffset>> {
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
        let from = start.max(view.deleted_below as u64);
        self.scan(&tp, (from, view.removed.as_deref()), |offset, m| {
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

    /// The record with the largest timestamp: a scan of what Kafka clients see of the
    /// partition (`view.rs`).
    pub(super) async fn max_timestamp(
        &self,
        tp: TopicPartition,
        view: &View,
    ) -> StoreResult<Option<TimestampedOffset>> {
        let mut max: Option<TimestampedOffset> = None;
        let from = (view.deleted_below as u64, view.removed.as_deref());
        self.scan(&tp, from, |offset, m| {
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

    /// Idempotent batches and markers near the end of the partition, from their stamps
    /// (`ProducerBatch::history`).
    pub(super) async fn producer_batches(
        &self,
        tp: &TopicPartition,
    ) -> StoreResult<Vec<ProducerBatch>> {
        let w = self.watermarks(tp).await?;
        let from = (w.high as u64)
            .saturating_sub(PRODUCER_HISTORY_MESSAGES)
            .max(w.log_start as u64);
        let mut batches = Vec::new();
        // Every stamp Iggy still holds counts, compacted or not.
        self.scan(tp, (from, None), |offset, m| {
            let InBatch::First(s) = m.in_batch else {
                return ControlFlow::Continue(());
            };
            batches.push(match m.control {
                Some(_) => ProducerBatch::marker(s.producer_id, s.producer_epoch, offset as i64),
                None => {
                    let last_delta = s.record_count.max(1) - 1;
                    let last_sequence = (s.base_sequence as i64 + last_delta as i64)
                        .rem_euclid(i32::MAX as i64 + 1)
                        as i32;
                    ProducerBatch {
                        producer_id: s.producer_id,
                        producer_epoch: s.producer_epoch,
                        first_sequence: s.base_sequence,
                        last_sequence,
                        base_offset: offset as i64,
                        last_offset: offset as i64 + last_delta as i64,
                    }
                }
            });
            ControlFlow::Continue(())
        })
        .await?;
        Ok(ProducerBatch::history(batches.into_iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_use_record_times_only_when_iggy_can_carry_them() {
        let r = |ts| KafkaRecord {
            timestamp: ts,
            key: None,
            value: None,
            headers: vec![],
        };
        assert_eq!(
            origin_timestamps(&[r(1_000), r(2_000)], |r| r.timestamp),
            vec![1_000_000, 2_000_000]
        );
        let far = origin_timestamps(&[r(0), r(10_000_000)], |r| r.timestamp);
        assert_eq!(far[0], far[1], "spread too wide: both now");
        let negative = origin_timestamps(&[r(-1)], |r| r.timestamp);
        assert!(negative[0] > 0);
    }
}
