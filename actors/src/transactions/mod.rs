//! Transactions (KIP-98): the coordinator of each transactional id (`slot.rs`, its
//! states by the rules of `state.rs`), the offsets transactions hold until they end
//! (`pending_offsets.rs`), and what Produce asks before a transactional batch is
//! appended (`Transactions::verify`), which under transactions v2 (KIP-890) adds the
//! partition to the transaction itself. What read-committed readers may see is
//! learnt from the log (`txn_index.rs`), so it does not come here.

pub mod pending_offsets;
pub mod slot;
pub mod state;

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use actix::dev::{Request, ToEnvelope};
use actix::{Actor, Addr, ArbiterHandle, Handler, Message};
use kafka_protocol::error::ResponseError;
use parking_lot::RwLock;
use tokio::sync::watch;

use crate::config_catalog::ClusterConfig;
use crate::log_slot::{AppendError, Verify};
use crate::membership::Cluster;
use crate::offsets::Offsets;
use crate::partitions::Partitions;
use crate::producer_ids::ProducerIds;
use crate::store::{Meta, StoreError, TopicPartition};
use slot::{Deps, TxnSlot};
use state::{Phase, TxnError, TxnState};

/// The slot of a transactional id among `n`: a stable hash, so a rescan finds its own.
pub fn slot_of(id: &str, n: usize) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    (h.finish() % n as u64) as usize
}

/// The open transactions this gateway coordinates, by producer id: what Produce checks
/// a transactional batch against without asking a slot (a slot ending a transaction
/// waits on the log slots, so a log slot must never wait on it).
#[derive(Clone, Default)]
pub struct OpenTxns(Arc<RwLock<HashMap<i64, OpenTxn>>>);

struct OpenTxn {
    epoch: i16,
    partitions: HashSet<TopicPartition>,
}

impl OpenTxns {
    fn opened(&self, state: &TxnState) {
        let partitions = state
            .partitions
            .iter()
            .map(|(topic, partition)| TopicPartition {
                topic: topic.as_str().into(),
                partition: *partition,
            })
            .collect();
        let open = OpenTxn {
            epoch: state.epoch,
            partitions,
        };
        self.0.write().insert(state.producer_id, open);
    }

    fn close(&self, producer_id: i64) {
        self.0.write().remove(&producer_id);
    }

    /// `Some(allowed)` when this gateway knows the producer's transaction.
    fn allows(&self, producer_id: i64, epoch: i16, tp: &TopicPartition) -> Option<bool> {
        let open = self.0.read();
        let txn = open.get(&producer_id)?;
        Some(txn.epoch == epoch && txn.partitions.contains(tp))
    }
}

/// The transaction coordinator, as handlers reach it. Cheap to clone.
#[derive(Clone)]
pub struct Transactions {
    slots: Arc<[Addr<TxnSlot>]>,
    open: OpenTxns,
    meta: Meta,
    cluster: watch::Receiver<Arc<Cluster>>,
}

/// The `transaction.version` levels (KIP-890): 2 is transactions v2.
pub const TRANSACTION_VERSION: &str = "transaction.version";
pub const MAX_TRANSACTION_VERSION: i16 = 2;

impl Transactions {
    /// One slot per offset slot (`offset_slots`), spread over `arbiters`, each on a
    /// metadata client of its own.
    pub fn start(
        (meta, n): (&Meta, usize),
        (partitions, offsets, producer_ids): (Partitions, Offsets, Arc<ProducerIds>),
        (cluster, config): (
            watch::Receiver<Arc<Cluster>>,
            watch::Receiver<Arc<ClusterConfig>>,
        ),
        arbiters: &[ArbiterHandle],
    ) -> Transactions {
        let open = OpenTxns::default();
        let n = n.max(1);
        let slots = (0..n)
            .map(|index| {
                let deps = Deps {
                    meta: meta.client(),
                    partitions: partitions.clone(),
                    offsets: offsets.clone(),
                    producer_ids: producer_ids.clone(),
                    open: open.clone(),
                    cluster: cluster.clone(),
                    config: config.clone(),
                    index,
                    slots: n,
                };
                TxnSlot::start_in_arbiter(&arbiters[index % arbiters.len()], |_| TxnSlot::new(deps))
            })
            .collect();
        Transactions {
            slots,
            open,
            meta: meta.clone(),
            cluster,
        }
    }

