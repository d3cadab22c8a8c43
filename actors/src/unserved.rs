//! Batches read for a read-committed reader and not served to it yet, kept for its next
//! fetch. A read-committed fetch serves nothing past the last stable offset, and when it
//! ends inside a transaction the partition's index reads on to find the marker
//! (`txn_index.rs`); where the store cannot read headers alone (Iggy) that read brings
//! the records themselves. The reader's next fetch starts right where those batches
//! start, so serving it from them reads the log once instead of twice. Only whole,
//! back-to-back batches are kept, for a short while, bounded in bytes (oldest out first).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::protocol::records;
use crate::store::TopicPartition;

/// What one partition may keep: a fetch and the index's read past it.
const PARTITION_BYTES: usize = 4 << 20;
/// What all partitions may keep together.
const TOTAL_BYTES: usize = 32 << 20;
/// The reader's next fetch comes at once; batches nobody took by then are stale.
const KEPT_FOR: Duration = Duration::from_secs(5);

/// Cheap to share: one lock, held for a lookup and a few pointer moves.
#[derive(Default)]
pub struct Unserved {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    chunks: HashMap<TopicPartition, Chunk>,
    /// Partitions in the order their chunks were kept, each with its chunk's number:
    /// a partition kept again since has a newer one, and its older entry is skipped.
    order: VecDeque<(u64, TopicPartition)>,
    numbered: u64,
    bytes: usize,
}

/// One partition's kept batches, back to back.
struct Chunk {
    batches: VecDeque<Bytes>,
    bytes: usize,
    at: Instant,
    number: u64,
}

impl Kept {
    fn remove(&mut self, tp: &TopicPartition) -> Option<Chunk> {
        let c = self.chunks.remove(tp)?;
        self.bytes -= c.bytes;
        Some(c)
    }

    fn insert(&mut self, tp: &TopicPartition, mut chunk: Chunk) {
        self.numbered += 1;
        chunk.number = self.numbered;
        self.bytes += chunk.bytes;
        self.order.push_back((self.numbered, tp.clone()));
        self.chunks.insert(tp.clone(), chunk);
        while self.bytes > TOTAL_BYTES {
            let Some((number, oldest)) = self.order.pop_front() else {
                break;
            };
            if self.chunks.get(&oldest).is_some_and(|c| c.number == number) {
                self.remove(&oldest);
            }
        }
        if self.order.len() > 2 * self.chunks.len() + 64 {
            // Mostly entries of chunks taken or kept again since: only the live ones stay.
            let chunks = &self.chunks;
            let live = |(number, tp): &(u64, TopicPartition)| {
                chunks.get(tp).is_some_and(|c| c.number == *number)
            };
            self.order.retain(live);
        }
    }
}

impl Unserved {
    /// Keeps `batches`, in offset order, for the partition's next read: the leading ones
    /// that are whole and back to back, in place of what it kept before, or in front of
    /// it where they end as it begins (a fetch that took kept batches and could not serve
    /// them all). Keeping none changes nothing.
    pub fn keep(&self, tp: &TopicPartition, batches: Vec<Bytes>) {
        if batches.is_empty() {
            return;
        }
        let mut chunk = Chunk {
            batches: VecDeque::new(),
            bytes: 0,
            at: Instant::now(),
            number: 0,
        };
        let mut kept = self.kept.lock();
        let before = kept.remove(tp).map(|c| c.batches);
        let mut end = None;
        for b in batches.into_iter().chain(before.into_iter().flatten()) {
            let follows = end.is_none_or(|end| records::base_offset(&b) == end);
            if !records::is_whole(&b) || !follows || chunk.bytes + b.len() > PARTITION_BYTES {
                break;
            }
            end = Some(records::end_offset(&b));
            chunk.bytes += b.len();
            chunk.batches.push_back(b);
        }
        if !chunk.batches.is_empty() {
            kept.insert(tp, chunk);
        }
    }

