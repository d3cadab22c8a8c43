//! Batches read for a read-committed reader and not served to it yet, kept for its next
//! fetch. A read-committed fetch serves nothing past the last stable offset, and when it
//! ends inside a transaction the partition's index reads on to find the marker
//! (`txn_index.rs`); where the store cannot read headers alone (Iggy) that read brings
//! the records themselves. The reader's next fetch starts right where those batches
//! start, so serving it from them reads the log once instead of twice. Only whole,
//! back-to-back batches are kept, for a short while, bounded in bytes (oldest out first).

use std::collections::VecDeque;
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

/// Cheap to share: one lock, held for a few pointer moves.
#[derive(Default)]
pub struct ReadAhead {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    chunks: VecDeque<Chunk>,
    bytes: usize,
}

/// One partition's kept batches, back to back.
struct Chunk {
    tp: TopicPartition,
    batches: VecDeque<Bytes>,
    bytes: usize,
    at: Instant,
}

impl Kept {
    fn remove(&mut self, i: usize) {
        if let Some(c) = self.chunks.remove(i) {
            self.bytes -= c.bytes;
        }
    }

    fn position(&self, tp: &TopicPartition) -> Option<usize> {
        self.chunks.iter().position(|c| &c.tp == tp)
    }
}

impl ReadAhead {
    /// Keeps `batches`, in offset order, for the partition's next read: the leading ones
    /// that are whole and back to back, in place of what it kept before, or in front of
    /// it where they end as it begins (a fetch that took kept batches and could not serve
    /// them all). Keeping none changes nothing.
    pub fn keep(&self, tp: &TopicPartition, batches: Vec<Bytes>) {
        if batches.is_empty() {
            return;
        }
        let mut chunk = Chunk {
            tp: tp.clone(),
            batches: VecDeque::new(),
            bytes: 0,
            at: Instant::now(),
        };
        let mut kept = self.kept.lock();
        let before = kept.position(tp).and_then(|i| {
            let c = kept.chunks.remove(i)?;
            kept.bytes -= c.bytes;
            Some(c.batches)
        });
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
        if chunk.batches.is_empty() {
            return;
        }
        kept.bytes += chunk.bytes;
        kept.chunks.push_back(chunk);
        while kept.bytes > TOTAL_BYTES {
            kept.remove(0);
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
        let i = kept.position(tp)?;
        if kept.chunks[i].at.elapsed() > KEPT_FOR {
            kept.remove(i);
            return None;
        }
        let c = &mut kept.chunks[i];
        let first = c.batches.front()?;
        let last = c.batches.back()?;
        if offset < records::base_offset(first) || offset >= records::end_offset(last) {
            return None;
        }
        let mut dropped = 0;
        while c
            .batches
            .front()
            .is_some_and(|b| records::end_offset(b) <= offset)
        {
            dropped += c.batches.pop_front().map_or(0, |b| b.len());
        }
        let mut batches = Vec::new();
        let mut taken = 0;
        while let Some(b) = c.batches.front() {
            if taken > 0 && taken + b.len() > max_bytes {
                break;
            }
            taken += b.len();
            batches.extend(c.batches.pop_front());
        }
        c.bytes -= dropped + taken;
        kept.bytes -= dropped + taken;
        let more = !kept.chunks[i].batches.is_empty();
        if !more {
            kept.remove(i);
        }
        Some((batches, more))
    }

    /// A deleted topic's kept batches go.
    pub fn forget_topic(&self, topic: &str) {
        let mut kept = self.kept.lock();
        kept.chunks.retain(|c| &*c.tp.topic != topic);
        kept.bytes = kept.chunks.iter().map(|c| c.bytes).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::{LENGTH_AT, RECORD_COUNT_AT};

    /// A whole batch of `count` records at `base` holding `len` bytes in all.
    fn batch(base: i64, count: i32, len: usize) -> Bytes {
        let mut b = vec![0u8; len];
        b[..8].copy_from_slice(&base.to_be_bytes());
        let length = (len - records::LOG_OVERHEAD) as i32;
        b[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
        b[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&count.to_be_bytes());
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
        let ahead = ReadAhead::default();
        let kept = vec![batch(10, 5, 100), batch(15, 5, 100), batch(20, 5, 100)];
        ahead.keep(&tp(0), kept);
        assert!(ahead.take(&tp(0), 9, 1000).is_none(), "before the first");
        assert!(ahead.take(&tp(0), 25, 1000).is_none(), "past the last");
        assert!(
            ahead.take(&tp(1), 10, 1000).is_none(),
            "another partition's"
        );
        let (read, more) = ahead.take(&tp(0), 12, 150).unwrap();
        assert_eq!((bases(&read), more), (vec![10], true));
        let (read, more) = ahead.take(&tp(0), 15, 50).unwrap();
        assert_eq!(
            (bases(&read), more),
            (vec![15], true),
            "the first goes whole"
        );
        let (read, more) = ahead.take(&tp(0), 20, 1000).unwrap();
        assert_eq!((bases(&read), more), (vec![20], false));
        assert!(ahead.take(&tp(0), 20, 1000).is_none(), "taken once");
        assert_eq!(ahead.kept.lock().bytes, 0);
    }

    #[test]
    fn only_whole_batches_back_to_back_are_kept() {
        let ahead = ReadAhead::default();
        let header = header_only(20);
        ahead.keep(&tp(0), vec![batch(10, 5, 100), batch(15, 5, 100), header]);
        assert_eq!(bases(&ahead.take(&tp(0), 10, 1000).unwrap().0), [10, 15]);
        ahead.keep(&tp(0), vec![batch(10, 5, 100), batch(16, 5, 100)]);
        assert_eq!(
            bases(&ahead.take(&tp(0), 10, 1000).unwrap().0),
            [10],
            "a gap"
        );
        ahead.keep(&tp(0), vec![header_only(10)]);
        assert!(ahead.kept.lock().chunks.is_empty());
    }

    fn header_only(base: i64) -> Bytes {
        batch(base, 5, 200).slice(..records::HEADER_LEN)
    }

    #[test]
    fn what_a_fetch_could_not_serve_goes_in_front_of_what_stays_kept() {
        let ahead = ReadAhead::default();
        ahead.keep(
            &tp(0),
            vec![batch(0, 5, 100), batch(5, 5, 100), batch(10, 5, 100)],
        );
        let (taken, _) = ahead.take(&tp(0), 0, 200).unwrap();
        ahead.keep(&tp(0), Vec::new());
        ahead.keep(&tp(0), taken[1..].to_vec());
        let (read, more) = ahead.take(&tp(0), 5, 1000).unwrap();
        assert_eq!((bases(&read), more), (vec![5, 10], false));
    }

    #[test]
    fn a_partition_keeps_its_last_and_all_keep_at_most_their_bytes() {
        let ahead = ReadAhead::default();
        ahead.keep(&tp(0), vec![batch(0, 1, 100)]);
        ahead.keep(&tp(0), vec![batch(2, 1, 100)]);
        assert!(ahead.take(&tp(0), 0, 1000).is_none(), "replaced");
        let big = PARTITION_BYTES / 2;
        for p in 0..(TOTAL_BYTES / PARTITION_BYTES + 2) as i32 {
            ahead.keep(
                &tp(p),
                vec![batch(0, 1, big), batch(1, 1, big), batch(2, 1, 100)],
            );
        }
        let kept = ahead.kept.lock();
        assert!(kept.bytes <= TOTAL_BYTES, "{}", kept.bytes);
        assert_eq!(kept.chunks.front().unwrap().tp, tp(2), "the oldest went");
        assert!(
            kept.chunks.iter().all(|c| c.batches.len() == 2),
            "a partition's cap"
        );
    }

    #[test]
    fn a_forgotten_topic_keeps_nothing() {
        let ahead = ReadAhead::default();
        ahead.keep(&tp(0), vec![batch(0, 1, 100)]);
        ahead.keep(&tp(1), vec![batch(0, 1, 100)]);
        ahead.keep(&tp_of("u", 0), vec![batch(0, 1, 100)]);
        ahead.forget_topic("t");
        assert!(ahead.take(&tp(0), 0, 1000).is_none());
        assert!(ahead.take(&tp(1), 0, 1000).is_none());
        let other = ahead.take(&tp_of("u", 0), 0, 1000);
        assert_eq!(bases(&other.unwrap().0), [0]);
    }
}
