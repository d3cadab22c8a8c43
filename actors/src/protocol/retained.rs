//! A stored batch's records one by one, and the batch rewritten with some of them left
//! out: what log compaction needs of the record format. The compactor reads keys with
//! [`records_of`]; an engine drops the records it was told to with [`retain`].
//!
//! A rewritten batch keeps its base offset, last offset delta, timestamps and producer
//! fields, as Kafka's cleaner keeps them for v2 batches: the offsets of kept records
//! never change, and a consumer steps past removed ones by the batch's last offset. Its
//! records are kept byte for byte (their deltas are from the same base) and written
//! uncompressed: decompressed once here, never compressed again.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::records::{
    self, InflateError, ATTRIBUTES_AT, COMPRESSION_MASK, CRC_AT, HEADER_LEN, LENGTH_AT,
    LOG_OVERHEAD, RECORD_COUNT_AT,
};

/// Why a stored batch's records cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("stored batch cannot be decompressed: {0}")]
    Inflate(#[from] InflateError),
    #[error("stored batch has a malformed record at byte {0} of its records")]
    Malformed(usize),
}

/// One record of a stored batch as compaction sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    pub offset: i64,
    pub key: Option<Bytes>,
    /// A null value: a tombstone of its key (in a control batch, nothing of the kind).
    pub tombstone: bool,
}

/// What is left of a batch once some records are left out.
#[derive(Debug, PartialEq, Eq)]
pub enum Retained {
    /// Every record stays: the batch as it is.
    All,
    /// No record stays: the batch goes.
    Nothing,
    /// The batch rewritten with the records that stay.
    Some(Bytes),
}

/// The records of a whole stored batch, decompressed within `budget` bytes.
pub fn records_of(batch: &Bytes, budget: usize) -> Result<Vec<StoredRecord>, RecordsError> {
    Ok(split(batch, budget)?
        .into_iter()
        .map(|(record, _)| record)
        .collect())
}

/// The batch with only the records whose offsets `keep` holds.
pub fn retain(
    batch: &Bytes,
    budget: usize,
    keep: impl Fn(i64) -> bool,
) -> Result<Retained, RecordsError> {
    let all = split(batch, budget)?;
    let kept: Vec<&Bytes> = (all.iter())
        .filter(|(r, _)| keep(r.offset))
        .map(|(_, bytes)| bytes)
        .collect();
    if kept.len() == all.len() {
        return Ok(Retained::All);
    }
    if kept.is_empty() {
        return Ok(Retained::Nothing);
    }
    let body: usize = kept.iter().map(|b| b.len()).sum();
    let mut out = BytesMut::with_capacity(HEADER_LEN + body);
    out.put_slice(&batch[..HEADER_LEN]);
    for bytes in kept.iter() {
        out.put_slice(bytes);
    }
    let length = (HEADER_LEN - LOG_OVERHEAD + body) as i32;
    out[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
    let attributes = (&batch[ATTRIBUTES_AT..]).get_i16() & !COMPRESSION_MASK;
    out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    out[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&(kept.len() as i32).to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Retained::Some(out.freeze()))
}

/// Each record with its bytes (length prefix included), in order.
fn split(batch: &Bytes, budget: usize) -> Result<Vec<(StoredRecord, Bytes)>, RecordsError> {
    let base = records::base_offset(batch);
    let body = records::batch_records(batch, budget)?;
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let malformed = RecordsError::Malformed(at);
        let mut cursor = &body[at..];
        let len = varint(&mut cursor).ok_or(RecordsError::Malformed(at))?;
        let prefix = body.len() - at - cursor.len();
        let end = usize::try_from(len)
            .ok()
            .map(|len| at + prefix + len)
            .filter(|&end| end <= body.len())
            .ok_or(RecordsError::Malformed(at))?;
        let record = parse(&body[at + prefix..end], base).ok_or(malformed)?;
        out.push((record, body.slice(at..end)));
        at = end;
    }
    Ok(out)
}

/// A record's offset, key and whether its value is null (attributes, timestamp delta,
/// offset delta, key, value; the headers after them are not needed).
fn parse(mut r: &[u8], base: i64) -> Option<StoredRecord> {
    if r.is_empty() {
        return None;
    }
    r.advance(1); // attributes
    varint(&mut r)?; // timestamp delta
    let offset = base + varint(&mut r)?;
    let key = match varint(&mut r)? {
        -1 => None,
        len => {
            let len = usize::try_from(len).ok().filter(|&l| l <= r.len())?;
            let key = Bytes::copy_from_slice(&r[..len]);
            r.advance(len);
            Some(key)
        }
    };
    let tombstone = varint(&mut r)? == -1;
    Some(StoredRecord {
        offset,
        key,
        tombstone,
    })
}

/// A zigzag varint (up to 64 bits), as records encode every length and delta.
fn varint(buf: &mut &[u8]) -> Option<i64> {
    let mut raw: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *buf.first()?;
        buf.advance(1);
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType,
    };

    /// A batch at base offset 10 of records keyed k0, k1, ... (every third a tombstone).
    fn batch(n: i64, compression: Compression) -> Bytes {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: 7,
                producer_epoch: 1,
                timestamp_type: TimestampType::Creation,
                offset: 10 + i,
                sequence: i as i32,
                timestamp: 1_000 + i,
                key: Some(Bytes::from(format!("k{i}"))),
                value: (i % 3 != 2).then(|| Bytes::from(format!("value {i}"))),
                headers: IndexMap::new(),
            })
            .collect();
        let mut out = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut out, &records, &options).unwrap();
        out.freeze()
    }

    #[test]
    fn reads_offsets_keys_and_tombstones() {
        for compression in [Compression::None, Compression::Lz4] {
            let records = records_of(&batch(4, compression), 1 << 20).unwrap();
            let offsets: Vec<i64> = records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, vec![10, 11, 12, 13]);
            assert_eq!(records[1].key.as_deref(), Some(&b"k1"[..]));
            let tombstones: Vec<bool> = records.iter().map(|r| r.tombstone).collect();
            assert_eq!(tombstones, vec![false, false, true, false]);
        }
    }

    #[test]
    fn a_rewritten_batch_keeps_its_offsets_and_the_records_kept() {
        for compression in [Compression::None, Compression::Snappy] {
            let original = batch(5, compression);
            assert_eq!(retain(&original, 1 << 20, |_| true).unwrap(), Retained::All);
            assert_eq!(
                retain(&original, 1 << 20, |_| false).unwrap(),
                Retained::Nothing
            );
            let Retained::Some(rewritten) =
                retain(&original, 1 << 20, |o| o == 11 || o == 13).unwrap()
            else {
                panic!("some records stay");
            };
            records::check_frame(&rewritten).unwrap();
            assert_eq!(records::base_offset(&rewritten), 10);
            assert_eq!(
                records::end_offset(&rewritten),
                15,
                "the span is the original's"
            );
            let mut decoded = rewritten.clone();
            let set = RecordBatchDecoder::decode(&mut decoded).unwrap();
            let kept: Vec<(i64, i32, Option<Bytes>)> = (set.records.iter())
                .map(|r| (r.offset, r.sequence, r.value.clone()))
                .collect();
            assert_eq!(
                kept,
                vec![
                    (11, 1, Some(Bytes::from("value 1"))),
                    (13, 3, Some(Bytes::from("value 3"))),
                ]
            );
        }
    }
}
