//! One metadata table as its Iggy log holds it, and the replica rebuilt from that log.
//!
//! A log record is one write: `W`, the change count (u32), then each change: `P`, the
//! key (u32 length + UTF-8) and the value (u32 length + bytes), or `D` and the key. A
//! conditional write is `C`, the condition count (u32), each condition: the key, then
//! `0` (no entry) or `1` and the value, then what a `W` holds after its `W`; replicas
//! apply it only where its conditions hold, so every replica skips the same ones.
//! A snapshot record is one entry: `E`, the key (u32 length + UTF-8), then the value
//! (the rest). Integers are big-endian, as in the other gateway logs. The engine never
//! looks inside keys or values: what they mean is the table's business
//! (`iggy_kafka_actors::store`).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use iggy_kafka_actors::store::meta::{Change, Expect, Version};

use crate::iggy::gateway_log::{Compact, Replay};

const WRITE: u8 = b'W';
const CONDITIONAL: u8 = b'C';
const PUT: u8 = b'P';
const DELETE: u8 = b'D';
const ENTRY: u8 = b'E';

/// Log records kept in memory after being applied, so [`Since`] a recent version is
/// answered without reading the log again (the catch-up before it read them already).
///
/// [`Since`]: iggy_kafka_actors::store::meta::Since
const TAIL_RECORDS: usize = 4_096;
const TAIL_BYTES: usize = 4 << 20;

/// One write as a log record holds it.
#[derive(Debug, PartialEq, Eq)]
pub struct Write {
    pub expect: Vec<Expect>,
    pub changes: Vec<Change>,
}

/// The log record of one write: conditional when `expect` holds anything.
pub fn encode_write(expect: &[Expect], changes: &[Change]) -> Bytes {
    let size: usize = changes
        .iter()
        .map(|c| match c {
            Change::Put { key, value } => 9 + key.len() + value.len(),
            Change::Delete { key } => 5 + key.len(),
        })
        .chain(
            expect
                .iter()
                .map(|e| 9 + e.key.len() + e.value.as_ref().map_or(0, |v| v.len())),
        )
        .sum();
    let mut b = BytesMut::with_capacity(9 + size);
    if expect.is_empty() {
        b.put_u8(WRITE);
    } else {
        b.put_u8(CONDITIONAL);
        b.put_u32(expect.len() as u32);
        for e in expect {
            put_bytes(&mut b, e.key.as_bytes());
            match &e.value {
                None => b.put_u8(0),
                Some(value) => {
                    b.put_u8(1);
                    put_bytes(&mut b, value);
                }
            }
        }
        b.put_u8(WRITE);
    }
    b.put_u32(changes.len() as u32);
    for change in changes {
        match change {
            Change::Put { key, value } => {
                b.put_u8(PUT);
                put_bytes(&mut b, key.as_bytes());
                put_bytes(&mut b, value);
            }
            Change::Delete { key } => {
                b.put_u8(DELETE);
                put_bytes(&mut b, key.as_bytes());
            }
        }
    }
    b.freeze()
}

/// The write of a log record; `None` if it is not one.
pub fn decode_write(record: &Bytes) -> Option<Write> {
    let mut b = record.clone();
    let mut expect = Vec::new();
    if b.first() == Some(&CONDITIONAL) {
        b.advance(1);
        if b.len() < 4 {
            return None;
        }
        let count = b.get_u32() as usize;
        // Every condition takes at least 5 bytes: a count the record cannot hold is
        // garbage, not an allocation.
        expect.reserve(count.min(b.len() / 5));
        for _ in 0..count {
            let key = take_key(&mut b)?;
            let present = (!b.is_empty()).then(|| b.get_u8())?;
            let value = match present {
                0 => None,
                1 => Some(take_bytes(&mut b)?),
                _ => return None,
            };
            expect.push(Expect { key, value });
        }
    }
    if b.is_empty() || b.get_u8() != WRITE || b.len() < 4 {
        return None;
    }
    let count = b.get_u32() as usize;
    // Every change takes at least 5 bytes, as above.
    let mut changes = Vec::with_capacity(count.min(b.len() / 5));
    for _ in 0..count {
        if b.is_empty() {
            return None;
        }
        let op = b.get_u8();
        let key = take_key(&mut b)?;
        changes.push(match op {
            PUT => Change::Put {
                key,
                value: take_bytes(&mut b)?,
            },
            DELETE => Change::Delete { key },
            _ => return None,
        });
    }
    b.is_empty().then_some(Write { expect, changes })
}

