//! Log compaction on Iggy (`docs/IGGY_MAPPING.md`, "Log compaction"). Iggy cannot
//! delete single messages and Kafka offsets are Iggy offsets, so a pass
//! (`LogCall::Compact`, decided above the port by `actors/src/compactor/`) is noted
//! instead of carried out: the offsets it removed, as ranges, go to table `compacted`
//! (`topic/incarnation/partition` to the ranges), shared by every gateway on the server,
//! and Kafka reads step over them (`view.rs`). Storage is given back a whole segment
//! at a time: the partition's oldest, once it holds removed records only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use iggy::prelude::{PollingStrategy, SegmentClient};
use iggy_kafka_actors::store::{Compacted, StoreResult, TopicPartition};
use parking_lot::Mutex;

use super::errors::{backend_error, partition_id};
use super::shared_copy::{Row, SharedCopy};
use super::Inner;

/// The metadata table of the removed ranges.
pub const TABLE: &str = "compacted";

/// Most segments one pass deletes.
const SEGMENTS_PER_PASS: usize = 16;
/// How long a deletion is awaited: checks, and the time between them.
const DELETION_CHECKS: usize = 20;
const DELETION_CHECK_EVERY: Duration = Duration::from_millis(50);
/// Messages read per poll while measuring segments.
const MEASURE_PAGE: u32 = 1_000;
/// What a message adds to its segment at least: Iggy's frame header (48 bytes), then
/// its payload and user headers. Each batch adds a header of its own on top, left out
/// here so the measure never exceeds what Iggy counts.
const FRAME_HEADER: u64 = 48;

/// This gateway's side of compaction on Iggy.
pub struct Compaction {
    /// Its copy of table `compacted`.
    pub rows: SharedCopy<Removed>,
    /// By partition, the head last measured too short for its oldest segment to go:
    /// Iggy's first offset and the end of the removed range it starts in. Measuring
    /// reads up to two segments, so it is done again only once either moved.
    short: Mutex<HashMap<TopicPartition, (i64, i64)>>,
}

impl Compaction {
    pub fn new() -> Compaction {
        Compaction {
            rows: SharedCopy::new(TABLE),
            short: Mutex::new(HashMap::new()),
        }
    }
}

/// Offsets compaction removed from a partition: sorted `[start, end)` ranges, none
/// touching another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed(Vec<(i64, i64)>);

impl Row for Removed {
    fn decode(bytes: &Bytes) -> Option<Removed> {
        if !bytes.len().is_multiple_of(16) {
            return None;
        }
        let mut b = bytes.clone();
        let mut ranges = Vec::with_capacity(bytes.len() / 16);
        while b.has_remaining() {
            ranges.push((b.get_i64(), b.get_i64()));
        }
        let ordered = ranges.windows(2).all(|w| w[0].1 < w[1].0);
        (ordered && ranges.iter().all(|r| r.0 < r.1)).then_some(Removed(ranges))
    }

    fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(self.0.len() * 16);
        for (start, end) in &self.0 {
            b.put_i64(*start);
            b.put_i64(*end);
        }
        b.freeze()
    }
}

