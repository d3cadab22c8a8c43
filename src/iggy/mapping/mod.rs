//! One Kafka record ⇄ one Iggy message (`docs/IGGY_MAPPING.md` is the reference).
//!
//! The Kafka value is the Iggy payload, unchanged, so native Iggy consumers read it
//! as is. Everything else travels in Iggy user headers under the reserved prefix
//! `kafka.`, with a marker header naming the mapping version:
//!
//! | header                 | kind   | when                                         |
//! |------------------------|--------|----------------------------------------------|
//! | `kafka.mapping`        | uint8  | always: mapping version (3)                  |
//! | `kafka.timestamp`      | int64  | the record timestamp in ms, when Iggy's      |
//! |                        |        | `origin_timestamp` does not hold it          |
//! | `kafka.timestamp_type` | string | only `LogAppendTime` (absent: `CreateTime`)  |
//! | `kafka.key`            | raw    | key of 1 to 255 bytes                        |
//! | `kafka.value`          | string | `null` for a null value (payload empty)      |
//! | `kafka.producer`       | raw    | first record of an idempotent batch, and a   |
//! |                        |        | marker's producer (with the transactional    |
//! |                        |        | flag on a transaction's batches)             |
//! | `kafka.txn`            | uint32 | the rest of a transactional batch's records: |
//! |                        |        | each one's place after the first             |
//! | `kafka.control`        | raw    | a transaction marker, a message of its own   |
//! | `kafka.extra.NNN`      | raw    | fallback blob, in chunks of up to 255 bytes  |
//! | `kafka.split`          | uint32 | fallback blob too big for headers: it is the |
//! |                        |        | first N bytes of the payload                 |
//!
//! Kafka headers become Iggy headers of the same name (string key, raw value) when
//! Iggy can hold them exactly. Iggy header keys and values are 1 to 255 bytes and a
//! message's headers form a map; Kafka allows empty or null values, repeated names,
//! any length and order. A record whose key or headers do not fit goes to the
//! lossless fallback: its key and/or full header list are serialized into a blob.
//!
//! The user headers are written and read as Iggy's wire TLV list
//! (`kind u8 | length u32 LE | bytes` for each key, then each value) in order,
//! so the gateway keeps Kafka header order even where the SDK's map would not.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use iggy_common::{HeaderKind, HeaderValue};

use super::kafka_batch::{
    marker_of_type, marker_type, ControlMarker, InBatch, KafkaHeader, KafkaRecord, ProducerStamp,
};

/// Version 2 drops `kafka.timestamp` where `origin_timestamp` already holds the
/// timestamp (almost always): one header less per message, which Iggy ingests markedly
/// faster at small record sizes. Version 3 keeps transactions: a flags byte on
/// `kafka.producer`, `kafka.txn` and `kafka.control`; an older gateway refuses such
/// messages instead of serving aborted records as plain ones. Only messages of a
/// transaction are written as version 3: the rest stay version 2, so gateways of the
/// previous release on the same server keep reading them during a rolling upgrade.
/// Versions 1 and 2 are still read. Version 4 is the batch form (`iggy.message.format=
/// batch`): a message whose payload is a whole Kafka batch, followed by a header-less
/// filler for each of its other records, so offsets stay Kafka's; written only on the
/// topics that ask for it.
pub const MAPPING_VERSION: u8 = BATCH_VERSION;
/// The version of messages that hold nothing of a transaction.
const PLAIN_VERSION: u8 = 2;
/// The version of a transaction's records and markers.
const TXN_VERSION: u8 = 3;
/// The version of a whole batch.
const BATCH_VERSION: u8 = 4;
/// Header names the gateway owns; a Kafka header named like this goes to the fallback.
pub const RESERVED_PREFIX: &str = "kafka.";
const MARKER: &[u8] = b"kafka.mapping";
const TIMESTAMP: &[u8] = b"kafka.timestamp";
const TIMESTAMP_TYPE: &[u8] = b"kafka.timestamp_type";
const KEY: &[u8] = b"kafka.key";
const VALUE: &[u8] = b"kafka.value";
pub const PRODUCER: &[u8] = b"kafka.producer";
const TXN: &[u8] = b"kafka.txn";
const CONTROL: &[u8] = b"kafka.control";
const CODEC: &[u8] = b"kafka.codec";
const EXTRA: &str = "kafka.extra.";
const SPLIT: &[u8] = b"kafka.split";
const LOG_APPEND_TIME: &[u8] = b"LogAppendTime";
const NULL: &[u8] = b"null";

