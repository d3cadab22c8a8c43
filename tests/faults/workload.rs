//! The clients a fault test runs while it injects its fault, every one recording into
//! one [`History`]: two idempotent producers (acks=all), a transactional producer that
//! commits three transactions in four and aborts the fourth, and a consumer group of
//! two read_committed members committing their positions. [`Workload::finish`] stops
//! them, reads every partition to its end with one more reader, and checks the history.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::checker::{check, Verdict};
use super::history::{History, Op, Outcome};
use crate::support::kafka::create_topic;

pub const PARTITIONS: i32 = 4;
pub const GROUP: &str = "faults-group";
/// How long a transaction may stay open before the coordinator aborts it: short, so a
/// transaction its producer lost in a fault ends before the final read.
const TXN_TIMEOUT_MS: &str = "10000";
/// How long the end of the run may take: producers flushing what they hold, the final
/// reader reading to the end.
const FINISH: Duration = Duration::from_secs(90);

/// Makes `topic` as the workload needs it ([`PARTITIONS`] partitions), from a test
/// that runs no async runtime of its own.
pub fn make_topic(bootstrap: &str, topic: &str) {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(create_topic(bootstrap, topic, PARTITIONS, &[]));
}

pub struct Workload {
    pub history: Arc<History>,
    bootstrap: String,
    topic: &'static str,
    stop: Arc<AtomicBool>,
    producers: Vec<JoinHandle<()>>,
    readers: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts every client on `topic` (made already, with [`PARTITIONS`] partitions),
    /// recording into `<topic>.jsonl` in `dir` (or in `FAULTS_HISTORY_DIR`).
    pub fn start(bootstrap: &str, topic: &'static str, dir: &Path) -> Workload {
        // Kept where FAULTS_HISTORY_DIR says, to check it with other tools afterwards.
        let kept = std::env::var_os("FAULTS_HISTORY_DIR").map(std::path::PathBuf::from);
        let file = kept
            .as_deref()
            .unwrap_or(dir)
            .join(format!("{topic}.jsonl"));
        println!("history: {}", file.display());
        let history = Arc::new(History::to_file(topic, &file));
        let stop = Arc::new(AtomicBool::new(false));
        let client = |k: usize| Client {
            bootstrap: bootstrap.to_string(),
            topic,
            k,
            history: history.clone(),
            stop: stop.clone(),
        };
        let mut producers: Vec<JoinHandle<()>> = (0..2)
            .map(|k| {
                let c = client(k);
                std::thread::spawn(move || c.idempotent())
            })
            .collect();
        let c = client(0);
        producers.push(std::thread::spawn(move || c.transactional()));
        let readers = (0..2)
            .map(|k| {
                let c = client(k);
                std::thread::spawn(move || c.member())
            })
            .collect();
        Workload {
            history,
            bootstrap: bootstrap.to_string(),
            topic,
            stop,
            producers,
            readers,
        }
    }

    /// How many records were acknowledged so far.
    pub fn acked(&self) -> usize {
        self.history.acked()
    }