fn encode_entry(key: &str, value: &Bytes) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + key.len() + value.len());
    b.put_u8(ENTRY);
    put_bytes(&mut b, key.as_bytes());
    b.put_slice(value);
    b.freeze()
}

fn decode_entry(record: &Bytes) -> Option<(String, Bytes)> {
    let mut b = record.clone();
    if b.is_empty() || b.get_u8() != ENTRY {
        return None;
    }
    let key = take_key(&mut b)?;
    Some((key, b))
}

fn put_bytes(b: &mut BytesMut, bytes: &[u8]) {
    b.put_u32(bytes.len() as u32);
    b.put_slice(bytes);
}

fn take_bytes(b: &mut Bytes) -> Option<Bytes> {
    if b.len() < 4 {
        return None;
    }
    let len = b.get_u32() as usize;
    (b.len() >= len).then(|| b.split_to(len))
}

fn take_key(b: &mut Bytes) -> Option<String> {
    String::from_utf8(take_bytes(b)?.to_vec()).ok()
}

/// A table rebuilt from its log: the entries, the last records applied, and the first
/// record that was not a table record, if any (a replica with such a hole refuses to
/// answer rather than answer wrong).
#[derive(Default)]
pub struct Table {
    entries: BTreeMap<String, Bytes>,
    /// The latest records and whether each was applied (a conditional write whose
    /// conditions did not hold was not).
    tail: VecDeque<(u64, Bytes, bool)>,
    tail_bytes: usize,
    malformed: Option<u64>,
}

impl Table {
    /// Entries whose key starts with `prefix`, in key order.
    pub fn scan(&self, prefix: &str) -> Vec<(String, Bytes)> {
        self.entries
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }

    /// The changes of the records from offset `since` up to `upto` (exclusive), when
    /// they are all still in memory.
    pub fn recent(&self, since: Version, upto: Version) -> Option<Vec<Change>> {
        if since < self.tail.front()?.0 {
            return None;
        }
        let mut changes = Vec::new();
        let mut next = since;
        let records = self.tail.iter().filter(|(o, ..)| (since..upto).contains(o));
        for (offset, record, applied) in records {
            if *offset != next {
                return None;
            }
            if *applied {
                changes.extend(decode_write(record)?.changes);
            }
            next += 1;
        }
        (next == upto).then_some(changes)
    }

    /// Whether the record at `offset` was applied, while the tail still holds it.
    pub fn applied(&self, offset: u64) -> Option<bool> {
        let at = self.tail.binary_search_by_key(&offset, |(o, ..)| *o).ok()?;
        Some(self.tail[at].2)
    }

    /// The offset of the first record that is not a record of a table.
    pub fn malformed(&self) -> Option<u64> {
        self.malformed
    }

    fn remember(&mut self, offset: u64, record: &Bytes, applied: bool) {
        self.tail.push_back((offset, record.clone(), applied));
        self.tail_bytes += record.len();
        while self.tail.len() > TAIL_RECORDS || self.tail_bytes > TAIL_BYTES {
            let Some((_, old, _)) = self.tail.pop_front() else {
                break;
            };
            self.tail_bytes -= old.len();
        }
    }
}

impl Replay for Table {
    fn apply(&mut self, offset: u64, record: &Bytes) {
        match record.first() {
            // Snapshot records, all given the offset the snapshot covers up to.
            Some(&ENTRY) => match decode_entry(record) {
                Some((key, value)) => {
                    self.entries.insert(key, value);
                }
                None => self.malformed = self.malformed.or(Some(offset)),
            },
            _ => match decode_write(record) {
                Some(write) => {
                    let holds =
                        (write.expect.iter()).all(|e| self.entries.get(&e.key) == e.value.as_ref());
                    if holds {
                        for change in write.changes {
                            match change {
                                Change::Put { key, value } => {
                                    self.entries.insert(key, value);
                                }
                                Change::Delete { key } => {
                                    self.entries.remove(&key);
                                }
                            }
                        }
                    }
                    self.remember(offset, record, holds);
                }
                None => self.malformed = self.malformed.or(Some(offset)),
            },
        }
    }
}

impl Compact for Table {
    fn compacted(&self) -> Vec<Bytes> {
        self.entries
            .iter()
            .map(|(key, value)| encode_entry(key, value))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &[u8]) -> Change {
        Change::Put {
            key: key.into(),
            value: Bytes::copy_from_slice(value),
        }
    }

    fn delete(key: &str) -> Change {
        Change::Delete { key: key.into() }
    }

    fn expect(key: &str, value: Option<&[u8]>) -> Expect {
        Expect {
            key: key.into(),
            value: value.map(Bytes::copy_from_slice),
        }
    }

