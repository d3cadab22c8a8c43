//! The in-memory index of one partition: one small entry per stored batch, in
//! offset order, with where the batch lies in the partition's file. It answers where
//! a fetch starts, the watermarks, lookups by timestamp, and which idempotent
//! producers wrote lately.

use iggy_kafka_actors::protocol::records::BatchHeader;
use iggy_kafka_actors::store::{ProducerBatch, Watermarks};

/// Bytes of an encoded [`IndexEntry`].
const ENTRY_LEN: usize = 8 + 4 + 8 + 8 + 2 + 4 + 4 + 8;

/// Key of a batch's index entry: partition, then base offset, big-endian.
pub fn encode_key(partition: i32, base_offset: i64) -> [u8; 12] {
    let mut key = [0; 12];
    key[..4].copy_from_slice(&partition.to_be_bytes());
    key[4..].copy_from_slice(&base_offset.to_be_bytes());
    key
}

/// The base offset in the index key holding a partition's log start (8 bytes,
/// big-endian) once DeleteRecords moved it: no batch has it.
pub const START_KEY: i64 = -1;

/// The base offset in the index key holding how much of the partition's file is known
/// to be on disk (8 bytes, big-endian): what a machine crash cannot have lost, so
/// only batches beyond it are checked at start.
pub const SYNCED_KEY: i64 = -2;

/// The base offset in the index key that says a compaction's new file is to take the
/// partition file's place (`Inner::compact`): present from the commit of the new
/// entries until the file is renamed, so a start in between finishes the rename.
pub const PENDING_KEY: i64 = -3;

/// The 8-byte big-endian value of a start or synced key.
pub fn decode_i64(value: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(value.try_into().ok()?))
}

pub fn decode_key(key: &[u8]) -> Option<(i32, i64)> {
    let partition = i32::from_be_bytes(key.get(..4)?.try_into().ok()?);
    let offset = i64::from_be_bytes(key.get(4..12)?.try_into().ok()?);
    Some((partition, offset))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub base_offset: i64,
    pub record_count: i32,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub size: u32,
    /// Where the batch starts in the partition's file.
    pub position: u64,
}

impl IndexEntry {
    pub fn new(base_offset: i64, position: u64, h: &BatchHeader, size: usize) -> Self {
        IndexEntry {
            base_offset,
            position,
            record_count: h.record_count,
            max_timestamp: h.max_timestamp,
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            size: size as u32,
        }
    }

    /// The offset after the batch's last record.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + self.record_count as i64
    }

    /// Where the batch ends in the partition's file.
    pub fn end(&self) -> u64 {
        self.position + u64::from(self.size)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENTRY_LEN);
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&self.record_count.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
        out
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != ENTRY_LEN {
            return None;
        }
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let i32_at = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().unwrap_or_default());
        Some(IndexEntry {
            base_offset: i64_at(0),
            record_count: i32_at(8),
            max_timestamp: i64_at(12),
            producer_id: i64_at(20),
            producer_epoch: i16::from_be_bytes([b[28], b[29]]),
            base_sequence: i32_at(30),
            size: i32_at(34) as u32,
            position: i64_at(38) as u64,
        })
    }

    fn producer_batch(&self) -> ProducerBatch {
        if self.base_sequence < 0 {
            return ProducerBatch::marker(self.producer_id, self.producer_epoch, self.base_offset);
        }
        let last_sequence =
            (self.base_sequence as i64 + self.record_count as i64 - 1) % (i32::MAX as i64 + 1);
        ProducerBatch {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            first_sequence: self.base_sequence,
            last_sequence: last_sequence as i32,
            base_offset: self.base_offset,
            last_offset: self.next_offset() - 1,
        }
    }
}

#[derive(Default)]
pub struct PartitionIndex {
    batches: Vec<IndexEntry>,
    /// The log start DeleteRecords set (0 until then): records below it are never
    /// served, though the first batch kept may begin below it.
    start: i64,
    /// Base offset and timestamp of the batch holding the largest timestamp.
    max_timestamp: Option<(i64, i64)>,
    /// Where the next batch goes in the partition's file.
    end: u64,
}

