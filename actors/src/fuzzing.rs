//! What the fuzz targets in `actors/fuzz/` run, one function per target, kept here so
//! `cargo test` replays every input a fuzzer ever crashed on (`actors/fuzz/regressions/`,
//! one directory per target) through exactly the same code.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::protocol::envelope;
use crate::protocol::framing::{self, FrameCodec};
use crate::protocol::records;
use crate::sasl;
use crate::store::ScramMechanism;

/// Bytes as they come off a socket: cut into frames (a small limit, so sizes both
/// under and over it occur), each frame decoded as a request.
pub fn decode_request(data: &[u8]) {
    let mut codec = FrameCodec::new(64 << 10);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(part)) = codec.decode(&mut buf) {
        if let framing::FramePart::Body(frame) = part {
            let _ = envelope::decode_request(frame);
        }
    }
    // The whole input as one frame too: most inputs never form a valid size prefix.
    let _ = envelope::decode_request(Bytes::copy_from_slice(data));
}

/// Bytes as the records of a Produce partition: validated, then decompressed within a
/// budget as Produce does, under every codec (the first byte picks one for the rest).
pub fn record_batch(data: &[u8]) {
    const BUDGET: usize = 1 << 20;
    if records::validate(data).is_ok() {
        let _ = records::batch_records_len(data, BUDGET);
        let _ = records::batch_records(&Bytes::copy_from_slice(data), BUDGET);
    }
    if let Some((codec, rest)) = data.split_first() {
        let _ = records::inflate((codec % 5) as i16, rest, BUDGET, &mut std::io::sink());
    }
}

/// Bytes as SaslAuthenticate carries them: a PLAIN message, a SCRAM client-first
/// message, and, split at the first NUL, a whole SCRAM exchange (client-first, then
/// client-final) against a stand-in credential, under both SCRAM mechanisms.
pub fn sasl_message(data: &[u8]) {
    let _ = sasl::plain::parse(data);
    let (first, last) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    for mechanism in ScramMechanism::ALL {
        let Ok(first) = sasl::scram::parse_client_first(first) else {
            return;
        };
        let credential = sasl::scram::decoy_credential(mechanism, b"fuzz", &first.user);
        let decoy = credential.clone();
        let (exchange, _) = sasl::scram::Exchange::start(mechanism, first, Some(credential), decoy);
        let _ = exchange.finish(last);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every saved crash input of `target` runs through `run` without panicking.
    fn replay(target: &str, run: fn(&[u8])) -> usize {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions")
            .join(target);
        let mut count = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                continue; // the directory's README
            }
            run(&std::fs::read(&path).unwrap());
            count += 1;
        }
        count
    }

    #[test]
    fn saved_fuzz_inputs_no_longer_crash() {
        assert!(replay("decode_request", super::decode_request) > 0);
        assert!(replay("record_batch", super::record_batch) > 0);
        assert!(replay("sasl_message", super::sasl_message) > 0);
    }
}
