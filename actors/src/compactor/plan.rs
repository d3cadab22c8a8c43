//! Which records of a partition stay: the compaction decision, made here once for
//! every engine, from the partition's batches read in offset order from its log start.
//!
//! As Kafka's cleaner decides: the latest record of each key stays; a tombstone stays
//! until `delete.retention.ms` after compaction first reached it; records of aborted
//! transactions go; a marker goes once no record of its transaction is left and
//! `delete.retention.ms` passed since compaction first reached it; keyless records go.
//! Nothing at or past the end is touched: the batch ending at the high watermark (the
//! active tail; a marker there still ends its transaction; where the engine stores
//! records one by one and reads them back joined in batches of its own, the last
//! record), batches with a record younger than `min.compaction.lag.ms`, and
//! transactions still open.
//!
//! A pass need not read what an earlier one cleaned: the [`Seed`] it leaves, the latest
//! record of each key below its end, stands in for that part, so the next pass reads
//! from there on (Kafka's cleaner likewise maps only a log's dirty part). Where that
//! part holds transactions, whose markers must be weighed again, a pass leaves none.

use std::collections::HashMap;

use bytes::Bytes;

use crate::config_catalog::CompactionInForce;
use crate::protocol::markers::{self, Marker};
use crate::protocol::records::{self, BatchHeader};
use crate::protocol::retained::{self, RecordsError, StoredRecord};
use crate::store::Watermarks;

/// Most bytes a stored batch's records decompress to here; Produce checked each batch
/// within its own bound when it came.
const RECORDS_BUDGET: usize = 256 << 20;

/// What a pass removes: every record below `below` whose offset `keep` lacks.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub below: i64,
    /// Sorted.
    pub keep: Vec<i64>,
    /// Whether `keep` lacks any record below `below`: a pass with nothing to remove
    /// leaves the log alone.
    pub removes: bool,
    /// When the first tombstone, or marker of a transaction with no record left, kept
    /// for `delete.retention.ms` may go (ms since the epoch).
    pub tombstones_due: Option<i64>,
    /// Bytes of the batches below `below`, as read.
    pub bytes_below: u64,
    /// When the first batch too young to compact (`min.compaction.lag.ms`) will not be.
    pub ripe_at: Option<i64>,
    /// What the next pass may start from instead of the log start.
    pub seed: Option<Seed>,
}

/// What a pass kept below its end, for the next one to start there: the offset it
/// ended at and the latest record of each key before it (every record kept there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seed {
    below: i64,
    latest: HashMap<Bytes, Latest>,
    key_bytes: usize,
}

impl Seed {
    /// What it holds in memory, roughly: its keys and an entry each.
    pub fn bytes(&self) -> usize {
        self.key_bytes + self.latest.len() * std::mem::size_of::<(Bytes, Latest)>()
    }
}

/// The latest record of a key seen so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Latest {
    offset: i64,
    tombstone: bool,
}

/// A transaction marker read, and the offsets of its transaction's records read before
/// it: while one of them stays, so does the marker (readers judge them by it).
struct EndMarker {
    offset: i64,
    records: Vec<i64>,
}

/// A transaction not yet ended in what was read: its first offset and its keyed
/// records, which count only once its commit is read.
#[derive(Default)]
struct OpenTxn {
    first: i64,
    /// Its batches' epoch: a marker older than it ends nothing (`txn_index.rs`).
    epoch: i16,
    records: Vec<StoredRecord>,
}

/// Takes a partition's batches one by one ([`Planner::take`]), then makes the
/// [`Plan`] ([`Planner::finish`]).
pub struct Planner {
    rules: CompactionInForce,
    now_ms: i64,
    watermarks: Watermarks,
    /// Where reading starts: the log start, or where the seed's pass ended.
    start: i64,
    /// Records below `start`, each in `latest` from the seed.
    seeded: i64,
    latest: HashMap<Bytes, Latest>,
    /// Whether a transactional batch or a marker was taken: the pass leaves no seed.
    transactional: bool,
    markers: Vec<EndMarker>,
    open: HashMap<i64, OpenTxn>,
    /// Each batch taken: the offset after it, its record count and size.
    taken: Vec<(i64, i64, u64)>,
    ripe_at: Option<i64>,
    /// The engine stores records one by one (`LogStore::splits_batches`): any offset
    /// is a boundary it can compact below.
    by_record: bool,
}

