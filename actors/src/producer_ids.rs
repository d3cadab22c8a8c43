//! Producer ids, never handed out twice, by this gateway or any other on the store,
//! before or after a restart: they come in blocks, block `n` being the ids
//! `n * BLOCK ..`, and the block number is the version a write to table
//! `producer-ids` gets, which no other write gets (`store::meta`).

use std::ops::Range;

use tokio::sync::Mutex;

use crate::store::meta::Change;
use crate::store::Meta;
use crate::store::StoreResult;

/// Ids in one block: a block is taken rarely, so handing one out rarely writes.
const BLOCK: i64 = 1_000;
const TABLE: &str = "producer-ids";

pub struct ProducerIds {
    meta: Meta,
    /// The ids of the current block not handed out yet.
    left: Mutex<Range<i64>>,
}

impl ProducerIds {
    pub fn new(meta: Meta) -> ProducerIds {
        ProducerIds {
            meta,
            left: Mutex::new(0..0),
        }
    }

    /// A producer id never handed out before.
    pub async fn allocate(&self) -> StoreResult<i64> {
        let mut left = self.left.lock().await;
        if left.is_empty() {
            let taken = Change::Put {
                key: "block".into(),
                value: bytes::Bytes::new(),
            };
            let block = self.meta.write(TABLE, vec![taken]).await? as i64;
            *left = block * BLOCK..(block + 1) * BLOCK;
        }
        Ok(left.next().expect("a block holds ids"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::test_store::MemoryMeta;

    #[tokio::test]
    async fn gateways_sharing_a_store_never_hand_out_the_same_id() {
        let store = Meta::new(Arc::new(MemoryMeta::default()));
        let (a, b) = (
            ProducerIds::new(store.clone()),
            ProducerIds::new(store.clone()),
        );
        let mut seen = BTreeSet::new();
        for _ in 0..2_500 {
            assert!(seen.insert(a.allocate().await.unwrap()));
            assert!(seen.insert(b.allocate().await.unwrap()));
        }
        // A restart starts a new block, after every block taken before.
        let restarted = ProducerIds::new(store);
        assert!(seen.insert(restarted.allocate().await.unwrap()));
    }
}
