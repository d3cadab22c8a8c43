//! The envelope around each request and answer: which header version applies, the
//! header itself, and the body decoded or encoded by `kafka-protocol`, with input that
//! cannot be served refused here.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::versions::served_versions;
use super::WireError;

/// A decoded request, or an ApiVersions request of a version newer than served,
/// which KIP-511 says to answer at v0 so the client can retry.
pub struct Request {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub body: Option<RequestKind>,
}

/// Reads the header and body of one frame.
pub fn decode_request(mut frame: Bytes) -> Result<Request, WireError> {
    if frame.len() < 8 {
        return Err(WireError::ShortHeader(frame.len()));
    }
    let raw_key = (&frame[..2]).get_i16();
    let version = (&frame[2..4]).get_i16();
    let key = ApiKey::try_from(raw_key).map_err(|_| WireError::UnknownApiKey(raw_key))?;
    let malformed = |e: anyhow::Error| WireError::Malformed {
        key,
        version,
        reason: format!("{e:#}"),
    };
    let served = served_versions(key).ok_or(WireError::UnknownApiKey(raw_key))?;
    if key == ApiKey::ApiVersions && version > served.max {
        // KIP-511: the header is v1-compatible up to the client id; the body is unknown to us.
        let header = RequestHeader::decode(&mut frame, 1).map_err(malformed)?;
        return Ok(Request {
            header,
            api_key: key,
            body: None,
        });
    }
    if version < served.min || version > served.max {
        return Err(WireError::UnsupportedVersion {
            key,
            version,
            min: served.min,
            max: served.max,
        });
    }
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))
        .map_err(malformed)?;
    let body = RequestKind::decode(key, &mut frame, version).map_err(malformed)?;
    Ok(Request {
        header,
        api_key: key,
        body: Some(body),
    })
}

/// Frames a response: size, header (v0 for ApiVersions whatever the version, as
/// KIP-511 requires), body. A Fetch answer is framed apart (`fetch_answer.rs`), its
/// records left out of this buffer.
pub fn encode_response(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
) -> Result<Bytes, WireError> {
    let mut buf = BytesMut::with_capacity(64);
    begin_response(&mut buf, key, version, correlation_id)?;
    body.encode(&mut buf, version)
        .map_err(encode_failed(key, version))?;
    seal(&mut buf, 0)?;
    Ok(buf.freeze())
}

/// Starts a response frame in `buf`: room for its size (`seal` writes it), then the header.
pub(super) fn begin_response(
    buf: &mut BytesMut,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<(), WireError> {
    let header_version = if key == ApiKey::ApiVersions {
        0
    } else {
        key.response_header_version(version)
    };
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(buf, header_version)
        .map_err(encode_failed(key, version))
}

/// Writes the size of the frame `buf` begins: the rest of `buf`, and `beyond` bytes
/// written after it.
pub(super) fn seal(buf: &mut BytesMut, beyond: usize) -> Result<(), WireError> {
    let size = buf.len() - 4 + beyond;
    let size = i32::try_from(size).map_err(|_| WireError::AnswerTooLarge(size))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// How a failure of `kafka-protocol`'s encoder is reported.
pub(super) fn encode_failed(key: ApiKey, version: i16) -> impl Fn(anyhow::Error) -> WireError {
    move |e| WireError::Encode {
        key,
        version,
        reason: format!("{e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::versions::SERVED;

    #[test]
    fn declared_array_lengths_never_size_allocations() {
        // Metadata v1: header (key 3, version 1, correlation 7, no client id) then a
        // topic array claiming 2^31-1 entries with nothing behind it.
        let mut req = BytesMut::new();
        req.put_i16(3);
        req.put_i16(1);
        req.put_i32(7);
        req.put_i16(-1);
        req.put_i32(i32::MAX);
        let err = decode_request(req.freeze()).err().expect("must fail");
        assert!(matches!(err, WireError::Malformed { .. }), "{err}");
    }

    #[test]
    fn unknown_keys_and_versions_are_refused() {
        let mut req = BytesMut::new();
        req.put_i16(999);
        req.put_i16(0);
        req.put_i32(1);
        assert!(matches!(
            decode_request(req.freeze()),
            Err(WireError::UnknownApiKey(999))
        ));
        let mut req = BytesMut::new();
        req.put_i16(0); // Produce v2: below Kafka 4's minimum
        req.put_i16(2);
        req.put_i32(1);
        assert!(matches!(
            decode_request(req.freeze()),
            Err(WireError::UnsupportedVersion { .. })
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// Any bytes after a valid API key and version: decoding answers or refuses, never panics.
        #[test]
        fn decoding_arbitrary_bodies_never_panics(
            key in proptest::sample::select(SERVED.iter().map(|s| s.0 as i16).collect::<Vec<_>>()),
            version in 0i16..20,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
        ) {
            let mut req = BytesMut::new();
            req.put_i16(key);
            req.put_i16(version);
            req.put_slice(&body);
            let _ = decode_request(req.freeze());
        }

        /// Valid requests of every served API and version with a few bytes changed:
        /// lengths and counts become garbage, which must never panic or over-allocate.
        #[test]
        fn decoding_mutated_requests_never_panics(
            pick in 0usize..1_000,
            edits in proptest::collection::vec((0usize..4_096, proptest::num::u8::ANY), 1..6),
        ) {
            let valid = valid_requests();
            let mut req = BytesMut::from(&valid[pick % valid.len()][..]);
            for (at, byte) in edits {
                let at = at % req.len();
                req[at] = byte;
            }
            let _ = decode_request(req.freeze());
        }

    }

    /// Header and default body of every served API at every served version.
    fn valid_requests() -> Vec<Bytes> {
        use kafka_protocol::messages::RequestHeader;
        let mut out = Vec::new();
        for &(key, min, max) in SERVED {
            for version in min..=max {
                let mut buf = BytesMut::new();
                RequestHeader::default()
                    .with_request_api_key(key as i16)
                    .with_request_api_version(version)
                    .encode(&mut buf, key.request_header_version(version))
                    .unwrap();
                let body = default_body(key);
                if body.encode(&mut buf, version).is_ok() {
                    out.push(buf.freeze());
                }
            }
        }
        out
    }

    fn default_body(key: ApiKey) -> RequestKind {
        use kafka_protocol::messages::*;
        match key {
            ApiKey::Produce => RequestKind::Produce(ProduceRequest::default()),
            ApiKey::Fetch => RequestKind::Fetch(FetchRequest::default()),
            ApiKey::ListOffsets => RequestKind::ListOffsets(ListOffsetsRequest::default()),
            ApiKey::Metadata => RequestKind::Metadata(MetadataRequest::default()),
            ApiKey::CreateTopics => RequestKind::CreateTopics(CreateTopicsRequest::default()),
            ApiKey::DeleteTopics => RequestKind::DeleteTopics(DeleteTopicsRequest::default()),
            ApiKey::InitProducerId => RequestKind::InitProducerId(InitProducerIdRequest::default()),
            _ => RequestKind::ApiVersions(ApiVersionsRequest::default()),
        }
    }
}