    /// The kept batches of the partition from the one holding `offset` on, up to
    /// `max_bytes` (the first whole whatever its size), taken, and whether more stay
    /// kept after them. `None` when none holds `offset`.
    pub fn take(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> Option<(Vec<Bytes>, bool)> {
        let mut kept = self.kept.lock();
        let c = kept.chunks.get_mut(tp)?;
        if c.at.elapsed() > KEPT_FOR {
            kept.remove(tp);
            return None;
        }
        let (first, last) = (c.batches.front()?, c.batches.back()?);
        if offset < records::base_offset(first) || offset >= records::end_offset(last) {
            return None;
        }
        let mut gone = 0;
        while (c.batches.front()).is_some_and(|b| records::end_offset(b) <= offset) {
            gone += c.batches.pop_front().map_or(0, |b| b.len());
        }
        let (mut batches, mut taken) = (Vec::new(), 0);
        while let Some(b) = c.batches.front() {
            if taken > 0 && taken + b.len() > max_bytes {
                break;
            }
            taken += b.len();
            batches.extend(c.batches.pop_front());
        }
        c.bytes -= gone + taken;
        let more = !c.batches.is_empty();
        kept.bytes -= gone + taken;
        if !more {
            kept.remove(tp);
        }
        Some((batches, more))
    }

    /// A deleted topic's kept batches go.
    pub fn forget_topic(&self, topic: &str) {
        let mut kept = self.kept.lock();
        kept.chunks.retain(|tp, _| &*tp.topic != topic);
        kept.bytes = kept.chunks.values().map(|c| c.bytes).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::{LAST_OFFSET_DELTA_AT, LENGTH_AT, RECORD_COUNT_AT};

    /// A whole batch of `count` records at `base` holding `len` bytes in all.
    fn batch(base: i64, count: i32, len: usize) -> Bytes {
        let mut b = vec![0u8; len];
        b[..8].copy_from_slice(&base.to_be_bytes());
        let length = (len - records::LOG_OVERHEAD) as i32;
        b[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
        b[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&count.to_be_bytes());
        b[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
            .copy_from_slice(&(count - 1).to_be_bytes());
        Bytes::from(b)
    }

    fn tp_of(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    fn tp(partition: i32) -> TopicPartition {
        tp_of("t", partition)
    }

    fn bases(batches: &[Bytes]) -> Vec<i64> {
        batches.iter().map(|b| records::base_offset(b)).collect()
    }

    #[test]
    fn a_read_from_a_kept_batch_takes_it_and_those_after_it_up_to_its_bytes() {
        let unserved = Unserved::default();
        let kept = vec![batch(10, 5, 100), batch(15, 5, 100), batch(20, 5, 100)];
        unserved.keep(&tp(0), kept);
        assert!(unserved.take(&tp(0), 9, 1000).is_none(), "before the first");
        assert!(unserved.take(&tp(0), 25, 1000).is_none(), "past the last");
        assert!(
            unserved.take(&tp(1), 10, 1000).is_none(),
            "another partition's"
        );
        let (read, more) = unserved.take(&tp(0), 12, 150).unwrap();
        assert_eq!((bases(&read), more), (vec![10], true));
        let (read, more) = unserved.take(&tp(0), 15, 50).unwrap();
        assert_eq!(
            (bases(&read), more),
            (vec![15], true),
            "the first goes whole"
        );
        let (read, more) = unserved.take(&tp(0), 20, 1000).unwrap();
        assert_eq!((bases(&read), more), (vec![20], false));
        assert!(unserved.take(&tp(0), 20, 1000).is_none(), "taken once");
        assert_eq!(unserved.kept.lock().bytes, 0);
    }

    #[test]
    fn only_whole_batches_back_to_back_are_kept() {
        let unserved = Unserved::default();
        let header = header_only(20);
        unserved.keep(&tp(0), vec![batch(10, 5, 100), batch(15, 5, 100), header]);
        assert_eq!(bases(&unserved.take(&tp(0), 10, 1000).unwrap().0), [10, 15]);
        unserved.keep(&tp(0), vec![batch(10, 5, 100), batch(16, 5, 100)]);
        assert_eq!(
            bases(&unserved.take(&tp(0), 10, 1000).unwrap().0),
            [10],
            "a gap"
        );
        unserved.keep(&tp(0), vec![header_only(10)]);
        assert!(unserved.kept.lock().chunks.is_empty());
    }

    fn header_only(base: i64) -> Bytes {
        batch(base, 5, 200).slice(..records::HEADER_LEN)
    }

    #[test]
    fn what_a_fetch_could_not_serve_goes_in_front_of_what_stays_kept() {
        let unserved = Unserved::default();
        unserved.keep(
            &tp(0),
            vec![batch(0, 5, 100), batch(5, 5, 100), batch(10, 5, 100)],
        );
        let (taken, _) = unserved.take(&tp(0), 0, 200).unwrap();
        unserved.keep(&tp(0), Vec::new());
        unserved.keep(&tp(0), taken[1..].to_vec());
        let (read, more) = unserved.take(&tp(0), 5, 1000).unwrap();
        assert_eq!((bases(&read), more), (vec![5, 10], false));
    }

    #[test]
    fn a_partition_keeps_its_last_and_all_keep_at_most_their_bytes() {
        let unserved = Unserved::default();
        unserved.keep(&tp(0), vec![batch(0, 1, 100)]);
        unserved.keep(&tp(0), vec![batch(2, 1, 100)]);
        assert!(unserved.take(&tp(0), 0, 1000).is_none(), "replaced");
        for n in 0..1000 {
            unserved.keep(&tp(0), vec![batch(n, 1, 100)]);
        }
        assert!(unserved.kept.lock().order.len() <= 2 + 64, "old entries go");
        let big = PARTITION_BYTES / 2;
        for p in 0..(TOTAL_BYTES / PARTITION_BYTES + 2) as i32 {
            unserved.keep(
                &tp(p),
                vec![batch(0, 1, big), batch(1, 1, big), batch(2, 1, 100)],
            );
        }
        let kept = unserved.kept.lock();
        assert!(kept.bytes <= TOTAL_BYTES, "{}", kept.bytes);
        let held = |p| kept.chunks.contains_key(&tp(p));
        assert_eq!(
            (held(0), held(1), held(2)),
            (false, false, true),
            "the oldest went"
        );
        assert!(
            kept.chunks.values().all(|c| c.batches.len() == 2),
            "a partition's cap"
        );
    }

    #[test]
    fn a_forgotten_topic_keeps_nothing() {
        let unserved = Unserved::default();
        unserved.keep(&tp(0), vec![batch(0, 1, 100)]);
        unserved.keep(&tp(1), vec![batch(0, 1, 100)]);
        unserved.keep(&tp_of("u", 0), vec![batch(0, 1, 100)]);
        unserved.forget_topic("t");
        assert!(unserved.take(&tp(0), 0, 1000).is_none());
        assert!(unserved.take(&tp(1), 0, 1000).is_none());
        let other = unserved.take(&tp_of("u", 0), 0, 1000);
        assert_eq!(bases(&other.unwrap().0), [0]);
    }
}
