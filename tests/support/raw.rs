//! A minimal raw Kafka client for the requests no client library sends on purpose,
//! what a closed or silent socket looks like, and hand-built records and frames.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// A raw Kafka connection for requests no client library sends on purpose.
pub struct RawClient {
    stream: Box<dyn Stream>,
    /// The TCP socket under `stream` (the same socket, cloned) on plain connections,
    /// for looking without waiting and for changing the read timeout.
    tcp: Option<TcpStream>,
    correlation: i32,
}

/// What a [`RawClient`] speaks over: a TCP socket, or a TLS session on one.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

impl RawClient {
    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient::over_tcp(stream)
    }

    /// Speaks over `stream`, already connected (with its read timeout set).
    pub fn over(stream: impl Stream + 'static) -> RawClient {
        RawClient {
            stream: Box::new(stream),
            tcp: None,
            correlation: 0,
        }
    }

    fn over_tcp(stream: TcpStream) -> RawClient {
        let tcp = stream.try_clone().expect("clone a socket");
        RawClient {
            tcp: Some(tcp),
            ..RawClient::over(stream)
        }
    }

    /// Connects from the loopback address `source` (any of 127.0.0.0/8 on Linux), so
    /// one test can be several clients to per-address limits.
    pub fn connect_from(source: std::net::IpAddr, addr: SocketAddr) -> RawClient {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let stream = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.bind(SocketAddr::new(source, 0)).expect("bind");
            let stream = socket.connect(addr).await.expect("connect");
            stream.into_std().expect("a std socket")
        });
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient::over_tcp(stream)
    }

    /// How long a read waits for the gateway (10 s unless changed): only so that a hang
    /// fails instead of hanging. Plain TCP connections only.
    pub fn set_read_timeout(&self, timeout: Duration) {
        let tcp = self.tcp.as_ref().expect("a plain TCP connection");
        tcp.set_read_timeout(Some(timeout)).unwrap();
    }

    /// Whether the gateway has sent anything not read yet, or closed the connection,
    /// looking without waiting. Plain TCP connections only.
    pub fn has_arrived(&self) -> bool {
        let tcp = self.tcp.as_ref().expect("a plain TCP connection");
        tcp.set_nonblocking(true).unwrap();
        let peeked = tcp.peek(&mut [0; 1]);
        tcp.set_nonblocking(false).unwrap();
        match peeked {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(_) => true, // a reset
        }
    }

    /// Sends one request and returns its decoded response.
    pub fn call(&mut self, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        self.send(key, version, &body);
        self.receive(key, version)
    }

    pub fn send(&mut self, key: ApiKey, version: i16, body: &RequestKind) {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("raw-test")));
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        self.send_frame(&buf);
    }

    /// Writes bytes with a correct length prefix.
    pub fn send_frame(&mut self, body: &[u8]) {
        let mut out = Vec::with_capacity(body.len() + 4);
        out.extend_from_slice(&(body.len() as i32).to_be_bytes());
        out.extend_from_slice(body);
        self.stream.write_all(&out).expect("write");
    }

    /// Writes bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads one response to a request of `key` at `version`, decoded to the last byte.
    pub fn receive(&mut self, key: ApiKey, version: i16) -> ResponseKind {
        let mut frame = self.read_frame().expect("response frame");
        let header_version = if key == ApiKey::ApiVersions {
            0
        } else {
            key.response_header_version(version)
        };
        ResponseHeader::decode(&mut frame, header_version).expect("response header decodes");
        let answer = ResponseKind::decode(key, &mut frame, version).expect("response decodes");
        // Every byte belongs to the answer at this version.
        assert!(frame.is_empty(), "{} bytes left over", frame.len());
        answer
    }

    /// What the gateway does next on this connection: a frame, a close, or nothing
    /// within the read timeout ([`next`]).
    pub fn next(&mut self) -> Next {
        next(&mut self.stream)
    }

    /// One frame, or `None` if the gateway closed the connection (end of stream or a
    /// reset); panics if it did neither within the read timeout.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        match self.next() {
            Next::Frame(frame) => Some(frame),
            Next::Closed => None,
            Next::Silent => panic!("neither an answer nor a close within the read timeout"),
        }
    }

    /// True once the gateway has closed this connection (end of stream or a reset);
    /// false if it sends a frame or is still open after the read timeout. Prefer
    /// [`Self::assert_closed`], which says which of the two it was.
    pub fn is_closed(&mut self) -> bool {
        matches!(self.next(), Next::Closed)
    }

    /// Asserts that the gateway closes this connection with nothing more sent: end of
    /// stream or a reset, not an answer, and not a connection left open until the read
    /// timeout (a gateway that merely stops answering fails this).
    pub fn assert_closed(&mut self, what: &str) {
        assert_closed(&mut self.stream, what)
    }
}