/// The user headers of the commonest record (no key, no headers, a value, its timestamp
/// in `origin_timestamp`): the marker alone. Shared, so such records cost no header
/// allocation to write and no parsing to read.
const MARKER_ONLY: &[u8] = &[
    STRING,
    13,
    0,
    0,
    0,
    b'k',
    b'a',
    b'f',
    b'k',
    b'a',
    b'.',
    b'm',
    b'a',
    b'p',
    b'p',
    b'i',
    b'n',
    b'g',
    UINT8,
    1,
    0,
    0,
    0,
    PLAIN_VERSION,
];

/// The `kafka.txn` entry without its value (a uint32): with the marker, all the headers
/// of a plain record of a transactional batch after its first, read without parsing.
const TXN_ENTRY: &[u8] = &[
    STRING, 9, 0, 0, 0, b'k', b'a', b'f', b'k', b'a', b'.', b't', b'x', b'n', UINT32, 4, 0, 0, 0,
];

/// Iggy's limits on one header field and on all of a message's headers.
const MAX_FIELD: usize = 255;
const MAX_HEADERS_BYTES: usize = iggy_common::MAX_USER_HEADERS_SIZE as usize;

const STRING: u8 = 2;
const RAW: u8 = 1;
const INT64: u8 = 7;
const UINT8: u8 = 9;
const UINT32: u8 = 11;

const BLOB_KEY: u8 = 1;
const BLOB_HEADERS: u8 = 2;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MappingError {
    #[error("message headers are malformed")]
    Headers,
    #[error("message was written by mapping version {0}, newer than this gateway's")]
    Version(u8),
    #[error("the gateway's fallback data in the message is malformed")]
    Blob,
    #[error("the whole batch in the message is malformed")]
    Batch,
}

/// `kafka.producer` flags (version 3; older stamps have none).
const STAMP_TRANSACTIONAL: u8 = 0x01;

/// `kafka.producer`: producer id i64, epoch i16, base sequence i32, record count i32,
/// big-endian, then for a transactional producer (version 3) the flags u8.
fn encode_stamp(s: &ProducerStamp) -> Vec<u8> {
    let mut out = Vec::with_capacity(19);
    out.extend_from_slice(&s.producer_id.to_be_bytes());
    out.extend_from_slice(&s.producer_epoch.to_be_bytes());
    out.extend_from_slice(&s.base_sequence.to_be_bytes());
    out.extend_from_slice(&s.record_count.to_be_bytes());
    if s.transactional {
        out.push(STAMP_TRANSACTIONAL);
    }
    out
}

/// A stamp of any version: 18 bytes before version 3 (no flags: not transactional).
fn decode_stamp(mut b: &[u8]) -> Option<ProducerStamp> {
    if b.len() != 18 && b.len() != 19 {
        return None;
    }
    Some(ProducerStamp {
        producer_id: b.get_i64(),
        producer_epoch: b.get_i16(),
        base_sequence: b.get_i32(),
        record_count: b.get_i32(),
        transactional: b.first().is_some_and(|f| f & STAMP_TRANSACTIONAL != 0),
    })
}

/// `kafka.control`: the marker's type i16 (Kafka's: 0 abort, 1 commit) and the
/// coordinator epoch i32, big-endian.
fn encode_control(c: &ControlMarker) -> [u8; 6] {
    let mut out = [0; 6];
    out[..2].copy_from_slice(&marker_type(c.marker).to_be_bytes());
    out[2..].copy_from_slice(&c.coordinator_epoch.to_be_bytes());
    out
}

fn decode_control(mut b: &[u8]) -> Result<ControlMarker, MappingError> {
    if b.len() != 6 {
        return Err(MappingError::Headers);
    }
    let marker = marker_of_type(b.get_i16()).ok_or(MappingError::Headers)?;
    Ok(ControlMarker {
        marker,
        coordinator_epoch: b.get_i32(),
    })
}

/// An Iggy message's payload and encoded user headers.
#[derive(Debug, PartialEq, Eq)]
pub struct IggyParts {
    pub payload: Bytes,
    pub headers: Bytes,
}

#[derive(Default)]
struct Tlv(BytesMut);

impl Tlv {
    fn field(&mut self, kind: u8, bytes: &[u8]) {
        self.0.put_u8(kind);
        self.0.put_u32_le(bytes.len() as u32);
        self.0.put_slice(bytes);
    }

