//! Shared by the benches that drive a broker with librdkafka (the `rdkafka` crate):
//! bounded phases, topic creation, waiting for metadata, a produce phase with its
//! delivery latencies (full speed or paced), and a full read-back by manual assignment.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{Client, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::ToBytes;
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer,
};
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub const PARTITIONS: i32 = 8;

/// A number from the environment variable `name`, if set and one.
pub fn env_f64(name: &str) -> Option<f64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// The gateway binary to run: GATEWAY_BIN, else this package's, which cargo builds for
/// its benches and names at compile time.
pub fn gateway_bin() -> std::path::PathBuf {
    let built = option_env!("CARGO_BIN_EXE_iggy-kafka-gateway");
    let built = built.unwrap_or("target/release/iggy-kafka-gateway");
    std::env::var_os("GATEWAY_BIN").map_or(built.into(), Into::into)
}

/// Runs `f` on its own thread and gives up after `limit`, so a wedged client call (e.g. a
/// consumer close waiting on a broker) cannot hang the bench; a stuck thread is abandoned.
pub fn bounded<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(f()));
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no result after {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

pub fn create_topic(addr: &str, topic: &str) {
    create_topics(addr, &[topic], PARTITIONS);
}

/// Creates `topics` of `partitions` partitions each in one CreateTopics request and waits
/// until metadata shows all their partitions.
pub fn create_topics(addr: &str, topics: &[&str], partitions: i32) {
    create_topics_with(addr, topics, partitions, &[]);
}

/// [`create_topics`], each topic with `configs`.
pub fn create_topics_with(addr: &str, topics: &[&str], partitions: i32, configs: &[(&str, &str)]) {
    let admin: AdminClient<DefaultClientContext> = config(addr).create().unwrap();
    // Both timeouts are enforced inside librdkafka, so the future always completes. A
    // thousand partitions take a broker seconds, not milliseconds.
    let timeout = Some(Duration::from_secs(
        10 + partitions as u64 * topics.len() as u64 / 100,
    ));
    let opts = AdminOptions::new()
        .request_timeout(timeout)
        .operation_timeout(timeout);
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|t| {
            let topic = NewTopic::new(t, partitions, TopicReplication::Fixed(1));
            configs.iter().fold(topic, |topic, (k, v)| topic.set(k, v))
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let results = rt.block_on(admin.create_topics(&new, &opts));
    for result in results.expect("CreateTopics") {
        result.expect("create topic");
    }
    // A broker may answer CreateTopics before its metadata shows the partitions.
    for topic in topics {
        await_partition_count(admin.inner(), topic, partitions);
    }
}

pub fn config(addr: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", addr);
    config
}

/// Waits until metadata lists all partitions of `topic`. Producer and consumer call it too:
/// it connects them and tells them the leaders before their clock starts.
pub fn await_partitions<C: ClientContext>(client: &Client<C>, topic: &str) {
    await_partition_count(client, topic, PARTITIONS);
}

/// Waits until metadata lists `want` partitions of `topic`.
pub fn await_partition_count<C: ClientContext>(client: &Client<C>, topic: &str, want: i32) {
    let deadline = Instant::now() + Duration::from_secs(15 + want as u64 / 100);
    loop {
        let md = client.fetch_metadata(Some(topic), Duration::from_secs(5));
        let parts = md.map_or(0, |m| {
            m.topics().first().map_or(0, |t| t.partitions().len())
        });
        if parts == want as usize {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: {parts} partitions, want {want}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

#[derive(Default)]
pub struct Acks {
    pub latencies_ns: Vec<u64>,
    pub failed: u64,
    pub first_error: Option<String>,
}

/// Producer context. Delivery callbacks all run on the ThreadedProducer's polling thread, so
/// the mutex is only contended by the main thread's cheap progress checks.
pub struct Stats {
    pub base: Instant,
    pub acks: Mutex<Acks>,
}

impl ClientContext for Stats {}

impl ProducerContext for Stats {
    /// Send time in ns since `base`: a usize opaque costs no allocation per record (a Box would).
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_ns: usize) {
        let now = self.base.elapsed().as_nanos() as u64;
        let mut acks = self.acks.lock().unwrap();
        match result {
            Ok(_) => acks.latencies_ns.push(now.saturating_sub(sent_ns as u64)),
            Err((e, _)) => {
                acks.failed += 1;
                acks.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// Reads `n` records of `size` bytes back from the start of every partition at `isolation`
/// (librdkafka's `isolation.level`): (records/s, MB/s).
pub fn consume(
    addr: &str,
    topic: &str,
    (size, n): (usize, u64),
    isolation: &str,
    limit: Duration,
) -> (f64, f64) {
    // librdkafka's assign() needs a group.id ("Requires a consumer with group.id configured").
    // With assign (no subscribe) and no commits, the group never joins: at most a coordinator
    // lookup, outside the measured reads.
    let consumer: BaseConsumer = config(addr)
        .set("group.id", "bench")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", isolation)
        .set("queued.min.messages", "1000000")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    // Learn the leaders first: partitions assigned before that wait out a fixed 500 ms
    // offset-lookup retry in librdkafka, which would dominate short runs.
    await_partitions(consumer.client(), topic);
    let start = Instant::now();
    consumer.assign(&tpl).expect("assign");
    let (mut got, mut bytes, mut error_shown) = (0u64, 0u64, false);
    while got < n {
        assert!(start.elapsed() < limit, "consume: {got} of {n} records");
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                got += 1;
                bytes += m.payload_len() as u64;
            }
            // Fetch errors are retried by librdkafka: show the first and keep going.
            Some(Err(e)) if !error_shown => {
                eprintln!("  consume: {e}");
                error_shown = true;
            }
            _ => {}
        }
    }
    let secs = start.elapsed().as_secs_f64();
    // Cheap integrity check: every record came back whole (contents are not compared).
    assert_eq!(bytes, n * size as u64, "consume: payload bytes differ");
    (got as f64 / secs, bytes as f64 / secs / 1e6)
}

/// One path's figures for one record size.
#[derive(Clone, Copy, Default)]
pub struct Row {
    pub records: u64,
    pub produce_rps: f64,
    pub produce_mbps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub consume_rps: f64,
    pub consume_mbps: f64,
}

impl Row {
    /// A produce phase: `records` of `size` bytes in `secs`, latencies sorted (ns).
    pub fn produced(records: u64, size: usize, secs: f64, sorted_ns: &[u64]) -> Row {
        Row {
            records,
            produce_rps: records as f64 / secs,
            produce_mbps: (records * size as u64) as f64 / secs / 1e6,
            p50_ms: pct(sorted_ns, 0.50),
            p99_ms: pct(sorted_ns, 0.99),
            ..Row::default()
        }
    }
}

/// The value at quantile `p` of sorted nanoseconds, in ms.
pub fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).map_or(f64::NAN, |&ns| ns as f64 / 1e6)
}

/// A record value of `size` bytes: uppercase letters from a fixed pseudo-random sequence,
/// as Kafka's `kafka-producer-perf-test` makes them, so lz4 finds as little to squeeze
/// here as there (a run of one byte would compress to nothing).
pub fn payload(size: usize) -> Vec<u8> {
    let mut x: u32 = 0x9E37_79B9;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b'A' + (x % 26) as u8
        })
        .collect()
}

/// Produces `n` records round robin over the partitions, batches compressed with
/// `compression` (librdkafka's `compression.type`). With `rate`, record i is sent at its
/// scheduled time i / rate and its latency counts from then; without, as fast as librdkafka
/// takes them, latency from the successful send(). Returns (seconds, sorted latencies).
pub fn produce(
    addr: &str,
    topic: &str,
    (size, compression): (usize, &str),
    n: u64,
    rate: Option<f64>,
    limit: Duration,
) -> (f64, Vec<u64>) {
    let stats = Stats {
        base: Instant::now(),
        acks: Mutex::default(),
    };
    let producer: ThreadedProducer<Stats> = config(addr)
        .set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("acks", "all")
        .set("compression.type", compression)
        .set("message.timeout.ms", limit.as_millis().to_string())
        .create_with_context(stats)
        .expect("producer");
    await_partitions(producer.client(), topic);
    let stats = producer.context().clone();
    let done = || {
        let acks = stats.acks.lock().unwrap();
        acks.latencies_ns.len() as u64 + acks.failed
    };
    let payload = payload(size);
    let start = Instant::now();
    let start_ns = stats.base.elapsed().as_nanos() as u64;
    let deadline = start + limit;
    for i in 0..n {
        let partition = (i % PARTITIONS as u64) as i32;
        let mut rec = BaseRecord::<(), [u8], usize>::with_opaque_to(topic, 0).payload(&payload);
        rec = rec.partition(partition);
        let scheduled = rate.map(|r| start_ns + (i as f64 / r * 1e9) as u64);
        if let Some(at) = scheduled {
            let now = stats.base.elapsed().as_nanos() as u64;
            if at > now + 200_000 {
                thread::sleep(Duration::from_nanos(at - now));
            }
        }
        loop {
            rec.delivery_opaque =
                scheduled.unwrap_or_else(|| stats.base.elapsed().as_nanos() as u64) as usize;
            match producer.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    assert!(
                        Instant::now() < deadline,
                        "produce: queue full for {limit:?}"
                    );
                    rec = r;
                    thread::sleep(Duration::from_micros(200));
                }
                Err((e, _)) => panic!("produce: send failed: {e}"),
            }
        }
    }
    while done() < n {
        assert!(
            Instant::now() < deadline,
            "produce: {} of {n} acked",
            done()
        );
        thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    let mut acks = stats.acks.lock().unwrap();
    if let Some(e) = &acks.first_error {
        eprintln!(
            "  produce: {} records failed, first error: {e}",
            acks.failed
        );
    }
    let mut lat = std::mem::take(&mut acks.latencies_ns);
    lat.sort_unstable();
    (secs, lat)
}

/// Sends `rec` on a producer polled by its caller, polling while librdkafka's queue is
/// full, until `deadline`. (Only the benches with such producers use it.)
#[allow(dead_code)]
pub fn send_polling<K: ToBytes + ?Sized, P: ToBytes + ?Sized>(
    producer: &BaseProducer,
    mut rec: BaseRecord<'_, K, P>,
    deadline: Instant,
) {
    loop {
        match producer.send(rec) {
            Ok(()) => return,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                assert!(
                    Instant::now() < deadline,
                    "produce: queue full until the deadline"
                );
                rec = r;
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => panic!("produce: send failed: {e}"),
        }
    }
}
