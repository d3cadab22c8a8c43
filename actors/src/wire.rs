//! Kafka framing and the envelope around each message: a 4-byte big-endian size,
//! then a request header and body. Bodies are decoded and encoded by `kafka-protocol`;
//! this module decides which header version applies and what to do with input that
//! cannot be served.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio_util::codec::Decoder;

use crate::api;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("frame of {size} bytes is over the {max}-byte limit")]
    FrameTooLarge { size: i64, max: usize },
    #[error("negative frame size {0}")]
    NegativeFrame(i32),
    #[error("request of {0} bytes is too short for a request header")]
    ShortHeader(usize),
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    #[error("{0:?} is not served")]
    NotServed(ApiKey),
    #[error("{key:?} v{version} is not served (supported: {min}..={max})")]
    UnsupportedVersion {
        key: ApiKey,
        version: i16,
        min: i16,
        max: i16,
    },
    #[error("malformed {key:?} v{version} request: {reason}")]
    Malformed {
        key: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("could not encode {key:?} v{version} response: {reason}")]
    Encode {
        key: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("request not received whole within {0:?}")]
    SlowRequest(std::time::Duration),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Splits a byte stream into request frames in two steps: the size (refused over the
/// limit), then, when polled again, the body. Nothing of the body is buffered before
/// its reader polls for it, so the reader can wait for room for it in between.
pub struct FrameCodec {
    max_frame: usize,
    /// Size of the frame whose body comes next.
    body: Option<usize>,
}

/// What [`FrameCodec`] cuts from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum FramePart {
    Size(usize),
    Body(Bytes),
}

impl FrameCodec {
    pub fn new(max_frame: usize) -> FrameCodec {
        FrameCodec {
            max_frame,
            body: None,
        }
    }
}

impl Decoder for FrameCodec {
    type Item = FramePart;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<FramePart>, WireError> {
        if let Some(size) = self.body {
            if src.len() < size {
                src.reserve(size - src.len());
                return Ok(None);
            }
            self.body = None;
            return Ok(Some(FramePart::Body(src.split_to(size).freeze())));
        }
        if src.len() < 4 {
            return Ok(None);
        }
        let size = (&src[..4]).get_i32();
        if size < 0 {
            return Err(WireError::NegativeFrame(size));
        }
        let size = size as usize;
        if size > self.max_frame {
            return Err(WireError::FrameTooLarge {
                size: size as i64,
                max: self.max_frame,
            });
        }
        src.advance(4);
        self.body = Some(size);
        Ok(Some(FramePart::Size(size)))
    }
}

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
    let served = api::served_versions(key).ok_or(WireError::UnknownApiKey(raw_key))?;
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
/// KIP-511 requires), body.
pub fn encode_response(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
) -> Result<Bytes, WireError> {
    let fail = |e: anyhow::Error| WireError::Encode {
        key,
        version,
        reason: format!("{e:#}"),
    };
    let header_version = if key == ApiKey::ApiVersions {
        0
    } else {
        key.response_header_version(version)
    };
    // Fetch answers carry the records: size the buffer once instead of doubling it.
    let records_hint = match body {
        ResponseKind::Fetch(fetch) => fetch.compute_size(version).unwrap_or(0),
        _ => 0,
    };
    let mut buf = BytesMut::with_capacity(64 + records_hint);
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, header_version)
        .map_err(fail)?;
    body.encode(&mut buf, version).map_err(fail)?;
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// Frames bytes sent as they are (a SASL token after SaslHandshake v0): size, then them.
pub fn framed(body: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + body.len());
    buf.put_i32(body.len() as i32);
    buf.put_slice(body);
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_i32(body.len() as i32);
        b.put_slice(body);
        b
    }

    #[test]
    fn frames_come_as_size_then_body_and_oversize_is_refused() {
        let mut codec = FrameCodec::new(16);
        let mut buf = frame(b"hello");
        let mut partial = buf.split_to(6);
        assert_eq!(
            codec.decode(&mut partial).unwrap(),
            Some(FramePart::Size(5))
        );
        assert!(codec.decode(&mut partial).unwrap().is_none());
        partial.unsplit(buf);
        assert_eq!(
            codec.decode(&mut partial).unwrap(),
            Some(FramePart::Body(Bytes::from_static(b"hello")))
        );

        let mut big = frame(&[0; 17]);
        assert!(matches!(
            codec.decode(&mut big),
            Err(WireError::FrameTooLarge { .. })
        ));
        let mut neg = BytesMut::from(&(-5i32).to_be_bytes()[..]);
        assert!(matches!(
            codec.decode(&mut neg),
            Err(WireError::NegativeFrame(-5))
        ));
    }

    #[test]
    fn a_body_is_not_buffered_before_it_is_asked_for() {
        // The size comes out alone; room for the body is reserved only on the next call.
        let mut codec = FrameCodec::new(1 << 20);
        let mut buf = BytesMut::with_capacity(4);
        buf.put_i32(1 << 20);
        let before = buf.capacity();
        assert_eq!(
            codec.decode(&mut buf).unwrap(),
            Some(FramePart::Size(1 << 20))
        );
        assert!(buf.capacity() <= before);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert!(buf.capacity() >= 1 << 20);
    }

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
            key in proptest::sample::select(api::SERVED.iter().map(|s| s.0 as i16).collect::<Vec<_>>()),
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

        /// Frames split anywhere come out whole, or the stream is refused.
        #[test]
        fn framing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let mut codec = FrameCodec::new(32);
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some(part)) = codec.decode(&mut buf) {
                match part {
                    FramePart::Size(size) => proptest::prop_assert!(size <= 32),
                    FramePart::Body(body) => proptest::prop_assert!(body.len() <= 32),
                }
            }
        }
    }

    /// Header and default body of every served API at every served version.
    fn valid_requests() -> Vec<Bytes> {
        use kafka_protocol::messages::RequestHeader;
        let mut out = Vec::new();
        for &(key, min, max) in api::SERVED {
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
