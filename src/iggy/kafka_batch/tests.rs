use super::writer::OpenBatch;
use super::*;
use iggy_kafka_actors::protocol::markers;
use iggy_kafka_actors::protocol::records::{self, BatchHeader};

/// A batch's records as the engine gets them: decompressed by Produce's own step.
fn decode_produced(batch: &Bytes) -> Result<DecodedBatch, BatchCodecError> {
    decode(&AppendBatch {
        header: BatchHeader::parse(batch),
        records: records::batch_records(batch, usize::MAX).expect("decompresses"),
        bytes: batch.clone(),
        whole: false,
    })
}

/// `records` as one batch at consecutive offsets from `base_offset`, whatever their
/// timestamps (`BatchWriter` would split a LogAppendTime batch where they differ).
fn encode(base_offset: u64, log_append_time: bool, records: &[KafkaRecord]) -> Bytes {
    let size = records.iter().map(approximate_size).sum();
    let timestamp = records[0].timestamp;
    let mut batch = OpenBatch::new(base_offset, timestamp, log_append_time, size, None);
    records.iter().for_each(|r| batch.push(r));
    batch.finish()
}
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
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
    let decoded = decode_produced(&batch).unwrap();
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
    iggy_kafka_actors::protocol::records::validate(&batch).expect("valid batch");
    assert_eq!(decode_produced(&batch).unwrap().records, records);
}

fn crate_validates(batch: &Bytes) {
    let header = iggy_kafka_actors::protocol::records::validate(batch).expect("valid batch");
    assert_eq!(header.record_count, 2);
    let mut b = batch.clone();
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut b).unwrap();
    assert_eq!(set.records[0].offset, 42);
    assert_eq!(set.records[1].timestamp, 1_600_000_000_000);
}

/// `count` records as kafka-protocol's encoder writes them in one batch of `producer`
/// (id, epoch): a producer's batch as Produce gets it.
fn produced_batch(compression: Compression, producer: (i64, i16), count: i64) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: producer.0,
            producer_epoch: producer.1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            // kafka_protocol starts a new batch where offset - sequence changes.
            sequence: i as i32,
            timestamp: 10 + i,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(vec![i as u8; 100])),
            headers: [(StrBytes::from_static_str("h"), Some(Bytes::from("v")))]
                .into_iter()
                .collect(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).unwrap();
    buf.freeze()
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
        let batch = produced_batch(compression, (-1, -1), 3);
        let decoded = decode_produced(&batch).unwrap();
        assert_eq!(decoded.records.len(), 3, "{compression:?}");
        assert_eq!(decoded.records[2].timestamp, 12);
        assert_eq!(decoded.records[1].key.as_deref(), Some(&b"k1"[..]));
        // The engine reads what Produce decompressed, never the batch's compressed
        // bytes again: with those wiped, the records read the same.
        let mut wiped = BytesMut::from(&batch[..]);
        wiped[HEADER_LEN..].fill(0);
        let again = decode(&AppendBatch {
            header: BatchHeader::parse(&batch),
            records: records::batch_records(&batch, usize::MAX).unwrap(),
            bytes: wiped.freeze(),
            whole: false,
        });
        assert_eq!(again.unwrap().records, decoded.records, "{compression:?}");
    }
}