impl PartitionIndex {
    pub fn push(&mut self, entry: IndexEntry) {
        if self
            .max_timestamp
            .is_none_or(|(_, ts)| entry.max_timestamp > ts)
        {
            self.max_timestamp = Some((entry.base_offset, entry.max_timestamp));
        }
        self.end = self.end.max(entry.end());
        self.batches.push(entry);
    }

    /// Where the next batch goes in the partition's file.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The entries from the first one ending beyond `synced` on: those a machine crash
    /// may have left without their bytes.
    pub fn unsynced(&self, synced: u64) -> &[IndexEntry] {
        let at = self.batches.partition_point(|b| b.end() <= synced);
        &self.batches[at..]
    }

    /// Forgets the batches from `base_offset` on (they are not on disk), and puts the
    /// file's end back to where the last kept batch ends.
    pub fn truncate_from(&mut self, base_offset: i64) {
        let at = self
            .batches
            .partition_point(|b| b.base_offset < base_offset);
        self.batches.truncate(at);
        self.end = self.batches.last().map_or(0, IndexEntry::end);
        self.max_timestamp = None;
        for b in std::mem::take(&mut self.batches) {
            self.push(b);
        }
    }

    /// Where the first batch kept starts: everything below it is free space.
    pub fn kept_from(&self) -> u64 {
        self.batches.first().map_or(self.end, |b| b.position)
    }

    /// The batch starting at `base_offset`.
    pub fn entry(&self, base_offset: i64) -> Option<IndexEntry> {
        let at = self
            .batches
            .partition_point(|b| b.base_offset < base_offset);
        self.batches
            .get(at)
            .filter(|b| b.base_offset == base_offset)
            .copied()
    }

    /// The log start is where DeleteRecords put it (0 before), also when compaction
    /// removed the first batches: a consumer at an offset compaction emptied reads on
    /// from the next record, as from a Kafka broker, rather than out of range.
    pub fn watermarks(&self) -> Watermarks {
        Watermarks {
            log_start: self.start,
            high: self
                .batches
                .last()
                .map_or(self.start, IndexEntry::next_offset),
        }
    }

    /// Bytes of the batches kept, as stored and served.
    pub fn size(&self) -> u64 {
        self.batches.iter().map(|b| u64::from(b.size)).sum()
    }

    /// Sets the log start as stored (at load).
    pub fn set_start(&mut self, start: i64) {
        self.start = start;
    }

    /// Base offsets of the batches wholly below `start`.
    pub fn wholly_below(&self, start: i64) -> Vec<i64> {
        let gone = self.batches.partition_point(|b| b.next_offset() <= start);
        self.batches[..gone].iter().map(|b| b.base_offset).collect()
    }

    /// Moves the log start up to `start` (at most the high watermark) and forgets the
    /// batches wholly below it.
    pub fn delete_before(&mut self, start: i64) {
        self.start = self.start.max(start);
        let gone = self
            .batches
            .partition_point(|b| b.next_offset() <= self.start);
        let removed: Vec<i64> = self.batches.drain(..gone).map(|b| b.base_offset).collect();
        if self
            .max_timestamp
            .is_some_and(|(base, _)| removed.contains(&base))
        {
            self.max_timestamp = None;
            for b in std::mem::take(&mut self.batches) {
                self.push(b);
            }
        }
    }

    /// The batches to serve a fetch from `offset`: the batch holding it (or the next
    /// one, where compaction removed the batch that held it), then more while they fit
    /// in `max_bytes` (at least one); none below the log start (out of range, answered
    /// by the caller) or at the high watermark.
    pub fn batches_from(&self, offset: i64, max_bytes: usize) -> Vec<IndexEntry> {
        let start = self.batches.partition_point(|b| b.next_offset() <= offset);
        let Some(first) = self.batches.get(start) else {
            return Vec::new();
        };
        if offset < self.start {
            return Vec::new();
        }
        let mut size = first.size as usize;
        let mut n = 1;
        for b in &self.batches[start + 1..] {
            size += b.size as usize;
            if size > max_bytes {
                break;
            }
            n += 1;
        }
        self.batches[start..start + n].to_vec()
    }