impl Removed {
    /// These ranges and what a pass removed: every offset from `from` up to `below`
    /// that `keep` (sorted) lacks.
    pub fn with_pass(&self, from: i64, below: i64, keep: &[i64]) -> Removed {
        let mut ranges = self.0.clone();
        let mut at = from;
        for &k in keep.iter().filter(|&&k| k >= from && k < below) {
            if k > at {
                ranges.push((at, k));
            }
            at = at.max(k + 1);
        }
        if below > at {
            ranges.push((at, below));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Removed(merged)
    }

    /// The range holding `offset`.
    fn around(&self, offset: i64) -> Option<(i64, i64)> {
        let at = self.0.partition_point(|r| r.1 <= offset);
        self.0.get(at).copied().filter(|r| r.0 <= offset)
    }

    /// The first offset from `offset` on that was not removed.
    pub fn skip(&self, offset: i64) -> i64 {
        self.around(offset).map_or(offset, |r| r.1)
    }

    /// Where the next removed range after `offset` starts.
    pub fn next_start(&self, offset: i64) -> Option<i64> {
        let at = self.0.partition_point(|r| r.0 <= offset);
        self.0.get(at).map(|r| r.0)
    }

    /// Whether every one of the `count` offsets from `from` was removed.
    pub fn hides(&self, from: i64, count: i64) -> bool {
        self.around(from).is_some_and(|r| from + count <= r.1)
    }

    /// How many offsets from `from` up to `below` were removed.
    pub fn count_in(&self, from: i64, below: i64) -> i64 {
        (self.0.iter())
            .map(|&(start, end)| (end.min(below) - start.max(from)).max(0))
            .sum()
    }

    /// The log start Kafka sees when Iggy's first message is at `first`: lower, where
    /// the segments deleted below it held removed records only.
    pub fn log_start(&self, first: i64) -> i64 {
        self.around(first - 1).map_or(first, |r| r.0)
    }
}

/// A partition as Iggy reports it, for a pass.
#[derive(Clone, Copy)]
struct PartitionState {
    first: i64,
    high: i64,
    bytes: u64,
    segments: u32,
    /// The topic's segment size, when Iggy reports it.
    segment_size: Option<u64>,
}

impl Inner {
    /// `LogCall::Compact` on Iggy: the records below `below` that `keep` lacks join the
    /// partition's removed ranges, then its oldest segments go while they hold removed
    /// records only.
    pub(super) async fn compact(
        self: &Arc<Self>,
        tp: &TopicPartition,
        below: i64,
        keep: &[i64],
    ) -> StoreResult<Compacted> {
        let _writing = self.compacted.rows.writing.lock().await;
        let key = self.row_key_to_write(tp).await?;
        self.compacted.rows.read(self).await?;
        let known = self.compacted.rows.known(&key).unwrap_or_default();
        let before = self.partition_state(tp).await?;
        let removed = known.with_pass(known.log_start(before.first), below, keep);
        if removed != *known {
            self.compacted.rows.put(self, key, removed.clone()).await?;
        }
        let after = self.reclaim(tp, &removed, before).await?;
        // The clean part is what Kafka readers still see below the pass's end, sized
        // by the average message (Iggy keeps no sizes per offset); the rest of what
        // Iggy stores counts as dirty, superseded records its segments still hold
        // included, so the next write soon brings another pass.
        let start = removed.log_start(after.first);
        let kept = (below - start - removed.count_in(start, below)).max(0);
        let average = after.bytes / (after.high - after.first).max(1) as u64;
        Ok(Compacted {
            bytes_before: before.bytes,
            bytes_after: after.bytes,
            cleaned_bytes: (average * kept as u64).min(after.bytes),
        })
    }

    /// Deletes the partition's oldest segment while the removed range it starts in
    /// reaches past the end of the two oldest segments at the latest (the second: a
    /// segment another gateway deleted meanwhile leaves the next one deleted here, which
    /// must hold removed records only too). The segments' ends are measured once, in one
    /// read of the range, for all the deletions of the pass. The partition as it is
    /// after.
    async fn reclaim(
        &self,
        tp: &TopicPartition,
        removed: &Removed,
        mut state: PartitionState,
    ) -> StoreResult<PartitionState> {
        let Some(segment_size) = state.segment_size else {
            return Ok(state);
        };
        let Some((_, run_end)) = removed.around(state.first) else {
            return Ok(state);
        };
        if self.compacted.short.lock().get(tp) == Some(&(state.first, run_end)) {
            return Ok(state);
        }
        let most = SEGMENTS_PER_PASS + 1;
        let ends = (self.segment_ends(tp, (state.first, run_end), segment_size, most)).await?;
        // The oldest segment left is the one ending at `ends[deleted]`, at the latest.
        for deleted in 0..SEGMENTS_PER_PASS {
            if state.segments <= 1 {
                break;
            }
            let Some(&[end, _]) = ends.get(deleted..deleted + 2) else {
                self.compacted
                    .short
                    .lock()
                    .insert(tp.clone(), (state.first, run_end));
                break;
            };
            let (stream, topic) = self.ids(&tp.topic)?;
            let c = self.admin().await?;
            c.check(
                c.delete_segments(&stream, &topic, partition_id(tp)?, 1)
                    .await,
            )
            .map_err(|e| backend_error(e, Some(tp), &tp.topic))?;
            drop(c);
            // Iggy commits the deletion, then carries it out: awaited a little.
            let was = state.first;
            for _ in 0..DELETION_CHECKS {
                state = self.partition_state(tp).await?;
                if state.first != was {
                    break;
                }
                tokio::time::sleep(DELETION_CHECK_EVERY).await;
            }
            if state.first == was {
                break; // nothing sealed to delete yet, or not done yet
            }
            tracing::info!(partition = %tp, from = was, to = state.first, "deleted a segment of removed records");
            if state.first > end {
                // Another gateway deleted one too: the next pass measures again.
                tracing::error!(partition = %tp, from = was, to = state.first, bound = end, "a deleted segment reached past its measured end");
                break;
            }
        }
        Ok(state)
    }