    fn entry(&mut self, name: &[u8], kind: u8, value: &[u8]) {
        self.field(STRING, name);
        self.field(kind, value);
    }
}

fn entry_size(name: usize, value: usize) -> usize {
    10 + name + value
}

/// Kafka headers Iggy holds as they are: every name a unique, unreserved UTF-8
/// string of 1–255 bytes, every value 1–255 bytes, all within the size limit.
fn headers_are_native(headers: &[KafkaHeader], budget: usize) -> bool {
    let mut size = 0;
    for (i, (name, value)) in headers.iter().enumerate() {
        let Some(value) = value else { return false };
        let fits = |n: usize| (1..=MAX_FIELD).contains(&n);
        if !fits(name.len())
            || !fits(value.len())
            || name.starts_with(RESERVED_PREFIX.as_bytes())
            || std::str::from_utf8(name).is_err()
            || headers[..i].iter().any(|(n, _)| n == name)
        {
            return false;
        }
        size += entry_size(name.len(), value.len());
    }
    size <= budget
}

fn key_is_native(key: &Option<Bytes>) -> bool {
    key.as_ref()
        .is_none_or(|k| (1..=MAX_FIELD).contains(&k.len()))
}

/// The headers every gateway message starts with: the marker, then the timestamp and
/// its type where `origin_timestamp` does not say them.
fn leading(timestamp: i64, log_append_time: bool, origin_micros: u64, version: u8) -> Tlv {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[version]);
    if timestamp_from_origin(origin_micros) != Some(timestamp) {
        tlv.entry(TIMESTAMP, INT64, &timestamp.to_le_bytes());
    }
    if log_append_time {
        tlv.entry(TIMESTAMP_TYPE, STRING, LOG_APPEND_TIME);
    }
    tlv
}

/// The record as an Iggy message whose `origin_timestamp` is `origin_micros`, standing
/// in its batch as `in_batch` says; `codec` (Kafka's attribute code) on the first
/// record of a compressed batch, so reads compress what follows it again. The record
/// is taken by value so its value moves into the payload, uncounted.
pub fn to_iggy(
    r: KafkaRecord,
    log_append_time: bool,
    (in_batch, codec): (InBatch, u8),
    origin_micros: u64,
) -> IggyParts {
    let timestamp_held = timestamp_from_origin(origin_micros) == Some(r.timestamp);
    let plain = r.key.is_none() && r.headers.is_empty() && in_batch == InBatch::Loose && codec == 0;
    if plain && r.value.is_some() && !log_append_time && timestamp_held {
        return IggyParts {
            payload: r.value.unwrap_or_default(),
            headers: Bytes::from_static(MARKER_ONLY),
        };
    }
    let version = match in_batch {
        InBatch::Loose => PLAIN_VERSION,
        InBatch::First(p) if !p.transactional => PLAIN_VERSION,
        InBatch::First(_) | InBatch::Continues(_) => TXN_VERSION,
    };
    let mut tlv = leading(r.timestamp, log_append_time, origin_micros, version);
    if r.value.is_none() {
        tlv.entry(VALUE, STRING, NULL);
    }
    match in_batch {
        InBatch::Loose => {}
        InBatch::First(p) => tlv.entry(PRODUCER, RAW, &encode_stamp(&p)),
        InBatch::Continues(n) => tlv.entry(TXN, UINT32, &n.to_le_bytes()),
    }
    if codec != 0 {
        tlv.entry(CODEC, UINT8, &[codec]);
    }
    let native_key = key_is_native(&r.key);
    if let (true, Some(key)) = (native_key, &r.key) {
        tlv.entry(KEY, RAW, key);
    }
    let value = r.value.unwrap_or_default();
    // Room left for Kafka headers, keeping space for a `kafka.split` entry.
    let budget = MAX_HEADERS_BYTES.saturating_sub(tlv.0.len() + entry_size(SPLIT.len(), 4));
    let native_headers = headers_are_native(&r.headers, budget);
    if native_headers {
        for (name, value) in &r.headers {
            tlv.entry(name, RAW, value.as_deref().unwrap_or_default());
        }
    }
    if native_key && native_headers {
        return IggyParts {
            payload: value,
            headers: tlv.0.freeze(),
        };
    }
    // The fallback: whatever Iggy cannot hold, serialized.
    let blob = encode_blob(
        (!native_key).then_some(&r.key),
        (!native_headers).then_some(&r.headers[..]),
    );
    let budget = MAX_HEADERS_BYTES.saturating_sub(tlv.0.len() + entry_size(SPLIT.len(), 4));
    let chunks = blob.len().div_ceil(MAX_FIELD);
    let chunk_entry = entry_size(EXTRA.len() + 3, MAX_FIELD);
    if chunks <= 999 && chunks * chunk_entry <= budget {
        for (i, chunk) in blob.chunks(MAX_FIELD).enumerate() {
            tlv.entry(format!("{EXTRA}{i:03}").as_bytes(), RAW, chunk);
        }
        return IggyParts {
            payload: value,
            headers: tlv.0.freeze(),
        };
    }
    // Too big for headers at all: the blob leads the payload.
    tlv.entry(SPLIT, UINT32, &(blob.len() as u32).to_le_bytes());
    let mut payload = BytesMut::with_capacity(blob.len() + value.len());
    payload.extend_from_slice(&blob);
    payload.extend_from_slice(&value);
    IggyParts {
        payload: payload.freeze(),
        headers: tlv.0.freeze(),
    }
}

