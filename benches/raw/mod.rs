//! Minimal Kafka clients for the benches: plain requests on a few blocking connections,
//! one in flight on each, as the SDK side of `benches/iggy.rs` works. They show what the
//! gateway can take and serve when the client is not itself the bottleneck (librdkafka
//! spends most of two shared cores on its own work).

pub mod fetch;
pub mod produce;

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Sends one request and returns the answer's body, past its header.
pub(crate) fn call<R: Encodable>(
    conn: &mut TcpStream,
    key: ApiKey,
    version: i16,
    correlation: i32,
    request: &R,
) -> Bytes {
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str("raw-bench")))
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    request.encode(&mut buf, version).unwrap();
    conn.write_all(&(buf.len() as i32).to_be_bytes()).unwrap();
    conn.write_all(&buf).unwrap();
    let mut len = [0; 4];
    conn.read_exact(&mut len).expect("answer length");
    let mut body = vec![0; i32::from_be_bytes(len) as usize];
    conn.read_exact(&mut body).expect("answer");
    let mut body = Bytes::from(body);
    ResponseHeader::decode(&mut body, key.response_header_version(version))
        .expect("response header");
    body
}