    /// Waits until `more` records more than now are acknowledged; how long it took.
    pub fn wait_for_acks(&self, more: usize, within: Duration) -> Duration {
        let (start, want) = (Instant::now(), self.acked() + more);
        while self.acked() < want {
            assert!(
                start.elapsed() < within,
                "{} of {want} records acknowledged within {within:?}",
                self.acked()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        start.elapsed()
    }

    /// Stops the clients, reads every partition to its end, records the group's
    /// committed offsets, and checks the history.
    pub fn finish(mut self) -> Verdict {
        self.stop.store(true, Ordering::SeqCst);
        let threads = std::mem::take(&mut self.producers)
            .into_iter()
            .chain(std::mem::take(&mut self.readers));
        let started = Instant::now();
        for thread in threads {
            thread.join().expect("a client thread panicked");
        }
        let stopped = started.elapsed();
        read_to_end(&self.bootstrap, self.topic, &self.history);
        let read = started.elapsed();
        record_committed(&self.bootstrap, self.topic, &self.history);
        println!(
            "clients stopped in {stopped:?}, read to the end by {read:?}, committed offsets \
             fetched by {:?}",
            started.elapsed()
        );
        self.history.flush();
        check(&self.history.ops())
    }
}

impl Drop for Workload {
    /// A test that failed early leaves no client running.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What every client thread knows: where to go, its number, the history, and when to
/// stop.
struct Client {
    bootstrap: String,
    topic: &'static str,
    k: usize,
    history: Arc<History>,
    stop: Arc<AtomicBool>,
}

impl Client {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Sends `i<k>-<n>` to partition `n % PARTITIONS`, one every 5 ms, until stopped;
    /// then waits for every outstanding delivery report.
    fn idempotent(self) {
        let process = format!("i{}", self.k);
        let producer: ThreadedProducer<Deliveries> = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            // librdkafka's default. A message timing out while its batch is in flight
            // makes librdkafka start a new epoch and send the rest of that batch again
            // under new sequence numbers, which no broker can tell from new records
            // if the first send was written: a cut as long as this timeout would
            // show the client's duplicates, not the gateway's (docs/CLUSTER.md).
            .set("message.timeout.ms", "300000")
            .set("reconnect.backoff.max.ms", "500")
            .create_with_context(Deliveries::of(&process, &self.history))
            .expect("idempotent producer");
        let mut n = 0u64;
        while !self.stopped() {
            let partition = (n % PARTITIONS as u64) as i32;
            let value = format!("{process}-{n}");
            self.history.record(Op::Send {
                process: process.clone(),
                txn: None,
                partition,
                value: value.clone(),
            });
            let mut record = BaseRecord::<(), _>::to(self.topic)
                .partition(partition)
                .payload(&value);
            loop {
                match producer.send(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        record = back;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err((e, _)) => {
                        self.history.record(Op::Failed {
                            process: process.clone(),
                            value: value.clone(),
                            error: e.to_string(),
                        });
                        break;
                    }
                }
            }
            n += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
        // What is still unacknowledged after this is reported failed when dropped.
        let _ = producer.flush(FINISH);
    }

    /// Transactions of five records `t<k>-<txn>-<i>`, one on each partition in turn;
    /// every fourth is aborted. A producer that failed fatally is made anew (which
    /// fences the old one and ends its open transaction).
    fn transactional(self) {
        let mut producer = None;
        let mut txn_number = 0u64;
        while !self.stopped() {
            let Some(p) = producer.take().or_else(|| self.txn_producer()) else {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            };
            txn_number += 1;
            let txn = format!("t{}-{txn_number}", self.k);
            if let Err(e) = p.begin_transaction() {
                println!("{txn}: begin_transaction failed: {e}");
                continue;
            }
            for i in 0..5 {
                let value = format!("{txn}-{i}");
                let partition = i % PARTITIONS;
                self.history.record(Op::Send {
                    process: txn.clone(),
                    txn: Some(txn.clone()),
                    partition,
                    value: value.clone(),
                });
                let record = BaseRecord::<(), _>::to(self.topic)
                    .partition(partition)
                    .payload(&value);
                if let Err((e, _)) = p.send(record) {
                    self.history.record(Op::Failed {
                        process: txn.clone(),
                        value,
                        error: e.to_string(),
                    });
                }
            }
            let (outcome, usable) = self.end(&p, &txn, !txn_number.is_multiple_of(4));
            self.history.record(Op::TxnEnd {
                txn: txn.clone(),
                outcome,
            });
            if usable {
                producer = Some(p);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A transactional producer with its transactions initialised, or `None` if that
    /// failed (the gateway or its store away).
    fn txn_producer(&self) -> Option<ThreadedProducer<Deliveries>> {
        let id = format!("{}-tx{}", self.topic, self.k);
        let producer: ThreadedProducer<Deliveries> = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("transactional.id", &id)
            .set("transaction.timeout.ms", TXN_TIMEOUT_MS)
            .set("linger.ms", "5")
            .set("reconnect.backoff.max.ms", "500")
            .create_with_context(Deliveries::of(&id, &self.history))
            .expect("transactional producer");
        match producer.init_transactions(Duration::from_secs(20)) {
            Ok(()) => Some(producer),
            Err(e) => {
                println!("{id}: init_transactions failed: {e}");
                None
            }
        }
    }

    /// Commits (or aborts) the open transaction, retrying what may be retried: how it
    /// ended, and whether the producer can go on.
    fn end(&self, p: &ThreadedProducer<Deliveries>, txn: &str, commit: bool) -> (Outcome, bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        if commit {
            self.history.record(Op::Committing {
                txn: txn.to_string(),
            });
        }
        let mut committing = commit;
        loop {
            let ended = if committing {
                p.commit_transaction(Duration::from_secs(15))
            } else {
                p.abort_transaction(Duration::from_secs(15))
            };
            let e = match ended {
                Ok(()) if committing => return (Outcome::Committed, true),
                Ok(()) => return (Outcome::Aborted, true),
                Err(KafkaError::Transaction(e)) => e,
                Err(e) => {
                    println!("{txn}: ending failed: {e}");
                    return (Outcome::Unknown, false);
                }
            };
            println!("{txn}: ending failed: {e}");
            if e.is_fatal() || Instant::now() > deadline {
                return (Outcome::Unknown, false);
            }
            if e.txn_requires_abort() {
                // A commit refused before it was written: aborted, if the abort goes.
                committing = false;
            } else if !e.is_retriable() {
                return (Outcome::Unknown, false);
            }
        }
    }

    /// A member of [`GROUP`]: polls, recording each record, and commits its positions
    /// every half second.
    fn member(self) {
        let process = format!("c{}", self.k);
        let consumer: BaseConsumer<Rebalances> = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("group.id", GROUP)
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000")
            .set("reconnect.backoff.max.ms", "500")
            .create_with_context(Rebalances {
                process: process.clone(),
                history: self.history.clone(),
            })
            .expect("group member");
        consumer.subscribe(&[self.topic]).expect("subscribe");
        let mut committed_at = Instant::now();
        while !self.stopped() {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                self.history.record(Op::Poll {
                    process: process.clone(),
                    read_committed: true,
                    records: vec![(m.partition(), m.offset(), value_of(&m))],
                });
            }
            if committed_at.elapsed() > Duration::from_millis(500) {
                committed_at = Instant::now();
                commit_positions(&consumer, &self.history);
            }
        }
    }
}

/// Commits the member's positions; once committed, records them.
fn commit_positions(consumer: &BaseConsumer<Rebalances>, history: &History) {
    let Ok(positions) = consumer.position() else {
        return;
    };
    let mut at = TopicPartitionList::new();
    for e in positions.elements() {
        if let Offset::Offset(o) = e.offset() {
            at.add_partition_offset(e.topic(), e.partition(), Offset::Offset(o))
                .unwrap();
        }
    }
    if at.count() == 0 || consumer.commit(&at, CommitMode::Sync).is_err() {
        return;
    }
    for e in at.elements() {
        if let Offset::Offset(offset) = e.offset() {
            history.record(Op::Committed {
                group: GROUP.into(),
                partition: e.partition(),
                offset,
            });
        }
    }
}

fn value_of<M: Message>(m: &M) -> String {
    String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned()
}

/// Records each delivery report: acknowledged at an offset, or failed.
struct Deliveries {
    process: String,
    history: Arc<History>,
}

impl Deliveries {
    fn of(process: &str, history: &Arc<History>) -> Deliveries {
        Deliveries {
            process: process.to_string(),
            history: history.clone(),
        }
    }
}

impl ClientContext for Deliveries {}
impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let op = match result {
            Ok(m) => Op::Acked {
                process: self.process.clone(),
                partition: m.partition(),
                offset: m.offset(),
                value: value_of(m),
            },
            Err((e, m)) => Op::Failed {
                process: self.process.clone(),
                value: value_of(m),
                error: e.to_string(),
            },
        };
        self.history.record(op);
    }
}

/// Records each assignment a group member is given: its reads start over.
struct Rebalances {
    process: String,
    history: Arc<History>,
}

impl ClientContext for Rebalances {}
impl ConsumerContext for Rebalances {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(assigned) = rebalance {
            self.history.record(Op::Assign {
                process: self.process.clone(),
                partitions: assigned.elements().iter().map(|e| e.partition()).collect(),
            });
        }
    }
}

/// What a fresh Metadata answer says of `partition`: its leader and the brokers listed.
fn leader_seen(consumer: &BaseConsumer, topic: &str, partition: i32) -> String {
    match consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) {
        Ok(md) => {
            let brokers: Vec<i32> = md.brokers().iter().map(|b| b.id()).collect();
            let leader = md
                .topics()
                .iter()
                .flat_map(|t| t.partitions())
                .find(|pm| pm.id() == partition)
                .map(|pm| pm.leader());
            format!("metadata now: leader {leader:?}, brokers {brokers:?}")
        }
        Err(e) => format!("metadata now: {e}"),
    }
}

/// One more reader, read_committed, reads every partition from its start to its high
/// watermark (or until nothing more comes for longer than a transaction's timeout),
/// recording what it reads.
fn read_to_end(bootstrap: &str, topic: &str, history: &History) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "faults-final-reader")
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()
        .expect("final reader");
    let deadline = Instant::now() + FINISH;
    let mut assignment = TopicPartitionList::new();
    let mut high = Vec::new();
    for p in 0..PARTITIONS {
        let watermarks = loop {
            match consumer.fetch_watermarks(topic, p, Duration::from_secs(5)) {
                Ok((_, h)) => break h,
                Err(e) => {
                    assert!(Instant::now() < deadline, "watermarks of {p}: {e}");
                    // librdkafka takes a cached leader it no longer lists as a broker
                    // (one gateway's answer named it, a later one from a gateway that
                    // had dropped it did not) as a lasting error and asks for no new
                    // metadata; asking for it is the application's way out.
                    println!(
                        "watermarks of {p}: {e}; {}",
                        leader_seen(&consumer, topic, p)
                    );
                }
            }
        };
        high.push(watermarks);
        assignment
            .add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).expect("assign");
    history.record(Op::Assign {
        process: "final".into(),
        partitions: (0..PARTITIONS).collect(),
    });
    let mut quiet_since = Instant::now();
    // Quiet for longer than a transaction may stay open: one a fault left open holds
    // the last stable offset, and so this reader, until the coordinator aborts it.
    let quiet = Duration::from_millis(TXN_TIMEOUT_MS.parse::<u64>().unwrap() + 5_000);
    while Instant::now() < deadline && quiet_since.elapsed() < quiet {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            quiet_since = Instant::now();
            history.record(Op::Poll {
                process: "final".into(),
                read_committed: true,
                records: vec![(m.partition(), m.offset(), value_of(&m))],
            });
        }
        let reached = consumer.position().is_ok_and(|at| {
            (0..PARTITIONS).all(|p| {
                matches!(at.find_partition(topic, p).map(|e| e.offset()),
                    Some(Offset::Offset(o)) if o >= high[p as usize])
            })
        });
        if reached {
            return;
        }
    }
}

/// The group's committed offsets as the gateway now answers them.
fn record_committed(bootstrap: &str, topic: &str, history: &History) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("enable.auto.commit", "false")
        .create()
        .expect("offset reader");
    let mut partitions = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        partitions.add_partition(topic, p);
    }
    let committed = consumer
        .committed_offsets(partitions, Duration::from_secs(30))
        .expect("the group's committed offsets");
    for e in committed.elements() {
        if let Offset::Offset(offset) = e.offset() {
            history.record(Op::Committed {
                group: GROUP.into(),
                partition: e.partition(),
                offset,
            });
        }
    }
}
