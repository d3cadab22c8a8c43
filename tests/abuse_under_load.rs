//! Abuse under load: a well-behaved producer and consumer (librdkafka) measured twice
//! against one gateway process, first alone, then while 2,000 idle connections sit
//! open and other connections send malformed frames, oversized and slow requests and
//! compression bombs. Their throughput under abuse must stay within a fraction of the
//! quiet run's, and the gateway's peak memory (VmHWM) within a bound relative to it;
//! both runs are measured here, in the same test, so the machine's speed cancels out.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::records::Compression;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use support::kafka::{assign_from_start, group_consumer};
use support::{batch, call, record, topic_name, Gateway, RawClient};

/// How long each run is measured.
const RUN: Duration = Duration::from_secs(6);
/// Under abuse, the well-behaved clients keep at least this share of their quiet
/// throughput. Generous: the machine is two cores shared with the abusers themselves.
const MIN_THROUGHPUT_SHARE: f64 = 0.25;
/// Under abuse, the gateway's peak resident memory stays below this multiple of its
/// peak in the quiet run, plus the byte budgets the abuse may fill by design
/// (`queued_max_request_bytes` and one `max_decompressed_request_bytes`, which the
/// embedded store never allocates: bombs decompress into nothing).
const MAX_MEMORY_FACTOR: u64 = 2;
const IDLE_CONNECTIONS: usize = 2_000;
/// Pause between two rounds of each abuser: a steady stream, not a CPU race between
/// the abusing threads and the measured clients on the same two cores.
const ABUSE_PAUSE: Duration = Duration::from_millis(20);
const MAX_REQUEST: usize = 8 << 20;
const QUEUED_MAX: usize = 32 << 20;
const DECOMPRESSED_MAX: usize = 16 << 20;

#[test]
fn well_behaved_clients_keep_their_pace_while_others_abuse_the_gateway() {
    raise_fd_limit(IDLE_CONNECTIONS as u64 * 2 + 1_000);
    // Every refused frame is a warning: thousands of lines, none of them news here.
    std::env::set_var("GATEWAY_LOG", "error");
    let gw = Gateway::start_with(&[
        ("max_request_bytes", &MAX_REQUEST.to_string()),
        ("queued_max_request_bytes", &QUEUED_MAX.to_string()),
        (
            "max_decompressed_request_bytes",
            &DECOMPRESSED_MAX.to_string(),
        ),
        ("read_timeout_ms", "2000"),
    ]);
    let bootstrap = gw.bootstrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for topic in ["quiet", "abused", "bombs"] {
        rt.block_on(support::kafka::create_topic(&bootstrap, topic, 1, &[]));
    }

    let quiet = measure(&bootstrap, "quiet");
    let quiet_peak = peak_memory_kib(gw.pid());
    println!(
        "quiet run: produced {:.0}/s, consumed {:.0}/s, gateway VmHWM {quiet_peak} KiB",
        quiet.produced, quiet.consumed
    );

    let idle: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|i| TcpStream::connect(gw.addr).unwrap_or_else(|e| panic!("idle connection {i}: {e}")))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(AbuseCounts::default());
    let abusers: Vec<_> = [malformed_frames, oversized_frames, slow_senders, bombs]
        .into_iter()
        .map(|abuse| {
            let (stop, counts, addr) = (stop.clone(), counts.clone(), gw.addr);
            thread::spawn(move || abuse(addr, &stop, &counts))
        })
        .collect();
    thread::sleep(Duration::from_millis(500)); // the abuse under way before measuring
    let abused = measure(&bootstrap, "abused");
    stop.store(true, Ordering::Relaxed);
    abusers.into_iter().for_each(|a| a.join().unwrap());
    let abused_peak = peak_memory_kib(gw.pid());
    let open = idle.iter().filter(|s| still_open(s)).count();
    println!(
        "abused run: produced {:.0}/s, consumed {:.0}/s, gateway VmHWM {abused_peak} KiB; \
         {open} of {IDLE_CONNECTIONS} idle connections open; abuse: {} malformed, {} \
         oversized, {} slow, {} bombs refused",
        abused.produced,
        abused.consumed,
        counts.malformed.load(Ordering::Relaxed),
        counts.oversized.load(Ordering::Relaxed),
        counts.slow.load(Ordering::Relaxed),
        counts.bombs.load(Ordering::Relaxed),
    );

    assert_eq!(open, IDLE_CONNECTIONS, "idle connections were dropped");
    for (what, count) in [
        ("malformed frames", &counts.malformed),
        ("oversized frames", &counts.oversized),
        ("slow requests", &counts.slow),
        ("compression bombs", &counts.bombs),
    ] {
        assert!(count.load(Ordering::Relaxed) > 0, "no {what} were refused");
    }
    for (what, quiet, abused) in [
        ("produce", quiet.produced, abused.produced),
        ("consume", quiet.consumed, abused.consumed),
    ] {
        assert!(
            abused >= quiet * MIN_THROUGHPUT_SHARE,
            "{what} throughput fell from {quiet:.0}/s to {abused:.0}/s under abuse \
             (floor: {MIN_THROUGHPUT_SHARE} of the quiet run)"
        );
    }
    let budgets_kib = (QUEUED_MAX + DECOMPRESSED_MAX) as u64 / 1024;
    let bound = quiet_peak * MAX_MEMORY_FACTOR + budgets_kib;
    println!(
        "memory bound: {MAX_MEMORY_FACTOR} x {quiet_peak} KiB + {budgets_kib} KiB = {bound} KiB"
    );
    assert!(
        abused_peak <= bound,
        "gateway peak memory {abused_peak} KiB over the bound of {bound} KiB"
    );
}

