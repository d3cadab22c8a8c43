//! Kafka framing: a 4-byte big-endian size, then that many bytes. Nothing here looks
//! inside a frame.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use super::WireError;

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

/// Frames bytes sent as they are (a SASL token after SaslHandshake v0): size, then them.
pub fn framed(body: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + body.len());
    buf.put_i32(body.len() as i32);
    buf.put_slice(body);
    buf.freeze()
}

/// An answer's frame, size included, as the buffers to write one after the other: one
/// for most answers; for a Fetch, the stored batches between the pieces around them,
/// so they reach the socket without being copied (`fetch_answer.rs`).
#[derive(Debug, Default)]
pub struct AnswerFrame {
    pieces: Vec<Bytes>,
}

impl AnswerFrame {
    pub fn new(pieces: Vec<Bytes>) -> AnswerFrame {
        AnswerFrame { pieces }
    }

    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// Bytes in the frame, its size field included.
    pub fn total_len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }
}

impl From<Bytes> for AnswerFrame {
    fn from(frame: Bytes) -> AnswerFrame {
        AnswerFrame::new(vec![frame])
    }
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

    proptest::proptest! {
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
}
