//! Transactions (KIP-98): the coordinator of each transactional id (`slot.rs`, its
//! states by the rules of `state.rs`; the offsets it holds until it ends are the
//! offset slots' (`offsets/held.rs`)), and what Produce asks before a transactional batch is
//! appended (`Transactions::verify`), which under transactions v2 (KIP-890) adds the
//! partition to the transaction itself, through the coordinator's slot or, from
//! another gateway, through table `txn-adds` (`remote_adds.rs`). What read-committed
//! readers may see is learnt from the log (`txn_index.rs`), so it does not come here.

pub mod remote_adds;
pub mod slot;
pub mod state;

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use actix::dev::{Request, ToEnvelope};
use actix::{Actor, Addr, ArbiterHandle, Handler, Message};
use parking_lot::RwLock;
use tokio::sync::watch;

use crate::log_slot::{AppendError, Verify};
use crate::membership::Cluster;
use crate::offsets::Offsets;
use crate::partitions::Partitions;
use crate::producer_ids::ProducerIds;
use crate::store::{Meta, StoreError, StoreResult, TopicPartition};
use remote_adds::Added;
use slot::{Deps, TxnSlot};
use state::{OldEpoch, TxnError, TxnState};

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

    /// Whether a batch of `producer_id` at `epoch` may go to `tp`, when this gateway
    /// knows: an epoch older than the open transaction's is fenced, one in it must
    /// find the partition added. `None` when no transaction of the producer is open
    /// here, or only one of an older epoch, which the stored state may have passed.
    fn allows(
        &self,
        producer_id: i64,
        epoch: i16,
        tp: &TopicPartition,
    ) -> Option<Result<(), TxnError>> {
        let open = self.0.read();
        let txn = open.get(&producer_id)?;
        Some(match epoch.cmp(&txn.epoch) {
            std::cmp::Ordering::Less => Err(TxnError::Fenced {
                got: epoch,
                current: txn.epoch,
            }),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Equal if txn.partitions.contains(tp) => Ok(()),
            std::cmp::Ordering::Equal => Err(TxnError::NotAdded {
                producer_id,
                epoch,
                partition: tp.to_string(),
            }),
        })
    }
}

/// What this gateway added to transactions another gateway coordinates and found
/// accepted (`Transactions::add_remotely`), by producer id: later batches of the same
/// transaction skip the table. A stale entry only lets a straggler of an ended epoch
/// in, which every v2 end fences (`txn_index.rs`).
#[derive(Clone, Default)]
struct RemoteAdds(Arc<RwLock<HashMap<i64, EpochAdds>>>);

/// A producer's epoch and what it added at it.
type EpochAdds = (i16, HashSet<Added>);

/// Producers remembered at most; past it the memory starts again empty.
const REMOTE_PRODUCERS: usize = 100_000;

impl RemoteAdds {
    fn holds(&self, (producer_id, epoch): (i64, i16), added: &Added) -> bool {
        let known = self.0.read();
        known
            .get(&producer_id)
            .is_some_and(|(e, adds)| *e == epoch && adds.contains(added))
    }

    fn accepted(&self, (producer_id, epoch): (i64, i16), added: Added) {
        let mut known = self.0.write();
        if known.len() >= REMOTE_PRODUCERS {
            known.clear();
        }
        let entry = known.entry(producer_id).or_insert((epoch, HashSet::new()));
        if entry.0 != epoch {
            *entry = (epoch, HashSet::new());
        }
        entry.1.insert(added);
    }
}

/// The transaction coordinator, as handlers reach it. Cheap to clone.
#[derive(Clone)]
pub struct Transactions {
    slots: Arc<[Addr<TxnSlot>]>,
    open: OpenTxns,
    remote: RemoteAdds,
    meta: Meta,
    cluster: watch::Receiver<Arc<Cluster>>,
}

/// The `transaction.version` levels (KIP-890): 2 is transactions v2.
pub const TRANSACTION_VERSION: &str = "transaction.version";
pub const MAX_TRANSACTION_VERSION: i16 = 2;

