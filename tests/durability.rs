//! Nothing acknowledged is lost: every record a producer saw acknowledged (acks=all)
//! is served back byte-exact after the gateway is killed mid-stream (SIGKILL), stopped
//! gracefully (SIGTERM), or run with `durability=batch`. The producer is idempotent,
//! so its retries across the crash must not store anything twice either.

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use support::Gateway;

const TOPIC: &str = "durable";
const PARTITIONS: i32 = 8;
const FLUSH: Duration = Duration::from_secs(30);

/// An acknowledged record: partition, key, value.
type Acked = (i32, Vec<u8>, Vec<u8>);

/// Record `n`: key is its decimal number; the value is binary, of varying length, so a
/// byte-exact comparison catches truncation, reordering inside a batch or corruption.
fn value_of(n: u64) -> Vec<u8> {
    let mut v = n.to_be_bytes().to_vec();
    v.extend((0..n % 251).map(|i| (n.wrapping_mul(7) + i) as u8));
    v
}

fn create_topic(bootstrap: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client");
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let created = runtime.block_on(async {
        let create = admin.create_topics([&topic], &opts);
        tokio::time::timeout(Duration::from_secs(15), create).await
    });
    for r in created
        .expect("CreateTopics timed out")
        .expect("CreateTopics failed")
    {
        r.expect("topic created");
    }
}

/// Collects delivery reports: acknowledged `(partition, key, value)`, and failures.
#[derive(Clone, Default)]
struct Acks {
    acked: Arc<Mutex<Vec<Acked>>>,
    failed: Arc<Mutex<Vec<String>>>,
}

impl ClientContext for Acks {}
impl ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(m) => self.acked.lock().unwrap().push((
                m.partition(),
                m.key().unwrap_or_default().to_vec(),
                m.payload().unwrap_or_default().to_vec(),
            )),
            Err((e, m)) => self
                .failed
                .lock()
                .unwrap()
                .push(format!("partition {}: {e}", m.partition())),
        }
    }
}

impl Acks {
    fn count(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    fn failures(&self) -> Option<String> {
        let failed = self.failed.lock().unwrap();
        (!failed.is_empty()).then(|| {
            format!(
                "{} deliveries failed, first: {:?}",
                failed.len(),
                &failed[..failed.len().min(5)]
            )
        })
    }

    /// Asserts no delivery failed and returns the acknowledged records.
    fn all_acked(&self) -> Vec<Acked> {
        if let Some(failures) = self.failures() {
            panic!("{failures}");
        }
        self.acked.lock().unwrap().clone()
    }
}

fn new_producer(bootstrap: &str, extra: &[(&str, &str)]) -> (ThreadedProducer<Acks>, Acks) {
    let acks = Acks::default();
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        // Bounded: a record not delivered by then is reported failed, and the test fails.
        .set("message.timeout.ms", "25000")
        // Reconnect promptly once the restarted gateway listens again.
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "200");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    (
        config.create_with_context(acks.clone()).expect("producer"),
        acks,
    )
}

/// Enqueues record `n` on partition `n % PARTITIONS`, waiting out a full local queue;
/// any other error (such as the idempotent producer's fatal state) is returned.
fn send(p: &ThreadedProducer<Acks>, n: u64) -> Result<(), KafkaError> {
    let (key, value) = (n.to_string(), value_of(n));
    let mut record = BaseRecord::to(TOPIC)
        .partition((n % PARTITIONS as u64) as i32)
        .key(&key)
        .payload(&value);
    let deadline = Instant::now() + FLUSH;
    loop {
        match p.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                if Instant::now() < deadline =>
            {
                record = back;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err((e, _)) => return Err(e),
        }
    }
}

fn send_all(p: &ThreadedProducer<Acks>, numbers: std::ops::Range<u64>) {
    for n in numbers {
        send(p, n).unwrap_or_else(|e| panic!("record {n} not enqueued: {e}"));
    }
}

