//! Fetched records written back to consumers as Kafka batches: uncompressed, but for
//! batches produced compressed.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use iggy_kafka_actors::protocol::markers;
use iggy_kafka_actors::protocol::records::{
    self, BatchHeader, ATTRIBUTES_AT, CRC_AT, HEADER_LEN, LOG_OVERHEAD, MAX_TIMESTAMP_AT,
    RECORD_COUNT_AT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
};
use iggy_kafka_actors::store::Compressions;

use crate::iggy::kept_sections::{Content, KeptSections};

use super::{
    approximate_size, nullable_len, put_nullable, put_varlong, varlong_len, ControlMarker, InBatch,
    KafkaRecord, ProducerStamp,
};

/// Writes fetched records straight into uncompressed batches, as they come.
///
/// Records whose batch the log does not keep ([`InBatch::Loose`]) share batches: a new
/// one starts at a gap in offsets or where the timestamp type changes (a LogAppendTime
/// batch carries one time for all its records). A transactional batch is served as
/// appended, with its producer, sequence and flag, and whole: read-committed consumers
/// judge its records by its header alone. A marker is a control batch of its own.
/// Each value is copied once, into the batch: Fetch's main cost for large records is
/// this copy. A batch produced compressed is served with the section its producer
/// compressed when that is kept (`kept_sections.rs`), else compressed again.
pub struct BatchWriter {
    done: Vec<Bytes>,
    open: Option<OpenBatch>,
    kept: Option<Arc<KeptSections>>,
    compressions: Compressions,
    /// Records taken so far, the bytes they add up to (about), and the most to take.
    taken: usize,
    size: usize,
    max_bytes: usize,
    /// About what all the records to come add up to: a batch's buffer is sized for the
    /// rest of it once, instead of growing by copies.
    expected: usize,
    next_offset: u64,
}

pub(super) struct OpenBatch {
    buf: BytesMut,
    base_offset: u64,
    base_timestamp: i64,
    max_timestamp: i64,
    count: usize,
    log_append_time: bool,
    whole: Option<Whole>,
    /// The codec the batch was produced with, served with again (0: uncompressed).
    codec: i16,
}

/// Where a compressed batch's records section came from.
enum Compressed {
    Kept,
    Made,
    /// Compressing failed: served uncompressed.
    Not,
}

/// A batch served whole, as appended: a transactional one (read-committed consumers
/// judge its records by its header), or one an idempotent producer sent compressed (its
/// records go back compressed together). Its stamp, and what the writer had taken
/// before it, to take it back whole when it does not fit.
#[derive(Clone, Copy)]
pub(super) struct Whole {
    pub(super) stamp: ProducerStamp,
    pub(super) taken_before: usize,
    pub(super) size_before: usize,
}

impl Whole {
    fn record_count(&self) -> usize {
        self.stamp.record_count.max(1) as usize
    }
}

impl BatchWriter {
    /// Takes records up to about `max_bytes` (and always the first batch, whole when it
    /// is transactional); `expected` is about what the records to come add up to.
    pub fn new(max_bytes: usize, expected: usize) -> BatchWriter {
        BatchWriter {
            done: Vec::new(),
            open: None,
            kept: None,
            compressions: Compressions::default(),
            taken: 0,
            size: 0,
            max_bytes,
            expected: expected.min(max_bytes),
            next_offset: 0,
        }
    }

    /// Serves compressed batches with the sections `kept` holds for them.
    pub fn serving_kept(mut self, kept: Arc<KeptSections>) -> BatchWriter {
        self.kept = kept.enabled().then_some(kept);
        self
    }

    /// Adds the record at `offset`, standing in its batch as `in_batch` says, unless the
    /// budget is spent: then false, and the record is left for a later read (with the
    /// rest of its transactional batch, which is served whole or not at all). A `codec`
    /// marks the first record of a batch produced compressed: a batch starts there and
    /// is served compressed by it.
    pub fn push(
        &mut self,
        offset: u64,
        r: &KafkaRecord,
        log_append_time: bool,
        (in_batch, codec): (InBatch, Option<i16>),
    ) -> bool {
        let size = approximate_size(r);
        let open = self.open.as_ref();
        let continues =
            codec.is_none() && open.is_some_and(|b| b.takes(offset, r, log_append_time, in_batch));
        if self.size > 0 && self.size + size > self.max_bytes {
            match open.and_then(|b| b.whole).filter(|_| continues) {
                // The answer's first batch goes whole, over the budget if need be.
                Some(t) if t.taken_before == 0 => {}
                Some(t) => {
                    self.take_back(t);
                    return false;
                }
                None => return false,
            }
        }
        let rest = self.expected.saturating_sub(self.size).max(size);
        if !continues {
            self.close();
            let whole = match in_batch {
                InBatch::First(stamp) if stamp.transactional || codec.is_some() => Some(Whole {
                    stamp,
                    taken_before: self.taken,
                    size_before: self.size,
                }),
                _ => None,
            };
            let mut batch = OpenBatch::new(offset, r.timestamp, log_append_time, rest, whole);
            batch.codec = codec.unwrap_or(0);
            self.open = Some(batch);
        }
        self.taken += 1;
        self.size += size;
        if let Some(b) = &mut self.open {
            b.push(r);
        }
        self.next_offset = offset + 1;
        true
    }

