//! Offsets a transaction commits (TxnOffsetCommit), held apart until it ends: table
//! `txn-offsets`, keyed `<len>:<group><producer id>:<len>:<topic>:<partition>` (the
//! offsets table's key with the producer id after the group), valued as committed
//! offsets are. At commit they move into `offsets`; at abort they go. OffsetFetch with
//! `require_stable` answers UNSTABLE_OFFSET_COMMIT for a partition that has one.

use std::collections::BTreeSet;

use crate::offsets::table;
use crate::store::meta::Change;
use crate::store::{CommittedOffset, Meta, StoreResult, TopicPartition};

const TABLE: &str = "txn-offsets";

fn producer_prefix(group: &str, producer_id: i64) -> String {
    format!("{}{producer_id}:", table::group_prefix(group))
}

/// `(producer id, partition)` of a key under `group`'s prefix.
fn parse(group: &str, key: &str) -> Option<(i64, TopicPartition)> {
    let rest = key.strip_prefix(&table::group_prefix(group))?;
    let (producer, rest) = rest.split_once(':')?;
    // The rest is an offsets key of the empty group: `0:` then the partition.
    let (_, tp) = table::parse_key(&format!("0:{rest}"))?;
    Some((producer.parse().ok()?, tp))
}

/// Holds a transaction's offsets until it ends.
pub async fn stage(
    meta: &Meta,
    group: &str,
    producer_id: i64,
    offsets: Vec<(TopicPartition, CommittedOffset)>,
) -> StoreResult<()> {
    let prefix = producer_prefix(group, producer_id);
    let changes = offsets
        .iter()
        .map(|(tp, c)| Change::Put {
            key: format!("{prefix}{}", &table::key("", tp)[2..]),
            value: table::encode(c),
        })
        .collect();
    meta.write(TABLE, changes).await.map(|_| ())
}

/// What a producer's transaction holds for a group: the offsets, and their keys to
/// delete once they are committed (or the transaction aborted).
pub struct Held {
    pub offsets: Vec<(TopicPartition, CommittedOffset)>,
    keys: Vec<String>,
}

/// The offsets a producer's transaction holds for `group`.
pub async fn held(meta: &Meta, group: &str, producer_id: i64) -> StoreResult<Held> {
    let scan = meta
        .scan(TABLE, &producer_prefix(group, producer_id))
        .await?;
    let offsets = (scan.entries.iter())
        .filter_map(|(key, value)| Some((parse(group, key)?.1, table::decode(value)?)))
        .collect();
    let keys = scan.entries.into_iter().map(|(key, _)| key).collect();
    Ok(Held { offsets, keys })
}

/// Forgets what `held` found.
pub async fn release(meta: &Meta, held: Held) -> StoreResult<()> {
    meta.delete(TABLE, held.keys).await
}

/// The partitions of `group` some open transaction holds an offset for.
pub async fn pending(meta: &Meta, group: &str) -> StoreResult<BTreeSet<TopicPartition>> {
    let scan = meta.scan(TABLE, &table::group_prefix(group)).await?;
    Ok(scan
        .entries
        .iter()
        .filter_map(|(key, _)| parse(group, key))
        .map(|(_, tp)| tp)
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::test_store::MemoryMeta;

    #[tokio::test]
    async fn staged_offsets_are_pending_until_released() {
        let meta = Meta::new(Arc::new(MemoryMeta::default()));
        let tp = |topic: &str, partition| TopicPartition {
            topic: topic.into(),
            partition,
        };
        let at = |offset| CommittedOffset {
            offset,
            leader_epoch: -1,
            metadata: "m".into(),
        };
        stage(
            &meta,
            "g",
            7,
            vec![(tp("a:b", 0), at(5)), (tp("c", 2), at(9))],
        )
        .await
        .unwrap();
        stage(&meta, "g2", 7, vec![(tp("c", 2), at(1))])
            .await
            .unwrap();
        let pending_g = pending(&meta, "g").await.unwrap();
        assert_eq!(pending_g, [tp("a:b", 0), tp("c", 2)].into_iter().collect());
        let mut found = held(&meta, "g", 7).await.unwrap();
        found.offsets.sort_by(|a, b| a.0.cmp(&b.0));
        let offsets = vec![(tp("a:b", 0), at(5)), (tp("c", 2), at(9))];
        assert_eq!(found.offsets, offsets);
        let other = held(&meta, "g", 8).await.unwrap();
        assert!(other.offsets.is_empty(), "another producer's");
        release(&meta, found).await.unwrap();
        assert!(pending(&meta, "g").await.unwrap().is_empty());
        assert_eq!(
            pending(&meta, "g2").await.unwrap().len(),
            1,
            "another group's stay"
        );
    }
}
