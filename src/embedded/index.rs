//! The in-memory index of one partition: one small entry per stored batch, in
//! offset order. It answers where a fetch starts, the watermarks, lookups by
//! timestamp, and which idempotent producers wrote lately.

use iggy_kafka_actors::protocol::records::BatchHeader;
use iggy_kafka_actors::store::{ProducerBatch, Watermarks};

/// Bytes of an encoded [`IndexEntry`].
const ENTRY_LEN: usize = 8 + 4 + 8 + 8 + 2 + 4 + 4;

/// Key of a batch in both keyspaces: partition, then base offset, big-endian.
pub fn encode_key(partition: i32, base_offset: i64) -> [u8; 12] {
    let mut key = [0; 12];
    key[..4].copy_from_slice(&partition.to_be_bytes());
    key[4..].copy_from_slice(&base_offset.to_be_bytes());
    key
}

/// The base offset in the index key holding a partition's log start (8 bytes,
/// big-endian) once DeleteRecords moved it: no batch has it.
pub const START_KEY: i64 = -1;

pub fn decode_start(value: &[u8]) -> Option<i64> {
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
}

impl IndexEntry {
    pub fn new(base_offset: i64, h: &BatchHeader, size: usize) -> Self {
        IndexEntry {
            base_offset,
            record_count: h.record_count,
            max_timestamp: h.max_timestamp,
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            size: size as u32,
        }
    }

    fn next_offset(&self) -> i64 {
        self.base_offset + self.record_count as i64
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
        })
    }

    fn producer_batch(&self) -> ProducerBatch {
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
}

impl PartitionIndex {
    pub fn push(&mut self, entry: IndexEntry) {
        if self
            .max_timestamp
            .is_none_or(|(_, ts)| entry.max_timestamp > ts)
        {
            self.max_timestamp = Some((entry.base_offset, entry.max_timestamp));
        }
        self.batches.push(entry);
    }

    pub fn watermarks(&self) -> Watermarks {
        Watermarks {
            log_start: self
                .batches
                .first()
                .map_or(self.start, |b| b.base_offset.max(self.start)),
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

    /// Base offsets of the first and last batch to serve a fetch from `offset`: the
    /// batch holding it, then more while they fit in `max_bytes` (at least one).
    pub fn batches_from(&self, offset: i64, max_bytes: usize) -> Option<(i64, i64)> {
        let start = self.batches.partition_point(|b| b.next_offset() <= offset);
        let first = self.batches.get(start)?;
        if offset < first.base_offset || offset < self.start {
            return None; // below the log start: out of range, answered by the caller
        }
        let mut size = first.size as usize;
        let mut last = first;
        for b in &self.batches[start + 1..] {
            size += b.size as usize;
            if size > max_bytes {
                break;
            }
            last = b;
        }
        Some((first.base_offset, last.base_offset))
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

    /// The last five batches of each idempotent producer, oldest first; markers, which
    /// carry no sequence, are none of them.
    pub fn producer_batches(&self) -> Vec<ProducerBatch> {
        let mut per_producer: std::collections::HashMap<i64, usize> = Default::default();
        let mut out: Vec<ProducerBatch> = self
            .batches
            .iter()
            .rev()
            .filter(|b| b.producer_id >= 0 && b.base_sequence >= 0)
            .filter(|b| {
                let n = per_producer.entry(b.producer_id).or_default();
                *n += 1;
                *n <= 5
            })
            .map(IndexEntry::producer_batch)
            .collect();
        out.reverse();
        out
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
        }
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
        assert_eq!(p.batches_from(15, 150), Some((10, 10)));
        assert_eq!(p.batches_from(0, 1_000), Some((0, 20)));
        assert_eq!(
            p.batches_from(0, 1),
            Some((0, 0)),
            "one batch even over budget"
        );
        assert_eq!(p.batches_from(30, 1_000), None);
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
        assert_eq!(p.batches_from(12, 1_000), None, "below the log start");
        assert_eq!(p.batches_from(15, 150), Some((10, 10)));
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
}
