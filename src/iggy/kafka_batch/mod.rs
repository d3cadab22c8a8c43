//! Kafka record batches (magic v2), record by record.
//!
//! `kafka_protocol::records` keeps a record's headers in an `IndexMap`, which merges
//! repeated header keys; Kafka allows them, and the Iggy mapping must be byte-exact.
//! So records are read and written here, from the records section Produce
//! decompressed (`AppendBatch::records`); the record layout (varints, keys, values,
//! ordered headers) is parsed directly. A transaction marker (a control batch) is read
//! from the batch itself ([`decode_marker`]).
//! Batches written back to consumers are uncompressed ([`BatchWriter`]).

use bytes::{BufMut, Bytes, BytesMut};

use iggy_kafka_actors::protocol::markers::Marker;
use iggy_kafka_actors::protocol::records::{ATTRIBUTES_AT, COMPRESSION_MASK, HEADER_LEN};
use iggy_kafka_actors::store::AppendBatch;

mod writer;

pub use writer::BatchWriter;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BatchCodecError {
    #[error("record batch is truncated")]
    Truncated,
    #[error("malformed record: {0}")]
    Record(&'static str),
    #[error("malformed transaction marker: {0}")]
    Marker(&'static str),
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

/// What an idempotent or transactional producer's batch says about itself, kept on
/// its first record: duplicate and sequence checks are rebuilt from it after a restart,
/// and a read serves a transactional batch whole, with these fields, from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerStamp {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
    pub transactional: bool,
}

/// Where a stored record stands in the batch it was appended in, as far as a read of
/// it must know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InBatch {
    /// Nothing to know: its batch may be merged with its neighbours on read.
    Loose,
    /// The first record of an idempotent or transactional producer's batch.
    First(ProducerStamp),
    /// The record this many places after the first of a transactional batch.
    Continues(u32),
}

/// What a transaction marker says besides its producer: commit or abort, and the
/// epoch of the coordinator that wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlMarker {
    pub marker: Marker,
    pub coordinator_epoch: i32,
}

/// Kafka's `ControlRecordType` codes of the markers.
pub fn marker_type(marker: Marker) -> i16 {
    match marker {
        Marker::Abort => 0,
        Marker::Commit => 1,
    }
}

pub fn marker_of_type(kind: i16) -> Option<Marker> {
    match kind {
        0 => Some(Marker::Abort),
        1 => Some(Marker::Commit),
        _ => None,
    }
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
    let records = each_record(batch, |c, index| {
        let mut r = read_record(c, h.base_timestamp, index)?;
        if h.log_append_time {
            r.timestamp = h.max_timestamp;
        }
        Ok(r)
    })?;
    Ok(DecodedBatch {
        log_append_time: h.log_append_time,
        records,
    })
}

/// `read` applied to each record of a produced batch's records section, in order, with
/// its index; the section must hold exactly the records the header counts.
fn each_record<T>(
    batch: &AppendBatch,
    mut read: impl FnMut(&mut Cursor<'_>, usize) -> Result<T, BatchCodecError>,
) -> Result<Vec<T>, BatchCodecError> {
    let body = &batch.records;
    let mut cursor = Cursor {
        data: body,
        pos: 0,
        end: body.len(),
    };
    // The count is the producer's claim; never reserve more than the bytes can hold.
    let count = batch.header.record_count.max(0) as usize;
    let mut out = Vec::with_capacity(count.min(body.len() / 7 + 1));
    for index in 0..count {
        out.push(read(&mut cursor, index)?);
    }
    if cursor.left() != 0 {
        return Err(BatchCodecError::Record("bytes after the last record"));
    }
    Ok(out)
}

/// Each record's timestamp, from the records Produce decompressed: what a batch kept
/// whole (`log.rs`, the batch form) needs of its records besides its own bytes. Only
/// the framing and offset deltas are read; the rest stays as produced.
pub fn timestamps(batch: &AppendBatch) -> Result<Vec<i64>, BatchCodecError> {
    let h = &batch.header;
    each_record(batch, |c, index| {
        let mut r = c.framed_record()?;
        r.skip(1)?; // attributes
        let timestamp = h.base_timestamp.wrapping_add(r.varlong()?);
        check_delta(&mut r, index)?;
        Ok(match h.log_append_time {
            true => h.max_timestamp,
            false => timestamp,
        })
    })
}

/// The marker a control batch holds (`protocol/markers.rs` lays it out), read from the
/// batch's own bytes: the gateway writes markers uncompressed, with no records section
/// decompressed for them.
pub fn decode_marker(batch: &AppendBatch) -> Result<ControlMarker, BatchCodecError> {
    let h = &batch.header;
    let bytes = &batch.bytes;
    if bytes.len() < HEADER_LEN {
        return Err(BatchCodecError::Truncated);
    }
    let attributes = i16::from_be_bytes([bytes[ATTRIBUTES_AT], bytes[ATTRIBUTES_AT + 1]]);
    if attributes & COMPRESSION_MASK != 0 {
        return Err(BatchCodecError::Marker("compressed"));
    }
    if h.record_count != 1 {
        return Err(BatchCodecError::Marker("not exactly one record"));
    }
    let body = bytes.slice(HEADER_LEN..);
    let mut cursor = Cursor {
        data: &body,
        pos: 0,
        end: body.len(),
    };
    let r = read_record(&mut cursor, h.base_timestamp, 0)?;
    if cursor.left() != 0 {
        return Err(BatchCodecError::Record("bytes after the last record"));
    }
    // Key: version i16, type i16; value: version i16, coordinator epoch i32.
    let key = r.key.filter(|k| k.len() == 4);
    let key = key.ok_or(BatchCodecError::Marker("key is not version and type"))?;
    let marker = marker_of_type(i16::from_be_bytes([key[2], key[3]]))
        .ok_or(BatchCodecError::Marker("neither commit nor abort"))?;
    let value = r.value.filter(|v| v.len() >= 6);
    let value = value.ok_or(BatchCodecError::Marker("value holds no coordinator epoch"))?;
    Ok(ControlMarker {
        marker,
        coordinator_epoch: i32::from_be_bytes([value[2], value[3], value[4], value[5]]),
    })
}

/// The record at `index` of its batch (`check_delta`).
fn read_record(
    c: &mut Cursor<'_>,
    base_timestamp: i64,
    index: usize,
) -> Result<KafkaRecord, BatchCodecError> {
    let mut r = c.framed_record()?;
    r.skip(1)?; // attributes: unused in v2
    let timestamp = base_timestamp.wrapping_add(r.varlong()?);
    check_delta(&mut r, index)?;
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

/// The record's offset delta must be `index`: the log numbers records one after
/// another (Kafka refuses the same in compressed batches).
fn check_delta(r: &mut Cursor<'_>, index: usize) -> Result<(), BatchCodecError> {
    match usize::try_from(r.varint()?) == Ok(index) {
        true => Ok(()),
        false => Err(BatchCodecError::Record("offset delta out of order")),
    }
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

    /// The next record, by its length prefix, as a cursor of its own; this one moves
    /// past it.
    fn framed_record(&mut self) -> Result<Cursor<'a>, BatchCodecError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| BatchCodecError::Record("negative length"))?;
        self.record(len)
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

#[cfg(test)]
mod tests;
