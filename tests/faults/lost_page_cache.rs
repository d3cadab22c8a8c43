//! A machine crash, not only a process crash. A SIGKILL keeps the OS page cache, so no
//! kill shows a missing sync; here the embedded store runs on a [`Machine`]
//! (`support::machine`), whose crash keeps only what each file had at its last sync,
//! and the gateway starts again on that. Each `durability` setting keeps what
//! docs/STORAGE.md promises:
//! - `batch`: nothing acknowledged is lost, under the checked workload (idempotent and
//!   transactional producers, a consumer group);
//! - `interval`: only records acknowledged within about the last interval are lost;
//!   what is left is, in each partition, a prefix of what was sent, byte-exact, at its
//!   offsets, with intact CRCs, and the log goes on after it;
//! - `off` checks the harness: records never synced are gone.
//!
//! Crash points are random: the seed is printed, `FAULTS_SEED` replays one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer, ProducerContext, PurgeConfig, ThreadedProducer,
};
use rdkafka::ClientContext;

use super::workload::{make_topic, Workload, PARTITIONS};
use crate::support::kafka::read_partitions;
use crate::support::machine::Machine;

/// `fsync_interval_ms` of the `interval` test.
const INTERVAL: Duration = Duration::from_millis(500);
/// How much longer than the interval a checkpoint may take to make a record durable:
/// it syncs every partition file, then the journal.
const CHECKPOINT_SLACK: Duration = Duration::from_secs(1);

#[test]
fn durability_batch_loses_nothing_acknowledged_in_machine_crashes() {
    let mut rng = Rng::seeded();
    let topic = "faults-crash-batch";
    let mut machine = Machine::start(&[("durability", "batch")]);
    make_topic(&machine.bootstrap(), topic);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&machine.bootstrap(), topic, dir.path());
    for crash in 1..=3 {
        workload.wait_for_acks(100 + rng.below(1_500) as usize, Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(rng.below(300)));
        machine.crash();
        let back = workload.wait_for_acks(300, Duration::from_secs(120));
        println!("crash {crash}: 300 records acknowledged {back:?} after the restart");
    }
    workload.finish().assert_valid();
}

#[test]
fn durability_interval_loses_at_most_its_interval_in_machine_crashes() {
    let mut rng = Rng::seeded();
    let topic = "faults-crash-interval";
    let interval = INTERVAL.as_millis().to_string();
    let mut machine =
        Machine::start(&[("durability", "interval"), ("fsync_interval_ms", &interval)]);
    make_topic(&machine.bootstrap(), topic);
    // The topic's definition reaches the disk at the next checkpoint.
    std::thread::sleep(INTERVAL * 3);
    let mut rounds = Vec::new();
    for round in 0..3 {
        let stream = Stream::start(&machine.bootstrap(), topic, round);
        std::thread::sleep(Duration::from_millis(800 + rng.below(1_700)));
        let crash = Instant::now();
        machine.power_off();
        rounds.push((stream.stop(), Some(crash)));
        machine.power_on();
    }
    // Once no crash comes, everything acknowledged stays.
    let stream = Stream::start(&machine.bootstrap(), topic, rounds.len());
    std::thread::sleep(Duration::from_millis(500));
    rounds.push((stream.finish(), None));

    let stored = read_all(&machine.bootstrap(), topic);
    let mut oldest_loss = Duration::ZERO;
    for (round, (sent, crash)) in rounds.iter().enumerate() {
        let lost = sent.check_left(round, &stored);
        let acked = sent.acked.len();
        match crash {
            Some(crash) => {
                let oldest = lost
                    .iter()
                    .map(|at| crash.duration_since(*at))
                    .max()
                    .unwrap_or_default();
                println!(
                    "round {round}: {acked} acknowledged, {} lost in the crash, the oldest \
                     acknowledged {oldest:?} before it",
                    lost.len()
                );
                assert!(
                    oldest <= INTERVAL + CHECKPOINT_SLACK,
                    "round {round}: a record acknowledged {oldest:?} before the crash was lost, \
                     more than the {INTERVAL:?} interval (and {CHECKPOINT_SLACK:?} for its \
                     checkpoint)"
                );
                oldest_loss = oldest_loss.max(oldest);
            }
            None => assert!(
                lost.is_empty(),
                "round {round}, after the last restart: {} of {acked} acknowledged records lost \
                 without a crash",
                lost.len()
            ),
        }
    }
    println!("the oldest acknowledged record lost: {oldest_loss:?} before its crash");
}

#[test]
fn durability_off_loses_what_was_never_synced_the_harness_sees_it() {
    let topic = "faults-crash-off";
    let mut machine = Machine::start(&[("durability", "off")]);
    make_topic(&machine.bootstrap(), topic);
    let stream = Stream::start(&machine.bootstrap(), topic, 0);
    std::thread::sleep(Duration::from_millis(1_500));
    machine.power_off();
    let sent = stream.stop();
    machine.power_on();
    let stored = read_all(&machine.bootstrap(), topic);
    let lost = sent.check_left(0, &stored);
    println!(
        "{} acknowledged, {} lost in the crash",
        sent.acked.len(),
        lost.len()
    );
    assert!(
        !lost.is_empty(),
        "with nothing synced, a machine crash lost none of {} acknowledged records: the \
         image does not drop unsynced writes",
        sent.acked.len()
    );
}

/// Crash points: a seed from the clock, or `FAULTS_SEED`, printed either way.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::env::var("FAULTS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("clock")
                    .as_nanos() as u64
            });
        println!("FAULTS_SEED={seed}");
        Rng(seed | 1)
    }

    /// xorshift64*: a number below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

// ---------------------------------------------------------------------- the stream

