//! Record batches (magic v2) as they arrive in Produce: the header is checked and
//! read without decompressing the records, so a batch is stored exactly as the
//! producer compressed it and served back without re-encoding.
//!
//! Layout of the 61-byte header (all big-endian):
//! base offset i64 | length i32 | leader epoch i32 | magic i8 | crc u32 |
//! attributes i16 | last offset delta i32 | base timestamp i64 | max timestamp i64 |
//! producer id i64 | producer epoch i16 | base sequence i32 | record count i32
//! The CRC (CRC-32C) covers everything from the attributes on, so the base offset
//! and leader epoch can be rewritten without recomputing it.
//!
//! Records are decompressed only by [`inflate`], which stops at a byte budget before
//! allocating past it, so a small batch that expands to gigabytes (a compression bomb)
//! costs the gateway at most the budget.

use std::io::{self, Read, Write};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;

// Field positions and attribute bits, shared with every codec of batches (the Iggy
// backend re-encodes records and reads them here too).
pub const HEADER_LEN: usize = 61;
pub const LENGTH_AT: usize = 8;
const LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
pub const CRC_AT: usize = 17;
pub const ATTRIBUTES_AT: usize = 21;
pub const LAST_OFFSET_DELTA_AT: usize = 23;
pub const MAX_TIMESTAMP_AT: usize = 35;
pub const RECORD_COUNT_AT: usize = 57;
/// Bytes before the length field's end: base offset and the length itself.
pub const LOG_OVERHEAD: usize = 12;

pub const COMPRESSION_MASK: i16 = 0x07;
pub const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub const TRANSACTIONAL_BIT: i16 = 0x10;
pub const CONTROL_BIT: i16 = 0x20;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BatchError {
    #[error("record data holds {0} bytes, shorter than a batch header")]
    Truncated(usize),
    #[error("batch length {declared} does not match the {actual} bytes sent")]
    LengthMismatch { declared: i64, actual: usize },
    #[error("record batch magic {0} is not supported; only v2 batches are accepted")]
    Magic(i8),
    #[error("record batch CRC mismatch: header says {expected:#010x}, data gives {actual:#010x}")]
    Crc { expected: u32, actual: u32 },
    #[error("record batch holds {count} records but its last offset delta is {last_offset_delta}")]
    Count { count: i32, last_offset_delta: i32 },
    #[error("control batches may only be written by a transaction coordinator")]
    Control,
}

impl BatchError {
    /// Kafka's answer: a bad checksum is CORRUPT_MESSAGE, anything else INVALID_RECORD.
    pub fn error_code(&self) -> ResponseError {
        match self {
            BatchError::Crc { .. } => ResponseError::CorruptMessage,
            _ => ResponseError::InvalidRecord,
        }
    }
}

/// The header fields the gateway acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub record_count: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub log_append_time: bool,
    pub transactional: bool,
    /// A transaction marker (`markers.rs`); only the gateway writes these.
    pub control: bool,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl BatchHeader {
    pub fn last_offset_delta(&self) -> i32 {
        self.record_count - 1
    }

    pub fn is_idempotent(&self) -> bool {
        self.producer_id >= 0
    }

    /// Sequence of the last record, wrapping like Kafka's `DefaultRecordBatch.incrementSequence`.
    pub fn last_sequence(&self) -> i32 {
        let last = self.base_sequence as i64 + self.last_offset_delta() as i64;
        if last > i32::MAX as i64 {
            (last - i32::MAX as i64 - 1) as i32
        } else {
            last as i32
        }
    }

    /// Reads the header of a complete, already-validated batch.
    pub fn parse(batch: &[u8]) -> Self {
        let mut b = &batch[ATTRIBUTES_AT..HEADER_LEN];
        let attributes = b.get_i16();
        let _last_offset_delta = b.get_i32();
        let base_timestamp = b.get_i64();
        let max_timestamp = b.get_i64();
        let producer_id = b.get_i64();
        let producer_epoch = b.get_i16();
        let base_sequence = b.get_i32();
        let record_count = b.get_i32();
        BatchHeader {
            record_count,
            base_timestamp,
            max_timestamp,
            log_append_time: attributes & TIMESTAMP_TYPE_BIT != 0,
            transactional: attributes & TRANSACTIONAL_BIT != 0,
            control: attributes & CONTROL_BIT != 0,
            producer_id,
            producer_epoch,
            base_sequence,
        }
    }
}