/// A transaction marker as an Iggy message of its own: an empty payload, its
/// `kafka.control`, and the stamp of the producer whose transaction it ends (base
/// sequence −1: a marker has none). The timestamp is the marker batch's.
pub fn marker_to_iggy(
    marker: ControlMarker,
    producer: ProducerStamp,
    timestamp: i64,
    log_append_time: bool,
    origin_micros: u64,
) -> IggyParts {
    let mut tlv = leading(timestamp, log_append_time, origin_micros, TXN_VERSION);
    tlv.entry(CONTROL, RAW, &encode_control(&marker));
    tlv.entry(PRODUCER, RAW, &encode_stamp(&producer));
    IggyParts {
        payload: Bytes::new(),
        headers: tlv.0.freeze(),
    }
}

fn encode_blob(key: Option<&Option<Bytes>>, headers: Option<&[KafkaHeader]>) -> Bytes {
    let mut out = BytesMut::new();
    out.put_u8(
        if key.is_some() { BLOB_KEY } else { 0 } | if headers.is_some() { BLOB_HEADERS } else { 0 },
    );
    let put_nullable = |out: &mut BytesMut, b: &Option<Bytes>| match b {
        None => out.put_i32(-1),
        Some(b) => {
            out.put_i32(b.len() as i32);
            out.put_slice(b);
        }
    };
    if let Some(key) = key {
        put_nullable(&mut out, key);
    }
    if let Some(headers) = headers {
        out.put_u32(headers.len() as u32);
        for (name, value) in headers {
            out.put_u32(name.len() as u32);
            out.put_slice(name);
            put_nullable(&mut out, value);
        }
    }
    out.freeze()
}

type Blob = (Option<Option<Bytes>>, Option<Vec<KafkaHeader>>);

fn decode_blob(mut b: Bytes) -> Result<Blob, MappingError> {
    fn take(b: &mut Bytes, n: usize) -> Result<Bytes, MappingError> {
        (b.len() >= n)
            .then(|| b.split_to(n))
            .ok_or(MappingError::Blob)
    }
    fn nullable(b: &mut Bytes) -> Result<Option<Bytes>, MappingError> {
        let len = take(b, 4)?.get_i32();
        match len {
            -1 => Ok(None),
            n if n < 0 => Err(MappingError::Blob),
            n => take(b, n as usize).map(Some),
        }
    }
    let flags = take(&mut b, 1)?[0];
    let key = if flags & BLOB_KEY != 0 {
        Some(nullable(&mut b)?)
    } else {
        None
    };
    let headers = if flags & BLOB_HEADERS != 0 {
        let count = take(&mut b, 4)?.get_u32() as usize;
        let mut headers = Vec::with_capacity(count.min(b.len() / 8));
        for _ in 0..count {
            let len = take(&mut b, 4)?.get_u32() as usize;
            let name = take(&mut b, len)?;
            headers.push((name, nullable(&mut b)?));
        }
        Some(headers)
    } else {
        None
    };
    Ok((key, headers))
}

/// One user header as it is on the wire.
pub struct RawHeader {
    pub key_kind: u8,
    pub key: Bytes,
    pub value_kind: u8,
    pub value: Bytes,
}

