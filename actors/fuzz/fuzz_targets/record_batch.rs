//! Record batch validation and decompression (`protocol/records.rs`): any bytes a Produce may carry.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    iggy_kafka_actors::fuzzing::record_batch(data);
});
