//! Many producers in this process, each a librdkafka client of its own (so its own
//! connections), each sending one 100 B record a second to a partition of its own: many
//! connections open and producing slowly, for little CPU on this side. One thread drives
//! them all (send, then serve callbacks), so a thousand cost no thread of ours each.

use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, ProducerContext};
use rdkafka::ClientContext;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{config, payload};

/// How often each producer sends its record.
const EVERY: Duration = Duration::from_secs(1);

/// Acknowledged and failed records over the whole crowd.
#[derive(Default)]
struct Tally {
    acked: AtomicU64,
    failed: AtomicU64,
}

struct Counting(Arc<Tally>);

impl ClientContext for Counting {}

impl ProducerContext for Counting {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let counter = if result.is_ok() {
            &self.0.acked
        } else {
            &self.0.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The crowd, producing until dropped.
pub struct Crowd {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    driver: Option<thread::JoinHandle<()>>,
}

impl Crowd {
    /// Starts `n` producers on `addr`, producer i writing to partition i / topics of topic
    /// i % topics (so each to a partition of its own while n fits), and returns once every
    /// one has had a record acknowledged: all connected.
    pub fn open(addr: &str, topics: &[(String, i32)], n: usize, limit: Duration) -> Crowd {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Tally::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let (addr, topics) = (addr.to_string(), topics.to_vec());
        let (stop_d, tally_d) = (stop.clone(), tally.clone());
        let driver = thread::spawn(move || {
            let targets: Vec<(&str, i32)> = (0..n)
                .map(|i| {
                    let (name, partitions) = &topics[i % topics.len()];
                    (name.as_str(), (i / topics.len()) as i32 % partitions)
                })
                .collect();
            let producers: Vec<BaseProducer<Counting>> = (0..n)
                .map(|i| {
                    config(&addr)
                        .set("client.id", format!("crowd-{i}"))
                        .set("linger.ms", "5")
                        .set("acks", "all")
                        .set("message.timeout.ms", limit.as_millis().to_string())
                        .create_with_context(Counting(tally_d.clone()))
                        .expect("crowd producer")
                })
                .collect();
            let value = payload(100);
            let mut ready = Some(ready_tx);
            let mut next = Instant::now();
            while !stop_d.load(Ordering::Relaxed) {
                for (p, (topic, partition)) in producers.iter().zip(&targets) {
                    let record = BaseRecord::to(topic).partition(*partition).payload(&value);
                    // A full queue means the broker is not keeping up: that record is skipped.
                    let _ = p.send::<(), _>(record);
                }
                next += EVERY;
                // Serve callbacks until the next round is due.
                while Instant::now() < next && !stop_d.load(Ordering::Relaxed) {
                    for p in &producers {
                        p.poll(Duration::ZERO);
                    }
                    if tally_d.acked.load(Ordering::Relaxed) >= n as u64 {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                    }
                    thread::sleep(Duration::from_millis(20));
                }
            }
            // Dropping a producer purges what it holds; dropped on a few threads at once,
            // since each waits for its own librdkafka threads to end.
            let mut producers = producers;
            let chunk = producers.len().div_ceil(8).max(1);
            let mut droppers = Vec::new();
            while !producers.is_empty() {
                let rest = producers.split_off(producers.len().saturating_sub(chunk));
                droppers.push(thread::spawn(move || drop(rest)));
            }
            for d in droppers {
                let _ = d.join();
            }
        });
        let crowd = Crowd {
            stop,
            tally,
            driver: Some(driver),
        };
        let acked = |c: &Crowd| c.tally.acked.load(Ordering::Relaxed);
        assert!(
            ready_rx.recv_timeout(limit).is_ok(),
            "crowd: {} of {n} producers had a record acknowledged within {limit:?} ({} failed)",
            acked(&crowd),
            crowd.tally.failed.load(Ordering::Relaxed)
        );
        crowd
    }

    /// (acknowledged, failed) records so far.
    pub fn tally(&self) -> (u64, u64) {
        (
            self.tally.acked.load(Ordering::Relaxed),
            self.tally.failed.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
    }
}
