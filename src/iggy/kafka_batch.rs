//! Kafka record batches (magic v2), record by record.
//!
//! `kafka_protocol::records` keeps a record's headers in an `IndexMap`, which merges
//! repeated header keys; Kafka allows them, and the Iggy mapping must be byte-exact.
//! So records are read and written here: decompression comes from `records::inflate`,
//! the record layout (varints, keys, values, ordered headers) is parsed directly.
//! Batches written back to consumers are uncompressed.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use iggy_kafka_actors::records::{
    self, InflateError, ATTRIBUTES_AT, COMPRESSION_MASK, HEADER_LEN, LOG_OVERHEAD,
    MAX_TIMESTAMP_AT, RECORD_COUNT_AT, TIMESTAMP_TYPE_BIT,
};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BatchCodecError {
    #[error("record batch is truncated")]
    Truncated,
    #[error("record batch compression {0} is unknown")]
    Compression(i16),
    #[error("cannot decompress the record batch: {0}")]
    Decompress(String),
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

/// Reads every record of a validated batch (decompressing it if needed).
pub fn decode(batch: &Bytes) -> Result<DecodedBatch, BatchCodecError> {
    if batch.len() < HEADER_LEN {
        return Err(BatchCodecError::Truncated);
    }
    let attributes = (&batch[ATTRIBUTES_AT..]).get_i16();
    let base_timestamp = (&batch[ATTRIBUTES_AT + 6..]).get_i64();
    let max_timestamp = (&batch[MAX_TIMESTAMP_AT..]).get_i64();
    let count = (&batch[RECORD_COUNT_AT..]).get_i32().max(0) as usize;
    let log_append_time = attributes & TIMESTAMP_TYPE_BIT != 0;
    let mut body = inflate(attributes & COMPRESSION_MASK, batch.slice(HEADER_LEN..))?;
    // The count is the producer's claim; never reserve more than the bytes can hold.
    let mut records = Vec::with_capacity(count.min(body.len() / 7 + 1));
    for _ in 0..count {
        let mut r = read_record(&mut body, base_timestamp)?;
        if log_append_time {
            r.timestamp = max_timestamp;
        }
        records.push(r);
    }
    Ok(DecodedBatch {
        log_append_time,
        records,
    })
}

/// The records part of a batch, decompressed. Produce has already decompressed it
/// within the request's budget (`max_decompressed_request_bytes`), so no budget here.
fn inflate(codec: i16, data: Bytes) -> Result<Bytes, BatchCodecError> {
    if codec == 0 {
        return Ok(data);
    }
    let mut out = Vec::new();
    records::inflate(codec, &data, usize::MAX, &mut out).map_err(|e| match e {
        InflateError::Codec(codec) => BatchCodecError::Compression(codec),
        other => BatchCodecError::Decompress(other.to_string()),
    })?;
    Ok(out.into())
}

fn read_record(buf: &mut Bytes, base_timestamp: i64) -> Result<KafkaRecord, BatchCodecError> {
    let len = varint(buf)?;
    let len = usize::try_from(len).map_err(|_| BatchCodecError::Record("negative length"))?;
    let mut r = take(buf, len)?;
    take(&mut r, 1)?; // attributes: unused in v2
    let timestamp = base_timestamp.wrapping_add(varlong(&mut r)?);
    let _offset_delta = varint(&mut r)?;
    let key = nullable_bytes(&mut r)?;
    let value = nullable_bytes(&mut r)?;
    let count = varint(&mut r)?;
    let count = usize::try_from(count).map_err(|_| BatchCodecError::Record("negative count"))?;
    let mut headers = Vec::with_capacity(count.min(r.len() / 2 + 1));
    for _ in 0..count {
        let key = nullable_bytes(&mut r)?.ok_or(BatchCodecError::Record("null header key"))?;
        let value = nullable_bytes(&mut r)?;
        headers.push((key, value));
    }
    Ok(KafkaRecord {
        timestamp,
        key,
        value,
        headers,
    })
}

fn take(buf: &mut Bytes, n: usize) -> Result<Bytes, BatchCodecError> {
    if buf.len() < n {
        return Err(BatchCodecError::Truncated);
    }
    Ok(buf.split_to(n))
}

fn nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, BatchCodecError> {
    match varint(buf)? {
        -1 => Ok(None),
        n if n < -1 => Err(BatchCodecError::Record("negative length")),
        n => take(buf, n as usize).map(Some),
    }
}

fn varlong(buf: &mut Bytes) -> Result<i64, BatchCodecError> {
    let mut raw: u64 = 0;
    for shift in (0..70).step_by(7) {
        if buf.is_empty() {
            return Err(BatchCodecError::Truncated);
        }
        let b = buf.get_u8();
        raw |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    Err(BatchCodecError::Record("varint too long"))
}

fn varint(buf: &mut Bytes) -> Result<i32, BatchCodecError> {
    let v = varlong(buf)?;
    i32::try_from(v).map_err(|_| BatchCodecError::Record("varint out of range"))
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

/// Writes one uncompressed batch holding `records` at consecutive offsets from
/// `base_offset`. No producer id: consumers never need it. Each record's length is
/// computed before it is written, so every value is copied once, straight into
/// the batch (Fetch's main cost for large records is this copy).
pub fn encode(base_offset: i64, log_append_time: bool, records: &[KafkaRecord]) -> Bytes {
    let base_timestamp = records.first().map_or(-1, |r| r.timestamp);
    let max_timestamp = records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
    let capacity: usize = records.iter().map(approximate_size).sum();
    let mut out = BytesMut::with_capacity(HEADER_LEN + capacity);
    out.put_i64(base_offset);
    out.put_i32(0); // batch length, filled in below
    out.put_i32(0); // partition leader epoch
    out.put_i8(2); // magic
    out.put_u32(0); // CRC, filled in below
    out.put_i16(if log_append_time {
        TIMESTAMP_TYPE_BIT
    } else {
        0
    });
    out.put_i32(records.len() as i32 - 1);
    out.put_i64(base_timestamp);
    out.put_i64(max_timestamp);
    out.put_i64(-1); // producer id
    out.put_i16(-1); // producer epoch
    out.put_i32(-1); // base sequence
    out.put_i32(records.len() as i32);
    for (delta, r) in records.iter().enumerate() {
        let timestamp_delta = r.timestamp.wrapping_sub(base_timestamp);
        let headers = r.headers.iter();
        let len = 1
            + varlong_len(timestamp_delta)
            + varlong_len(delta as i64)
            + nullable_len(r.key.as_deref())
            + nullable_len(r.value.as_deref())
            + varlong_len(r.headers.len() as i64)
            + headers
                .map(|(k, v)| nullable_len(Some(k)) + nullable_len(v.as_deref()))
                .sum::<usize>();
        put_varlong(&mut out, len as i64);
        out.put_u8(0); // attributes
        put_varlong(&mut out, timestamp_delta);
        put_varlong(&mut out, delta as i64);
        put_nullable(&mut out, r.key.as_deref());
        put_nullable(&mut out, r.value.as_deref());
        put_varlong(&mut out, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_nullable(&mut out, Some(k));
            put_nullable(&mut out, v.as_deref());
        }
    }
    let batch_length = (out.len() - LOG_OVERHEAD) as i32;
    out[8..12].copy_from_slice(&batch_length.to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    fn sample() -> Vec<KafkaRecord> {
        vec![
            KafkaRecord {
                timestamp: 1_700_000_000_000,
                key: None,
                value: Some(Bytes::from_static(b"v")),
                headers: vec![
                    (Bytes::from_static(b"h"), Some(Bytes::from_static(b"1"))),
                    (Bytes::from_static(b"h"), None),
                ],
            },
            KafkaRecord {
                timestamp: 1_600_000_000_000,
                key: Some(Bytes::new()),
                value: None,
                headers: vec![],
            },
        ]
    }

    #[test]
    fn encoded_batches_decode_to_the_same_records() {
        let batch = encode(42, false, &sample());
        crate_validates(&batch);
        let decoded = decode(&batch).unwrap();
        assert!(!decoded.log_append_time);
        assert_eq!(decoded.records, sample());
    }

    #[test]
    fn varlong_len_is_what_put_varlong_writes() {
        let edges = [
            0,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            8191,
            8192,
            i32::MAX as i64,
            i64::MAX,
            i64::MIN,
        ];
        for v in edges.into_iter().chain((-300..300).map(|i| i * 977)) {
            let mut out = BytesMut::new();
            put_varlong(&mut out, v);
            assert_eq!(varlong_len(v), out.len(), "{v}");
        }
    }

    #[test]
    fn records_of_every_size_class_encode_with_exact_lengths() {
        let records: Vec<KafkaRecord> = [0usize, 1, 63, 64, 200, 8191, 8192, 70_000]
            .into_iter()
            .enumerate()
            .map(|(i, n)| KafkaRecord {
                timestamp: 1_700_000_000_000 - i as i64 * 1_000_000,
                key: (i % 2 == 0).then(|| Bytes::from(vec![b'k'; n / 3])),
                value: Some(Bytes::from(vec![i as u8; n])),
                headers: vec![(
                    Bytes::from(vec![b'h'; n / 7]),
                    Some(Bytes::from(vec![1; n])),
                )],
            })
            .collect();
        let batch = encode(7, false, &records);
        iggy_kafka_actors::records::validate(&batch).expect("valid batch");
        assert_eq!(decode(&batch).unwrap().records, records);
    }

    fn crate_validates(batch: &Bytes) {
        let header = iggy_kafka_actors::records::validate(batch).expect("valid batch");
        assert_eq!(header.record_count, 2);
        let mut b = batch.clone();
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut b).unwrap();
        assert_eq!(set.records[0].offset, 42);
        assert_eq!(set.records[1].timestamp, 1_600_000_000_000);
    }

    #[test]
    fn compressed_batches_from_kafka_protocol_decode() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let records: Vec<Record> = (0..3)
                .map(|i| Record {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: -1,
                    producer_id: -1,
                    producer_epoch: -1,
                    timestamp_type: TimestampType::Creation,
                    offset: i,
                    // kafka_protocol starts a new batch where offset - sequence changes.
                    sequence: i as i32,
                    timestamp: 10 + i,
                    key: Some(Bytes::from(format!("k{i}"))),
                    value: Some(Bytes::from(vec![i as u8; 100])),
                    headers: Default::default(),
                })
                .collect();
            let mut buf = BytesMut::new();
            RecordBatchEncoder::encode(
                &mut buf,
                &records,
                &RecordEncodeOptions {
                    version: 2,
                    compression,
                },
            )
            .unwrap();
            let decoded = decode(&buf.freeze()).unwrap();
            assert_eq!(decoded.records.len(), 3, "{compression:?}");
            assert_eq!(decoded.records[2].timestamp, 12);
            assert_eq!(decoded.records[1].key.as_deref(), Some(&b"k1"[..]));
        }
    }

    #[test]
    fn log_append_time_batches_give_every_record_the_batch_time() {
        let batch = encode(0, true, &sample());
        let decoded = decode(&batch).unwrap();
        assert!(decoded.log_append_time);
        assert!(decoded
            .records
            .iter()
            .all(|r| r.timestamp == 1_700_000_000_000));
    }

    #[test]
    fn truncated_records_are_errors_not_panics() {
        let batch = encode(0, false, &sample());
        for cut in HEADER_LEN..batch.len() {
            let mut b = BytesMut::from(&batch[..cut]);
            // Keep the declared count: the records section is what is short.
            b.truncate(cut);
            assert!(decode(&b.freeze()).is_err(), "cut at {cut}");
        }
    }
}