#[test]
fn fetched_records_split_into_batches_where_kafka_needs_it() {
    let r = |timestamp| KafkaRecord {
        timestamp,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: vec![],
    };
    let mut w = BatchWriter::new(usize::MAX, 0);
    let fetched = [
        (5, 1, false),
        (6, 2, false),
        (7, 9, true),
        (8, 9, true),
        (9, 10, true),
        (11, 3, false),
    ];
    for (offset, timestamp, log_append_time) in fetched {
        assert!(w.push(
            offset,
            &r(timestamp),
            log_append_time,
            (InBatch::Loose, None)
        ));
    }
    let (batches, next, _) = w.finish();
    let bases: Vec<i64> = batches.iter().map(|b| records::base_offset(b)).collect();
    assert_eq!(bases, vec![5, 7, 9, 11]);
    assert_eq!(next, 12);
    for b in &batches {
        records::validate(b).expect("valid batch");
    }
    let decoded = decode_produced(&batches[1]).unwrap();
    assert!(decoded.log_append_time);
    assert_eq!(decoded.records.len(), 2);

    let mut one = BatchWriter::new(1, 1);
    assert!(
        one.push(0, &r(1), false, (InBatch::Loose, None)),
        "at least one record, even over budget"
    );
    assert!(
        !one.push(1, &r(1), false, (InBatch::Loose, None)),
        "but no more"
    );
    let (one, next, _) = one.finish();
    assert_eq!(next, 1, "the read ahead starts after what was taken");
    assert_eq!(decode_produced(&one[0]).unwrap().records.len(), 1);
}

#[test]
fn log_append_time_batches_give_every_record_the_batch_time() {
    let batch = encode(0, true, &sample());
    let decoded = decode_produced(&batch).unwrap();
    assert!(decoded.log_append_time);
    assert!(decoded
        .records
        .iter()
        .all(|r| r.timestamp == 1_700_000_000_000));
}

/// Where each record of a valid uncompressed batch keeps its attributes byte, the
/// one field `decode` does not read (unused in v2).
fn attribute_positions(batch: &Bytes) -> Vec<usize> {
    let body = batch.slice(HEADER_LEN..);
    let mut c = Cursor {
        data: &body,
        pos: 0,
        end: body.len(),
    };
    let mut at = Vec::new();
    while c.left() > 0 {
        let len = c.varint().unwrap() as usize;
        at.push(HEADER_LEN + c.pos);
        c.skip(len).unwrap();
    }
    at
}

#[test]
fn corrupted_records_are_errors_or_read_as_they_stand() {
    let batch = encode(0, false, &sample());
    let unread = attribute_positions(&batch);
    let (mut refused, mut read) = (0, 0);
    for at in HEADER_LEN..batch.len() {
        for byte in [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff] {
            if batch[at] == byte {
                continue;
            }
            let mut b = BytesMut::from(&batch[..]);
            b[at] = byte;
            let b = b.freeze();
            let Ok(decoded) = decode_produced(&b) else {
                refused += 1;
                continue;
            };
            read += 1;
            // An accepted corruption is read: the records differ from the original,
            // but for the one byte `decode` does not read.
            let unchanged = decoded.records == sample();
            assert_eq!(
                unchanged,
                unread.contains(&at),
                "byte {at} set to {byte:#04x}"
            );
        }
    }
    // Both kinds occur: a corrupted length or count is refused, a corrupted value
    // byte is a different value.
    assert!(refused > 0 && read > 0, "refused {refused}, read {read}");
}

/// `batch` with its records section replaced by `records` (header fields kept).
fn with_records(batch: &Bytes, records: &[u8]) -> Bytes {
    let mut b = BytesMut::from(&batch[..HEADER_LEN]);
    b.extend_from_slice(records);
    b.freeze()
}

#[test]
fn records_that_disagree_with_their_lengths_or_offsets_are_refused() {
    let batch = encode(0, false, &sample()[1..]);
    let body = &batch[HEADER_LEN..];
    assert!(decode_produced(&batch).is_ok());
    // One byte more inside the record than its fields use, length raised to match.
    let mut longer = body.to_vec();
    longer[0] += 2; // zigzag: +1
    longer.push(0);
    let refused = decode_produced(&with_records(&batch, &longer)).unwrap_err();
    assert_eq!(
        refused,
        BatchCodecError::Record("record longer than its fields")
    );
    // A byte after the last record.
    let mut trailing = body.to_vec();
    trailing.push(0);
    let refused = decode_produced(&with_records(&batch, &trailing)).unwrap_err();
    assert_eq!(
        refused,
        BatchCodecError::Record("bytes after the last record")
    );
    // An offset delta of 1 for the first record (attributes, timestamp delta, then it).
    let mut skipped = body.to_vec();
    let delta_at = 1 + 1 + varlong_len(0);
    assert_eq!(skipped[delta_at], 0);
    skipped[delta_at] = 2; // zigzag: 1
    let refused = decode_produced(&with_records(&batch, &skipped)).unwrap_err();
    assert_eq!(
        refused,
        BatchCodecError::Record("offset delta out of order")
    );
}

