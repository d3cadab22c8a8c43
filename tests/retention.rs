//! Retention through real clients, on both stores: a `cleanup.policy=delete` topic's
//! oldest records go once `retention.ms` has passed, a topic given `retention.bytes`
//! by AlterConfigs keeps about that much, and both hold across a SIGKILL of the
//! gateway (the embedded store keeps each topic's limits with its logs; Iggy keeps
//! them as the topic's expiry and size). The log start moves up, a consumer from the
//! beginning reads on from it with nothing missing, and storage falls
//! (DescribeLogDirs). The embedded store checks every `retention_check_interval_ms`;
//! Iggy's segment cleaner runs every `data_maintenance.messages.interval` (1 s here)
//! and deletes whole sealed segments (1 MiB here), keeping at least one segment plus
//! its largest message (`message_bus.max_message_size`, 2 MiB here) per partition.

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use crate::support;
use support::describe::stored_bytes;
use support::iggy::IggyServer;
use support::kafka::{admin, create_topic, read_to_end};
use support::records::list_offset;
use support::{on_every_store, Gateway, RawClient, Store};

on_every_store!(old_records_go_past_retention_ms_and_retention_bytes);

const SEGMENT: u64 = 1 << 20;
/// Iggy's largest message, as the test's server is configured.
const IGGY_MAX_MESSAGE: u64 = 2 << 20;
const VALUE_BYTES: usize = 1_000;

/// A gateway binary (killed and restarted by the test) on `store`, checking retention
/// every 200 ms; on Iggy with the server whose cleaner runs every second, kept with it.
fn gateway(store: Store) -> Option<(Gateway, Option<IggyServer>)> {
    match store {
        Store::Embedded => Some((
            Gateway::process_with(&[("retention_check_interval_ms", "200")]),
            None,
        )),
        Store::Iggy => {
            let server = IggyServer::start_with_env(&[
                ("IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", "1 s"),
                ("IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE", "2 MiB"),
            ])?;
            Some((server.process_gateway(), Some(server)))
        }
    }
}

/// `records` records of about 1 kB to partition 0, acknowledged.
fn write(bootstrap: &str, topic: &str, records: usize) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    let value = "v".repeat(VALUE_BYTES);
    for i in 0..records {
        let key = format!("{i:05}");
        let record = BaseRecord::to(topic).partition(0).key(&key).payload(&value);
        producer.send(record).map_err(|(e, _)| e).expect("queued");
        if i % 500 == 499 {
            producer
                .flush(Duration::from_secs(30))
                .expect("acknowledged");
        }
    }
    producer
        .flush(Duration::from_secs(30))
        .expect("acknowledged");
}

/// Waits up to a minute for partition 0's log start to pass 0; answers it.
fn moved_start(gw: &Gateway, topic: &str) -> i64 {
    let mut c = RawClient::connect(gw.addr);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let start = list_offset(&mut c, topic, 0, -2);
        if start > 0 || Instant::now() > deadline {
            return start;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A consumer from the beginning reads on from the log start (which may have moved on
/// since `start`) to the end, every offset.
fn reads_from(gw: &Gateway, topic: &str, start: i64) {
    let read = read_to_end(&gw.bootstrap(), topic);
    let offsets: Vec<i64> = read.iter().map(|r| r.0).collect();
    let high = list_offset(&mut RawClient::connect(gw.addr), topic, 0, -1);
    let first = offsets.first().copied().unwrap_or(high);
    assert!(
        first >= start,
        "{topic}: read from {first}, below the log start {start}"
    );
    assert_eq!(offsets, (first..high).collect::<Vec<_>>(), "{topic}");
}

/// Waits up to a minute for the bytes stored for partition 0 to fall to `at_most`;
/// answers them.
fn shrunk(gw: &Gateway, topic: &str, at_most: i64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let bytes = stored_bytes(gw, topic);
        if bytes <= at_most || Instant::now() > deadline {
            return bytes;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn old_records_go_past_retention_ms_and_retention_bytes(store: Store) {
    let Some((mut gw, _server)) = gateway(store) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (expiring, capped) = ("expiring", "capped");
    let b = gw.bootstrap();
    let segment = SEGMENT.to_string();
    runtime.block_on(async {
        let expiry = [("retention.ms", "4000"), ("segment.bytes", &segment)];
        create_topic(&b, expiring, 1, &expiry).await;
        create_topic(&b, capped, 1, &[("segment.bytes", &segment)]).await;
    });
    write(&b, expiring, 3_000);
    write(&b, capped, 8_000);
    let before = (stored_bytes(&gw, expiring), stored_bytes(&gw, capped));
    runtime.block_on(async {
        let cap = AlterConfig::new(ResourceSpecifier::Topic(capped))
            .set("segment.bytes", &segment)
            .set("retention.bytes", &segment);
        let altered = admin(&b)
            .alter_configs(&[cap], &AdminOptions::new())
            .await
            .expect("alter configs");
        assert!(altered.iter().all(Result::is_ok), "{altered:?}");
    });
    // The limits outlive the process that was handed them.
    gw.restart_after_kill();

    let start = moved_start(&gw, expiring);
    assert!(start > 0, "{store:?}: nothing expired");
    reads_from(&gw, expiring, start);
    let fallen = before.0 - SEGMENT as i64;
    let after = shrunk(&gw, expiring, fallen);
    let was = before.0;
    println!("{store:?}: retention.ms let offsets below {start} go, {was} -> {after} bytes");
    assert!(after <= fallen, "{store:?}: storage falls");

    let start = moved_start(&gw, capped);
    assert!(start > 0, "{store:?}: nothing went past retention.bytes");
    reads_from(&gw, capped, start);
    // The cap and what its oldest kept batch (rdkafka's batches: 1 MB at most) or Iggy
    // segment reaches past it; on Iggy also the sealed segment and message it keeps at
    // the least.
    let kept = match store {
        Store::Embedded => SEGMENT + SEGMENT,
        Store::Iggy => SEGMENT + (SEGMENT + IGGY_MAX_MESSAGE) + SEGMENT,
    } as i64;
    let after = shrunk(&gw, capped, kept);
    let was = before.1;
    println!("{store:?}: retention.bytes let offsets below {start} go, {was} -> {after} bytes");
    assert!(
        after <= kept,
        "{store:?}: {after} bytes kept, more than {kept}"
    );
}