    /// Adds the marker at `offset` as a control batch of its own, exactly as
    /// `markers::batch` makes it, unless the budget is spent: then false.
    pub fn push_marker(
        &mut self,
        offset: u64,
        marker: ControlMarker,
        producer: ProducerStamp,
        timestamp: i64,
        log_append_time: bool,
    ) -> bool {
        let mut batch = markers::batch(
            marker.marker,
            producer.producer_id,
            producer.producer_epoch,
            marker.coordinator_epoch,
            timestamp,
        );
        if log_append_time {
            let mut header = BatchHeader::parse(&batch);
            batch = records::stamp_log_append_time(batch, &mut header, timestamp);
        }
        self.push_own(offset, records::place(batch, offset as i64), 1)
    }

    /// Adds the whole batch of `count` records stored at `offset` (the batch form), as
    /// produced but for its base offset, unless the budget is spent: then false. Its
    /// fillers are taken with it.
    pub fn push_whole(&mut self, offset: u64, batch: Bytes, count: u32) -> bool {
        self.push_own(
            offset,
            records::place(batch, offset as i64),
            u64::from(count),
        )
    }

    /// A filler at `offset`: taken with its batch when that was served; otherwise its
    /// batch is gone (Iggy expired the segment holding it, not the one holding its
    /// fillers), and an empty batch stands for it, as Kafka's cleaner leaves one, so
    /// consumers move past.
    pub fn push_filler(&mut self, offset: u64, timestamp: i64) -> bool {
        if offset < self.next_offset {
            return true;
        }
        // No record, and a last offset delta of 0: it spans its one offset.
        let empty = OpenBatch::new(offset, timestamp, false, 0, None).seal(0, 0);
        self.push_own(offset, empty, 1)
    }

    /// Adds `batch`, made elsewhere, standing for `count` offsets from `offset`.
    fn push_own(&mut self, offset: u64, batch: Bytes, count: u64) -> bool {
        if self.size > 0 && self.size + batch.len() > self.max_bytes {
            return false;
        }
        self.close();
        self.taken += count as usize;
        self.size += batch.len();
        self.done.push(batch);
        self.next_offset = offset + count;
        true
    }

    /// How many records the answer's first batch still lacks, when it is a
    /// transactional batch the records given so far did not complete: it is served
    /// whole, so the caller reads on for them.
    pub fn missing(&self) -> usize {
        let Some(b) = &self.open else { return 0 };
        match b.whole {
            Some(t) if t.taken_before == 0 => t.record_count().saturating_sub(b.count),
            _ => 0,
        }
    }

    /// About how many more records of the average size the answer has room for.
    pub fn room(&self) -> usize {
        self.max_bytes.saturating_sub(self.size) / self.average_record_size().max(1)
    }

    /// What a record taken so far adds to a batch, on average (for sizing polls).
    pub fn average_record_size(&self) -> usize {
        self.size / self.taken.max(1)
    }

    /// The batches, the offset after the last record taken, and the compressed batches
    /// among them. A transactional batch the records given did not complete is left for
    /// the next read, unless it is the answer's first: then it is served with the
    /// records there are.
    pub fn finish(mut self) -> (Vec<Bytes>, u64, Compressions) {
        let open = self.open.as_ref();
        let cut_short = open.and_then(|b| Some((b.whole?, b.count)));
        match cut_short.filter(|(t, count)| t.taken_before > 0 && *count < t.record_count()) {
            Some((t, _)) => self.take_back(t),
            None => self.close(),
        }
        (self.done, self.next_offset, self.compressions)
    }

    /// Drops the open transactional batch `t`: the next read starts at it.
    fn take_back(&mut self, t: Whole) {
        if let Some(b) = self.open.take() {
            self.taken = t.taken_before;
            self.size = t.size_before;
            self.next_offset = b.base_offset;
        }
    }

    fn close(&mut self) {
        if let Some(mut b) = self.open.take() {
            if b.codec != 0 {
                match b.compress(self.kept.as_deref()) {
                    Compressed::Kept => self.compressions.kept += 1,
                    Compressed::Made => self.compressions.made += 1,
                    Compressed::Not => {}
                }
            }
            self.done.push(b.finish());
        }
    }
}

