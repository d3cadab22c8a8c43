//! Kafka record batches (magic v2), record by record.
//!
//! `kafka_protocol::records` keeps a record's headers in an `IndexMap`, which merges
//! repeated header keys; Kafka allows them, and the Iggy mapping must be byte-exact.
//! So records are read and written here, from the records section Produce
//! decompressed (`AppendBatch::records`); the record layout (varints, keys, values,
//! ordered headers) is parsed directly.
//! Batches written back to consumers are uncompressed.

use bytes::{BufMut, Bytes, BytesMut};

use iggy_kafka_actors::protocol::records::{
    ATTRIBUTES_AT, HEADER_LEN, LOG_OVERHEAD, MAX_TIMESTAMP_AT, RECORD_COUNT_AT, TIMESTAMP_TYPE_BIT,
};
use iggy_kafka_actors::store::AppendBatch;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BatchCodecError {
    #[error("record batch is truncated")]
    Truncated,
    #[error("malformed record: {0}")]
    Record(&'static str),
}

/// A header as Kafka carries it: a string key (kept as its bytes) and a nullable value.
pub type KafkaHeader = (Bytes, Option<Bytes>);

/// One record, with the timestamp a consumer sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaRecord {
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<KafkaHeader>,
}

/// The records of one produced batch.
#[derive(Debug)]
pub struct DecodedBatch {
    /// `message.timestamp.type=LogAppendTime`: every record's timestamp is the
    /// batch's max timestamp (the append time the gateway stamped).
    pub log_append_time: bool,
    pub records: Vec<KafkaRecord>,
}

/// Reads every record of a produced batch from the records Produce decompressed.
pub fn decode(batch: &AppendBatch) -> Result<DecodedBatch, BatchCodecError> {
    let h = &batch.header;
    let body = &batch.records;
    let mut cursor = Cursor {
        data: body,
        pos: 0,
        end: body.len(),
    };
    // The count is the producer's claim; never reserve more than the bytes can hold.
    let count = h.record_count.max(0) as usize;
    let mut records = Vec::with_capacity(count.min(body.len() / 7 + 1));
    for index in 0..count {
        let mut r = read_record(&mut cursor, h.base_timestamp, index)?;
        if h.log_append_time {
            r.timestamp = h.max_timestamp;
        }
        records.push(r);
    }
    if cursor.left() != 0 {
        return Err(BatchCodecError::Record("bytes after the last record"));
    }
    Ok(DecodedBatch {
        log_append_time: h.log_append_time,
        records,
    })
}

/// The record at `index` of its batch: its offset delta must be `index`, since the log
/// numbers records one after another (Kafka refuses the same in compressed batches).
fn read_record(
    c: &mut Cursor<'_>,
    base_timestamp: i64,
    index: usize,
) -> Result<KafkaRecord, BatchCodecError> {
    let len = c.varint()?;
    let len = usize::try_from(len).map_err(|_| BatchCodecError::Record("negative length"))?;
    let mut r = c.record(len)?;
    r.skip(1)?; // attributes: unused in v2
    let timestamp = base_timestamp.wrapping_add(r.varlong()?);
    if usize::try_from(r.varint()?) != Ok(index) {
        return Err(BatchCodecError::Record("offset delta out of order"));
    }
    let key = r.nullable_bytes()?;
    let value = r.nullable_bytes()?;
    let count = r.varint()?;
    let count = usize::try_from(count).map_err(|_| BatchCodecError::Record("negative count"))?;
    let mut headers = Vec::with_capacity(count.min(r.left() / 2 + 1));
    for _ in 0..count {
        let key = r
            .nullable_bytes()?
            .ok_or(BatchCodecError::Record("null header key"))?;
        let value = r.nullable_bytes()?;
        headers.push((key, value));
    }
    // As Kafka's `DefaultRecord.readFrom`: a record is exactly as long as it says.
    if r.left() != 0 {
        return Err(BatchCodecError::Record("record longer than its fields"));
    }
    Ok(KafkaRecord {
        timestamp,
        key,
        value,
        headers,
    })
}

/// A read position in a records section. Only keys, values and headers become
/// `Bytes` (each a shared slice of the section: one reference count per field, which
/// is the cost that matters on small records); everything else is read in place.
struct Cursor<'a> {
    data: &'a Bytes,
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.end - self.pos
    }

    /// The next `len` bytes as a cursor of their own (one record); this one moves past them.
    fn record(&mut self, len: usize) -> Result<Cursor<'a>, BatchCodecError> {
        let start = self.pos;
        self.skip(len)?;
        Ok(Cursor {
            data: self.data,
            pos: start,
            end: self.pos,
        })
    }

    fn skip(&mut self, n: usize) -> Result<(), BatchCodecError> {
        if self.left() < n {
            return Err(BatchCodecError::Truncated);
        }
        self.pos += n;
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<Bytes, BatchCodecError> {
        let start = self.pos;
        self.skip(n)?;
        Ok(self.data.slice(start..self.pos))
    }

    fn nullable_bytes(&mut self) -> Result<Option<Bytes>, BatchCodecError> {
        match self.varint()? {
            -1 => Ok(None),
            n if n < -1 => Err(BatchCodecError::Record("negative length")),
            n => self.take(n as usize).map(Some),
        }
    }

    fn varlong(&mut self) -> Result<i64, BatchCodecError> {
        let mut raw: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = *self.data[..self.end]
                .get(self.pos)
                .ok_or(BatchCodecError::Truncated)?;
            self.pos += 1;
            raw |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(BatchCodecError::Record("varint too long"))
    }

    fn varint(&mut self) -> Result<i32, BatchCodecError> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| BatchCodecError::Record("varint out of range"))
    }
}

