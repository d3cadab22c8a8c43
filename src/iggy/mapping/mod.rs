//! One Kafka record ⇄ one Iggy message (`docs/IGGY_MAPPING.md` is the reference).
//!
//! The Kafka value is the Iggy payload, unchanged, so native Iggy consumers read it
//! as is. Everything else travels in Iggy user headers under the reserved prefix
//! `kafka.`, with a marker header naming the mapping version:
//!
//! | header                 | kind   | when                                         |
//! |------------------------|--------|----------------------------------------------|
//! | `kafka.mapping`        | uint8  | always: mapping version (2)                  |
//! | `kafka.timestamp`      | int64  | the record timestamp in ms, when Iggy's      |
//! |                        |        | `origin_timestamp` does not hold it          |
//! | `kafka.timestamp_type` | string | only `LogAppendTime` (absent: `CreateTime`)  |
//! | `kafka.key`            | raw    | key of 1 to 255 bytes                        |
//! | `kafka.value`          | string | `null` for a null value (payload empty)      |
//! | `kafka.producer`       | raw    | first record of an idempotent batch          |
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

use super::kafka_batch::{KafkaHeader, KafkaRecord};

/// Version 2 drops `kafka.timestamp` where `origin_timestamp` already holds the
/// timestamp (almost always): one header less per message, which Iggy ingests markedly
/// faster at small record sizes. Version 1 messages are still read.
pub const MAPPING_VERSION: u8 = 2;
/// Header names the gateway owns; a Kafka header named like this goes to the fallback.
pub const RESERVED_PREFIX: &str = "kafka.";
const MARKER: &[u8] = b"kafka.mapping";
const TIMESTAMP: &[u8] = b"kafka.timestamp";
const TIMESTAMP_TYPE: &[u8] = b"kafka.timestamp_type";
const KEY: &[u8] = b"kafka.key";
const VALUE: &[u8] = b"kafka.value";
pub const PRODUCER: &[u8] = b"kafka.producer";
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
    MAPPING_VERSION,
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
}

/// What an idempotent producer's batch says about itself; kept on its first message
/// so duplicate and sequence checks can be rebuilt after a gateway restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerStamp {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl ProducerStamp {
    fn encode(&self) -> [u8; 18] {
        let mut out = [0; 18];
        out[..8].copy_from_slice(&self.producer_id.to_be_bytes());
        out[8..10].copy_from_slice(&self.producer_epoch.to_be_bytes());
        out[10..14].copy_from_slice(&self.base_sequence.to_be_bytes());
        out[14..].copy_from_slice(&self.record_count.to_be_bytes());
        out
    }

    fn decode(mut b: &[u8]) -> Option<Self> {
        (b.len() == 18).then(|| ProducerStamp {
            producer_id: b.get_i64(),
            producer_epoch: b.get_i16(),
            base_sequence: b.get_i32(),
            record_count: b.get_i32(),
        })
    }
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

/// The record as an Iggy message whose `origin_timestamp` is `origin_micros`.
/// The record is taken by value so its value moves into the payload, uncounted.
pub fn to_iggy(
    r: KafkaRecord,
    log_append_time: bool,
    producer: Option<ProducerStamp>,
    origin_micros: u64,
) -> IggyParts {
    let timestamp_held = timestamp_from_origin(origin_micros) == Some(r.timestamp);
    let plain = r.key.is_none() && r.headers.is_empty() && producer.is_none();
    if plain && r.value.is_some() && !log_append_time && timestamp_held {
        return IggyParts {
            payload: r.value.unwrap_or_default(),
            headers: Bytes::from_static(MARKER_ONLY),
        };
    }
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION]);
    if !timestamp_held {
        tlv.entry(TIMESTAMP, INT64, &r.timestamp.to_le_bytes());
    }
    if log_append_time {
        tlv.entry(TIMESTAMP_TYPE, STRING, LOG_APPEND_TIME);
    }
    if r.value.is_none() {
        tlv.entry(VALUE, STRING, NULL);
    }
    if let Some(p) = producer {
        tlv.entry(PRODUCER, RAW, &p.encode());
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
    /// Set on the first message of an idempotent producer's batch.
    pub producer: Option<ProducerStamp>,
}

/// The Kafka record a message stands for.
pub fn from_iggy(m: IggyView<'_>) -> Result<FromIggy, MappingError> {
    if let (Some(h), Some(timestamp)) = (m.user_headers, timestamp_from_origin(m.origin_micros)) {
        if h.as_ref() == MARKER_ONLY {
            return Ok(FromIggy {
                record: KafkaRecord {
                    timestamp,
                    key: None,
                    value: Some(m.payload.clone()),
                    headers: Vec::new(),
                },
                log_append_time: false,
                producer: None,
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
            producer: None,
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
            PRODUCER => producer = ProducerStamp::decode(&h.value),
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
    Ok(FromIggy {
        record,
        log_append_time,
        producer,
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

#[cfg(test)]
mod tests;
