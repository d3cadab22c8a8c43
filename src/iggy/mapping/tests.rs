use super::*;
use iggy_kafka_actors::protocol::markers::Marker;

fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

fn producer(transactional: bool) -> ProducerStamp {
    ProducerStamp {
        producer_id: 9,
        producer_epoch: 1,
        base_sequence: 40,
        record_count: 3,
        transactional,
    }
}

/// Round-trips `r` with an origin timestamp that holds its timestamp where one can,
/// and with one that does not, standing in its batch every way; returns the first.
fn round_trip(r: &KafkaRecord, log_append_time: bool) -> IggyParts {
    let places = [
        InBatch::First(producer(false)),
        InBatch::First(producer(true)),
        InBatch::Continues(2),
        InBatch::Loose,
    ];
    let mut first = None;
    for in_batch in places {
        let parts = round_trip_in(r, log_append_time, in_batch);
        first.get_or_insert(parts);
    }
    first.unwrap()
}

fn round_trip_in(r: &KafkaRecord, log_append_time: bool, in_batch: InBatch) -> IggyParts {
    let exact = u64::try_from(r.timestamp)
        .ok()
        .and_then(|t| t.checked_mul(1000))
        .unwrap_or(7);
    let mut first = None;
    for origin_micros in [exact, exact + 1] {
        let parts = to_iggy(r.clone(), log_append_time, (in_batch, 0), origin_micros);
        assert!(parts.headers.len() <= MAX_HEADERS_BYTES);
        iggy_binary_protocol::validate_user_headers(&parts.headers).expect("valid Iggy headers");
        let back = from_iggy(IggyView {
            id: 0,
            payload: &parts.payload,
            user_headers: Some(&parts.headers),
            timestamp_micros: 5,
            origin_micros,
        })
        .unwrap();
        assert_eq!(back.record, *r);
        assert_eq!(back.log_append_time, log_append_time);
        assert_eq!(back.in_batch, in_batch);
        assert_eq!(back.control, None);
        first.get_or_insert(parts);
    }
    first.unwrap()
}

fn names(parts: &IggyParts) -> Vec<Bytes> {
    parse_headers(&parts.headers)
        .unwrap()
        .into_iter()
        .map(|h| h.key)
        .collect()
}

fn record(key: Option<Bytes>, value: Option<Bytes>, headers: Vec<KafkaHeader>) -> KafkaRecord {
    KafkaRecord {
        timestamp: 1_700_000_000_123,
        key,
        value,
        headers,
    }
}

#[test]
fn plain_records_keep_the_value_as_payload_and_headers_native() {
    let r = record(
        Some(b(b"k")),
        Some(b(b"value")),
        vec![(b(b"a"), Some(b(b"1"))), (b(b"b"), Some(b(b"2")))],
    );
    let parts = round_trip(&r, false);
    assert_eq!(parts.payload, b(b"value"));
    let names = names(&parts);
    assert!(names.contains(&b(b"a")) && names.contains(&b(b"kafka.key")));
    assert!(!names.iter().any(|n| n.starts_with(EXTRA.as_bytes())));
}

#[test]
fn every_awkward_shape_round_trips() {
    let big = Bytes::from(vec![7u8; 300]);
    let shapes = vec![
        record(None, None, vec![]),
        record(Some(Bytes::new()), Some(Bytes::new()), vec![]),
        record(Some(big.clone()), Some(b(b"v")), vec![]),
        record(None, Some(b(b"v")), vec![(b(b"h"), None)]),
        record(None, Some(b(b"v")), vec![(b(b"h"), Some(Bytes::new()))]),
        record(
            None,
            Some(b(b"v")),
            vec![(b(b"h"), Some(b(b"1"))), (b(b"h"), Some(b(b"2")))],
        ),
        record(
            None,
            Some(b(b"v")),
            vec![(b(b"kafka.key"), Some(b(b"spoof")))],
        ),
        record(None, Some(b(b"v")), vec![(Bytes::new(), Some(b(b"x")))]),
        record(None, Some(b(b"v")), vec![(b(b"h"), Some(big.clone()))]),
        record(
            Some(big.clone()),
            Some(b(b"v")),
            vec![(b(b"a"), Some(b(b"1")))],
        ),
        // Over Iggy's 100 KB of headers: the blob leads the payload.
        record(
            Some(Bytes::from(vec![1u8; 200_000])),
            Some(b(b"tail")),
            vec![],
        ),
        record(
            Some(Bytes::from(vec![1u8; 200_000])),
            None,
            vec![(b(b"h"), None)],
        ),
    ];
    for r in &shapes {
        for timestamp in [r.timestamp, -1, 0, i64::MAX] {
            let r = KafkaRecord {
                timestamp,
                ..r.clone()
            };
            round_trip(&r, false);
            round_trip(&r, true);
        }
    }
}