#[test]
fn truncated_records_are_errors_not_panics() {
    let batch = encode(0, false, &sample());
    for cut in HEADER_LEN..batch.len() {
        let mut b = BytesMut::from(&batch[..cut]);
        // Keep the declared count: the records section is what is short.
        b.truncate(cut);
        assert!(decode_produced(&b.freeze()).is_err(), "cut at {cut}");
    }
}

/// A marker as the gateway appends it.
fn marker_append(marker: markers::Marker, coordinator_epoch: i32) -> AppendBatch {
    let bytes = markers::batch(marker, 42, 3, coordinator_epoch, 1_700_000_000_000);
    AppendBatch {
        header: BatchHeader::parse(&bytes),
        bytes,
        records: Bytes::new(),
        whole: false,
    }
}

#[test]
fn markers_are_read_from_the_batch_itself() {
    for (marker, epoch) in [(markers::Marker::Commit, 7), (markers::Marker::Abort, -1)] {
        let read = decode_marker(&marker_append(marker, epoch)).unwrap();
        assert_eq!(
            read,
            ControlMarker {
                marker,
                coordinator_epoch: epoch
            }
        );
    }
    // A control record of a type other than commit or abort is refused, never guessed.
    let mut b = marker_append(markers::Marker::Commit, 0);
    let mut bytes = BytesMut::from(&b.bytes[..]);
    bytes[HEADER_LEN + 8] = 5; // the key's type, low byte
    b.bytes = bytes.freeze();
    assert_eq!(
        decode_marker(&b),
        Err(BatchCodecError::Marker("neither commit nor abort"))
    );
    let mut short = marker_append(markers::Marker::Abort, 0);
    short.bytes = short.bytes.slice(..short.bytes.len() - 2);
    assert!(decode_marker(&short).is_err());
}

fn rec(n: u8) -> KafkaRecord {
    KafkaRecord {
        timestamp: 1_700_000_000_000 + n as i64,
        key: Some(Bytes::from(vec![n; 3])),
        value: Some(Bytes::from(vec![n; 10])),
        headers: vec![],
    }
}

fn stamp(producer_id: i64, record_count: i32, transactional: bool) -> ProducerStamp {
    ProducerStamp {
        producer_id,
        producer_epoch: 2,
        base_sequence: 10,
        record_count,
        transactional,
    }
}

/// What `records` stand for in their batch, for a transactional batch of `count` from
/// the first: the stamp, then their places.
fn transaction(producer_id: i64, count: u32) -> Vec<InBatch> {
    let first = InBatch::First(stamp(producer_id, count as i32, true));
    std::iter::once(first)
        .chain((1..count).map(InBatch::Continues))
        .collect()
}

/// (base offset, record count, producer id, transactional, control) of each batch.
fn shapes(batches: &[Bytes]) -> Vec<(i64, i32, i64, bool, bool)> {
    batches
        .iter()
        .map(|b| {
            // Checks the CRC too; `records::validate` refuses control batches.
            kafka_protocol::records::RecordBatchDecoder::decode(&mut b.clone())
                .expect("a valid batch");
            let h = BatchHeader::parse(b);
            let base = records::base_offset(b);
            (
                base,
                h.record_count,
                h.producer_id,
                h.transactional,
                h.control,
            )
        })
        .collect()
}