/// Every acknowledged record is stored, on its partition, byte-exact; nothing is stored
/// twice; everything stored is a record the test sent, in send order per partition.
/// Records stored but never acknowledged (the ack was lost in the crash) are allowed.
fn assert_stored(acked: &[Acked], stored: &[(i32, i64, Vec<u8>, Vec<u8>)]) {
    let mut by_key: HashMap<&[u8], (i32, i64, &[u8])> = HashMap::new();
    let mut last_in_partition: HashMap<i32, (u64, i64)> = HashMap::new();
    for (p, offset, key, value) in stored {
        let n: u64 = std::str::from_utf8(key)
            .ok()
            .and_then(|k| k.parse().ok())
            .unwrap_or_else(|| panic!("partition {p} offset {offset}: unknown key {key:?}"));
        assert_eq!(
            *value,
            value_of(n),
            "record {n} (partition {p} offset {offset}) stored with other bytes"
        );
        if let Some((p0, o0, _)) = by_key.insert(key, (*p, *offset, value)) {
            panic!("record {n} stored twice: partition {p0} offset {o0} and partition {p} offset {offset}");
        }
        if let Some((prev, prev_offset)) = last_in_partition.insert(*p, (n, *offset)) {
            assert!(
                prev < n,
                "partition {p}: record {n} at offset {offset} after record {prev} at {prev_offset}"
            );
        }
    }
    let mut missing = Vec::new();
    for (p, key, value) in acked {
        match by_key.get(key.as_slice()) {
            None => missing.push(String::from_utf8_lossy(key).into_owned()),
            Some((sp, offset, sv)) => {
                assert_eq!(
                    (sp, *sv),
                    (p, value.as_slice()),
                    "acknowledged record at offset {offset} differs"
                )
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} acknowledged records lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
}

/// Streams records numbered from `first` into `gw` from a producer thread, kills the
/// gateway (SIGKILL) after 1.5 s and restarts it on the same data and port, lets the same
/// producer go on for another 1.2 s, then flushes. Returns the acknowledged records and what went
/// wrong on the producer's side; callers check the stored data first, since lost records
/// are the clearer diagnosis (a gateway that lost data makes the producer fail fatally).
fn stream_through_a_kill(
    gw: &mut Gateway,
    first: u64,
    producer_extra: &[(&str, &str)],
) -> (Vec<Acked>, Vec<String>) {
    let (producer, acks) = new_producer(&gw.bootstrap(), producer_extra);
    let producer = Arc::new(producer);
    let stop = Arc::new(AtomicBool::new(false));
    // About 20 records a millisecond: always some batches in flight when the kill lands.
    let stream = {
        let (producer, stop) = (producer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = first;
            while !stop.load(Ordering::SeqCst) {
                for _ in 0..20 {
                    if let Err(e) = send(&producer, n) {
                        return (n, Some(e));
                    }
                    n += 1;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            (n, None)
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    let acked_before_kill = acks.count();
    gw.restart_after_kill();
    std::thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::SeqCst);
    let (end, send_error) = stream.join().expect("producer thread");
    let mut problems = Vec::new();
    if let Some(e) = send_error {
        problems.push(format!("producing stopped at record {end}: {e}"));
    }
    if let Err(e) = producer.flush(FLUSH) {
        problems.push(format!("flush after restart: {e}"));
    }
    problems.extend(acks.failures());
    let acked = acks.acked.lock().unwrap().clone();
    let sent = end - first;
    eprintln!(
        "sent {sent} records, {acked_before_kill} acknowledged before the kill, {} in all",
        acked.len()
    );
    if acked_before_kill == 0 {
        problems.push("nothing acknowledged before the kill".into());
    }
    if acked.len() <= acked_before_kill {
        problems.push("nothing acknowledged after the restart".into());
    }
    // Idempotence plus a producer that outlived the crash: every record gets through.
    if acked.len() as u64 != sent {
        problems.push(format!("acknowledged {} of {sent} records", acked.len()));
    }
    (acked, problems)
}

#[test]
fn acknowledged_records_survive_a_kill_mid_stream() {
    // Processes, here and below: SIGKILL and SIGTERM.
    let mut gw = Gateway::process();
    create_topic(&gw.bootstrap());
    let (acked, problems) = stream_through_a_kill(&mut gw, 0, &[]);
    assert_stored(
        &acked,
        &support::kafka::read_partitions(&gw.bootstrap(), TOPIC, PARTITIONS),
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Runs `f`; if it takes longer than `limit`, the whole test binary exits with a message
/// rather than hang (SIGTERM handling that never finishes would block `terminate`).
fn within<T>(limit: Duration, what: &str, f: impl FnOnce() -> T) -> T {
    let (done, wait) = mpsc::channel::<()>();
    let what = what.to_string();
    let watchdog = std::thread::spawn(move || {
        if wait.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!("{what} did not finish within {limit:?}");
            std::process::exit(101);
        }
    });
    let out = f();
    drop(done);
    watchdog.join().unwrap();
    out
}

#[test]
fn acknowledged_records_survive_a_graceful_stop() {
    let mut gw = Gateway::process();
    create_topic(&gw.bootstrap());
    let (producer, acks) = new_producer(&gw.bootstrap(), &[]);
    send_all(&producer, 0..3_000);
    producer.flush(FLUSH).expect("flush");
    // The producer stays connected: open connections must not hold up the shutdown.
    let status = within(Duration::from_secs(30), "SIGTERM shutdown", || {
        gw.terminate()
    });
    assert!(status.success(), "gateway exited with {status} on SIGTERM");
    drop(producer);
    gw.restart_after_kill();
    let first = acks.all_acked();
    assert_eq!(first.len(), 3_000);
    assert_stored(
        &first,
        &support::kafka::read_partitions(&gw.bootstrap(), TOPIC, PARTITIONS),
    );

    // Appends after the restart continue the log rather than overwrite it.
    let (producer, more) = new_producer(&gw.bootstrap(), &[]);
    send_all(&producer, 3_000..4_000);
    producer.flush(FLUSH).expect("flush after restart");
    let all: Vec<_> = first.into_iter().chain(more.all_acked()).collect();
    let stored = support::kafka::read_partitions(&gw.bootstrap(), TOPIC, PARTITIONS);
    assert_stored(&all, &stored);
    assert_eq!(stored.len(), 4_000);
}

#[test]
fn durability_batch_round_trips_and_survives_a_kill_mid_stream() {
    let mut gw = Gateway::process_with(&[("durability", "batch")]);
    create_topic(&gw.bootstrap());
    // Compressed batches take the same path: stored as sent, served back as stored.
    let (producer, acks) = new_producer(&gw.bootstrap(), &[("compression.codec", "lz4")]);
    send_all(&producer, 0..2_000);
    producer.flush(FLUSH).expect("flush");
    let acked = acks.all_acked();
    assert_eq!(acked.len(), 2_000);
    assert_stored(
        &acked,
        &support::kafka::read_partitions(&gw.bootstrap(), TOPIC, PARTITIONS),
    );
    drop(producer);

    // Each append syncs before its answer, so a kill often lands between a batch reaching
    // the disk and its acknowledgement: the producer's retry must then be deduplicated.
    // (The restarted gateway runs with the default durability; the data is already there.)
    let (streamed, problems) =
        stream_through_a_kill(&mut gw, 2_000, &[("compression.codec", "lz4")]);
    let all: Vec<_> = acked.into_iter().chain(streamed).collect();
    assert_stored(
        &all,
        &support::kafka::read_partitions(&gw.bootstrap(), TOPIC, PARTITIONS),
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