/// Records per second a producer had acknowledged and a consumer read during [`RUN`].
struct Throughput {
    produced: f64,
    consumed: f64,
}

/// Counts acknowledged deliveries.
struct Acked(Arc<AtomicU64>);

impl ClientContext for Acked {}

impl ProducerContext for Acked {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if result.is_ok() {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Produces 1 KiB records to `topic` as fast as librdkafka takes them while a consumer
/// reads the topic from its start, both for [`RUN`].
fn measure(bootstrap: &str, topic: &str) -> Throughput {
    let acked = Arc::new(AtomicU64::new(0));
    let producer: ThreadedProducer<Acked> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("acks", "all")
        .set("queue.buffering.max.messages", "20000")
        .create_with_context(Acked(acked.clone()))
        .expect("producer");
    let consumed = {
        let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
        thread::spawn(move || consume_for(&bootstrap, &topic, RUN))
    };
    let value = vec![b'v'; 1024];
    let started = Instant::now();
    while started.elapsed() < RUN {
        let record = BaseRecord::<(), [u8]>::to(topic).payload(&value);
        if producer.send(record).is_err() {
            thread::sleep(Duration::from_millis(1)); // queue full: let it drain
        }
    }
    let produced = acked.load(Ordering::Relaxed) as f64 / RUN.as_secs_f64();
    let _ = producer.flush(Duration::from_secs(30));
    let consumed = consumed.join().unwrap() as f64 / RUN.as_secs_f64();
    Throughput { produced, consumed }
}

/// Records a consumer reads from the start of `topic` within `run`.
fn consume_for(bootstrap: &str, topic: &str, run: Duration) -> u64 {
    let consumer = group_consumer(bootstrap, "unused");
    assign_from_start(&consumer, topic, [0]);
    let started = Instant::now();
    let mut read = 0;
    while started.elapsed() < run {
        if let Some(Ok(_)) = consumer.poll(Duration::from_millis(50)) {
            read += 1;
        }
    }
    read
}

#[derive(Default)]
struct AbuseCounts {
    malformed: AtomicU64,
    oversized: AtomicU64,
    slow: AtomicU64,
    bombs: AtomicU64,
}

/// Frames that do not decode, a negative size and a size over `max_request_bytes`,
/// each on a fresh connection the gateway must close.
fn malformed_frames(addr: SocketAddr, stop: &AtomicBool, counts: &AbuseCounts) {
    let garbage: Vec<u8> = (0u32..64).map(|i| (i * 2_654_435) as u8).collect();
    let cases = [
        support::framed(&garbage),
        (-1i32).to_be_bytes().to_vec(),
        ((MAX_REQUEST + 1) as i32).to_be_bytes().to_vec(),
    ];
    while !stop.load(Ordering::Relaxed) {
        for case in &cases {
            if closed_after(addr, case) {
                counts.malformed.fetch_add(1, Ordering::Relaxed);
            }
        }
        thread::sleep(ABUSE_PAUSE);
    }
}

/// Requests of exactly `max_request_bytes` holding garbage: read whole (they fit the
/// budgets), then refused.
fn oversized_frames(addr: SocketAddr, stop: &AtomicBool, counts: &AbuseCounts) {
    let frame = support::framed(&vec![0xEE; MAX_REQUEST]);
    while !stop.load(Ordering::Relaxed) {
        if closed_after(addr, &frame) {
            counts.oversized.fetch_add(1, Ordering::Relaxed);
        }
        thread::sleep(ABUSE_PAUSE);
    }
}

/// Connections that announce a large request, send a few bytes of it and stall: each
/// holds its bytes of the gateway's budget until `read_timeout_ms` closes it.
fn slow_senders(addr: SocketAddr, stop: &AtomicBool, counts: &AbuseCounts) {
    let mut start = (MAX_REQUEST as i32).to_be_bytes().to_vec();
    start.extend_from_slice(&[0, 0, 0, 9]);
    while !stop.load(Ordering::Relaxed) {
        let stalled: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                thread::spawn(move || closed_after(addr, &start))
            })
            .collect();
        for s in stalled {
            if s.join().unwrap() {
                counts.slow.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Produce requests whose one batch is 64 MiB of zeros in a few kilobytes of zstd:
/// each must be answered MESSAGE_TOO_LARGE, on a connection that stays open.
fn bombs(addr: SocketAddr, stop: &AtomicBool, counts: &AbuseCounts) {
    let bomb: Bytes = batch(&[record(None, &vec![0; 64 << 20], 0)], Compression::Zstd);
    let mut c = RawClient::connect(addr);
    while !stop.load(Ordering::Relaxed) {
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
        let code = answer.responses[0].partition_responses[0].error_code;
        assert_eq!(code, 10, "a compression bomb was not refused");
        counts.bombs.fetch_add(1, Ordering::Relaxed);
        thread::sleep(ABUSE_PAUSE);
    }
}

/// Connects, writes `bytes`, and waits (up to 10 s) for the gateway to close.
fn closed_after(addr: SocketAddr, bytes: &[u8]) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if s.write_all(bytes).is_err() {
        return true; // closed while we were still writing
    }
    let mut sink = [0u8; 256];
    loop {
        match s.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {} // an answer to something before: keep reading
            Err(e) => return e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }
}

/// The gateway has not closed `s` (a read would block, not end).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut probe = [0u8; 1];
    let open =
        matches!((&*s).read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

/// Peak resident memory of process `pid` (VmHWM), in KiB.
fn peak_memory_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status")
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