/// Record `n` of round `round`: its key, and a value of varying length derived from it,
/// so a byte-exact comparison catches a torn or shifted batch.
fn record(round: usize, n: u64) -> (String, Vec<u8>) {
    let key = format!("{round}-{n}");
    let value = key.bytes().cycle().take(8 + (n % 200) as usize).collect();
    (key, value)
}

/// When each record was acknowledged, by key.
#[derive(Clone, Default)]
struct Acks(Arc<Mutex<HashMap<String, Instant>>>);

impl ClientContext for Acks {}
impl ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Ok(m) = result {
            let key = String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned();
            self.0.lock().unwrap().insert(key, Instant::now());
        }
    }
}

/// One idempotent producer (acks=all) sending records of one round, numbered, record
/// `n` to partition `n % PARTITIONS`, from a thread of its own.
struct Stream {
    producer: Arc<ThreadedProducer<Acks>>,
    acks: Acks,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
    round: usize,
}

/// What a round sent and which records were acknowledged, when.
struct Sent {
    count: u64,
    acked: HashMap<String, Instant>,
}

impl Stream {
    fn start(bootstrap: &str, topic: &'static str, round: usize) -> Stream {
        let acks = Acks::default();
        let producer: ThreadedProducer<Acks> = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            .set("message.timeout.ms", "30000")
            .create_with_context(acks.clone())
            .expect("producer");
        let producer = Arc::new(producer);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (producer, stop) = (producer.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let (key, value) = record(round, n);
                    let partition = (n % PARTITIONS as u64) as i32;
                    let mut next = BaseRecord::to(topic)
                        .partition(partition)
                        .key(&key)
                        .payload(&value);
                    loop {
                        match producer.send(next) {
                            Ok(()) => break,
                            Err((
                                KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull),
                                back,
                            )) => {
                                if stop.load(Ordering::SeqCst) {
                                    return n;
                                }
                                next = back;
                                std::thread::sleep(Duration::from_millis(2));
                            }
                            Err((e, _)) => panic!("record {key} not enqueued: {e}"),
                        }
                    }
                    n += 1;
                    if n % 20 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                n
            })
        };
        Stream {
            producer,
            acks,
            stop,
            thread,
            round,
        }
    }

    /// Stops sending and drops what is still unanswered (the machine it went to is
    /// gone): the acknowledged records so far.
    fn stop(self) -> Sent {
        self.stop.store(true, Ordering::SeqCst);
        let count = self.thread.join().expect("producer thread");
        self.producer
            .purge(PurgeConfig::default().queue().inflight());
        let acked = self.acks.0.lock().unwrap().clone();
        Sent { count, acked }
    }

    /// Stops sending and waits for every record's answer: all must be acknowledged.
    fn finish(self) -> Sent {
        self.stop.store(true, Ordering::SeqCst);
        let count = self.thread.join().expect("producer thread");
        self.producer.flush(Duration::from_secs(30)).expect("flush");
        let acked = self.acks.0.lock().unwrap().clone();
        assert_eq!(
            acked.len() as u64,
            count,
            "round {}: {} of {count} records acknowledged",
            self.round,
            acked.len()
        );
        Sent { count, acked }
    }
}

impl Sent {
    /// Checks what the crash left of this round in `stored`: in each partition, a
    /// prefix of the round's records in send order, byte-exact, after the rounds before
    /// it. Returns when each acknowledged record that is not there was acknowledged.
    fn check_left(&self, round: usize, stored: &Stored) -> Vec<Instant> {
        let mut left = HashSet::new();
        for (p, records) in stored {
            let ours: Vec<_> = records
                .iter()
                .filter(|(_, key, _)| round_of(key) == round)
                .collect();
            let mut expected = (0..self.count).filter(|n| (n % PARTITIONS as u64) as i32 == *p);
            for (offset, key, value) in ours {
                let n = expected.next().unwrap_or_else(|| {
                    panic!("partition {p} offset {offset}: {key} was never sent")
                });
                let (want_key, want_value) = record(round, n);
                assert_eq!(
                    (key, value),
                    (&want_key, &want_value),
                    "partition {p} offset {offset}: not the next record of round {round} \
                     (a gap, a reordered or a torn batch)"
                );
                left.insert(want_key);
            }
        }
        self.acked
            .iter()
            .filter(|(key, _)| !left.contains(*key))
            .map(|(_, at)| *at)
            .collect()
    }
}

fn round_of(key: &str) -> usize {
    key.split('-')
        .next()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("a key the test never sent: {key}"))
}

// ---------------------------------------------------------------------- the read

/// Each partition's records, `(offset, key, value)` in offset order.
type Stored = HashMap<i32, Vec<(i64, String, Vec<u8>)>>;

/// Reads every partition to its end (CRCs checked), checking that offsets run from 0
/// with no gap (nothing here deletes) and that no round's record follows a later
/// round's.
fn read_all(bootstrap: &str, topic: &str) -> Stored {
    let mut stored: Stored = (0..PARTITIONS).map(|p| (p, Vec::new())).collect();
    for (p, offset, key, value) in read_partitions(bootstrap, topic, PARTITIONS) {
        let records = stored.get_mut(&p).expect("a partition read");
        assert_eq!(
            offset,
            records.len() as i64,
            "partition {p}: offset {offset} after {} records",
            records.len()
        );
        let key = String::from_utf8_lossy(&key).into_owned();
        if let Some((before, k, _)) = records.last() {
            assert!(
                round_of(k) <= round_of(&key),
                "partition {p}: {key} at offset {offset} after {k} at {before}"
            );
        }
        records.push((offset, key, value));
    }
    stored
}