/// Checks the one batch a Produce (v3+) partition entry must hold: length, magic,
/// CRC and record count, as Kafka's `ProduceRequest.validateRecords` and
/// `LogValidator` do before anything is written.
pub fn validate(data: &[u8]) -> Result<BatchHeader, BatchError> {
    check_frame(data)?;
    let attributes = (&data[ATTRIBUTES_AT..]).get_i16();
    if attributes & CONTROL_BIT != 0 {
        return Err(BatchError::Control);
    }
    let last_offset_delta = (&data[ATTRIBUTES_AT + 2..]).get_i32();
    let header = BatchHeader::parse(data);
    if header.record_count < 1 || last_offset_delta != header.record_count - 1 {
        return Err(BatchError::Count {
            count: header.record_count,
            last_offset_delta,
        });
    }
    Ok(header)
}

/// Checks that `data` is one whole v2 batch, whatever it holds: its declared length,
/// magic and CRC. A stored batch, markers too, passes unless its bytes were lost.
pub fn check_frame(data: &[u8]) -> Result<(), BatchError> {
    if data.len() < HEADER_LEN {
        return Err(BatchError::Truncated(data.len()));
    }
    let declared = (&data[LENGTH_AT..]).get_i32() as i64;
    if declared + LOG_OVERHEAD as i64 != data.len() as i64 {
        return Err(BatchError::LengthMismatch {
            declared,
            actual: data.len() - LOG_OVERHEAD,
        });
    }
    let magic = data[MAGIC_AT] as i8;
    if magic != 2 {
        return Err(BatchError::Magic(magic));
    }
    let expected = (&data[CRC_AT..]).get_u32();
    let actual = crc32c::crc32c(&data[ATTRIBUTES_AT..]);
    if expected != actual {
        return Err(BatchError::Crc { expected, actual });
    }
    Ok(())
}

/// Why a batch's records cannot be decompressed within a budget.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InflateError {
    #[error("record batch compression {0} is unknown")]
    Codec(i16),
    #[error("record batch does not decompress: {0}")]
    Corrupt(String),
    #[error("records decompress to more than the {0} bytes a request may hold decompressed")]
    OverBudget(usize),
}

impl InflateError {
    /// Kafka's answer: data that does not decompress is CORRUPT_MESSAGE; records larger
    /// than the broker takes are MESSAGE_TOO_LARGE, on which producers split the batch.
    pub fn error_code(&self) -> ResponseError {
        match self {
            InflateError::OverBudget(_) => ResponseError::MessageTooLarge,
            _ => ResponseError::CorruptMessage,
        }
    }
}

/// Kafka's Snappy framing (snappy-java's `SnappyOutputStream`): this header, then
/// blocks of raw Snappy, each after its big-endian length. Unframed raw Snappy is read too.
const XERIAL_SNAPPY: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Largest zstd window accepted (16 MiB): a frame may ask the decoder for up to 2 GiB.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// Decompresses `records` (a batch's bytes after its header, compressed with `codec`,
/// the attributes' low bits) into `out`, which gets at most `budget` bytes; returns
/// how many it got. Output is produced in small steps, so over-budget input is
/// refused after `budget` bytes, never sized by what it claims.
pub fn inflate(
    codec: i16,
    records: &[u8],
    budget: usize,
    out: &mut impl Write,
) -> Result<usize, InflateError> {
    let mut out = Budgeted {
        out,
        left: budget,
        over: false,
    };
    let result = match codec {
        0 => out.write_all(records),
        1 => io::copy(&mut flate2::read::MultiGzDecoder::new(records), &mut out).map(drop),
        2 => inflate_snappy(records, &mut out),
        3 => io::copy(&mut lz4_flex::frame::FrameDecoder::new(records), &mut out).map(drop),
        4 => zstd::stream::read::Decoder::with_buffer(records).and_then(|mut d| {
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            io::copy(&mut d, &mut out).map(drop)
        }),
        other => return Err(InflateError::Codec(other)),
    };
    match result {
        _ if out.over => Err(InflateError::OverBudget(budget)),
        Err(e) => Err(InflateError::Corrupt(e.to_string())),
        Ok(()) => Ok(budget - out.left),
    }
}