#[test]
fn the_shared_marker_is_what_the_general_encoding_writes() {
    // Records of no transaction stay version 2, which the previous release reads.
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[2]);
    assert_eq!(tlv.0.as_ref(), MARKER_ONLY);
    let r = record(None, Some(b(b"v")), vec![]);
    let parts = to_iggy(
        r.clone(),
        false,
        (InBatch::Loose, 0),
        r.timestamp as u64 * 1000,
    );
    assert_eq!(parts.headers.as_ref(), MARKER_ONLY);
    // Read back by the fast path, and by the general one when the origin differs.
    for origin_micros in [r.timestamp as u64 * 1000, 7] {
        let back = from_iggy(IggyView {
            id: 0,
            payload: &parts.payload,
            user_headers: Some(&parts.headers),
            timestamp_micros: 5,
            origin_micros,
        })
        .unwrap();
        let expected = if origin_micros == 7 { 0 } else { r.timestamp };
        assert_eq!(back.record.timestamp, expected);
        assert_eq!(back.record.value, r.value);
    }
}

#[test]
fn the_timestamp_header_is_written_only_when_the_origin_timestamp_lacks_it() {
    let r = record(None, Some(b(b"v")), vec![]);
    let micros = r.timestamp as u64 * 1000;
    let held = to_iggy(r.clone(), false, (InBatch::Loose, 0), micros);
    assert_eq!(names(&held), vec![b(MARKER)], "only the marker");
    let other = to_iggy(r, false, (InBatch::Loose, 0), micros + 1);
    assert!(names(&other).contains(&b(TIMESTAMP)));
}

#[test]
fn version_1_messages_still_read() {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[1]);
    tlv.entry(TIMESTAMP, INT64, &42i64.to_le_bytes());
    let (payload, headers) = (b(b"v"), tlv.0.freeze());
    let back = from_iggy(IggyView {
        id: 0,
        payload: &payload,
        user_headers: Some(&headers),
        timestamp_micros: 9_000_000,
        origin_micros: 8_000_000,
    })
    .unwrap();
    assert_eq!(back.record.timestamp, 42);
    assert_eq!(back.record.value, Some(payload));
}

#[test]
fn native_messages_have_no_key_and_their_headers() {
    let mut tlv = Tlv::default();
    tlv.entry(b"trace", STRING, b"abc");
    tlv.field(STRING, b"n");
    tlv.field(INT64, &42i64.to_le_bytes());
    let payload = b(b"hello");
    let headers = tlv.0.freeze();
    let back = from_iggy(IggyView {
        id: 0,
        payload: &payload,
        user_headers: Some(&headers),
        timestamp_micros: 1_700_000_000_123_456,
        origin_micros: 1,
    })
    .unwrap();
    assert_eq!(
        back.record,
        KafkaRecord {
            timestamp: 1_700_000_000_123,
            key: None,
            value: Some(payload),
            headers: vec![(b(b"trace"), Some(b(b"abc"))), (b(b"n"), Some(b(b"42")))],
        }
    );
}

#[test]
fn newer_mappings_are_refused_not_misread() {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION + 1]);
    let headers = tlv.0.freeze();
    let err = from_iggy(IggyView {
        id: 0,
        payload: &Bytes::new(),
        user_headers: Some(&headers),
        timestamp_micros: 0,
        origin_micros: 0,
    });
    assert_eq!(err.unwrap_err(), MappingError::Version(MAPPING_VERSION + 1));
}

fn read(parts: &IggyParts, origin_micros: u64) -> Result<FromIggy, MappingError> {
    from_iggy(IggyView {
        id: 0,
        payload: &parts.payload,
        user_headers: Some(&parts.headers),
        timestamp_micros: 5,
        origin_micros,
    })
}

