//! Abuse under load: a well-behaved producer and consumer (librdkafka) do the same
//! work against one gateway process three times, twice alone, then while 2,000 idle
//! connections sit open and other connections send malformed frames (three kinds, each
//! checked on its own), oversized and slow requests and compression bombs. Under abuse
//! the well-behaved work is all done, exactly: every record produced acknowledged and
//! read back once, in order, each chunk of it produced after every abuser had another
//! attempt answered, so the two interleave whatever the machine's speed. Every abusive
//! attempt gets its own expected answer (a close with nothing sent, or
//! MESSAGE_TOO_LARGE); the idle connections stay open; the gateway's peak memory
//! (VmHWM) stays within a bound relative to the second quiet run's, plus the budgets
//! and the idle connections. How long each run took is
//! printed for comparison, not asserted: speed is for benchmarks.

use crate::support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::records::Compression;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Message};
use support::kafka::{assign_from_start, group_consumer};
use support::{batch, call, record, topic_name, Gateway, Next, RawClient};

/// Records the well-behaved producer writes in each run (1 KiB each), in chunks.
const RECORDS: u64 = 100_000;
const CHUNKS: u64 = 4;
/// Under abuse, the gateway's peak resident memory stays below this multiple of its
/// peak in the quiet run, plus the byte budgets the abuse may fill by design
/// (`queued_max_request_bytes` and one `max_decompressed_request_bytes`, which the
/// embedded store never allocates: bombs decompress into nothing), plus what the idle
/// connections, absent from the quiet run, hold by design: about 14 KiB each
/// (`PERFORMANCE.md`, scale), allowed 16.
const MAX_MEMORY_FACTOR: u64 = 2;
const IDLE_CONNECTIONS: usize = 2_000;
const IDLE_CONNECTION_KIB: u64 = 16;
/// Pause between two rounds of each abuser: a steady stream, not a CPU race between
/// the abusing threads and the measured clients on the same two cores.
const ABUSE_PAUSE: Duration = Duration::from_millis(20);
const MAX_REQUEST: usize = 8 << 20;
const QUEUED_MAX: usize = 32 << 20;
const DECOMPRESSED_MAX: usize = 16 << 20;
/// Only so that a hang fails instead of hanging: no figure of speed.
const HANG: Duration = Duration::from_secs(180);