/// The user headers of a message, in wire order.
pub fn parse_headers(headers: &Bytes) -> Result<Vec<RawHeader>, MappingError> {
    let mut b = headers.clone();
    let field = |b: &mut Bytes| -> Result<(u8, Bytes), MappingError> {
        if b.len() < 5 {
            return Err(MappingError::Headers);
        }
        let kind = b.get_u8();
        let len = b.get_u32_le() as usize;
        if b.len() < len {
            return Err(MappingError::Headers);
        }
        Ok((kind, b.split_to(len)))
    };
    let mut out = Vec::new();
    while !b.is_empty() {
        let (key_kind, key) = field(&mut b)?;
        let (value_kind, value) = field(&mut b)?;
        out.push(RawHeader {
            key_kind,
            key,
            value_kind,
            value,
        });
    }
    Ok(out)
}

/// What a record needs from an Iggy message.
pub struct IggyView<'a> {
    pub id: u128,
    pub payload: &'a Bytes,
    pub user_headers: Option<&'a Bytes>,
    /// Iggy's append time, in microseconds.
    pub timestamp_micros: u64,
    /// The time the writer gave the message, in microseconds.
    pub origin_micros: u64,
}

/// The Kafka timestamp (ms) an origin timestamp (µs) stands for, when it stands for one
/// exactly: a whole number of milliseconds within Kafka's range.
fn timestamp_from_origin(origin_micros: u64) -> Option<i64> {
    origin_micros
        .is_multiple_of(1000)
        .then(|| i64::try_from(origin_micros / 1000).ok())
        .flatten()
}

/// A decoded message: the record, and for gateway messages the timestamp type.
#[derive(Debug, PartialEq, Eq)]
pub struct FromIggy {
    pub record: KafkaRecord,
    pub log_append_time: bool,
    /// Where the record stands in the batch it was appended in.
    pub in_batch: InBatch,
    /// Set on a transaction marker, whose producer is its `in_batch` stamp.
    pub control: Option<ControlMarker>,
    /// Whether the message holds a record, a whole batch or a filler.
    pub stored: Stored,
    /// On the first record of a batch produced compressed: its codec (`kafka.codec`).
    pub codec: u8,
}

/// What one message of a partition holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// One record (or a marker): the record form, and native messages.
    Record,
    /// A whole Kafka batch of this many records, as produced: the record's value.
    Batch(u32),
    /// A record of the whole batch `in_batch` places it in, held there.
    Filler,
}

/// Where a plain record stands in its batch when its headers are only the marker (of
/// any version read) and maybe `kafka.txn`: the commonest messages, compared, not parsed.
fn plain_in_batch(headers: &[u8]) -> Option<InBatch> {
    let (marker, rest) = headers.split_at_checked(MARKER_ONLY.len())?;
    let (version, entry) = marker.split_last()?;
    if entry != &MARKER_ONLY[..entry.len()] || *version > MAPPING_VERSION {
        return None;
    }
    if rest.is_empty() {
        return Some(InBatch::Loose);
    }
    let n: [u8; 4] = rest.strip_prefix(TXN_ENTRY)?.try_into().ok()?;
    Some(InBatch::Continues(u32::from_le_bytes(n)))
}