impl Planner {
    /// A planner for a pass from the log start, or from where `seed`'s pass ended (its
    /// records below the log start left out: retention or DeleteRecords took them).
    pub fn new(
        rules: CompactionInForce,
        now_ms: i64,
        watermarks: Watermarks,
        by_record: bool,
        seed: Option<Seed>,
    ) -> Planner {
        let (start, mut latest) = match seed {
            Some(seed) if seed.below >= watermarks.log_start => (seed.below, seed.latest),
            _ => (watermarks.log_start, HashMap::new()),
        };
        latest.retain(|_, l| l.offset >= watermarks.log_start);
        Planner {
            by_record,
            rules,
            now_ms,
            watermarks,
            start,
            seeded: latest.len() as i64,
            latest,
            transactional: false,
            markers: Vec::new(),
            open: HashMap::new(),
            taken: Vec::new(),
            ripe_at: None,
        }
    }

    /// The offset reading starts at.
    pub fn start(&self) -> i64 {
        self.start
    }

    /// Takes the next batch; `false` (and the batch not taken) when it may not be
    /// compacted, and no later one either: reading may stop.
    pub fn take(&mut self, batch: &Bytes) -> Result<bool, RecordsError> {
        let end = records::end_offset(batch);
        let header = BatchHeader::parse(batch);
        let ripe_at = header
            .max_timestamp
            .saturating_add(self.rules.min_compaction_lag_ms);
        let tail = end >= self.watermarks.high;
        let split = tail && self.by_record && !header.control && !header.transactional;
        if tail && header.control {
            // A marker ending the log ends its transaction: its records count. The
            // marker itself stays past the pass.
            self.end_txn(batch, &header);
            return Ok(false);
        }
        if tail && !split {
            return Ok(false);
        }
        if ripe_at > self.now_ms {
            self.ripe_at = Some(ripe_at);
            return Ok(false);
        }
        let mut stored = retained::records_of(batch, RECORDS_BUDGET)?;
        if split {
            // All but the last record: the batch is the engine's, not as produced.
            let (last, all) = (self.watermarks.high - 1, stored.len().max(1) as u64);
            stored.retain(|r| r.offset < last);
            let (count, size) = (stored.len(), batch.len() as u64);
            if count > 0 {
                stored.into_iter().for_each(|r| self.note(r));
                self.taken
                    .push((last, count as i64, size * count as u64 / all));
            }
            return Ok(false);
        }
        self.transactional |= header.control || header.transactional;
        if header.control {
            let records = self.end_txn(batch, &header);
            let ended = stored.iter().map(|r| EndMarker {
                offset: r.offset,
                records: records.clone(),
            });
            self.markers.extend(ended);
        } else if header.transactional {
            let txn = self
                .open
                .entry(header.producer_id)
                .or_insert_with(|| OpenTxn {
                    first: records::base_offset(batch),
                    epoch: header.producer_epoch,
                    records: Vec::new(),
                });
            txn.records.extend(stored);
        } else {
            stored.into_iter().for_each(|r| self.note(r));
        }
        let size = batch.len() as u64;
        self.taken.push((end, i64::from(header.record_count), size));
        Ok(true)
    }

    /// The transaction marker `batch` ends, unless it is older than it: a commit's
    /// records count, an abort's go. The offsets of the records it ended.
    fn end_txn(&mut self, batch: &Bytes, header: &BatchHeader) -> Vec<i64> {
        let pid = header.producer_id;
        let ends = (self.open.get(&pid)).is_some_and(|txn| header.producer_epoch >= txn.epoch);
        let Some(txn) = ends.then(|| self.open.remove(&pid)).flatten() else {
            return Vec::new();
        };
        let offsets = txn.records.iter().map(|r| r.offset).collect();
        if markers::read(batch) == Some(Marker::Commit) {
            txn.records.into_iter().for_each(|r| self.note(r));
        }
        offsets
    }