#[test]
fn well_behaved_clients_get_all_their_work_done_while_others_abuse_the_gateway() {
    raise_fd_limit(IDLE_CONNECTIONS as u64 * 2 + 1_000);
    // A process: its peak memory is the gateway's alone. Every refused frame is a
    // warning: thousands of lines, none of them news here.
    let gw = Gateway::process_with_log(
        "error",
        &[
            ("max_request_bytes", &MAX_REQUEST.to_string()),
            ("queued_max_request_bytes", &QUEUED_MAX.to_string()),
            (
                "max_decompressed_request_bytes",
                &DECOMPRESSED_MAX.to_string(),
            ),
            ("read_timeout_ms", "1000"),
        ],
    );
    let bootstrap = gw.bootstrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for topic in ["warm-up", "quiet", "abused", "bombs"] {
        rt.block_on(support::kafka::create_topic(&bootstrap, topic, 1, &[]));
    }

    // The gateway's memory grows with what it has stored and served: the quiet run
    // comes after as much work as the abused run comes after (a warm-up run), so the
    // two peaks compare like with like.
    work(&bootstrap, "warm-up", || {});
    let warm_peak = support::memory_kib(gw.pid(), "VmHWM");
    let quiet = work(&bootstrap, "quiet", || {});
    let quiet_peak = support::memory_kib(gw.pid(), "VmHWM");
    println!("bench: after the warm-up run, gateway VmHWM {warm_peak} KiB");
    println!(
        "bench: quiet run: {} records produced and read back in {:?}, gateway VmHWM \
         {quiet_peak} KiB",
        quiet.records, quiet.took
    );

    let idle: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|i| TcpStream::connect(gw.addr).unwrap_or_else(|e| panic!("idle connection {i}: {e}")))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let abuses: Vec<(&str, AbuseOf)> = vec![
        ("a garbage frame (unknown API key)", garbage_frame),
        ("a negative size", negative_size),
        ("a size over max_request_bytes", size_over_the_limit),
        (
            "a garbage request of exactly max_request_bytes",
            oversized_frame,
        ),
        ("a stalled request", stalled_request),
        ("a compression bomb", compression_bomb),
    ];
    let abusers: Vec<Abuser> = abuses
        .into_iter()
        .map(|(what, abuse)| Abuser::start(what, abuse(gw.addr), &stop))
        .collect();
    // Each chunk of the work after another attempt of every abuser answered.
    let abused = work(&bootstrap, "abused", || {
        for a in &abusers {
            a.wait_for_another_answered();
        }
    });
    stop.store(true, Ordering::Relaxed);
    let answered: Vec<(&str, u64)> = abusers.into_iter().map(Abuser::join).collect();
    let abused_peak = support::memory_kib(gw.pid(), "VmHWM");
    let open = idle.iter().filter(|s| still_open(s)).count();
    println!(
        "bench: abused run: {} records produced and read back in {:?}, gateway VmHWM \
         {abused_peak} KiB; {open} of {IDLE_CONNECTIONS} idle connections open; abuse \
         answered as expected: {answered:?}",
        abused.records, abused.took
    );

    assert_eq!(open, IDLE_CONNECTIONS, "idle connections were dropped");
    let budgets_kib = (QUEUED_MAX + DECOMPRESSED_MAX) as u64 / 1024;
    let idle_kib = IDLE_CONNECTIONS as u64 * IDLE_CONNECTION_KIB;
    let bound = quiet_peak * MAX_MEMORY_FACTOR + budgets_kib + idle_kib;
    println!(
        "memory bound: {MAX_MEMORY_FACTOR} x {quiet_peak} KiB + {budgets_kib} KiB + {idle_kib} KiB = {bound} KiB"
    );
    assert!(
        abused_peak <= bound,
        "gateway peak memory {abused_peak} KiB over the bound of {bound} KiB"
    );
}

/// What one run of well-behaved work did: records produced, acknowledged and read
/// back, and how long that took (printed only).
struct Work {
    records: u64,
    took: Duration,
}

/// Delivery reports: acknowledged records, and every failure, named.
#[derive(Clone, Default)]
struct Deliveries {
    acked: Arc<AtomicU64>,
    failed: Arc<Mutex<Vec<String>>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err((e, m)) => {
                let failed = format!("offset {} of {}: {e}", m.offset(), m.topic());
                self.failed.lock().unwrap().push(failed);
            }
        }
    }
}

/// The value of record `i`: its number, then padding to 1 KiB.
fn value(i: u64) -> Vec<u8> {
    let mut v = format!("{i:010}").into_bytes();
    v.resize(1024, b'v');
    v
}

/// Produces [`RECORDS`] records to `topic` (an idempotent producer, acks=all) in
/// [`CHUNKS`], calling `before_chunk` before each, while a consumer reads the topic
/// from its start. Every record must be acknowledged and read back exactly once, in
/// order; a failed delivery or a consumer error fails at once, naming it.
fn work(bootstrap: &str, topic: &str, mut before_chunk: impl FnMut()) -> Work {
    let deliveries = Deliveries::default();
    let producer: ThreadedProducer<Deliveries> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("queue.buffering.max.messages", "20000")
        .create_with_context(deliveries.clone())
        .expect("producer");
    // Records the consumer must read: unknown (u64::MAX) until the producer is done.
    let target = Arc::new(AtomicU64::new(u64::MAX));
    let consumer = {
        let (bootstrap, topic, target) = (bootstrap.to_string(), topic.to_string(), target.clone());
        thread::spawn(move || read_back(&bootstrap, &topic, &target))
    };
    let started = Instant::now();
    let mut sent = 0;
    let mut next_chunk = 0;
    while sent < RECORDS {
        assert!(
            started.elapsed() < HANG,
            "{topic}: {sent} records sent, still producing"
        );
        if sent == next_chunk {
            before_chunk();
            next_chunk += RECORDS / CHUNKS;
        }
        let failed = deliveries.failed.lock().unwrap().clone();
        assert!(failed.is_empty(), "{topic}: deliveries failed: {failed:?}");
        let value = value(sent);
        match producer.send(BaseRecord::<(), [u8]>::to(topic).payload(&value)) {
            Ok(()) => sent += 1,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                thread::sleep(Duration::from_millis(1)); // let it drain, then the same record
            }
            Err((e, _)) => panic!("{topic}: record {sent} not queued: {e}"),
        }
    }
    producer.flush(HANG).expect("every record sent");
    let failed = deliveries.failed.lock().unwrap().clone();
    assert!(failed.is_empty(), "{topic}: deliveries failed: {failed:?}");
    assert_eq!(
        deliveries.acked.load(Ordering::SeqCst),
        sent,
        "{topic}: records acknowledged"
    );
    target.store(sent, Ordering::SeqCst);
    let read = consumer.join().expect("the consumer");
    assert_eq!(read, sent, "{topic}: records read back");
    Work {
        records: sent,
        took: started.elapsed(),
    }
}

