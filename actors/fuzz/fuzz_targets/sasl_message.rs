//! SASL messages (`sasl/plain.rs`, `sasl/scram.rs`): any bytes a SaslAuthenticate may carry.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iggy_kafka_actors::fuzzing::sasl_message(data);
});