/// What came next on a connection, read by [`next`].
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A whole frame (without its size prefix).
    Frame(Bytes),
    /// The peer closed the connection at a frame boundary: end of stream, or a reset.
    Closed,
    /// Nothing at all, and the connection still open, when the read timeout passed.
    Silent,
}

/// Reads what comes next on `stream` (with its read timeout set): one whole frame, the
/// end of the connection, or silence until the timeout. The one place the tests tell a
/// closed connection from one that merely stopped answering. A close or a stall in
/// the middle of a frame panics: neither is an answer nor a clean close.
pub fn next(stream: &mut (impl Read + ?Sized)) -> Next {
    let mut len = [0; 4];
    match fill(stream, &mut len) {
        (_, Fill::Done) => {}
        (0, Fill::Closed) => return Next::Closed,
        (0, Fill::Silent) => return Next::Silent,
        (n, how) => panic!("{how:?} after {n} bytes of a frame's size"),
    }
    let size = i32::from_be_bytes(len);
    let size = usize::try_from(size).unwrap_or_else(|_| panic!("a frame of size {size}"));
    let mut body = vec![0; size];
    match fill(stream, &mut body) {
        (_, Fill::Done) => Next::Frame(Bytes::from(body)),
        (n, how) => panic!("{how:?} after {n} of a frame's {size} bytes"),
    }
}

/// Asserts that the peer closes `stream` (end of stream or a reset) with nothing sent
/// first, panicking with `what` and what came instead: a frame, or silence until the
/// read timeout.
pub fn assert_closed(stream: &mut (impl Read + ?Sized), what: &str) {
    match next(stream) {
        Next::Closed => {}
        Next::Frame(frame) => panic!(
            "{what}: expected the connection closed, got a {}-byte frame",
            frame.len()
        ),
        Next::Silent => panic!("{what}: the connection is still open after the read timeout"),
    }
}

#[derive(Debug)]
enum Fill {
    Done,
    Closed,
    Silent,
}

/// Reads until `buf` is full, the peer closes, or the read timeout passes: the bytes
/// read and which of the three.
fn fill(stream: &mut (impl Read + ?Sized), buf: &mut [u8]) -> (usize, Fill) {
    use std::io::ErrorKind::*;
    let mut at = 0;
    while at < buf.len() {
        match stream.read(&mut buf[at..]) {
            Ok(0) => return (at, Fill::Closed),
            Ok(n) => at += n,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) if matches!(e.kind(), WouldBlock | TimedOut) => return (at, Fill::Silent),
            // A reset, or (over TLS) a TCP close without close_notify.
            Err(e)
                if matches!(
                    e.kind(),
                    ConnectionReset | ConnectionAborted | UnexpectedEof
                ) =>
            {
                return (at, Fill::Closed)
            }
            Err(e) => panic!("reading from the gateway: {e}"),
        }
    }
    (at, Fill::Done)
}

/// Sends a typed request of API `$api` at version `$v` on a [`RawClient`] and returns
/// the typed answer.
macro_rules! call {
    ($c:expr, $api:ident, $v:expr, $request:expr) => {
        match $c.call(
            kafka_protocol::messages::ApiKey::$api,
            $v,
            kafka_protocol::messages::RequestKind::$api($request),
        ) {
            kafka_protocol::messages::ResponseKind::$api(answer) => answer,
            other => panic!("expected a {} answer, got {other:?}", stringify!($api)),
        }
    };
}
pub(crate) use call;

/// A topic name as requests carry it.
pub fn topic_name(topic: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(StrBytes::from_string(topic.to_string()))
}

/// A record from no particular producer, for hand-built batches; set producer fields
/// with struct update syntax.
pub fn record(key: Option<&[u8]>, value: &[u8], timestamp: i64) -> kafka_protocol::records::Record {
    kafka_protocol::records::Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key: key.map(Bytes::copy_from_slice),
        value: Some(Bytes::copy_from_slice(value)),
        headers: Default::default(),
    }
}

/// A record batch (magic v2) as a producer would send it.
pub fn batch(
    records: &[kafka_protocol::records::Record],
    compression: kafka_protocol::records::Compression,
) -> Bytes {
    let mut buf = BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(
        &mut buf,
        records,
        &kafka_protocol::records::RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .unwrap();
    buf.freeze()
}

/// Reads a big-endian i32 at `at`.
pub fn i32_at(b: &[u8], at: usize) -> i32 {
    (&b[at..]).get_i32()
}

/// Writes a length-prefixed frame into a buffer (for concatenating frames).
pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    out.to_vec()
}