/// Reads `topic` from its start until `target` records came, checking each is the
/// next one written (offset and value), and that the partition ends there: nothing
/// lost, nothing twice. A consumer error fails at once.
fn read_back(bootstrap: &str, topic: &str, target: &AtomicU64) -> u64 {
    let consumer = group_consumer(bootstrap, "unused");
    assign_from_start(&consumer, topic, [0]);
    let started = Instant::now();
    let mut read = 0;
    while read < target.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < HANG,
            "{topic}: {read} records read, still reading"
        );
        match consumer.poll(Duration::from_millis(50)) {
            None => {}
            Some(Ok(m)) => {
                assert_eq!(m.offset(), read as i64, "{topic}: offset of record {read}");
                let expected = value(read);
                assert!(
                    m.payload() == Some(&expected[..]),
                    "{topic}: record {read} read back as {:?}",
                    m.payload()
                        .map(|p| String::from_utf8_lossy(&p[..10.min(p.len())]))
                );
                read += 1;
            }
            Some(Err(e)) => panic!("{topic}: consumer error after {read} records: {e}"),
        }
    }
    let (low, high) = consumer
        .fetch_watermarks(topic, 0, Duration::from_secs(30))
        .expect("watermarks");
    assert_eq!(
        (low, high),
        (0, read as i64),
        "{topic}: the partition holds more"
    );
    read
}

/// One abusive attempt after another: each `Ok` if the gateway answered it as
/// expected, else what it did.
type Abuse = Box<dyn FnMut() -> Result<(), String> + Send>;
/// Makes the [`Abuse`] of the gateway at an address.
type AbuseOf = fn(SocketAddr) -> Abuse;

/// A thread making one kind of abusive attempt after another until told to stop;
/// the first attempt not answered as expected fails the test, naming the abuse.
struct Abuser {
    what: &'static str,
    answered: Arc<AtomicU64>,
    thread: thread::JoinHandle<()>,
}

