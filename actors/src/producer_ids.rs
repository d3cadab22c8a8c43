//! Producer ids, never handed out twice, by this gateway or any other on the store,
//! before or after a restart: they come in blocks, block `n` being the ids
//! `n * BLOCK ..`, and the block number is the version a write to table
//! `producer-ids` gets, which no other write gets (`store::meta`). One actor,
//! [`IdBlocks`], owns the block being handed out and the client that takes the next:
//! its handler is atomic, so a block is taken once however many ask at once.

use std::ops::Range;

use actix::prelude::*;

use crate::store::meta::Change;
use crate::store::{Meta, StoreError, StoreResult};

/// Ids in one block: a block is taken rarely, so handing one out rarely writes.
const BLOCK: i64 = 1_000;
const TABLE: &str = "producer-ids";

/// The way to a gateway's producer ids. Cheap to clone.
#[derive(Clone)]
pub struct ProducerIds(Addr<IdBlocks>);

impl ProducerIds {
    /// The allocator, on a metadata client of its own.
    pub fn start(meta: Meta) -> ProducerIds {
        ProducerIds(IdBlocks { meta, left: 0..0 }.start())
    }

    /// A producer id never handed out before.
    pub async fn allocate(&self) -> StoreResult<i64> {
        self.0
            .send(Allocate)
            .await
            .map_err(|e| StoreError::unavailable_from("producer id allocator", e))?
    }
}

/// Owns the block being handed out.
pub struct IdBlocks {
    meta: Meta,
    /// The ids of the current block not handed out yet.
    left: Range<i64>,
}

impl Actor for IdBlocks {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "StoreResult<i64>")]
struct Allocate;

impl Handler<Allocate> for IdBlocks {
    type Result = AtomicResponse<Self, StoreResult<i64>>;

    fn handle(&mut self, _: Allocate, _: &mut Self::Context) -> Self::Result {
        if let Some(id) = self.left.next() {
            return AtomicResponse::new(Box::pin(fut::ready(Ok(id))));
        }
        // The mailbox waits while the next block is taken.
        let meta = self.meta.clone();
        let taken = async move {
            let change = Change::Put {
                key: "block".into(),
                value: bytes::Bytes::new(),
            };
            meta.write(TABLE, vec![change]).await
        };
        AtomicResponse::new(Box::pin(taken.into_actor(self).map(|block, act, _| {
            let block = block? as i64;
            act.left = block * BLOCK..(block + 1) * BLOCK;
            Ok(act.left.next().expect("a block holds ids"))
        })))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use futures_util::future::join_all;

    use super::*;
    use crate::test_store::MemoryMeta;

    #[actix_rt::test]
    async fn gateways_sharing_a_store_never_hand_out_the_same_id() {
        let store = Meta::new(Arc::new(MemoryMeta::default()));
        let (a, b) = (
            ProducerIds::start(store.clone()),
            ProducerIds::start(store.clone()),
        );
        let mut seen = BTreeSet::new();
        for _ in 0..2_500 {
            assert!(seen.insert(a.allocate().await.unwrap()));
            assert!(seen.insert(b.allocate().await.unwrap()));
        }
        // Many asking at once while a block is taken: each gets an id of its own.
        let at_once = join_all((0..2_500).map(|_| a.allocate())).await;
        for id in at_once {
            assert!(seen.insert(id.unwrap()));
        }
        // A restart starts a new block, after every block taken before.
        let restarted = ProducerIds::start(store);
        assert!(seen.insert(restarted.allocate().await.unwrap()));
    }
}
