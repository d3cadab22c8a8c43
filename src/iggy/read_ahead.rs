//! Read-ahead for consumers catching up on Iggy.
//!
//! A Kafka consumer keeps one Fetch in flight per broker: it sends the next only after
//! decoding the last answer. Served straight from Iggy, every Fetch would wait for
//! fresh polls while the consumer sits idle, and the consumer's decoding would wait for
//! those polls in turn. So when a read leaves more data behind it, the next read of that
//! partition, from where this one ended and with the same byte limit, starts at once in
//! the background; a Fetch that asks for exactly that takes its answer, often already
//! there. Log data never changes once written, so such an answer is only as stale as its
//! watermarks, which the next Fetch refreshes.
//!
//! Kept by partition and offset, so that readers of one partition at different places
//! (two groups, or a consumer beside the compactor's pass) keep each their own instead
//! of replacing each other's, which would leave every one of them polling afresh.
//! Bounded: at most `budget` bytes of read limits are outstanding (a new read-ahead
//! evicts the oldest), and an entry older than [`FRESH_FOR`] is not used but dropped (a
//! reader that stopped or moved, or a topic deleted and re-made elsewhere).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use iggy_kafka_actors::store::{ReadBatches, StoreResult, TopicPartition};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

/// How long a read-ahead answer may wait for its Fetch.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// One read's answer, and where the next would start when it left data behind.
pub struct Read {
    pub batches: ReadBatches,
    pub more_from: Option<i64>,
}

pub type ReadTask = JoinHandle<StoreResult<Read>>;

struct Entry {
    max_bytes: usize,
    started: Instant,
    task: ReadTask,
}

pub struct ReadAhead {
    /// Most bytes of read limits outstanding; 0 turns read-ahead off.
    budget: usize,
    /// By partition and the offset the read starts at.
    entries: Mutex<HashMap<(TopicPartition, i64), Entry>>,
}

impl ReadAhead {
    pub fn new(budget: usize) -> ReadAhead {
        ReadAhead {
            budget,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a read of `max_bytes` may run ahead at all.
    pub fn fits(&self, max_bytes: usize) -> bool {
        max_bytes <= self.budget
    }

    /// The read started ahead for exactly this place and limit, if one is fresh.
    pub fn take(&self, tp: &TopicPartition, offset: i64, max_bytes: usize) -> Option<ReadTask> {
        let mut entries = self.entries.lock();
        let key = (tp.clone(), offset);
        if entries.get(&key)?.max_bytes != max_bytes {
            return None;
        }
        let e = entries.remove(&key)?;
        (e.started.elapsed() <= FRESH_FOR).then_some(e.task)
    }

    /// Keeps a read started ahead. A replaced, stale or evicted one runs to its end
    /// unseen: stopping an Iggy call midway would leave its answer unread on the
    /// connection.
    pub fn keep(&self, tp: TopicPartition, offset: i64, max_bytes: usize, task: ReadTask) {
        let mut entries = self.entries.lock();
        entries.retain(|_, e| e.started.elapsed() <= FRESH_FOR);
        let entry = Entry {
            max_bytes,
            started: Instant::now(),
            task,
        };
        entries.insert((tp, offset), entry);
        let mut outstanding: usize = entries.values().map(|e| e.max_bytes).sum();
        while outstanding > self.budget {
            let Some(oldest) = (entries.iter())
                .min_by_key(|(_, e)| e.started)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            outstanding -= entries.remove(&oldest).map_or(0, |e| e.max_bytes);
        }
    }

    pub fn forget_topic(&self, name: &str) {
        self.entries.lock().retain(|(tp, _), _| &*tp.topic != name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    fn done() -> ReadTask {
        tokio::spawn(async {
            Ok(Read {
                batches: ReadBatches::default(),
                more_from: None,
            })
        })
    }

    #[tokio::test]
    async fn serves_only_the_exact_place_and_limit() {
        let ra = ReadAhead::new(1 << 20);
        ra.keep(tp(0), 10, 100, done());
        assert!(ra.take(&tp(0), 11, 100).is_none());
        assert!(ra.take(&tp(0), 10, 99).is_none());
        assert!(ra.take(&tp(1), 10, 100).is_none());
        assert!(ra.take(&tp(0), 10, 100).is_some());
        assert!(ra.take(&tp(0), 10, 100).is_none(), "taken once");
    }

    #[tokio::test]
    async fn readers_of_one_partition_at_different_places_keep_each_their_own() {
        let ra = ReadAhead::new(1 << 20);
        ra.keep(tp(0), 10, 100, done());
        ra.keep(tp(0), 500, 100, done());
        assert!(ra.take(&tp(0), 10, 100).is_some());
        assert!(ra.take(&tp(0), 500, 100).is_some());
    }

    #[tokio::test]
    async fn evicts_the_oldest_past_the_budget() {
        let ra = ReadAhead::new(250);
        ra.keep(tp(0), 0, 100, done());
        ra.keep(tp(1), 0, 100, done());
        ra.keep(tp(2), 0, 100, done());
        assert!(ra.take(&tp(0), 0, 100).is_none(), "oldest evicted");
        assert!(ra.take(&tp(1), 0, 100).is_some());
        assert!(ra.take(&tp(2), 0, 100).is_some());
        ra.keep(tp(3), 0, 100, done());
        ra.forget_topic("t");
        assert!(ra.take(&tp(3), 0, 100).is_none());
    }
}