#[test]
fn transactional_batches_and_markers_are_served_as_their_own_batches() {
    let mut w = BatchWriter::new(usize::MAX, 0);
    // Loose 0, idempotent 1 (merged), a transaction 2..4, loose 5, a marker at 6, loose 7.
    let mut place = vec![InBatch::Loose, InBatch::First(stamp(6, 1, false))];
    place.extend(transaction(5, 3));
    place.push(InBatch::Loose);
    for (offset, in_batch) in place.into_iter().enumerate() {
        assert!(w.push(offset as u64, &rec(offset as u8), false, (in_batch, None)));
    }
    let commit = ControlMarker {
        marker: markers::Marker::Commit,
        coordinator_epoch: 4,
    };
    assert!(w.push_marker(6, commit, stamp(5, 1, true), 99, false));
    assert!(w.push(7, &rec(7), false, (InBatch::Loose, None)));
    assert_eq!(w.missing(), 0);
    let (batches, next, _) = w.finish();
    assert_eq!(next, 8);
    assert_eq!(
        shapes(&batches),
        [
            (0, 2, -1, false, false),
            (2, 3, 5, true, false),
            (5, 1, -1, false, false),
            (6, 1, 5, true, true),
            (7, 1, -1, false, false),
        ]
    );
    let txn = BatchHeader::parse(&batches[1]);
    assert_eq!((txn.producer_epoch, txn.base_sequence), (2, 10));
    let records: Vec<KafkaRecord> = (2..5).map(rec).collect();
    assert_eq!(decode_produced(&batches[1]).unwrap().records, records);
    // The marker is exactly what the coordinator wrote, placed.
    let expected = markers::batch(markers::Marker::Commit, 5, 2, 4, 99);
    assert_eq!(batches[3], records::place(expected, 6));
}

#[test]
fn a_transactional_batch_is_served_whole_or_left_for_the_next_read() {
    let size = approximate_size(&rec(0));
    // Room for three records: the loose one, then a transaction of three does not fit.
    let mut w = BatchWriter::new(3 * size, 0);
    assert!(w.push(0, &rec(0), false, (InBatch::Loose, None)));
    let place = transaction(5, 3);
    assert!(w.push(1, &rec(1), false, (place[0], None)));
    assert!(w.push(2, &rec(2), false, (place[1], None)));
    assert!(
        !w.push(3, &rec(3), false, (place[2], None)),
        "over the budget"
    );
    let (batches, next, _) = w.finish();
    assert_eq!(shapes(&batches), [(0, 1, -1, false, false)]);
    assert_eq!(next, 1, "the next read starts at the transaction");

    // First in the answer, it goes whole past the budget.
    let mut w = BatchWriter::new(size, 0);
    for (i, in_batch) in transaction(5, 3).into_iter().enumerate() {
        assert!(w.push(i as u64 + 1, &rec(1), false, (in_batch, None)));
        assert_eq!(w.missing(), 2 - i, "read on for the rest");
    }
    assert_eq!(w.missing(), 0);
    assert!(!w.push(4, &rec(4), false, (InBatch::Loose, None)));
    let (batches, next, _) = w.finish();
    assert_eq!(shapes(&batches), [(1, 3, 5, true, false)]);
    assert_eq!(next, 4);

    // Cut short by the end of what was read, not first: left for the next read.
    let mut w = BatchWriter::new(usize::MAX, 0);
    assert!(w.push(0, &rec(0), false, (InBatch::Loose, None)));
    let place = transaction(5, 3);
    assert!(w.push(1, &rec(1), false, (place[0], None)));
    assert_eq!(w.missing(), 0, "not the answer's first batch");
    let (batches, next, _) = w.finish();
    assert_eq!((shapes(&batches).len(), next), (1, 1));
}

