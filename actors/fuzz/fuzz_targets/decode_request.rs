//! Request framing and decoding (`protocol/framing.rs`, `protocol/envelope.rs`): any
//! bytes a client may send.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iggy_kafka_actors::fuzzing::decode_request(data);
});