    /// A record that counts: the latest of its key if it is later than the one known.
    fn note(&mut self, record: StoredRecord) {
        let Some(key) = record.key else { return };
        if record.offset < self.watermarks.log_start {
            return;
        }
        let latest = Latest {
            offset: record.offset,
            tombstone: record.tombstone,
        };
        self.latest
            .entry(key)
            .and_modify(|l| {
                if l.offset < latest.offset {
                    *l = latest
                }
            })
            .or_insert(latest);
    }

    /// The plan: what stays below the end of what may be compacted. `reached_at` says
    /// when compaction first reached an offset (now, for one reached by this pass).
    pub fn finish(self, reached_at: impl Fn(i64) -> i64) -> Plan {
        let taken_end = self.taken.last().map_or(self.start, |t| t.0);
        let open_from = self.open.values().map(|t| t.first).min();
        let below = open_from.map_or(taken_end, |first| first.min(taken_end));
        let retention = self.rules.delete_retention_ms;
        let mut tombstones_due: Option<i64> = None;
        let mut keep: Vec<i64> = Vec::new();
        let (mut seeded, mut key_bytes) = (HashMap::new(), 0);
        for (key, latest) in self.latest.into_iter().filter(|l| l.1.offset < below) {
            if latest.tombstone {
                let due = reached_at(latest.offset).saturating_add(retention);
                if due <= self.now_ms {
                    continue;
                }
                tombstones_due = Some(tombstones_due.map_or(due, |d| d.min(due)));
            }
            keep.push(latest.offset);
            key_bytes += key.len();
            seeded.insert(key, latest);
        }
        keep.sort_unstable();
        let mut markers = Vec::new();
        for m in self.markers.into_iter().filter(|m| m.offset < below) {
            let holds = m.records.iter().any(|o| keep.binary_search(o).is_ok());
            let due = reached_at(m.offset).saturating_add(retention);
            if holds || due > self.now_ms {
                markers.push(m.offset);
            }
            if !holds && due > self.now_ms {
                tombstones_due = Some(tombstones_due.map_or(due, |d| d.min(due)));
            }
        }
        keep.extend(markers);
        keep.sort_unstable();
        let below_batches = self.taken.iter().filter(|t| t.0 <= below);
        let (records, bytes_below) = below_batches.fold((0, 0), |(n, b), t| (n + t.1, b + t.2));
        let seed = (!self.transactional).then_some(Seed {
            below,
            latest: seeded,
            key_bytes,
        });
        Plan {
            below,
            removes: (keep.len() as i64) < self.seeded + records,
            keep,
            tombstones_due,
            bytes_below,
            ripe_at: self.ripe_at,
            seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::markers;
    use bytes::BytesMut;
    use indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    const NOW: i64 = 1_000_000;

    fn rules(min_lag: i64, delete_retention: i64) -> CompactionInForce {
        CompactionInForce {
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: min_lag,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: delete_retention,
        }
    }

    /// One batch at `base` of `(key, value)` records, written at `ts`; `producer`
    /// makes it transactional.
    fn batch(base: i64, kvs: &[(&str, Option<&str>)], ts: i64, producer: Option<i64>) -> Bytes {
        let records: Vec<Record> = (kvs.iter().enumerate())
            .map(|(i, (k, v))| Record {
                transactional: producer.is_some(),
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: producer.unwrap_or(-1),
                producer_epoch: if producer.is_some() { 0 } else { -1 },
                timestamp_type: TimestampType::Creation,
                offset: base + i as i64,
                // One batch only while offset - sequence stays the same.
                sequence: if producer.is_some() {
                    i as i32
                } else {
                    i as i32 - 1
                },
                timestamp: ts,
                key: Some(Bytes::from(k.to_string())),
                value: v.map(|v| Bytes::from(v.to_string())),
                headers: IndexMap::new(),
            })
            .collect();
        let mut out = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut out, &records, &options).unwrap();
        out.freeze()
    }

    fn marker(base: i64, producer: i64, marker: Marker) -> Bytes {
        marker_at(base, (producer, 0), marker)
    }

    fn marker_at(base: i64, (producer, epoch): (i64, i16), marker: Marker) -> Bytes {
        let mut b = BytesMut::from(&markers::batch(marker, producer, epoch, 0, NOW - 10)[..]);
        b[..8].copy_from_slice(&base.to_be_bytes());
        b.freeze()
    }

    fn plan(rules: CompactionInForce, high: i64, batches: &[Bytes], reached: i64) -> Plan {
        plan_on(false, (rules, high), batches, reached)
    }

    /// [`plan`] for an engine that stores records one by one (`by_record`) or not.
    fn plan_on(
        by_record: bool,
        (rules, high): (CompactionInForce, i64),
        batches: &[Bytes],
        reached: i64,
    ) -> Plan {
        let watermarks = Watermarks { log_start: 0, high };
        plan_from(
            Planner::new(rules, NOW, watermarks, by_record, None),
            batches,
            reached,
        )
    }

    /// The plan of `planner` over those of `batches` from its start on.
    fn plan_from(mut planner: Planner, batches: &[Bytes], reached: i64) -> Plan {
        let start = planner.start();
        for b in batches.iter().filter(|b| records::base_offset(b) >= start) {
            if !planner.take(b).unwrap() {
                break;
            }
        }
        planner.finish(|_| reached)
    }

    #[test]
    fn keeps_the_latest_of_each_key_and_never_touches_the_active_tail() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("1")), ("b", Some("1"))], old, None),
            batch(2, &[("a", Some("2")), ("c", Some("1"))], old, None),
            batch(4, &[("a", Some("3")), ("b", Some("2"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 6, &batches, NOW);
        assert_eq!(p.below, 4, "the batch at the high watermark stays as it is");
        assert_eq!(p.keep, vec![1, 2, 3]);
        assert!(p.removes);
        let p = plan(rules(200, 1_000), 6, &batches, NOW);
        assert_eq!(p.below, 0, "younger than min.compaction.lag.ms");
        assert!(!p.removes);
        assert_eq!(p.ripe_at, Some(NOW + 100));
    }

    #[test]
    fn tombstones_stay_delete_retention_ms_after_compaction_reached_them() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("1")), ("b", Some("1"))], old, None),
            batch(2, &[("a", None)], old, None),
            batch(3, &[("b", Some("2"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 4, &batches, NOW);
        assert_eq!(
            p.keep,
            vec![1, 2],
            "the tombstone stays, reached just now; b's next version is in the active tail"
        );
        assert_eq!(p.tombstones_due, Some(NOW + 1_000));
        let p = plan(rules(0, 1_000), 4, &batches, NOW - 1_000);
        assert_eq!(p.keep, vec![1], "reached long enough ago");
        assert_eq!(p.tombstones_due, None);
    }

    #[test]
    fn aborted_records_go_markers_stay_and_open_transactions_end_the_pass() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("1"))], old, None),
            batch(1, &[("a", Some("aborted"))], old, Some(7)),
            marker(2, 7, Marker::Abort),
            batch(3, &[("b", Some("1"))], old, Some(8)),
            marker(4, 8, Marker::Commit),
            batch(5, &[("b", Some("open"))], old, Some(9)),
            batch(6, &[("a", Some("2"))], old, None),
            batch(7, &[("c", Some("tail"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 8, &batches, NOW);
        assert_eq!(p.below, 5, "up to the transaction still open");
        assert_eq!(
            p.keep,
            vec![2, 3, 4],
            "a is superseded above the end, the abort's record goes, markers stay"
        );
    }

    /// A late copy of an earlier abort, older than the transaction open (the records
    /// here are at epoch 0), ends nothing: the commit after it does.
    #[test]
    fn a_marker_older_than_the_open_transaction_ends_nothing() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("committed"))], old, Some(7)),
            marker_at(1, (7, -1), Marker::Abort),
            marker(2, 7, Marker::Commit),
            batch(3, &[("z", Some("tail"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 4, &batches, NOW);
        assert!(
            p.keep.contains(&0),
            "the committed record goes: {:?}",
            p.keep
        );
    }

    #[test]
    fn a_marker_ending_the_log_ends_its_transaction() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("1")), ("b", Some("1"))], old, None),
            batch(2, &[("a", Some("2")), ("b", Some("2"))], old, Some(7)),
            marker(4, 7, Marker::Commit),
        ];
        let p = plan(rules(0, 1_000), 5, &batches, NOW);
        assert_eq!(p.below, 4, "the marker stays past the pass");
        assert_eq!(
            p.keep,
            vec![2, 3],
            "the committed versions supersede the first"
        );
    }

    #[test]
    fn an_engine_storing_records_one_by_one_keeps_only_the_last_record_as_tail() {
        let old = NOW - 100;
        // A batch the engine joined from records written one by one, up to the end.
        let batches = [batch(
            0,
            &[
                ("a", Some("1")),
                ("a", Some("2")),
                ("b", Some("1")),
                ("a", Some("3")),
            ],
            old,
            None,
        )];
        let p = plan_on(true, (rules(0, 1_000), 4), &batches, NOW);
        assert_eq!(p.below, 3, "all but the last record");
        assert_eq!(p.keep, vec![1, 2]);
        let p = plan_on(false, (rules(0, 1_000), 4), &batches, NOW);
        assert_eq!(
            (p.below, p.removes),
            (0, false),
            "a batch as produced stays whole"
        );
    }

    #[test]
    fn a_marker_goes_once_no_record_of_its_transaction_is_left() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("aborted"))], old, Some(7)),
            marker(1, 7, Marker::Abort),
            batch(2, &[("b", Some("1"))], old, Some(8)),
            marker(3, 8, Marker::Commit),
            batch(4, &[("c", Some("1"))], old, Some(9)),
            marker(5, 9, Marker::Commit),
            batch(6, &[("c", Some("2"))], old, None),
            batch(7, &[("d", Some("tail"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 8, &batches, NOW);
        assert_eq!(
            p.keep,
            vec![1, 2, 3, 5, 6],
            "reached just now: every marker stays"
        );
        assert_eq!(p.tombstones_due, Some(NOW + 1_000));
        let p = plan(rules(0, 1_000), 8, &batches, NOW - 1_000);
        assert_eq!(
            p.keep,
            vec![2, 3, 6],
            "the abort's and the superseded commit's markers go; b's commit stays with it"
        );
        assert_eq!(p.tombstones_due, None);
    }

    #[test]
    fn a_pass_from_the_last_ones_seed_plans_as_one_from_the_log_start() {
        let old = NOW - 100;
        let first = [
            batch(0, &[("a", Some("1")), ("b", Some("1"))], old, None),
            batch(2, &[("a", Some("2"))], old, None),
            batch(3, &[("c", Some("1"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 4, &first, NOW);
        assert_eq!((p.below, &p.keep[..]), (3, &[1, 2][..]));
        // What the first pass kept, then more: the second pass reads from offset 3 on.
        let log = [
            batch(1, &[("b", Some("1"))], old, None),
            batch(2, &[("a", Some("2"))], old, None),
            batch(3, &[("c", Some("1"))], old, None),
            batch(4, &[("a", Some("3")), ("c", Some("2"))], old, None),
            batch(6, &[("b", Some("2"))], old, None),
        ];
        let watermarks = Watermarks {
            log_start: 0,
            high: 7,
        };
        let seeded = Planner::new(rules(0, 1_000), NOW, watermarks, false, p.seed.clone());
        assert_eq!(seeded.start(), 3);
        let from_seed = plan_from(seeded, &log, NOW);
        let from_start = plan(rules(0, 1_000), 7, &log, NOW);
        assert_eq!(from_seed.below, 6);
        assert_eq!(from_seed.keep, vec![1, 4, 5], "a2 and c1 superseded");
        assert!(from_seed.removes);
        assert_eq!(
            (from_seed.below, &from_seed.keep, from_seed.removes),
            (from_start.below, &from_start.keep, from_start.removes)
        );
        assert_eq!(from_seed.seed, from_start.seed);
        // A log start past the seed's end (retention, DeleteRecords) makes it useless.
        let watermarks = Watermarks {
            log_start: 4,
            high: 7,
        };
        let late = Planner::new(rules(0, 1_000), NOW, watermarks, false, p.seed);
        assert_eq!(late.start(), 4);
    }

    #[test]
    fn a_pass_over_transactions_leaves_no_seed() {
        let old = NOW - 100;
        let batches = [
            batch(0, &[("a", Some("1"))], old, Some(7)),
            marker(1, 7, Marker::Commit),
            batch(2, &[("c", Some("tail"))], old, None),
        ];
        let p = plan(rules(0, 1_000), 3, &batches, NOW);
        assert_eq!(p.below, 2);
        assert_eq!(p.seed, None, "its markers are weighed again by each pass");
    }
}