#[test]
fn nothing_is_merged_into_a_transactional_batch() {
    let mut w = BatchWriter::new(usize::MAX, 0);
    let place = transaction(5, 2);
    assert!(w.push(0, &rec(0), false, (place[0], None)));
    // A loose record where the stamp promised another: the batch ends where it stands.
    assert!(w.push(1, &rec(1), false, (InBatch::Loose, None)));
    // Another producer's transaction right after, and one whose first record was not
    // read (a record of it alone is loose).
    assert!(w.push(2, &rec(2), false, (transaction(6, 1)[0], None)));
    assert!(w.push(3, &rec(3), false, (InBatch::Continues(4), None)));
    assert!(w.push(4, &rec(4), false, (InBatch::Loose, None)));
    let (batches, _, _) = w.finish();
    assert_eq!(
        shapes(&batches),
        [
            (0, 1, 5, true, false),
            (1, 1, -1, false, false),
            (2, 1, 6, true, false),
            (3, 2, -1, false, false),
        ]
    );
}

#[test]
fn markers_of_log_append_time_topics_keep_the_timestamp_type() {
    let mut w = BatchWriter::new(usize::MAX, 0);
    let abort = ControlMarker {
        marker: markers::Marker::Abort,
        coordinator_epoch: 0,
    };
    assert!(w.push_marker(3, abort, stamp(5, 1, true), 1_000, true));
    let (batches, _, _) = w.finish();
    let h = BatchHeader::parse(&batches[0]);
    assert!(h.control && h.log_append_time);
    assert_eq!(markers::read(&batches[0]), Some(markers::Marker::Abort));
    assert_eq!(shapes(&batches), [(3, 1, 5, true, true)], "and its CRC");
}

#[test]
fn whole_batches_are_served_as_stored_and_orphan_fillers_as_empty_batches() {
    let records: Vec<Record> = (0..4)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: i as i32 - 1,
            timestamp: 100 + i * 10,
            key: None,
            value: Some(Bytes::from(vec![b'x'; 50])),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::Zstd,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).unwrap();
    let batch = buf.freeze();
    let appended = AppendBatch {
        header: BatchHeader::parse(&batch),
        records: records::batch_records(&batch, usize::MAX).unwrap(),
        bytes: batch.clone(),
        whole: true,
    };
    assert_eq!(timestamps(&appended).unwrap(), vec![100, 110, 120, 130]);

    // Two fillers whose batch is gone, then a whole batch at 12 and its fillers.
    let mut w = BatchWriter::new(1 << 20, 0);
    assert!(w.push_filler(10, 90));
    assert!(w.push_filler(11, 95));
    assert!(w.push_whole(12, batch.clone(), 4));
    for offset in 13..16 {
        assert!(w.push_filler(offset, 0), "taken with its batch");
    }
    let (batches, next, _) = w.finish();
    assert_eq!(next, 16);
    assert_eq!(batches.len(), 3);
    let served = &batches[2];
    assert_eq!(&served[HEADER_LEN..], &batch[HEADER_LEN..], "as produced");
    assert_eq!(records::base_offset(served), 12);
    let mut all = BytesMut::new();
    batches.iter().for_each(|b| all.extend_from_slice(b));
    let sets = RecordBatchDecoder::decode_all(&mut all.freeze()).unwrap();
    let offsets: Vec<i64> = sets
        .iter()
        .flat_map(|s| &s.records)
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, vec![12, 13, 14, 15]);
    for (empty, at) in batches[..2].iter().zip([10, 11]) {
        let h = BatchHeader::parse(empty);
        assert_eq!((records::base_offset(empty), h.record_count), (at, 0));
        let last_delta = &empty[records::LAST_OFFSET_DELTA_AT..][..4];
        assert_eq!(last_delta, 0i32.to_be_bytes(), "consumers move past it");
        assert!(
            records::check_frame(empty).is_ok(),
            "a whole batch, CRC and all"
        );
    }
}