#[test]
fn a_transactional_batch_after_its_first_record_is_read_without_parsing() {
    let mut tlv = Tlv::default();
    tlv.field(STRING, TXN);
    tlv.field(UINT32, &7u32.to_le_bytes());
    assert_eq!(&tlv.0[..TXN_ENTRY.len()], TXN_ENTRY);
    let r = record(None, Some(b(b"v")), vec![]);
    let micros = r.timestamp as u64 * 1000;
    let parts = to_iggy(r.clone(), false, (InBatch::Continues(7), 0), micros);
    // A transaction's records are version 3.
    let mut fast = MARKER_ONLY.to_vec();
    *fast.last_mut().unwrap() = TXN_VERSION;
    fast.extend_from_slice(&tlv.0);
    assert_eq!(
        parts.headers.as_ref(),
        &fast[..],
        "the marker and `kafka.txn` alone"
    );
    assert_eq!(plain_in_batch(&parts.headers), Some(InBatch::Continues(7)));
    let back = read(&parts, micros).unwrap();
    assert_eq!((back.record, back.in_batch), (r, InBatch::Continues(7)));
    // Anything more is parsed: a stamp is never taken for a plain record.
    let first = to_iggy(
        record(None, Some(b(b"v")), vec![]),
        false,
        (InBatch::First(producer(true)), 0),
        micros,
    );
    assert_eq!(plain_in_batch(&first.headers), None);
}

#[test]
fn stamps_of_version_2_still_read_as_not_transactional() {
    let mut stamp = encode_stamp(&producer(true)).to_vec();
    assert_eq!(stamp.pop(), Some(STAMP_TRANSACTIONAL));
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[2]);
    tlv.entry(KEY, RAW, b"k");
    tlv.entry(PRODUCER, RAW, &stamp);
    let parts = IggyParts {
        payload: b(b"v"),
        headers: tlv.0.freeze(),
    };
    let back = read(&parts, 1_000).unwrap();
    assert_eq!(back.in_batch, InBatch::First(producer(false)));
    assert_eq!(back.record.key, Some(b(b"k")));
    // A stamp of neither length is none.
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION]);
    tlv.entry(PRODUCER, RAW, &stamp[..17]);
    let parts = IggyParts {
        payload: b(b"v"),
        headers: tlv.0.freeze(),
    };
    assert_eq!(read(&parts, 1_000).unwrap().in_batch, InBatch::Loose);
}

#[test]
fn plain_messages_of_version_2_take_the_fast_path() {
    let mut old = MARKER_ONLY.to_vec();
    *old.last_mut().unwrap() = 2;
    assert_eq!(plain_in_batch(&old), Some(InBatch::Loose));
    let parts = IggyParts {
        payload: b(b"v"),
        headers: Bytes::from(old),
    };
    let back = read(&parts, 42_000).unwrap();
    assert_eq!(
        (back.record.timestamp, back.record.value),
        (42, Some(b(b"v")))
    );
    let mut newer = MARKER_ONLY.to_vec();
    *newer.last_mut().unwrap() = MAPPING_VERSION + 1;
    assert_eq!(plain_in_batch(&newer), None, "left to the version check");
}

#[test]
fn markers_are_messages_of_their_own_that_native_readers_can_tell() {
    let stamp = ProducerStamp {
        base_sequence: -1,
        record_count: 1,
        ..producer(true)
    };
    for (marker, epoch) in [(Marker::Commit, 3), (Marker::Abort, i32::MAX)] {
        let control = ControlMarker {
            marker,
            coordinator_epoch: epoch,
        };
        for (log_append_time, origin_micros) in [(false, 1_700_000_000_000_000), (true, 7)] {
            let parts = marker_to_iggy(
                control,
                stamp,
                1_700_000_000_000,
                log_append_time,
                origin_micros,
            );
            iggy_binary_protocol::validate_user_headers(&parts.headers)
                .expect("valid Iggy headers");
            assert!(parts.payload.is_empty());
            assert!(names(&parts).contains(&b(CONTROL)));
            let back = read(&parts, origin_micros).unwrap();
            assert_eq!(back.control, Some(control));
            assert_eq!(back.in_batch, InBatch::First(stamp));
            assert_eq!(back.log_append_time, log_append_time);
            assert_eq!(back.record.timestamp, 1_700_000_000_000);
        }
    }
    // `kafka.control`: Kafka's type (commit 1), then the coordinator epoch.
    let commit = ControlMarker {
        marker: Marker::Commit,
        coordinator_epoch: 3,
    };
    assert_eq!(encode_control(&commit), [0, 1, 0, 0, 0, 3]);
}