    /// Where retention puts the log start: past every batch older than `expired` (whose
    /// records all have earlier timestamps; from the oldest on, up to the first batch
    /// that is not), and past the oldest batches while the rest still hold at least
    /// `keep_bytes` (Kafka's rule for whole segments, here for whole batches).
    pub fn retained_from(&self, expired: Option<i64>, keep_bytes: Option<u64>) -> i64 {
        let high = self.watermarks().high;
        let by_time = expired.map_or(0, |before| {
            (self.batches.iter())
                .find(|b| b.max_timestamp >= before)
                .map_or(high, |b| b.base_offset)
        });
        let by_size = keep_bytes.map_or(0, |keep| {
            let mut left = self.size();
            (self.batches.iter())
                .find(|b| {
                    let after = left.saturating_sub(u64::from(b.size));
                    let kept = after < keep;
                    left = after;
                    kept
                })
                .map_or(high, |b| b.base_offset)
        });
        by_time.max(by_size)
    }

    /// The batches wholly below `offset` (what a compaction up to it rewrites).
    pub fn wholly_before(&self, offset: i64) -> Vec<IndexEntry> {
        let at = self.batches.partition_point(|b| b.next_offset() <= offset);
        self.batches[..at].to_vec()
    }

    /// The batches from the one starting at or after `base_offset` on.
    pub fn starting_at(&self, base_offset: i64) -> Vec<IndexEntry> {
        let at = self
            .batches
            .partition_point(|b| b.base_offset < base_offset);
        self.batches[at..].to_vec()
    }

    /// Puts `batches` (a compaction's, in the new file) in place of every batch; the
    /// log start stays.
    pub fn replace(&mut self, batches: Vec<IndexEntry>) {
        self.batches.clear();
        self.max_timestamp = None;
        self.end = 0;
        for b in batches {
            self.push(b);
        }
    }

    /// The first batch holding a record at or after `timestamp`. Timestamps need not
    /// grow with offsets, so this scans; every earlier batch is entirely older.
    pub fn first_batch_reaching(&self, timestamp: i64) -> Option<i64> {
        self.batches
            .iter()
            .find(|b| b.max_timestamp >= timestamp)
            .map(|b| b.base_offset)
    }

    /// `(base offset, timestamp)` of the batch with the largest timestamp (the first on ties).
    pub fn max_timestamp(&self) -> Option<(i64, i64)> {
        self.max_timestamp
    }