impl Transactions {
    /// `transaction_slots` slots, spread over `arbiters`, each on a
    /// metadata client of its own; an id with nothing open is forgotten `expiration`
    /// after its last change (`transactional.id.expiration.ms`).
    pub fn start(
        (meta, n): (&Meta, usize),
        (partitions, offsets, producer_ids): (Partitions, Offsets, Arc<ProducerIds>),
        (cluster, expiration): (watch::Receiver<Arc<Cluster>>, Duration),
        arbiters: &[ArbiterHandle],
    ) -> StoreResult<Transactions> {
        let open = OpenTxns::default();
        let n = n.max(1);
        let slots = (0..n)
            .map(|index| {
                let deps = Deps {
                    meta: meta.client()?,
                    partitions: partitions.clone(),
                    offsets: offsets.clone(),
                    producer_ids: producer_ids.clone(),
                    open: open.clone(),
                    cluster: cluster.clone(),
                    expiration_ms: expiration.as_millis() as i64,
                    index,
                    slots: n,
                };
                let slot = TxnSlot::new(deps);
                Ok(TxnSlot::start_in_arbiter(
                    &arbiters[index % arbiters.len()],
                    |_| slot,
                ))
            })
            .collect::<StoreResult<_>>()?;
        Ok(Transactions {
            slots,
            open,
            remote: RemoteAdds::default(),
            meta: meta.clone(),
            cluster,
        })
    }

    /// The `transaction.version` in force: transactions v2 on every store, their adds
    /// reaching the id's coordinator from any gateway.
    pub fn version(&self) -> i16 {
        MAX_TRANSACTION_VERSION
    }

    /// Adds `added` to `producer`'s transaction of `id`, which another gateway
    /// coordinates (`remote_adds.rs`): the entry first, then the stored state, which
    /// must show the producer at that epoch with no decision taken.
    pub async fn add_remotely(
        &self,
        id: &str,
        producer: (i64, i16),
        added: Added,
    ) -> Result<(), TxnError> {
        if self.remote.holds(producer, &added) {
            return Ok(());
        }
        remote_adds::write(&self.meta, id, producer, &added).await?;
        let state = slot::load(&self.meta, id).await?;
        let undecided = state
            .ok_or_else(|| TxnError::NoProducer(id.to_string()))
            .and_then(|s| s.check_joinable(producer.0, producer.1));
        match undecided {
            Ok(()) => {
                self.remote.accepted(producer, added);
                Ok(())
            }
            Err(e) => {
                // Refused: the coordinator need not mark what never goes in.
                if let Err(w) = remote_adds::withdraw(&self.meta, id, producer, &added).await {
                    tracing::debug!(transactional_id = id, error = %w, "refused add left in the table");
                }
                Err(e)
            }
        }
    }