    /// The `transaction.version` in force. Transactions v2 add a partition where its
    /// batch arrives, which must reach the id's coordinator: on a store no other
    /// gateway shares that is always this gateway; gateways sharing Iggy do not yet
    /// forward those adds to each other, so there clients keep the v1 protocol.
    pub fn version(&self) -> i16 {
        match self.meta.shared() {
            false => MAX_TRANSACTION_VERSION,
            true => 0,
        }
    }

    /// Whether this gateway coordinates `id` now.
    pub fn coordinates(&self, id: &str) -> bool {
        self.cluster.borrow().coordinates(id)
    }

    /// A request to the slot of `id`, sent now.
    pub fn ask<M>(&self, id: &str, msg: M) -> Request<TxnSlot, M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        TxnSlot: Handler<M>,
        <TxnSlot as Actor>::Context: ToEnvelope<TxnSlot, M>,
    {
        self.slots[slot_of(id, self.slots.len())].send(msg)
    }

    /// Every stored transactional id with its state, whichever gateway coordinates it
    /// (ListTransactions): the table is what every slot stores before it answers, so
    /// it is never behind one.
    pub async fn stored(&self) -> Result<Vec<(String, TxnState)>, TxnError> {
        let scan =
            (self.meta.scan(slot::TABLE, "").await).map_err(|e| TxnError::Store(e.to_string()))?;
        let states = scan.entries.into_iter().filter_map(|(id, value)| {
            TxnState::decode(&value)
                .inspect_err(|e| tracing::warn!(transactional_id = %id, error = %e, "unreadable transaction state"))
                .ok()
                .map(|state| (id, state))
        });
        Ok(states.collect())
    }

    /// The check a transactional batch of `producer_id` at `epoch` passes before it is
    /// appended to `tp`: its transaction is open here and holds the partition
    /// (INVALID_TXN_STATE otherwise), asked of the stored state when another gateway
    /// coordinates it. With `add` (Produce v12+, transactions v2) a partition not yet
    /// in the transaction is added, asked now so adds keep the batches' order.
    pub fn verify(
        &self,
        id: &str,
        (producer_id, epoch): (i64, i16),
        tp: &TopicPartition,
        add: bool,
    ) -> Verify {
        let refused =
            |code: ResponseError, message: String| AppendError::Transaction { code, message };
        let known = self.open.allows(producer_id, epoch, tp);
        if add && known != Some(true) && self.coordinates(id) {
            let adding = self.ask(
                id,
                slot::Add {
                    id: id.to_string(),
                    producer_id,
                    epoch,
                    partitions: vec![(tp.topic.to_string(), tp.partition)],
                    group: None,
                },
            );
            return Box::pin(async move {
                match adding.await {
                    Ok(Ok(())) => Ok(()),
                    // Produce answers an old epoch as INVALID_PRODUCER_EPOCH, as Kafka does.
                    Ok(Err(e @ TxnError::Fenced { .. })) => {
                        Err(refused(ResponseError::InvalidProducerEpoch, e.to_string()))
                    }
                    Ok(Err(e)) => Err(refused(e.code(), e.to_string())),
                    Err(e) => Err(refused(
                        ResponseError::CoordinatorNotAvailable,
                        e.to_string(),
                    )),
                }
            });
        }
        let (meta, id, tp) = (self.meta.clone(), id.to_string(), tp.clone());
        Box::pin(async move {
            let allowed = match known {
                Some(allowed) => allowed,
                None => {
                    // Unread, the batch may still be allowed: a retriable answer.
                    let unread = |e: TxnError| StoreError::Unavailable(e.to_string());
                    let state = slot::load(&meta, &id).await.map_err(unread)?;
                    state.is_some_and(|s| {
                        s.producer_id == producer_id
                            && s.epoch == epoch
                            && s.phase == Phase::Ongoing
                            && s.partitions.contains(&(tp.topic.to_string(), tp.partition))
                    })
                }
            };
            match allowed {
                true => Ok(()),
                false => Err(refused(
                    ResponseError::InvalidTxnState,
                    format!(
                        "producer {producer_id} (epoch {epoch}) has no open transaction \
                         holding {tp}: add the partition to the transaction first"
                    ),
                )),
            }
        })
    }
}