/// Why a records section could not be compressed.
#[derive(Debug, thiserror::Error)]
#[error("records do not compress with codec {codec}: {message}")]
pub struct DeflateError {
    codec: i16,
    message: String,
}

/// `records` compressed by `codec` (Kafka's attribute codes 1 gzip, 2 snappy, 3 lz4,
/// 4 zstd) into `out`, each in the framing Kafka's clients read (snappy: xerial's, as
/// the Java client writes it). Fast levels: a backend that keeps records one by one
/// compresses them again on every read.
pub fn deflate(codec: i16, records: &[u8], out: &mut BytesMut) -> Result<(), DeflateError> {
    use bytes::BufMut;
    use kafka_protocol::compression::{Compressor, Snappy};
    let failed = |message: String| DeflateError { codec, message };
    let mut w = out.writer();
    let written = match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(&mut w, flate2::Compression::fast());
            e.write_all(records).and_then(|()| e.finish().map(drop))
        }
        2 => {
            let out = w.get_mut();
            return Snappy::compress(out, |tmp: &mut BytesMut| {
                tmp.extend_from_slice(records);
                Ok(())
            })
            .map_err(|e| failed(e.to_string()));
        }
        3 => {
            // As Kafka's producer frames it: independent 64 KiB blocks, no checksums
            // beyond the batch's CRC (a content checksum doubled lz4's time here).
            let frame = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(frame, &mut w);
            e.write_all(records)
                .and_then(|()| e.finish().map(drop).map_err(io::Error::other))
        }
        4 => zstd::stream::copy_encode(records, &mut w, 1),
        other => return Err(failed(format!("unknown codec {other}"))),
    };
    written.map_err(|e| failed(e.to_string()))
}

/// The codec a batch's attributes name (Kafka's codes: 0 none, 1 gzip, 2 snappy, 3 lz4,
/// 4 zstd).
pub fn codec(batch: &[u8]) -> i16 {
    (&batch[ATTRIBUTES_AT..]).get_i16() & COMPRESSION_MASK
}

/// How many bytes the records of a whole validated batch decompress to, checked within
/// `budget` and kept nowhere: decompressed in small steps into nothing.
pub fn batch_records_len(batch: &[u8], budget: usize) -> Result<usize, InflateError> {
    inflate(codec(batch), &batch[HEADER_LEN..], budget, &mut io::sink())
}

/// The records section of a whole validated batch, decompressed within `budget` bytes
/// by the codec its attributes name. Uncompressed, it is the batch's own bytes after
/// the header, not copied.
pub fn batch_records(batch: &Bytes, budget: usize) -> Result<Bytes, InflateError> {
    let codec = codec(batch);
    let records = batch.slice(HEADER_LEN..);
    if codec == 0 {
        return match records.len() > budget {
            true => Err(InflateError::OverBudget(budget)),
            false => Ok(records),
        };
    }
    let mut out = Vec::new();
    inflate(codec, &records, budget, &mut out)?;
    Ok(out.into())
}

/// Xerial-framed or raw Snappy. Each block states its decompressed length, which is
/// checked against what is left of the budget before room is made for it.
fn inflate_snappy<W: Write>(mut data: &[u8], out: &mut Budgeted<'_, W>) -> io::Result<()> {
    let corrupt = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut block = Vec::new();
    let mut one = |compressed: &[u8], out: &mut Budgeted<'_, W>| -> io::Result<()> {
        let len = snap::raw::decompress_len(compressed).map_err(io::Error::other)?;
        if len > out.left {
            out.over = true;
            return Err(corrupt("over budget"));
        }
        block.resize(len, 0);
        snap::raw::Decoder::new()
            .decompress(compressed, &mut block)
            .map_err(io::Error::other)?;
        out.write_all(&block)
    };
    if !data.starts_with(XERIAL_SNAPPY) {
        return one(data, out);
    }
    data = &data[XERIAL_SNAPPY.len()..];
    while !data.is_empty() {
        let mut len = [0u8; 4];
        data.read_exact(&mut len)
            .map_err(|_| corrupt("snappy block length cut short"))?;
        let len = u32::from_be_bytes(len) as usize;
        if data.len() < len {
            return Err(corrupt("snappy block cut short"));
        }
        let (compressed, rest) = data.split_at(len);
        one(compressed, out)?;
        data = rest;
    }
    Ok(())
}