    /// Whether `producer` may still join its transaction of `id`
    /// (`TxnState::check_joinable`), by the stored state: every slot stores a change
    /// before it answers, and any gateway reads it (a TxnOffsetCommit reaches the
    /// group's coordinator, which need not coordinate the id).
    pub async fn joinable(
        &self,
        id: &str,
        (producer_id, epoch): (i64, i16),
    ) -> Result<(), TxnError> {
        let state = slot::load(&self.meta, id).await?;
        let state = state.ok_or_else(|| TxnError::NoProducer(id.to_string()))?;
        state.check_joinable(producer_id, epoch)
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
    /// it is never behind one; with what other gateways added to each open transaction
    /// (`remote_adds.rs`), as `Describe` gives it.
    pub async fn stored(&self) -> Result<Vec<(String, TxnState)>, TxnError> {
        let scan = (self.meta.scan(slot::TABLE, "").await)?;
        let adds = match self.meta.shared() {
            true => remote_adds::all(&self.meta).await?,
            false => Vec::new(),
        };
        let now = slot::now_ms();
        let states = scan.entries.into_iter().filter_map(|(id, value)| {
            let state = TxnState::decode(&value)
                .inspect_err(|e| tracing::warn!(transactional_id = %id, error = %e, "unreadable transaction state"))
                .ok()?;
            let producer = (state.producer_id, state.epoch);
            let added = adds.iter().find(|(i, at, _)| *i == id && *at == producer);
            Some(match added {
                Some((_, _, a)) => (id, state.with_adds(a, now)),
                None => (id, state),
            })
        });
        Ok(states.collect())
    }

    /// The check a transactional batch of `producer_id` at `epoch` passes before it is
    /// appended to `tp`, as Kafka's coordinator verifies one: the producer is the
    /// id's current one, no end is being decided, and its open transaction holds the
    /// partition (`TxnState::check_batch`), asked of the stored state when this
    /// gateway knows no open transaction of it. With `add` (Produce v12+,
    /// transactions v2) a partition not yet in the transaction is added: by the slot
    /// here, or through the table when another gateway coordinates the id
    /// (`add_remotely`). An old epoch is answered INVALID_PRODUCER_EPOCH (47), as
    /// Kafka's partitions answer it, so a fenced producer learns it is fenced.
    pub fn verify(
        &self,
        id: &str,
        (producer_id, epoch): (i64, i16),
        tp: &TopicPartition,
        add: bool,
    ) -> Verify {
        let refused = |e: TxnError| AppendError::Transaction {
            code: e.code_with(OldEpoch::InvalidProducerEpoch),
            message: e.to_string(),
        };
        let known = self.open.allows(producer_id, epoch, tp);
        let fenced = matches!(known, Some(Err(TxnError::Fenced { .. })));
        if add && !fenced && !matches!(known, Some(Ok(()))) {
            let added = Added::Partition(tp.clone());
            if self.remote.holds((producer_id, epoch), &added) {
                // Added from here already: nothing to ask, nor a task to start.
                return Box::pin(async { Ok(()) });
            }
            let adding = self.add_partition(id, (producer_id, epoch), tp, added);
            return Box::pin(async move { adding.await.map_err(refused) });
        }
        let (meta, id, tp) = (self.meta.clone(), id.to_string(), tp.clone());
        Box::pin(async move {
            let allowed = match known {
                Some(allowed) => allowed,
                None => {
                    // Unread, the batch may still be allowed: a retriable answer.
                    let unread = |e| StoreError::unavailable_from("transaction state", e);
                    let state = slot::load(&meta, &id).await.map_err(unread)?;
                    let partition = (tp.topic.to_string(), tp.partition);
                    state
                        .ok_or(TxnError::NoProducer(id))
                        .and_then(|s| s.check_batch(producer_id, epoch, &partition))
                }
            };
            allowed.map_err(refused)
        })
    }

    /// Adds `tp` to `producer`'s transaction of `id` for a batch of transactions v2,
    /// asked now, so adds keep the batches' order: of the slot when this gateway
    /// coordinates the id, else through the table (`add_remotely`).
    fn add_partition(
        &self,
        id: &str,
        (producer_id, epoch): (i64, i16),
        tp: &TopicPartition,
        added: Added,
    ) -> futures_util::future::BoxFuture<'static, Result<(), TxnError>> {
        if self.coordinates(id) {
            let ask = self.ask(
                id,
                slot::Add {
                    id: id.to_string(),
                    producer_id,
                    epoch,
                    partitions: vec![(tp.topic.to_string(), tp.partition)],
                    group: None,
                },
            );
            return Box::pin(
                async move { ask.await.unwrap_or_else(|e| Err(TxnError::Gone(e.into()))) },
            );
        }
        let (me, id) = (self.clone(), id.to_string());
        let task =
            tokio::spawn(async move { me.add_remotely(&id, (producer_id, epoch), added).await });
        Box::pin(async move { task.await.unwrap_or_else(|e| Err(TxnError::Gone(e.into()))) })
    }
}