impl OpenBatch {
    /// The batch header with its length, CRC, last offset delta, max timestamp and
    /// record count left for `finish`; room for about `records_bytes` of records. A
    /// batch served whole carries its producer; others none (consumers never need it).
    pub(super) fn new(
        base_offset: u64,
        base_timestamp: i64,
        log_append_time: bool,
        records_bytes: usize,
        whole: Option<Whole>,
    ) -> OpenBatch {
        let mut attributes = if log_append_time {
            TIMESTAMP_TYPE_BIT
        } else {
            0
        };
        let mut producer = (-1, -1, -1);
        if let Some(t) = &whole {
            if t.stamp.transactional {
                attributes |= TRANSACTIONAL_BIT;
            }
            let s = t.stamp;
            producer = (s.producer_id, s.producer_epoch, s.base_sequence);
        }
        let mut buf = BytesMut::with_capacity(HEADER_LEN + records_bytes);
        buf.put_i64(base_offset as i64);
        buf.put_i32(0); // batch length
        buf.put_i32(0); // partition leader epoch
        buf.put_i8(2); // magic
        buf.put_u32(0); // CRC
        buf.put_i16(attributes);
        buf.put_i32(0); // last offset delta
        buf.put_i64(base_timestamp);
        buf.put_i64(0); // max timestamp
        buf.put_i64(producer.0);
        buf.put_i16(producer.1);
        buf.put_i32(producer.2);
        buf.put_i32(0); // record count
        OpenBatch {
            buf,
            base_offset,
            base_timestamp,
            max_timestamp: base_timestamp,
            count: 0,
            log_append_time,
            whole,
            codec: 0,
        }
    }

    /// Whether the record at `offset` belongs in this batch: the next offset, the same
    /// timestamp type, and either both loose or the next record of this transactional
    /// batch. A record whose transactional batch's start was not read is loose.
    fn takes(
        &self,
        offset: u64,
        r: &KafkaRecord,
        log_append_time: bool,
        in_batch: InBatch,
    ) -> bool {
        let next = offset == self.base_offset + self.count as u64
            && log_append_time == self.log_append_time
            && (!log_append_time || self.base_timestamp == r.timestamp);
        match (self.whole, in_batch) {
            (Some(t), InBatch::Continues(n)) => {
                next && self.count < t.record_count() && n as usize == self.count
            }
            // The rest of a compressed batch is not numbered: its stamp counts it.
            (Some(t), InBatch::Loose) if !t.stamp.transactional => {
                next && self.count < t.record_count()
            }
            (Some(_), _) => false,
            (None, InBatch::First(s)) => next && !s.transactional,
            (None, _) => next,
        }
    }

    pub(super) fn push(&mut self, r: &KafkaRecord) {
        let out = &mut self.buf;
        let timestamp_delta = r.timestamp.wrapping_sub(self.base_timestamp);
        let delta = self.count as i64;
        let headers = r.headers.iter();
        // The record's length comes first, so it is computed before anything is written.
        let len = 1
            + varlong_len(timestamp_delta)
            + varlong_len(delta)
            + nullable_len(r.key.as_deref())
            + nullable_len(r.value.as_deref())
            + varlong_len(r.headers.len() as i64)
            + headers
                .map(|(k, v)| nullable_len(Some(k)) + nullable_len(v.as_deref()))
                .sum::<usize>();
        out.reserve(len + 5);
        put_varlong(out, len as i64);
        out.put_u8(0); // attributes
        put_varlong(out, timestamp_delta);
        put_varlong(out, delta);
        put_nullable(out, r.key.as_deref());
        put_nullable(out, r.value.as_deref());
        put_varlong(out, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_nullable(out, Some(k));
            put_nullable(out, v.as_deref());
        }
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(r.timestamp);
    }

    /// The batch as it is now, sealed.
    pub(super) fn finish(self) -> Bytes {
        let count = self.count as i32;
        self.seal(count - 1, count)
    }

    /// The batch with its length, last offset delta, max timestamp, record count and CRC
    /// written.
    fn seal(mut self, last_delta: i32, count: i32) -> Bytes {
        let out = &mut self.buf;
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        out[8..12].copy_from_slice(&batch_length.to_be_bytes());
        out[ATTRIBUTES_AT + 2..ATTRIBUTES_AT + 6].copy_from_slice(&last_delta.to_be_bytes());
        out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8]
            .copy_from_slice(&self.max_timestamp.to_be_bytes());
        out[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&count.to_be_bytes());
        let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
        out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        self.buf.freeze()
    }

    /// The records section compressed by the batch's codec, the attributes saying so:
    /// the section `kept` holds for these records, or compressed here; left
    /// uncompressed (and logged) if that fails.
    fn compress(&mut self, kept: Option<&KeptSections>) -> Compressed {
        let records = &self.buf[HEADER_LEN..];
        let found = kept.and_then(|k| k.get(&Content::of(self.codec, records)));
        let mut out = BytesMut::with_capacity(
            HEADER_LEN + found.as_ref().map_or(records.len() / 2, Bytes::len),
        );
        out.extend_from_slice(&self.buf[..HEADER_LEN]);
        let compressed = match found {
            Some(section) => {
                out.extend_from_slice(&section);
                Compressed::Kept
            }
            None => match records::deflate(self.codec, records, &mut out) {
                Ok(()) => Compressed::Made,
                Err(e) => {
                    tracing::warn!(error = %e, "serving a batch uncompressed");
                    return Compressed::Not;
                }
            },
        };
        let attributes = i16::from_be_bytes([out[ATTRIBUTES_AT], out[ATTRIBUTES_AT + 1]]);
        let attributes = attributes | self.codec;
        out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
        self.buf = out;
        compressed
    }
}