/// A writer that takes at most `left` more bytes, then fails and says so.
struct Budgeted<'a, W> {
    out: &'a mut W,
    left: usize,
    over: bool,
}

impl<W: Write> Write for Budgeted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.left {
            self.over = true;
            return Err(io::Error::other("decompression budget exceeded"));
        }
        let n = self.out.write(buf)?;
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Stamps the append time into a batch of a `message.timestamp.type=LogAppendTime`
/// topic. The CRC covers it, so it is recomputed, as Kafka does, without recompressing.
pub fn stamp_log_append_time(batch: Bytes, header: &mut BatchHeader, now: i64) -> Bytes {
    let mut out = BytesMut::from(batch);
    let attributes = (&out[ATTRIBUTES_AT..]).get_i16() | TIMESTAMP_TYPE_BIT;
    out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&now.to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    header.log_append_time = true;
    header.max_timestamp = now;
    out.freeze()
}

/// Gives a batch its place in the log: the base offset the log assigned and the
/// leader epoch (always 0: this log never changes leader). Neither is under the CRC.
pub fn place(batch: Bytes, base_offset: i64) -> Bytes {
    let mut out = BytesMut::from(batch);
    out[..8].copy_from_slice(&base_offset.to_be_bytes());
    out[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&0i32.to_be_bytes());
    out.freeze()
}

/// Base offset of a stored batch.
pub fn base_offset(batch: &[u8]) -> i64 {
    (&batch[..8]).get_i64()
}

/// The offset after a stored batch's last record, by its last offset delta: a batch
/// compaction rewrote holds fewer records than its offsets span (`retained.rs`).
pub fn end_offset(batch: &[u8]) -> i64 {
    base_offset(batch) + (&batch[LAST_OFFSET_DELTA_AT..]).get_i32() as i64 + 1
}