#[test]
fn a_batch_produced_compressed_goes_back_compressed_and_whole() {
    let stamp = ProducerStamp {
        producer_id: 5,
        producer_epoch: 0,
        base_sequence: 0,
        record_count: 3,
        transactional: false,
    };
    let big = |i: u8| KafkaRecord {
        timestamp: 10 + i64::from(i),
        key: None,
        value: Some(Bytes::from(vec![i; 100_000])),
        headers: vec![],
    };
    // A budget far below one record: the answer's first batch still goes whole.
    let mut w = BatchWriter::new(1_000, 0);
    assert!(w.push(0, &big(0), false, (InBatch::First(stamp), Some(1))));
    assert_eq!(w.missing(), 2, "read on for the rest of it");
    assert!(w.push(1, &big(1), false, (InBatch::Loose, None)));
    assert!(w.push(2, &big(2), false, (InBatch::Loose, None)));
    // A loose record after it starts a batch of its own, left for the next read.
    assert!(!w.push(3, &big(3), false, (InBatch::Loose, None)));
    let (batches, next, _) = w.finish();
    assert_eq!((batches.len(), next), (1, 3));
    let served = &batches[0];
    assert!(
        served.len() < 10_000,
        "gzip squeezed 300 kB of runs: {}",
        served.len()
    );
    let attributes = i16::from_be_bytes([served[ATTRIBUTES_AT], served[ATTRIBUTES_AT + 1]]);
    assert_eq!(attributes & COMPRESSION_MASK, 1);
    let sets = RecordBatchDecoder::decode_all(&mut served.clone()).unwrap();
    let values: Vec<_> = sets[0].records.iter().map(|r| r.value.clone()).collect();
    assert_eq!(values, (0..3).map(|i| big(i).value).collect::<Vec<_>>());
    assert_eq!(
        sets[0].records[0].producer_id, 5,
        "served with its producer"
    );
}

#[test]
fn a_batch_whose_section_is_kept_goes_back_byte_for_byte_as_produced() {
    use crate::iggy::kept_sections::KeptSections;
    use iggy_kafka_actors::store::Compressions;
    use std::sync::Arc;
    let produced = produced_batch(Compression::Lz4, (9, 2), 5);
    let section = records::batch_records(&produced, usize::MAX).unwrap();
    let decoded = decode_produced(&produced).unwrap();
    let stamp = ProducerStamp {
        producer_id: 9,
        producer_epoch: 2,
        base_sequence: 0,
        record_count: 5,
        transactional: false,
    };
    let serve = |kept: Arc<KeptSections>| {
        let mut w = BatchWriter::new(1 << 20, 0).serving_kept(kept);
        for (i, r) in decoded.records.iter().enumerate() {
            let in_batch = match i {
                0 => (InBatch::First(stamp), Some(3)),
                _ => (InBatch::Loose, None),
            };
            assert!(w.push(i as u64, r, false, in_batch));
        }
        let (batches, _, compressions) = w.finish();
        (batches[0].clone(), compressions)
    };
    let kept = Arc::new(KeptSections::new(1 << 20));
    kept.keep(3, &section, &produced[HEADER_LEN..]);
    let (served, compressions) = serve(kept);
    assert_eq!(compressions, Compressions { kept: 1, made: 0 });
    // All but the partition leader epoch (bytes 12..16), the broker's to set, and
    // outside the CRC.
    assert_eq!(served[..12], produced[..12]);
    assert_eq!(
        served[16..],
        produced[16..],
        "the producer's batch, CRC and all"
    );
    // Nothing kept: compressed again, to the same records.
    let (again, compressions) = serve(Arc::new(KeptSections::new(1 << 20)));
    assert_eq!(compressions, Compressions { kept: 0, made: 1 });
    let sets = RecordBatchDecoder::decode_all(&mut again.clone()).unwrap();
    assert_eq!(sets[0].records.len(), 5);
    assert_eq!(records::batch_records(&again, usize::MAX).unwrap(), section);
}