    /// The latest offsets the oldest segments from `from` can end at, at most `most` of
    /// them, each below `until`. Iggy seals a segment after the first whole batch (the
    /// messages of one send, which share their timestamp) that brings it to its size;
    /// the bytes measured here never exceed Iggy's, so the real ends are no later, and
    /// neither are those of the segments after a real end come early (they hold more
    /// than measured from there).
    async fn segment_ends(
        &self,
        tp: &TopicPartition,
        (from, until): (i64, i64),
        segment_size: u64,
        most: usize,
    ) -> StoreResult<Vec<i64>> {
        let (mut ends, mut bytes, mut batch) = (Vec::new(), 0, None);
        let mut next = from as u64;
        while next < until as u64 {
            let count = (until as u64 - next).min(u64::from(MEASURE_PAGE)) as u32;
            let strategy = PollingStrategy::offset(next);
            let polled = self.poll(self.pools.reader(), tp, strategy, count).await?;
            let Some(last) = polled.messages.last().map(|m| m.header.offset) else {
                break;
            };
            let page = polled.messages.iter().filter(|m| m.header.offset >= next);
            for m in page.take_while(|m| m.header.offset < until as u64) {
                if batch.is_some_and(|t| t != m.header.timestamp) && bytes >= segment_size {
                    ends.push(m.header.offset as i64);
                    if ends.len() == most {
                        return Ok(ends);
                    }
                    bytes = 0;
                }
                batch = Some(m.header.timestamp);
                bytes += FRAME_HEADER
                    + m.payload.len() as u64
                    + m.user_headers.as_ref().map_or(0, |h| h.len() as u64);
            }
            next = last + 1;
        }
        Ok(ends)
    }

    async fn partition_state(&self, tp: &TopicPartition) -> StoreResult<PartitionState> {
        let (p, segment_size) = self.partition_details(tp).await?;
        let w = self.watermarks_of(tp, &p);
        Ok(PartitionState {
            first: w.log_start,
            high: w.high,
            bytes: p.size.as_bytes_u64(),
            segments: p.segments_count,
            segment_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_adds_what_it_did_not_keep_and_ranges_merge() {
        let r = Removed::default().with_pass(0, 10, &[2, 5, 6, 9]);
        assert_eq!(r.0, vec![(0, 2), (3, 5), (7, 9)]);
        // A later pass reads only what stayed, and keeps less.
        let r = r.with_pass(0, 12, &[6, 11]);
        assert_eq!(r.0, vec![(0, 6), (7, 11)]);
        assert_eq!(Removed::decode(&r.encode()), Some(r.clone()));
        assert_eq!(Removed::decode(&Bytes::from_static(&[0; 15])), None);
    }

    #[test]
    fn reads_step_over_removed_offsets() {
        let r = Removed(vec![(0, 6), (7, 11)]);
        assert_eq!(
            (r.skip(0), r.skip(6), r.skip(8), r.skip(11)),
            (6, 6, 11, 11)
        );
        assert_eq!(
            (r.next_start(6), r.next_start(7), r.next_start(11)),
            (Some(7), None, None)
        );
        assert!(r.hides(7, 4) && !r.hides(7, 5) && !r.hides(6, 1));
        assert_eq!((r.count_in(0, 12), r.count_in(5, 8)), (10, 2));
        // Segments deleted up to 9 held removed records only: Kafka's start stays 7.
        assert_eq!(
            (r.log_start(9), r.log_start(6), r.log_start(12)),
            (7, 0, 12)
        );
    }
}