/// The Kafka record a message stands for.
pub fn from_iggy(m: IggyView<'_>) -> Result<FromIggy, MappingError> {
    if let Some(stored) = batch_form::from_iggy(&m) {
        return stored;
    }
    if let (Some(h), Some(timestamp)) = (m.user_headers, timestamp_from_origin(m.origin_micros)) {
        if let Some(in_batch) = plain_in_batch(h) {
            return Ok(FromIggy {
                record: KafkaRecord {
                    timestamp,
                    key: None,
                    value: Some(m.payload.clone()),
                    headers: Vec::new(),
                },
                log_append_time: false,
                in_batch,
                control: None,
                stored: Stored::Record,
                codec: 0,
            });
        }
    }
    let headers = match m.user_headers {
        Some(h) => parse_headers(h)?,
        None => Vec::new(),
    };
    let is_gateway = |h: &RawHeader| h.key_kind == STRING && h.key.as_ref() == MARKER;
    let Some(marker) = headers.iter().find(|h| is_gateway(h)) else {
        return Ok(FromIggy {
            record: native_record(m, headers),
            log_append_time: false,
            in_batch: InBatch::Loose,
            control: None,
            stored: Stored::Record,
            codec: 0,
        });
    };
    let version = marker.value.first().copied().ok_or(MappingError::Headers)?;
    if version > MAPPING_VERSION {
        return Err(MappingError::Version(version));
    }
    // Version 1 always wrote `kafka.timestamp`; version 2 only when this is not it.
    let mut record = KafkaRecord {
        timestamp: timestamp_from_origin(m.origin_micros).unwrap_or_default(),
        key: None,
        value: Some(m.payload.clone()),
        headers: Vec::new(),
    };
    let mut log_append_time = false;
    let mut producer = None;
    let mut continues = None;
    let mut control = None;
    let mut codec = 0;
    let mut extra: Vec<(Bytes, Bytes)> = Vec::new();
    let mut split = None;
    for h in headers {
        let name = h.key.as_ref();
        if h.key_kind != STRING || !name.starts_with(RESERVED_PREFIX.as_bytes()) {
            record.headers.push((h.key, Some(h.value)));
            continue;
        }
        match name {
            TIMESTAMP => {
                let b: [u8; 8] = h
                    .value
                    .as_ref()
                    .try_into()
                    .map_err(|_| MappingError::Headers)?;
                record.timestamp = i64::from_le_bytes(b);
            }
            TIMESTAMP_TYPE => log_append_time = h.value.as_ref() == LOG_APPEND_TIME,
            KEY => record.key = Some(h.value),
            VALUE if h.value.as_ref() == NULL => record.value = None,
            PRODUCER => producer = decode_stamp(&h.value),
            TXN => {
                let b: [u8; 4] = h
                    .value
                    .as_ref()
                    .try_into()
                    .map_err(|_| MappingError::Headers)?;
                continues = Some(u32::from_le_bytes(b));
            }
            CONTROL => control = Some(decode_control(&h.value)?),
            CODEC => codec = h.value.first().copied().ok_or(MappingError::Headers)?,
            SPLIT => {
                let b: [u8; 4] = h
                    .value
                    .as_ref()
                    .try_into()
                    .map_err(|_| MappingError::Headers)?;
                split = Some(u32::from_le_bytes(b) as usize);
            }
            _ if name.starts_with(EXTRA.as_bytes()) => extra.push((h.key, h.value)),
            // A reserved name this version does not use (written by an older one).
            _ => {}
        }
    }
    let blob = match split {
        Some(n) => {
            let payload = m.payload;
            if payload.len() < n {
                return Err(MappingError::Blob);
            }
            if record.value.is_some() {
                record.value = Some(payload.slice(n..));
            }
            Some(payload.slice(..n))
        }
        None if !extra.is_empty() => {
            // Chunk names sort in chunk order (zero-padded indexes).
            extra.sort_by(|a, b| a.0.cmp(&b.0));
            let mut blob = BytesMut::new();
            extra
                .iter()
                .for_each(|(_, chunk)| blob.extend_from_slice(chunk));
            Some(blob.freeze())
        }
        None => None,
    };
    if let Some(blob) = blob {
        let (key, headers) = decode_blob(blob)?;
        if let Some(key) = key {
            record.key = key;
        }
        if let Some(headers) = headers {
            record.headers = headers;
        }
    }
    let in_batch = match (producer, continues) {
        (Some(stamp), _) => InBatch::First(stamp),
        (None, Some(n)) => InBatch::Continues(n),
        (None, None) => InBatch::Loose,
    };
    // A marker is read by its producer's stamp: without one it is no marker.
    if control.is_some() && producer.is_none() {
        return Err(MappingError::Headers);
    }
    Ok(FromIggy {
        record,
        log_append_time,
        in_batch,
        control,
        stored: Stored::Record,
        codec,
    })
}

/// A native Iggy message as Kafka sees it: no key, its user headers as Kafka
/// headers (string and raw values as bytes, typed values as text), its append time.
fn native_record(m: IggyView<'_>, headers: Vec<RawHeader>) -> KafkaRecord {
    let text = |kind: u8, bytes: Bytes| -> Bytes {
        match HeaderKind::from_code(kind) {
            Ok(HeaderKind::Raw | HeaderKind::String) | Err(_) => bytes,
            Ok(kind) => HeaderValue::from_raw(kind, &bytes)
                .map(|v| Bytes::from(v.to_string_value()))
                .unwrap_or(bytes),
        }
    };
    KafkaRecord {
        timestamp: (m.timestamp_micros / 1000) as i64,
        key: None,
        value: Some(m.payload.clone()),
        headers: headers
            .into_iter()
            .map(|h| (text(h.key_kind, h.key), Some(text(h.value_kind, h.value))))
            .collect(),
    }
}

mod batch_form;
pub use batch_form::{batch_to_iggy, filler_id};

#[cfg(test)]
mod tests;
