//! librdkafka phases beyond `common`'s: several producers at once, end-to-end latency
//! (produce → consumer receives) at a paced rate, and a consumer group reading while a
//! producer writes.

use crate::common::{await_partitions, config, payload, pct, produce, PARTITIONS};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{Message, Offset, TopicPartitionList};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

/// Records per second of `producers` librdkafka producers (`common::produce`, one thread
/// each) writing n / producers records each at once: all records over the slowest one's time.
pub fn produce_many(
    addr: &str,
    topic: &str,
    shape: (usize, &'static str),
    (n, producers): (u64, u64),
    limit: Duration,
) -> f64 {
    let each = n / producers;
    let threads: Vec<_> = (0..producers)
        .map(|_| {
            let (addr, topic) = (addr.to_string(), topic.to_string());
            thread::spawn(move || produce(&addr, &topic, shape, each, None, limit))
        })
        .collect();
    let mut slowest: f64 = 0.0;
    for t in threads {
        let (secs, lat) = t.join().expect("producer thread panicked");
        assert_eq!(lat.len() as u64, each, "produce: records failed");
        slowest = slowest.max(secs);
    }
    (each * producers) as f64 / slowest
}

/// End-to-end latency percentiles (ms: p50, p99, p99.9) of records produced at `rate` per
/// second for `secs`, measured from each record's scheduled send time (so a stall counts
/// against every record it delays) to its arrival at a consumer that reads all partitions
/// by manual assignment. The producer is librdkafka with the other phases' settings
/// (`linger.ms=5`, `acks=all`); the consumer has librdkafka's defaults. Each value starts
/// with its scheduled time in ns since a clock both share.
pub fn end_to_end(addr: &str, topic: &str, size: usize, rate: f64, secs: f64) -> [f64; 3] {
    let n = (rate * secs) as u64;
    let base = Instant::now();
    let consumer: BaseConsumer = config(addr)
        .set("group.id", "e2e")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    await_partitions(consumer.client(), topic);
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).expect("assign");
    // Let the consumer find its start offsets and issue its first fetches before the clock.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(1) {
        assert!(consumer.poll(Duration::from_millis(50)).is_none());
    }
    let (addr_p, topic_p) = (addr.to_string(), topic.to_string());
    let producer = thread::spawn(move || {
        let producer: ThreadedProducer<_> = config(&addr_p)
            .set("linger.ms", "5")
            .set("acks", "all")
            .create()
            .expect("producer");
        await_partitions(producer.client(), &topic_p);
        let mut value = payload(size.max(8));
        let start = base.elapsed().as_nanos() as u64;
        for i in 0..n {
            let at = start + (i as f64 / rate * 1e9) as u64;
            let now = base.elapsed().as_nanos() as u64;
            if at > now + 100_000 {
                thread::sleep(Duration::from_nanos(at - now));
            }
            value[..8].copy_from_slice(&at.to_le_bytes());
            let partition = (i % PARTITIONS as u64) as i32;
            let rec = BaseRecord::<(), [u8]>::to(&topic_p)
                .payload(&value)
                .partition(partition);
            producer.send(rec).map_err(|(e, _)| e).expect("send");
        }
        producer.flush(Duration::from_secs(30)).expect("flush");
    });
    let deadline = Instant::now() + Duration::from_secs_f64(secs + 60.0);
    let mut lat = Vec::with_capacity(n as usize);
    while (lat.len() as u64) < n {
        assert!(
            Instant::now() < deadline,
            "e2e: {} of {n} received",
            lat.len()
        );
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            let now = base.elapsed().as_nanos() as u64;
            let at = u64::from_le_bytes(m.payload().unwrap()[..8].try_into().unwrap());
            lat.push(now.saturating_sub(at));
        }
    }
    producer.join().expect("e2e producer panicked");
    lat.sort_unstable();
    [pct(&lat, 0.50), pct(&lat, 0.99), pct(&lat, 0.999)]
}

/// A group of `members` librdkafka consumers subscribed to `topic` while one producer
/// writes `n` records into it at full speed: records per second from the producer's start
/// until the group has received all of them, once the group has assigned every partition.
pub fn group(addr: &str, topic: &str, size: usize, n: u64, members: usize, limit: Duration) -> f64 {
    let got = Arc::new(AtomicU64::new(0));
    let assigned = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    for i in 0..members {
        let (got, assigned, stop, done) =
            (got.clone(), assigned.clone(), stop.clone(), done_tx.clone());
        let (addr, topic) = (addr.to_string(), topic.to_string());
        thread::spawn(move || {
            let consumer: BaseConsumer = config(&addr)
                .set("group.id", format!("group-{topic}"))
                .set("client.id", format!("member-{i}"))
                .set("auto.offset.reset", "earliest")
                .create()
                .expect("consumer");
            consumer.subscribe(&[&topic]).expect("subscribe");
            let (mut counted, mut polls) = (0, 0u32);
            while !stop.load(Ordering::Relaxed) {
                if let Some(Ok(_)) = consumer.poll(Duration::from_millis(50)) {
                    got.fetch_add(1, Ordering::Relaxed);
                }
                // assignment() copies the list under librdkafka's lock: asked at every
                // record it capped every system near 90 k records/s.
                polls = polls.wrapping_add(1);
                if counted > 0 && polls % 1024 != 0 {
                    continue;
                }
                let now = consumer.assignment().map_or(0, |a| a.count());
                if now != counted {
                    // Counted as a difference, so a later rebalance cannot count twice.
                    assigned.fetch_add(now, Ordering::Relaxed);
                    assigned.fetch_sub(counted, Ordering::Relaxed);
                    counted = now;
                }
            }
            drop(consumer);
            let _ = done.send(());
        });
    }
    let deadline = Instant::now() + limit;
    while assigned.load(Ordering::Relaxed) < PARTITIONS as usize {
        assert!(
            Instant::now() < deadline,
            "group: partitions never all assigned"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    let (addr_p, topic_p) = (addr.to_string(), topic.to_string());
    let producer =
        thread::spawn(move || produce(&addr_p, &topic_p, (size, "none"), n, None, limit));
    while got.load(Ordering::Relaxed) < n {
        assert!(
            Instant::now() < deadline,
            "group: {} of {n} received",
            got.load(Ordering::Relaxed)
        );
        thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = producer.join();
    // Members leave the group on close; one that hangs there is left behind.
    for _ in 0..members {
        let _ = done_rx.recv_timeout(Duration::from_secs(30));
    }
    n as f64 / secs
}