#[test]
fn a_control_header_without_its_producer_is_no_marker() {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION]);
    tlv.entry(CONTROL, RAW, &[0, 1, 0, 0, 0, 0]);
    let parts = IggyParts {
        payload: Bytes::new(),
        headers: tlv.0.freeze(),
    };
    assert_eq!(read(&parts, 0).unwrap_err(), MappingError::Headers);
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION]);
    tlv.entry(CONTROL, RAW, &[0, 9, 0, 0, 0, 0]);
    tlv.entry(PRODUCER, RAW, &encode_stamp(&producer(true)));
    let parts = IggyParts {
        payload: Bytes::new(),
        headers: tlv.0.freeze(),
    };
    assert_eq!(
        read(&parts, 0).unwrap_err(),
        MappingError::Headers,
        "an unknown type"
    );
}

/// A whole batch as produced, at timestamps 1_700_000_000_000 + n.
fn whole_batch_bytes(producer_id: i64, count: usize) -> Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let records: Vec<Record> = (0..count)
        .map(|n| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: n as i64,
            sequence: if producer_id < 0 {
                n as i32 - 1
            } else {
                n as i32
            },
            timestamp: 1_700_000_000_000 + n as i64,
            key: None,
            value: Some(b(b"v")),
            headers: Default::default(),
        })
        .collect();
    let mut out = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::Lz4,
    };
    RecordBatchEncoder::encode(&mut out, &records, &options).unwrap();
    out.freeze()
}

#[test]
fn a_whole_batch_reads_back_with_its_producer_and_count() {
    let batch = whole_batch_bytes(9, 3);
    let parts = batch_to_iggy(batch.clone());
    assert_eq!(parts.payload, batch, "kept as produced");
    let back = read(&parts, 1_700_000_000_000_000).unwrap();
    assert_eq!(back.stored, Stored::Batch(3));
    assert_eq!(back.record.value, Some(batch));
    assert_eq!(back.record.timestamp, 1_700_000_000_000);
    let InBatch::First(stamp) = back.in_batch else {
        panic!("an idempotent batch is its producer's: {:?}", back.in_batch)
    };
    assert_eq!((stamp.producer_id, stamp.record_count), (9, 3));
    let plain = read(&batch_to_iggy(whole_batch_bytes(-1, 2)), 0).unwrap();
    assert_eq!(
        (plain.stored, plain.in_batch),
        (Stored::Batch(2), InBatch::Loose)
    );
    // Cut short, it is refused, not misread.
    let cut = batch_to_iggy(parts.payload.slice(..40));
    assert_eq!(read(&cut, 0).unwrap_err(), MappingError::Batch);
}

#[test]
fn a_filler_is_known_by_its_id_and_emptiness_alone() {
    let id = filler_id(0xdead_beef, 7);
    fn view<'a>(id: u128, payload: &'a Bytes, headers: Option<&'a Bytes>) -> IggyView<'a> {
        IggyView {
            id,
            payload,
            user_headers: headers,
            timestamp_micros: 5,
            origin_micros: 1_700_000_000_007_000,
        }
    }
    let empty = Bytes::new();
    let filler = from_iggy(view(id, &empty, None)).unwrap();
    assert_eq!(filler.stored, Stored::Filler);
    assert_eq!(filler.in_batch, InBatch::Continues(7));
    assert_eq!(filler.record.timestamp, 1_700_000_000_007);
    // The same id on a message with a payload, or any other id, is a native message.
    let v = b(b"v");
    assert_eq!(
        from_iggy(view(id, &v, None)).unwrap().stored,
        Stored::Record
    );
    assert_eq!(
        from_iggy(view(7, &empty, None)).unwrap().stored,
        Stored::Record
    );
    assert_ne!(
        filler_id(1, 1),
        filler_id(2, 1),
        "unique for Iggy's deduplication"
    );
}