fn put_varlong(out: &mut BytesMut, v: i64) {
    let mut raw = ((v << 1) ^ (v >> 63)) as u64;
    while raw >= 0x80 {
        out.put_u8((raw as u8) | 0x80);
        raw >>= 7;
    }
    out.put_u8(raw as u8);
}

/// Bytes `put_varlong` writes for `v`.
fn varlong_len(v: i64) -> usize {
    let raw = ((v << 1) ^ (v >> 63)) as u64;
    (64 - raw.leading_zeros() as usize).max(1).div_ceil(7)
}

/// Bytes `put_nullable` writes for `b`.
fn nullable_len(b: Option<&[u8]>) -> usize {
    b.map_or(1, |b| varlong_len(b.len() as i64) + b.len())
}

fn put_nullable(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.put_slice(b);
        }
    }
}

/// Bytes a record adds to a batch, about (for fetch size budgets).
pub fn approximate_size(r: &KafkaRecord) -> usize {
    let headers: usize = r
        .headers
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Bytes::len) + 4)
        .sum();
    20 + r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len) + headers
}

/// Writes fetched records straight into uncompressed batches, as they come. A new
/// batch starts at a gap in offsets or where the timestamp type changes (a
/// LogAppendTime batch carries one time for all its records). Each value is copied
/// once, into the batch: Fetch's main cost for large records is this copy.
pub struct BatchWriter {
    done: Vec<Bytes>,
    open: Option<OpenBatch>,
    /// Records taken so far, the bytes they add up to (about), and the most to take.
    taken: usize,
    size: usize,
    max_bytes: usize,
    /// About what all the records to come add up to: a batch's buffer is sized for the
    /// rest of it once, instead of growing by copies.
    expected: usize,
    next_offset: u64,
}

struct OpenBatch {
    buf: BytesMut,
    base_offset: u64,
    base_timestamp: i64,
    max_timestamp: i64,
    count: usize,
    log_append_time: bool,
}

impl BatchWriter {
    /// Takes records up to about `max_bytes` (and always the first); `expected` is
    /// about what the records to come add up to.
    pub fn new(max_bytes: usize, expected: usize) -> BatchWriter {
        BatchWriter {
            done: Vec::new(),
            open: None,
            taken: 0,
            size: 0,
            max_bytes,
            expected: expected.min(max_bytes),
            next_offset: 0,
        }
    }

    /// Adds the record at `offset`, unless the budget is spent: then false, and the
    /// record is left for a later read.
    pub fn push(&mut self, offset: u64, r: &KafkaRecord, log_append_time: bool) -> bool {
        let size = approximate_size(r);
        if self.size > 0 && self.size + size > self.max_bytes {
            return false;
        }
        let rest = self.expected.saturating_sub(self.size).max(size);
        self.taken += 1;
        self.size += size;
        let continues = self.open.as_ref().is_some_and(|b| {
            offset == b.base_offset + b.count as u64
                && log_append_time == b.log_append_time
                && (!log_append_time || b.base_timestamp == r.timestamp)
        });
        if !continues {
            self.close();
            let batch = OpenBatch::new(offset, r.timestamp, log_append_time, rest);
            self.open = Some(batch);
        }
        if let Some(b) = &mut self.open {
            b.push(r);
        }
        self.next_offset = offset + 1;
        true
    }

    /// What a record taken so far adds to a batch, on average (for sizing polls).
    pub fn average_record_size(&self) -> usize {
        self.size / self.taken.max(1)
    }

    /// The batches, and the offset after the last record taken.
    pub fn finish(mut self) -> (Vec<Bytes>, u64) {
        self.close();
        (self.done, self.next_offset)
    }

    fn close(&mut self) {
        if let Some(b) = self.open.take() {
            self.done.push(b.finish());
        }
    }
}

impl OpenBatch {
    /// The batch header with its length, CRC, last offset delta, max timestamp and
    /// record count left for `finish`; room for about `records_bytes` of records.
    fn new(
        base_offset: u64,
        base_timestamp: i64,
        log_append_time: bool,
        records_bytes: usize,
    ) -> OpenBatch {
        let mut buf = BytesMut::with_capacity(HEADER_LEN + records_bytes);
        buf.put_i64(base_offset as i64);
        buf.put_i32(0); // batch length
        buf.put_i32(0); // partition leader epoch
        buf.put_i8(2); // magic
        buf.put_u32(0); // CRC
        buf.put_i16(if log_append_time {
            TIMESTAMP_TYPE_BIT
        } else {
            0
        });
        buf.put_i32(0); // last offset delta
        buf.put_i64(base_timestamp);
        buf.put_i64(0); // max timestamp
        buf.put_i64(-1); // producer id: consumers never need it
        buf.put_i16(-1); // producer epoch
        buf.put_i32(-1); // base sequence
        buf.put_i32(0); // record count
        OpenBatch {
            buf,
            base_offset,
            base_timestamp,
            max_timestamp: base_timestamp,
            count: 0,
            log_append_time,
        }
    }

    fn push(&mut self, r: &KafkaRecord) {
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

    fn finish(mut self) -> Bytes {
        let out = &mut self.buf;
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        out[8..12].copy_from_slice(&batch_length.to_be_bytes());
        let last_delta = self.count as i32 - 1;
        out[ATTRIBUTES_AT + 2..ATTRIBUTES_AT + 6].copy_from_slice(&last_delta.to_be_bytes());
        out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8]
            .copy_from_slice(&self.max_timestamp.to_be_bytes());
        out[RECORD_COUNT_AT..RECORD_COUNT_AT + 4]
            .copy_from_slice(&(self.count as i32).to_be_bytes());
        let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        self.buf.freeze()
    }
}

#[cfg(test)]
mod tests;
