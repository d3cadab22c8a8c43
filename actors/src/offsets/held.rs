//! Offsets a transaction commits (TxnOffsetCommit), held apart until it ends: table
//! `txn-offsets`, keyed `<len>:<group><producer id>:<len>:<topic>:<partition>` (the
//! offsets table's key with the producer id after the group), valued as committed
//! offsets are. At commit they move into `offsets`; at abort they go. OffsetFetch with
//! `require_stable` answers UNSTABLE_OFFSET_COMMIT for a partition that has one. Like
//! committed offsets, they are written by the slot of their partition and read by a
//! slot's read client (`clients.rs`).

use super::table;
use crate::store::TopicPartition;

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
}
