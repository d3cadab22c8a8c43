//! Offsets a transaction commits (TxnOffsetCommit), held apart until it ends: table
//! `txn-offsets`, keyed `<len>:<group><producer id>:<len>:<topic>:<partition>` (the
//! offsets table's key with the producer id after the group). At commit they move into
//! `offsets`; at abort they go. OffsetFetch with `require_stable` answers
//! UNSTABLE_OFFSET_COMMIT for a partition that has one. Like committed offsets, they
//! are written by the slot of their partition and read by a slot's read client
//! (`clients.rs`).
//!
//! Kafka keeps the latest of a transactional and a plain commit, in the order they were
//! made, not settled: an OffsetCommit after the TxnOffsetCommit outlives the
//! transaction's commit. So each held offset keeps what it found committed when held
//! ([`Found`]), and its settle lands only where that is still so. A settle that comes
//! late (its transaction coordinator's link to the store healed after the group moved
//! on) or again (a retried end) then moves no offset back either.
//!
//! Value: `0x80 ‖ found ‖ committed offset as table `offsets` stores it`, where found
//! is `0` (nothing was committed) or `1 ‖ u32 length ‖ the committed value`. Values an
//! older gateway held are the committed offset alone (their first byte, an offset's
//! top byte, is never `0x80`): what they found is unknown, and they settle as before.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::table;
use crate::store::{CommittedOffset, TopicPartition};

pub const TABLE: &str = "txn-offsets";

/// The prefix of `group`'s held offsets, or of one producer's among them.
pub fn prefix(group: &str, producer_id: Option<i64>) -> String {
    match producer_id {
        Some(id) => format!("{}{id}:", table::group_prefix(group)),
        None => table::group_prefix(group),
    }
}

/// The key of a producer's held offset of `tp` for `group`.
pub fn key(group: &str, producer_id: i64, tp: &TopicPartition) -> String {
    format!(
        "{}{}",
        prefix(group, Some(producer_id)),
        &table::key("", tp)[2..]
    )
}

/// What a held offset found committed for its group and partition when it was held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// The committed entry's value, as stored.
    Committed(Bytes),
    /// Held by a gateway that did not note it.
    Unknown,
}

impl Found {
    /// The committed value a settle expects (`None`: no entry), unless unknown.
    pub fn expected(&self) -> Option<Option<&Bytes>> {
        match self {
            Found::Nothing => Some(None),
            Found::Committed(was) => Some(Some(was)),
            Found::Unknown => None,
        }
    }
}

/// An offset a transaction holds, and what it found committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub offset: CommittedOffset,
    pub found: Found,
}

const FORMAT: u8 = 0x80;

pub fn encode(held: &Held) -> Bytes {
    let offset = table::encode(&held.offset);
    let mut out = BytesMut::with_capacity(6 + offset.len());
    out.put_u8(FORMAT);
    match &held.found {
        Found::Nothing => out.put_u8(0),
        Found::Committed(was) => {
            out.put_u8(1);
            out.put_u32(was.len() as u32);
            out.put_slice(was);
        }
        Found::Unknown => return offset,
    }
    out.put_slice(&offset);
    out.freeze()
}

pub fn decode(v: &[u8]) -> Option<Held> {
    let Some((&FORMAT, mut rest)) = v.split_first() else {
        let offset = table::decode(v)?;
        let found = Found::Unknown;
        return Some(Held { offset, found });
    };
    let found = match rest.try_get_u8().ok()? {
        0 => Found::Nothing,
        1 => {
            let len = rest.try_get_u32().ok()? as usize;
            let was = Bytes::copy_from_slice(rest.get(..len)?);
            rest.advance(len);
            Found::Committed(was)
        }
        _ => return None,
    };
    let offset = table::decode(rest)?;
    Some(Held { offset, found })
}

/// `(producer id, partition)` of a key under `group`'s prefix.
pub fn parse(group: &str, key: &str) -> Option<(i64, TopicPartition)> {
    let rest = key.strip_prefix(&table::group_prefix(group))?;
    let (producer, rest) = rest.split_once(':')?;
    // The rest is an offsets key of the empty group: `0:` then the partition.
    let (_, tp) = table::parse_key(&format!("0:{rest}"))?;
    Some((producer.parse().ok()?, tp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_back_under_their_group_only() {
        let tp = |topic: &str, partition| TopicPartition {
            topic: topic.into(),
            partition,
        };
        for (group, producer, at) in [("g", 7, tp("a:b", 0)), ("g:1", 12, tp("c", 2))] {
            let key = key(group, producer, &at);
            assert!(key.starts_with(&prefix(group, Some(producer))));
            assert!(key.starts_with(&prefix(group, None)));
            assert_eq!(parse(group, &key), Some((producer, at)));
            assert_eq!(parse("other", &key), None);
        }
        assert!(!key("g", 7, &tp("t", 0)).starts_with(&prefix("g", Some(70))));
    }

    #[test]
    fn values_keep_what_was_found_and_older_ones_read_as_unknown() {
        let offset = CommittedOffset {
            offset: 42,
            leader_epoch: 3,
            metadata: "m".into(),
        };
        let was = table::encode(&CommittedOffset {
            offset: 7,
            leader_epoch: -1,
            metadata: String::new(),
        });
        for found in [Found::Nothing, Found::Committed(was), Found::Unknown] {
            let held = Held {
                offset: offset.clone(),
                found,
            };
            assert_eq!(decode(&encode(&held)), Some(held));
        }
        let older = decode(&table::encode(&offset)).unwrap();
        assert_eq!((older.offset, older.found), (offset, Found::Unknown));
        assert_eq!(decode(&[FORMAT, 2]), None);
    }
}
