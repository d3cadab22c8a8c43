use super::*;

fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

/// Round-trips `r` with an origin timestamp that holds its timestamp where one can,
/// and with one that does not; returns the first.
fn round_trip(r: &KafkaRecord, log_append_time: bool) -> IggyParts {
    let producer = ProducerStamp {
        producer_id: 9,
        producer_epoch: 1,
        base_sequence: 40,
        record_count: 3,
    };
    let exact = u64::try_from(r.timestamp)
        .ok()
        .and_then(|t| t.checked_mul(1000))
        .unwrap_or(7);
    let mut first = None;
    for origin_micros in [exact, exact + 1] {
        let parts = to_iggy(r.clone(), log_append_time, Some(producer), origin_micros);
        assert!(parts.headers.len() <= MAX_HEADERS_BYTES);
        iggy_binary_protocol::validate_user_headers(&parts.headers).expect("valid Iggy headers");
        let back = from_iggy(IggyView {
            payload: &parts.payload,
            user_headers: Some(&parts.headers),
            timestamp_micros: 5,
            origin_micros,
        })
        .unwrap();
        assert_eq!(back.record, *r);
        assert_eq!(back.log_append_time, log_append_time);
        assert_eq!(back.producer, Some(producer));
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
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[MAPPING_VERSION]);
    assert_eq!(tlv.0.as_ref(), MARKER_ONLY);
    let r = record(None, Some(b(b"v")), vec![]);
    let parts = to_iggy(r.clone(), false, None, r.timestamp as u64 * 1000);
    assert_eq!(parts.headers.as_ref(), MARKER_ONLY);
    // Read back by the fast path, and by the general one when the origin differs.
    for origin_micros in [r.timestamp as u64 * 1000, 7] {
        let back = from_iggy(IggyView {
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
    let held = to_iggy(r.clone(), false, None, micros);
    assert_eq!(names(&held), vec![b(MARKER)], "only the marker");
    let other = to_iggy(r, false, None, micros + 1);
    assert!(names(&other).contains(&b(TIMESTAMP)));
}

#[test]
fn version_1_messages_still_read() {
    let mut tlv = Tlv::default();
    tlv.entry(MARKER, UINT8, &[1]);
    tlv.entry(TIMESTAMP, INT64, &42i64.to_le_bytes());
    let (payload, headers) = (b(b"v"), tlv.0.freeze());
    let back = from_iggy(IggyView {
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
        payload: &Bytes::new(),
        user_headers: Some(&headers),
        timestamp_micros: 0,
        origin_micros: 0,
    });
    assert_eq!(err.unwrap_err(), MappingError::Version(MAPPING_VERSION + 1));
}