    /// Two writers that read `k` at "1": the first conditional write to land applies,
    /// the late one (a stale coordinator's, its bytes held up on the way) does not, and
    /// every replica and every reader of the changes sees the same.
    #[test]
    fn a_conditional_write_applies_only_where_its_conditions_hold() {
        let mut t = Table::default();
        t.apply(0, &encode_write(&[], &[put("k", b"1")]));
        let first = encode_write(&[expect("k", Some(b"1"))], &[put("k", b"2")]);
        let late = encode_write(&[expect("k", Some(b"1"))], &[put("k", b"stale")]);
        let fresh = encode_write(&[expect("n", None)], &[put("n", b"new")]);
        t.apply(1, &first);
        t.apply(2, &late);
        t.apply(3, &fresh);
        assert_eq!(t.scan("k"), vec![("k".into(), Bytes::from_static(b"2"))]);
        assert_eq!(t.scan("n"), vec![("n".into(), Bytes::from_static(b"new"))]);
        assert_eq!(
            (t.applied(1), t.applied(2), t.applied(3)),
            (Some(true), Some(false), Some(true))
        );
        assert_eq!(t.applied(4), None);
        assert_eq!(
            t.recent(1, 4),
            Some(vec![put("k", b"2"), put("n", b"new")]),
            "a write not applied changes nothing for readers of the changes"
        );
    }

    #[test]
    fn writes_decode_to_what_was_written() {
        let changes = vec![
            put("a", b"1"),
            put("", b""),
            delete("b"),
            put("k\u{e9}y", &[0, 255, 7]),
        ];
        let record = encode_write(&[], &changes);
        let plain = |changes| {
            Some(Write {
                expect: vec![],
                changes,
            })
        };
        assert_eq!(decode_write(&record), plain(changes.clone()));
        assert_eq!(decode_write(&encode_write(&[], &[])), plain(vec![]));
        let expect = vec![expect("a", Some(b"1")), expect("", None)];
        let conditional = encode_write(&expect, &changes);
        assert_eq!(decode_write(&conditional), Some(Write { expect, changes }));
        assert_eq!(
            decode_write(&conditional.slice(..conditional.len() - 1)),
            None
        );
        // Cut short, trailing bytes, a count larger than the record, another kind.
        assert_eq!(decode_write(&record.slice(..record.len() - 1)), None);
        let mut longer = BytesMut::from(&record[..]);
        longer.put_u8(0);
        assert_eq!(decode_write(&longer.freeze()), None);
        assert_eq!(
            decode_write(&Bytes::from_static(b"W\xff\xff\xff\xff")),
            None
        );
        assert_eq!(decode_write(&Bytes::from_static(b"{\"json\":1}")), None);
        assert_eq!(decode_write(&Bytes::new()), None);
    }

    #[test]
    fn a_table_replays_writes_and_snapshots_in_order() {
        let mut t = Table::default();
        t.apply(0, &encode_write(&[], &[put("a/1", b"x"), put("a/2", b"y")]));
        t.apply(1, &encode_write(&[], &[delete("a/1"), put("b", b"z")]));
        assert_eq!(
            t.scan("a/"),
            vec![("a/2".to_string(), Bytes::from_static(b"y"))]
        );
        assert_eq!(t.scan("").len(), 2);
        assert_eq!(t.scan("c"), vec![]);
        assert_eq!(t.recent(1, 2), Some(vec![delete("a/1"), put("b", b"z")]));
        assert_eq!(t.recent(2, 2), Some(vec![]));
        assert_eq!(t.recent(0, 3), None, "not everything up to 3 is here");

        // A snapshot of it rebuilds the same entries, and remembers no records.
        let mut again = Table::default();
        t.compacted().iter().for_each(|r| again.apply(2, r));
        assert_eq!(again.scan(""), t.scan(""));
        assert_eq!(again.recent(2, 2), None);
        assert_eq!(again.malformed(), None);

        again.apply(2, &Bytes::from_static(b"not a write"));
        again.apply(3, &Bytes::from_static(b"E\0\0"));
        assert_eq!(again.malformed(), Some(2));
    }

    #[test]
    fn the_tail_keeps_the_latest_records_only() {
        let mut t = Table::default();
        let total = TAIL_RECORDS as u64 + 10;
        for offset in 0..total {
            t.apply(
                offset,
                &encode_write(&[], &[put("k", &offset.to_be_bytes())]),
            );
        }
        assert_eq!(t.recent(5, total), None);
        let from = total - TAIL_RECORDS as u64;
        assert_eq!(t.recent(from, total).map(|c| c.len()), Some(TAIL_RECORDS));
    }
}
