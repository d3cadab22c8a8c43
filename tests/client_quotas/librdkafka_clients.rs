//! librdkafka clients with a quota held near it; clients without one not throttled.

use crate::support;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Message, Statistics};
use support::acls::create_topic_code;
use support::{Gateway, RawClient};

use super::set;

/// What librdkafka reported of a client's run: the largest throttle time in its
/// statistics, and the bytes done (acknowledged or consumed).
#[derive(Clone, Default)]
struct Throttles {
    max_ms: Arc<AtomicI64>,
    done: Arc<AtomicI64>,
}

impl ClientContext for Throttles {
    fn stats(&self, statistics: Statistics) {
        let max = statistics
            .brokers
            .values()
            .filter_map(|b| b.throttle.as_ref().map(|w| w.max))
            .max()
            .unwrap_or(0);
        self.max_ms.fetch_max(max, Ordering::SeqCst);
    }
}

impl ProducerContext for Throttles {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        // Purged at the end of the run: not delivered, and no error of the gateway's.
        let m = match result {
            Ok(m) => m,
            Err((
                KafkaError::MessageProduction(
                    RDKafkaErrorCode::PurgeQueue | RDKafkaErrorCode::PurgeInflight,
                ),
                _,
            )) => return,
            Err((e, _)) => panic!("a record was not delivered: {e}"),
        };
        let len = m.payload().map_or(0, |p| p.len());
        self.done.fetch_add(len as i64, Ordering::SeqCst);
    }
}

impl rdkafka::consumer::ConsumerContext for Throttles {}

fn config(bootstrap: &str, client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("client.id", client_id)
        .set("statistics.interval.ms", "200");
    config
}

const RUN: Duration = Duration::from_secs(8);
/// Bytes these clients may have on the wire when they learn of a throttle: one fetch
/// (`fetch.max.bytes`), or four produce batches of `batch.size`.
const IN_FLIGHT_BYTES: f64 = 65_536.0;
/// Bytes a client without a quota moves at most: enough to tell its rate.
const UNBOUNDED_STOP: f64 = 32e6;

/// When a run's steady part starts: the first throttle has come by then (a client with
/// a quota moves its whole first window's allowance at once, then is held to its rate).
const STEADY_FROM: Duration = Duration::from_secs(3);

/// What a client achieved: bytes, over how long, the largest throttle time reported,
/// and the bytes it had done at `STEADY_FROM`.
#[derive(Debug)]
struct Run {
    bytes: f64,
    took: Duration,
    throttle_ms: i64,
    bytes_at_steady: f64,
}

impl Run {
    fn of(throttles: &Throttles, took: Duration, bytes_at_steady: f64) -> Run {
        Run {
            bytes: throttles.done.load(Ordering::SeqCst) as f64,
            took,
            throttle_ms: throttles.max_ms.load(Ordering::SeqCst),
            bytes_at_steady,
        }
    }

    /// Bytes a second from `STEADY_FROM` to the end.
    fn steady_rate(&self) -> f64 {
        (self.bytes - self.bytes_at_steady) / (self.took - STEADY_FROM).as_secs_f64()
    }

    fn rate(&self) -> f64 {
        self.bytes / self.took.as_secs_f64()
    }
}

/// Produces 1 kB records as fast as the gateway lets it for `RUN` (or until
/// `UNBOUNDED_STOP` bytes are acknowledged); any failed delivery fails the test.
fn produce_for_a_while(bootstrap: &str, topic: &str, client_id: &str) -> Run {
    let throttles = Throttles::default();
    let producer: ThreadedProducer<Throttles> = config(bootstrap, client_id)
        .set("linger.ms", "5")
        .set("batch.size", "16384") // a quarter of IN_FLIGHT_BYTES
        .create_with_context(throttles.clone())
        .expect("producer");
    let payload = vec![b'p'; 1024];
    let started = Instant::now();
    let acknowledged = || throttles.done.load(Ordering::SeqCst) as f64;
    let mut at_steady = None;
    while started.elapsed() < RUN && acknowledged() < UNBOUNDED_STOP {
        if started.elapsed() >= STEADY_FROM {
            at_steady.get_or_insert_with(acknowledged);
        }
        let record = BaseRecord::<str, [u8]>::to(topic)
            .payload(&payload[..])
            .key("k");
        match producer.send(record) {
            Ok(()) => {}
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err((e, _)) => panic!("{client_id}: a record was not queued: {e}"),
        }
    }
    let run = Run::of(&throttles, started.elapsed(), at_steady.unwrap_or(0.0));
    producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
    run
}