impl Abuser {
    fn start(what: &'static str, mut abuse: Abuse, stop: &Arc<AtomicBool>) -> Abuser {
        let answered = Arc::new(AtomicU64::new(0));
        let (count, stop) = (answered.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Err(e) = abuse() {
                    panic!("{what}: {e}");
                }
                count.fetch_add(1, Ordering::SeqCst);
                thread::sleep(ABUSE_PAUSE);
            }
        });
        Abuser {
            what,
            answered,
            thread,
        }
    }

    /// Attempts answered as expected so far; fails at once if one was not (the
    /// abuser's thread has then stopped, its panic printed above).
    fn answered(&self) -> u64 {
        let answered = self.answered.load(Ordering::SeqCst);
        assert!(
            !self.thread.is_finished(),
            "{}: an attempt was not answered as expected",
            self.what
        );
        answered
    }

    /// Waits until one more attempt than now has been answered as expected.
    fn wait_for_another_answered(&self) {
        let (started, now) = (Instant::now(), self.answered());
        while self.answered() <= now {
            assert!(started.elapsed() < HANG, "{}: not answered", self.what);
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the thread, failing if one of its attempts did.
    fn join(self) -> (&'static str, u64) {
        let answered = self.answered.load(Ordering::SeqCst);
        if let Err(panic) = self.thread.join() {
            std::panic::resume_unwind(panic);
        }
        (self.what, answered)
    }
}

/// Each attempt on a fresh connection: `bytes`, then a close with nothing sent.
fn closes_unanswered(addr: SocketAddr, bytes: Vec<u8>) -> Abuse {
    Box::new(move || closed_unanswered(addr, &bytes))
}

/// A frame that does not decode: its API key (227) is none Kafka has.
fn garbage_frame(addr: SocketAddr) -> Abuse {
    let garbage: Vec<u8> = (0u32..64).map(|i| (i * 2_654_435) as u8).collect();
    closes_unanswered(addr, support::framed(&garbage))
}

fn negative_size(addr: SocketAddr) -> Abuse {
    closes_unanswered(addr, (-1i32).to_be_bytes().to_vec())
}

fn size_over_the_limit(addr: SocketAddr) -> Abuse {
    closes_unanswered(addr, ((MAX_REQUEST + 1) as i32).to_be_bytes().to_vec())
}

/// A request of exactly `max_request_bytes` holding garbage: read whole (it fits the
/// budgets), then refused.
fn oversized_frame(addr: SocketAddr) -> Abuse {
    closes_unanswered(addr, support::framed(&vec![0xEE; MAX_REQUEST]))
}

/// A connection that announces a large request, sends a few bytes of it and stalls:
/// it holds its bytes of the gateway's budget until `read_timeout_ms` closes it.
fn stalled_request(addr: SocketAddr) -> Abuse {
    let mut start = (MAX_REQUEST as i32).to_be_bytes().to_vec();
    start.extend_from_slice(&[0, 0, 0, 9]);
    closes_unanswered(addr, start)
}

/// Produce requests, on one connection, whose one batch is 64 MiB of zeros in a few
/// kilobytes of zstd: each answered MESSAGE_TOO_LARGE (10), the connection kept open.
fn compression_bomb(addr: SocketAddr) -> Abuse {
    let bomb: Bytes = batch(&[record(None, &vec![0; 64 << 20], 0)], Compression::Zstd);
    let mut c = None;
    Box::new(move || {
        let c = c.get_or_insert_with(|| RawClient::connect(addr));
        let data = PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(bomb.clone()));
        let topic = TopicProduceData::default()
            .with_name(topic_name("bombs"))
            .with_partition_data(vec![data]);
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![topic]);
        let answer = call!(c, Produce, 9, request);
        match answer.responses[0].partition_responses[0].error_code {
            10 => Ok(()),
            code => Err(format!("answered {code}, not MESSAGE_TOO_LARGE (10)")),
        }
    })
}

/// Connects, writes `bytes`, and expects the gateway to close the connection with
/// nothing sent: end of stream or a reset (also while writing), not an answer and not
/// a connection left open until the 10 s timeout.
fn closed_unanswered(addr: SocketAddr, bytes: &[u8]) -> Result<(), String> {
    use std::io::ErrorKind::*;
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    match s.write_all(bytes) {
        Ok(()) => {}
        Err(e) if matches!(e.kind(), BrokenPipe | ConnectionReset | ConnectionAborted) => {
            return Ok(()); // closed while we were still writing
        }
        Err(e) => return Err(format!("neither read nor closed: {e}")),
    }
    match support::next(&mut s) {
        Next::Closed => Ok(()),
        Next::Frame(f) => Err(format!("answered with a {}-byte frame", f.len())),
        Next::Silent => Err("still open after 10 s".into()),
    }
}

/// The gateway has not closed `s` (a read would block, not end).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut probe = [0u8; 1];
    let read = std::io::Read::read(&mut &*s, &mut probe);
    let open = matches!(read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// Raises this process's open-file limit (inherited by the gateway it starts) to at
/// least `want`, within the hard limit.
fn raise_fd_limit(want: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < want {
            limit.rlim_cur = want.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= want,
        "open-file limit {} is below the {want} this test needs (raise the hard limit)",
        limit.rlim_cur
    );
}