    /// Each producer's last batches and last marker (`ProducerBatch::history`); a
    /// marker is an entry with a producer and no sequence.
    pub fn producer_batches(&self) -> Vec<ProducerBatch> {
        let entries = self.batches.iter().rev().filter(|b| b.producer_id >= 0);
        ProducerBatch::history(entries.map(IndexEntry::producer_batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(base_offset: i64, record_count: i32, size: u32, ts: i64) -> IndexEntry {
        IndexEntry {
            base_offset,
            record_count,
            max_timestamp: ts,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            size,
            position: base_offset as u64 * 100,
        }
    }

    fn bases(entries: Vec<IndexEntry>) -> Vec<i64> {
        entries.iter().map(|e| e.base_offset).collect()
    }

    #[test]
    fn entries_round_trip() {
        let e = IndexEntry {
            producer_id: 77,
            producer_epoch: 3,
            base_sequence: 12,
            ..entry(1 << 40, 9, 4096, 1_700_000_000_000)
        };
        assert_eq!(IndexEntry::decode(&e.encode()), Some(e));
        assert_eq!(decode_key(&encode_key(5, 1 << 33)), Some((5, 1 << 33)));
    }

    #[test]
    fn fetch_starts_at_the_batch_holding_the_offset_and_respects_the_budget() {
        let mut p = PartitionIndex::default();
        for (i, ts) in [(0, 50), (10, 20), (20, 90)] {
            p.push(entry(i, 10, 100, ts));
        }
        assert_eq!(
            p.watermarks(),
            Watermarks {
                log_start: 0,
                high: 30
            }
        );
        assert_eq!(bases(p.batches_from(15, 150)), vec![10]);
        assert_eq!(bases(p.batches_from(0, 1_000)), vec![0, 10, 20]);
        assert_eq!(
            bases(p.batches_from(0, 1)),
            vec![0],
            "one batch even over budget"
        );
        assert_eq!(p.batches_from(30, 1_000), vec![]);
        assert_eq!(p.first_batch_reaching(60), Some(20));
        assert_eq!(p.first_batch_reaching(30), Some(0));
        assert_eq!(p.max_timestamp(), Some((20, 90)));
        assert_eq!(p.size(), 300);
    }

    #[test]
    fn deleting_records_drops_whole_batches_below_the_new_start() {
        let mut p = PartitionIndex::default();
        for (i, ts) in [(0, 50), (10, 90), (20, 20)] {
            p.push(entry(i, 10, 100, ts));
        }
        assert_eq!(p.wholly_below(15), vec![0]);
        p.delete_before(15);
        assert_eq!(p.watermarks().log_start, 15);
        assert_eq!(
            p.size(),
            200,
            "the batch straddling the start is kept whole"
        );
        assert_eq!(p.batches_from(12, 1_000), vec![], "below the log start");
        assert_eq!(bases(p.batches_from(15, 150)), vec![10]);
        assert_eq!(p.kept_from(), 1_000);
        p.delete_before(5);
        assert_eq!(p.watermarks().log_start, 15, "no move back");
        assert_eq!(p.wholly_below(20), vec![10]);
        p.delete_before(20);
        assert_eq!(p.max_timestamp(), Some((20, 20)));
        assert_eq!(p.wholly_below(30), vec![20]);
        p.delete_before(30);
        assert_eq!(
            p.watermarks(),
            Watermarks {
                log_start: 30,
                high: 30
            }
        );
        p.push(entry(30, 5, 100, 1));
        assert_eq!(p.watermarks().high, 35);
    }

    #[test]
    fn retention_lets_the_oldest_batches_go_by_time_and_by_size() {
        let mut p = PartitionIndex::default();
        for (i, ts) in [(0, 50), (10, 90), (20, 20), (30, 95)] {
            p.push(entry(i, 10, 100, ts));
        }
        assert_eq!(p.retained_from(None, None), 0);
        assert_eq!(
            p.retained_from(Some(60), None),
            10,
            "up to the first newer batch"
        );
        assert_eq!(
            p.retained_from(Some(91), None),
            30,
            "an older batch after it waits"
        );
        assert_eq!(p.retained_from(Some(96), None), 40, "all expired");
        assert_eq!(
            p.retained_from(None, Some(200)),
            20,
            "at least 200 bytes left"
        );
        assert_eq!(p.retained_from(None, Some(250)), 10);
        assert_eq!(p.retained_from(None, Some(1_000)), 0);
        assert_eq!(p.retained_from(Some(60), Some(150)), 20, "the later: size");
        assert_eq!(p.retained_from(Some(91), Some(250)), 30, "the later: time");
        assert_eq!(PartitionIndex::default().retained_from(Some(1), Some(1)), 0);
    }

    #[test]
    fn batches_a_crash_left_unwritten_are_forgotten() {
        let mut p = PartitionIndex::default();
        for (i, ts) in [(0, 50), (10, 90), (20, 20)] {
            p.push(entry(i, 10, 100, ts)); // at 0, 1000 and 2000
        }
        assert_eq!(p.end(), 2_100);
        assert_eq!(bases(p.unsynced(1_100).to_vec()), vec![20]);
        assert_eq!(bases(p.unsynced(0).to_vec()), vec![0, 10, 20]);
        assert_eq!(p.entry(10).map(|e| e.position), Some(1_000));
        assert_eq!(p.entry(11), None);
        p.truncate_from(10);
        assert_eq!(p.watermarks().high, 10);
        assert_eq!(
            p.end(),
            100,
            "the next batch goes where the last kept one ends"
        );
        assert_eq!(p.max_timestamp(), Some((0, 50)));
    }
}