/// Consumes `topic` from its start for `RUN` (or until `UNBOUNDED_STOP` bytes); a
/// consumer error fails the test at once.
fn consume_for_a_while(bootstrap: &str, topic: &str, client_id: &str) -> Run {
    let throttles = Throttles::default();
    let consumer: BaseConsumer<Throttles> = config(bootstrap, client_id)
        .set("group.id", client_id)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("message.max.bytes", "65536")
        .set("fetch.max.bytes", "65536")
        .set("max.partition.fetch.bytes", "65536")
        .create_with_context(throttles.clone())
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let started = Instant::now();
    let consumed = || throttles.done.load(Ordering::SeqCst) as f64;
    let mut at_steady = None;
    while started.elapsed() < RUN && consumed() < UNBOUNDED_STOP {
        if started.elapsed() >= STEADY_FROM {
            at_steady.get_or_insert_with(consumed);
        }
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(m)) => {
                let len = m.payload().map_or(0, |p| p.len());
                throttles.done.fetch_add(len as i64, Ordering::SeqCst);
            }
            Some(Err(e)) => panic!("{client_id}: consumer error: {e}"),
        }
    }
    Run::of(&throttles, started.elapsed(), at_steady.unwrap_or(0.0))
}

/// Framing on top of the 1 kB values these clients move (record, batch and request
/// headers): generous.
const FRAMING: f64 = 1.05;
/// Kafka's rate window is at least this long (11 samples of 1 s, the current one
/// partly elapsed).
const MIN_WINDOW_MS: f64 = 10_000.0;

/// Over the steady part of a run, a client with a quota may move its quota's worth,
/// plus what it had on the wire when throttled, plus this share: a client held to its
/// quota stays under it; one whose throttle is only reported moves many times it.
const STEADY_MARGIN: f64 = 1.25;

/// The client with a quota was throttled, never told to wait longer than Kafka's
/// formula allows for all it moved ((rate - quota) / quota × window is bytes in the
/// window / quota - window: at most its bytes, framed, and what it had on the wire,
/// over the quota, less the shortest window), not starved (served at least the
/// shortest window's allowance less what one request brings, all it may have before
/// its first throttle whenever that comes), and held to its quota once its first
/// window's allowance was spent (its rate from `STEADY_FROM` on). The one without a
/// quota was never throttled.
fn held_near(what: &str, quota: f64, slow: &Run, fast: &Run) {
    println!(
        "bench: {what}: with a quota of {quota:.0} B/s {:.0} B/s, without {:.0} B/s",
        slow.rate(),
        fast.rate()
    );
    assert!(
        slow.took >= STEADY_FROM,
        "{what}: the client with a quota of {quota} B/s moved {} B in {:?}, all it was \
         let, before its rate could be held: {slow:?}",
        slow.bytes,
        slow.took
    );
    let steady_secs = (slow.took - STEADY_FROM).as_secs_f64();
    let steady_most = quota * STEADY_MARGIN + IN_FLIGHT_BYTES / steady_secs;
    assert!(
        slow.steady_rate() <= steady_most,
        "{what}: the client with a quota of {quota} B/s moved {:.0} B/s from {STEADY_FROM:?} on \
         (at most {steady_most:.0}): {slow:?}",
        slow.steady_rate()
    );
    let moved = slow.bytes * FRAMING + IN_FLIGHT_BYTES;
    let most = (moved / quota * 1000.0 - MIN_WINDOW_MS) as i64;
    assert!(
        (1..=most).contains(&slow.throttle_ms),
        "{what}: the client with a quota was throttled {} ms (expected 1 to {most}): {slow:?}",
        slow.throttle_ms
    );
    assert_eq!(
        fast.throttle_ms, 0,
        "{what}: the client without a quota was throttled: {fast:?}"
    );
    let allowance = quota * MIN_WINDOW_MS / 1000.0 - IN_FLIGHT_BYTES;
    assert!(
        slow.bytes >= allowance,
        "{what}: the client with a quota was starved (under {allowance} B): {slow:?}"
    );
    assert!(fast.bytes > 0.0, "{what}: {fast:?}");
}

#[test]
fn librdkafka_clients_are_held_near_their_quota() {
    let gw = Gateway::start_with(&[("group_initial_rebalance_delay_ms", "0")]);
    let bootstrap = gw.bootstrap();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create_topic_code(&mut c, "produced"), 0);
    const QUOTA: f64 = 20_000.0;
    set(
        &mut c,
        &[("client-id", Some("slow"))],
        "producer_byte_rate",
        QUOTA,
    );
    set(
        &mut c,
        &[("client-id", Some("slow"))],
        "consumer_byte_rate",
        QUOTA,
    );

    // Two producers at once: one with a quota, one without.
    let (slow, fast) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| produce_for_a_while(&bootstrap, "produced", "slow"));
        let fast = scope.spawn(|| produce_for_a_while(&bootstrap, "produced", "fast"));
        (slow.join().unwrap(), fast.join().unwrap())
    });
    println!("produced: with a quota {slow:?}, without {fast:?}");
    held_near("produce", QUOTA, &slow, &fast);

    // Two consumers of what was produced at once, likewise.
    let (slow, fast) = std::thread::scope(|scope| {
        let slow = scope.spawn(|| consume_for_a_while(&bootstrap, "produced", "slow"));
        let fast = scope.spawn(|| consume_for_a_while(&bootstrap, "produced", "fast"));
        (slow.join().unwrap(), fast.join().unwrap())
    });
    println!("consumed: with a quota {slow:?}, without {fast:?}");
    held_near("consume", QUOTA, &slow, &fast);
}