/// True when a stored batch is all there, not its header alone (`LogCall::ReadHeaders`).
pub fn is_whole(batch: &[u8]) -> bool {
    batch.len() >= LOG_OVERHEAD
        && (&batch[LENGTH_AT..]).get_i32() as i64 + LOG_OVERHEAD as i64 == batch.len() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    fn batch(n: usize, compression: Compression) -> BytesMut {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: 7,
                producer_epoch: 1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: 10 + i as i32,
                timestamp: 1_000 + i as i64,
                key: Some(Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(vec![b'v'; i])),
                headers: IndexMap::new(),
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
        buf
    }

    #[test]
    fn reads_the_header_of_a_valid_batch() {
        for c in [Compression::None, Compression::Gzip, Compression::Zstd] {
            let h = validate(&batch(3, c)).unwrap();
            assert_eq!(h.record_count, 3);
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (7, 1, 10)
            );
            assert_eq!(h.last_sequence(), 12);
            assert_eq!(h.max_timestamp, 1_002);
        }
    }

    #[test]
    fn rejects_bad_crc_length_and_magic() {
        let mut b = batch(2, Compression::None);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        assert!(matches!(validate(&b), Err(BatchError::Crc { .. })));
        assert_eq!(
            validate(&b).unwrap_err().error_code(),
            ResponseError::CorruptMessage
        );

        let b = batch(2, Compression::None);
        assert!(matches!(
            validate(&b[..b.len() - 1]),
            Err(BatchError::LengthMismatch { .. })
        ));
        assert!(matches!(validate(&b[..20]), Err(BatchError::Truncated(20))));

        let mut b = batch(2, Compression::None);
        b[MAGIC_AT] = 1;
        assert_eq!(validate(&b), Err(BatchError::Magic(1)));
    }

    #[test]
    fn placing_sets_offset_and_epoch_and_keeps_the_crc_valid() {
        let placed = place(batch(2, Compression::None).freeze(), 4_242);
        assert_eq!(base_offset(&placed), 4_242);
        assert_eq!((&placed[LEADER_EPOCH_AT..]).get_i32(), 0);
        assert!(validate(&placed).is_ok());
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        let mut h = validate(&batch(3, Compression::None)).unwrap();
        h.base_sequence = i32::MAX - 1;
        assert_eq!(h.last_sequence(), 0);
    }

    /// One record of `size` zero bytes: a few hundred bytes compressed.
    fn bomb(size: usize, compression: Compression) -> BytesMut {
        let mut b = batch(1, compression);
        let record = Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: 0,
            sequence: -1,
            timestamp: 0,
            key: None,
            value: Some(Bytes::from(vec![0; size])),
            headers: IndexMap::new(),
        };
        b.clear();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut b, [&record], &options).unwrap();
        b
    }

    const CODECS: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn decompression_stops_at_the_budget_for_every_codec() {
        for c in CODECS {
            let b = bomb(4 << 20, c).freeze();
            let whole = batch_records(&b, usize::MAX).unwrap().len();
            assert!(whole > 4 << 20, "{c:?}: {whole}");
            let over = batch_records(&b, 1 << 20);
            assert_eq!(over, Err(InflateError::OverBudget(1 << 20)), "{c:?}");
            assert_eq!(batch_records(&b, whole).map(|r| r.len()), Ok(whole));
            // Checked and kept nowhere: the same size, the same refusal.
            assert_eq!(batch_records_len(&b, whole), Ok(whole));
            assert_eq!(
                batch_records_len(&b, 1 << 20),
                Err(InflateError::OverBudget(1 << 20)),
                "{c:?}"
            );
            // Refused after the budget, never allocated up to what the data claims.
            let mut out = Vec::new();
            assert!(inflate(codec(&b), &b[HEADER_LEN..], 1 << 20, &mut out).is_err());
            assert!(out.len() <= 1 << 20, "{c:?} wrote {} bytes", out.len());
            assert_eq!(
                over.unwrap_err().error_code(),
                ResponseError::MessageTooLarge
            );
        }
    }

    #[test]
    fn claimed_sizes_are_checked_before_room_is_made() {
        // Raw Snappy states its decompressed length up front: 2^32 - 1 here, over four
        // bytes of input. Refused on the claim, not after allocating it.
        let claim = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        let refused = inflate(2, &claim, 1 << 20, &mut io::sink());
        assert_eq!(refused, Err(InflateError::OverBudget(1 << 20)));
        let mut framed = XERIAL_SNAPPY.to_vec();
        framed.extend_from_slice(&(claim.len() as u32).to_be_bytes());
        framed.extend_from_slice(&claim);
        let refused = inflate(2, &framed, 1 << 20, &mut io::sink());
        assert_eq!(refused, Err(InflateError::OverBudget(1 << 20)));
    }

    #[test]
    fn records_that_do_not_decompress_are_corrupt() {
        for codec in 1..=4 {
            let refused = inflate(codec, b"not compressed at all", 1 << 20, &mut io::sink());
            assert!(
                matches!(refused, Err(InflateError::Corrupt(_))),
                "{codec}: {refused:?}"
            );
            assert_eq!(
                refused.unwrap_err().error_code(),
                ResponseError::CorruptMessage
            );
        }
        assert_eq!(
            inflate(5, b"", 1, &mut io::sink()),
            Err(InflateError::Codec(5))
        );
    }

    #[test]
    fn log_append_time_rewrites_timestamp_and_keeps_crc_valid() {
        let raw = batch(2, Compression::Lz4).freeze();
        let mut h = validate(&raw).unwrap();
        let stamped = stamp_log_append_time(raw, &mut h, 99_000);
        let again = validate(&stamped).unwrap();
        assert!(again.log_append_time);
        assert_eq!(again.max_timestamp, 99_000);
        assert_eq!(h, again);
    }
}
