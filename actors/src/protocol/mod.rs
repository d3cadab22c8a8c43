//! The Kafka wire protocol as the gateway speaks it, below everything else: framing,
//! the request envelope, record batches, which APIs and versions are served, and what
//! a request gets back. It imports nothing of the gateway above it.

pub mod envelope;
pub mod fetch_answer;
pub mod framing;
pub mod keys;
pub mod markers;
pub mod records;
pub mod retained;
pub mod versions;

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use kafka_protocol::messages::{ApiKey, ResponseKind};

use fetch_answer::FetchAnswer;

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
    #[error("answer of {0} bytes is over the 2^31-1 a frame can say")]
    AnswerTooLarge(usize),
    #[error("request not received whole within {0:?}")]
    SlowRequest(std::time::Duration),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What a request gets back.
pub enum Answer {
    Send(Box<ResponseKind>),
    /// A Fetch answer, its records kept apart from the rest to be written uncopied.
    Fetch(Box<FetchAnswer>),
    /// No answer: Produce with acks=0.
    Nothing,
    /// No answer, and the connection closes after the answers before it: how Kafka
    /// tells an acks=0 producer that a write failed (it then refreshes its metadata).
    Close(String),
    /// This answer, then the connection closes (a failed SASL authentication).
    SendAndClose(Box<ResponseKind>, String),
    /// A SASL token as it is, size-prefixed, without a response header: the answer to a
    /// bare token after SaslHandshake v0.
    Raw(Bytes),
}

/// An answer still being worked out.
pub type Reply = LocalBoxFuture<'static, Answer>;
