//! Committed consumer-group offsets: the table they live in ([`table`]), the slots
//! that commit them ([`slot`]), the two clients each slot owns ([`clients`]), and [`Offsets`], the one way handlers reach them. It
//! hides which slot owns a partition: a request sends at most one message per slot
//! (all its partitions on that slot), so a huge request cannot starve others.

pub mod clients;
pub mod slot;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Addr, ArbiterHandle};

use crate::metrics::Metrics;
use crate::store::Meta;
use crate::store::{CommittedOffset, StoreResult, TopicPartition};
use clients::{CommitClient, ReadClient};
pub use slot::OffsetError;
use slot::{CommitOffsets, OffsetSlot};

#[derive(Clone)]
pub struct Offsets {
    slots: Arc<[Addr<OffsetSlot>]>,
    /// Each slot's read client: reads never queue behind the slot's commits.
    readers: Arc<[ReadClient]>,
    /// For reads of the whole table and for a deleted topic's offsets, which no slot owns.
    admin: Meta,
    metrics: Arc<Metrics>,
}

impl Offsets {
    /// `n` slots spread over `arbiters`, each with a commit client and a read client,
    /// once the table is seen to load whole (a store that lost part of it stops
    /// startup, naming it, rather than serve offsets with a hole in them).
    pub async fn start(
        meta: &Meta,
        n: usize,
        arbiters: &[ArbiterHandle],
        metrics: Arc<Metrics>,
    ) -> StoreResult<Offsets> {
        let n = n.max(1);
        // Each client answers once before the slots serve: their connections are up.
        let (mut slots, mut readers) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let slot = OffsetSlot::new(CommitClient::connect(meta).await?);
            slots.push(OffsetSlot::start_in_arbiter(
                &arbiters[i % arbiters.len()],
                |_| slot,
            ));
            readers.push(ReadClient::connect(meta).await?);
        }
        let (slots, readers): (Arc<[Addr<OffsetSlot>]>, Arc<[ReadClient]>) =
            (slots.into(), readers.into());
        metrics.offset_slots.show(n);
        let offsets = Offsets {
            slots,
            readers,
            admin: meta.client(),
            metrics,
        };
        offsets.groups().await?;
        Ok(offsets)
    }

    /// Splits items by the slot of their partition: `(slot, positions, items)`, so the
    /// answers can be put back in order.
    fn by_slot<T>(
        &self,
        items: Vec<T>,
        tp: impl Fn(&T) -> &TopicPartition,
    ) -> Vec<(usize, Vec<usize>, Vec<T>)> {
        let mut per_slot: BTreeMap<usize, (Vec<usize>, Vec<T>)> = BTreeMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let slot = per_slot
                .entry(tp(&item).slot(self.slots.len()))
                .or_default();
            slot.0.push(i);
            slot.1.push(item);
        }
        per_slot
            .into_iter()
            .map(|(slot, (at, items))| (slot, at, items))
            .collect()
    }

    /// Stores (`Some`) or deletes (`None`) a group's offsets; results in the order given.
    pub async fn commit(
        &self,
        group: &Arc<str>,
        entries: Vec<(TopicPartition, Option<CommittedOffset>)>,
        deadline: Instant,
    ) -> Vec<Result<(), OffsetError>> {
        let mut out = vec![Err(OffsetError::Timeout); entries.len()];
        let sent: Vec<_> = self
            .by_slot(entries, |e| &e.0)
            .into_iter()
            .map(|(slot, at, entries)| {
                let msg = CommitOffsets {
                    group: group.clone(),
                    entries,
                    queued: self.metrics.offset_slots.enter(slot),
                };
                // The deadline is the request's timeout, as an actor timeout (`slot`).
                let wait = deadline.saturating_duration_since(Instant::now());
                (at, self.slots[slot].send(msg).timeout(wait))
            })
            .collect();
        for (at, request) in sent {
            let result = request.await.unwrap_or(Err(OffsetError::Timeout));
            for i in at {
                out[i] = result.clone();
            }
        }
        out
    }

    /// A group's committed offsets for these partitions, in the order given; `None`
    /// where there is none.
    pub async fn fetch(
        &self,
        group: &str,
        partitions: Vec<TopicPartition>,
        deadline: Instant,
    ) -> Result<Vec<Option<CommittedOffset>>, OffsetError> {
        let mut out = vec![None; partitions.len()];
        for (slot, at, partitions) in self.by_slot(partitions, |tp| tp) {
            let _queued = self.metrics.offset_slots.enter(slot);
            let read = self.readers[slot].read(group, &partitions);
            let read = tokio::time::timeout_at(deadline.into(), read)
                .await
                .map_err(|_| OffsetError::Timeout)??;
            for (i, offset) in at.into_iter().zip(read) {
                out[i] = offset;
            }
        }
        Ok(out)
    }

    /// Every partition `group` has a committed offset for.
    pub async fn partitions(&self, group: &str) -> StoreResult<Vec<TopicPartition>> {
        let scan = self
            .admin
            .scan(table::TABLE, &table::group_prefix(group))
            .await?;
        Ok(scan
            .entries
            .iter()
            .filter_map(|(k, _)| table::parse_key(k))
            .filter(|(g, _)| g == group)
            .map(|(_, tp)| tp)
            .collect())
    }

    /// Every group with at least one committed offset.
    pub async fn groups(&self) -> StoreResult<Vec<String>> {
        let scan = self.admin.scan(table::TABLE, "").await?;
        let groups: BTreeSet<String> = scan
            .entries
            .iter()
            .filter_map(|(k, _)| table::parse_key(k).map(|(g, _)| g))
            .collect();
        Ok(groups.into_iter().collect())
    }

    /// Removes every group's offsets on a deleted topic.
    pub async fn forget_topic(&self, topic: &str) -> StoreResult<()> {
        let scan = self.admin.scan(table::TABLE, "").await?;
        let doomed = scan
            .entries
            .into_iter()
            .filter(|(k, _)| table::parse_key(k).is_some_and(|(_, tp)| &*tp.topic == topic))
            .map(|(key, _)| key)
            .collect();
        self.admin.delete(table::TABLE, doomed).await
    }
}

#[cfg(test)]
mod tests {
    //! Slot behaviour with a store whose commits are held on purpose: a gate behind
    //! the metadata port, the one real seam (no Iggy is involved).

    use std::time::Duration;

    use actix::Arbiter;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::test_store::TestStore;

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition,
        }
    }

    fn at(offset: i64) -> Option<CommittedOffset> {
        Some(CommittedOffset {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
        })
    }

    /// `n` slots over `store`, and the metrics they report to.
    async fn offsets(store: &Arc<TestStore>, n: usize) -> (Offsets, Arc<Metrics>) {
        let metrics = Metrics::new();
        let meta = Meta::new(Arc::new(store.clone()));
        let arbiters = [Arbiter::current()];
        let offsets = Offsets::start(&meta, n, &arbiters, metrics.clone()).await;
        (offsets.unwrap(), metrics)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    /// Two partitions of topic `t` that land on different slots of `offsets`.
    fn on_two_slots(offsets: &Offsets) -> (TopicPartition, TopicPartition) {
        let first = tp(0);
        let other = (1..)
            .map(tp)
            .find(|p| p.slot(offsets.slots.len()) != first.slot(offsets.slots.len()))
            .unwrap();
        (first, other)
    }

    #[actix_rt::test]
    async fn commits_on_a_slot_apply_in_arrival_order_one_at_a_time() {
        let store = Arc::new(TestStore {
            delay: Duration::from_millis(5),
            ..Default::default()
        });
        let (offsets, _) = offsets(&store, 1).await;
        let group: Arc<str> = "g".into();
        let pending: Vec<_> = (0..20)
            .map(|i| {
                let (offsets, group) = (offsets.clone(), group.clone());
                actix_rt::spawn(async move {
                    offsets.commit(&group, vec![(tp(0), at(i))], soon()).await
                })
            })
            .collect();
        for p in pending {
            assert!(p.await.unwrap().into_iter().all(|r| r.is_ok()));
        }
        assert_eq!(*store.applied.lock(), (0..20).collect::<Vec<_>>());
        let read = offsets.fetch("g", vec![tp(0)], soon()).await.unwrap();
        assert_eq!(read, vec![at(19)]);
    }

    #[actix_rt::test]
    async fn reads_and_other_slots_never_wait_behind_a_stuck_commit() {
        let gate = Arc::new(Semaphore::new(0));
        let store = Arc::new(TestStore {
            gate: Some(gate.clone()),
            ..Default::default()
        });
        let (offsets, _) = offsets(&store, 2).await;
        // Partition 0's commits are held at the gate; `free` is on the other slot.
        let (stuck, free) = on_two_slots(&offsets);
        let group: Arc<str> = "g".into();
        let pending = {
            let (offsets, group, stuck) = (offsets.clone(), group.clone(), stuck.clone());
            actix_rt::spawn(
                async move { offsets.commit(&group, vec![(stuck, at(1))], soon()).await },
            )
        };
        store.entered.notified().await;
        let read = offsets
            .fetch("g", vec![stuck.clone()], soon())
            .await
            .unwrap();
        assert_eq!(read, vec![None]);
        let done = offsets
            .commit(&group, vec![(free.clone(), at(2))], soon())
            .await;
        assert!(done[0].is_ok(), "{done:?}");
        // Both answered while the first commit was still held.
        assert_eq!(*store.applied.lock(), [2]);
        gate.add_permits(1);
        assert!(pending.await.unwrap()[0].is_ok());
        let read = offsets.fetch("g", vec![stuck, free], soon()).await.unwrap();
        assert_eq!(read, vec![at(1), at(2)]);
    }

    #[actix_rt::test]
    async fn queue_depth_counts_commits_until_they_are_done() {
        let gate = Arc::new(Semaphore::new(0));
        let store = Arc::new(TestStore {
            gate: Some(gate.clone()),
            ..Default::default()
        });
        let (offsets, metrics) = offsets(&store, 1).await;
        let depth =
            |d: usize| format!("iggy_kafka_gateway_offset_slot_queue_depth{{slot=\"0\"}} {d}\n");
        let group: Arc<str> = "g".into();
        let pending: Vec<_> = (0..3)
            .map(|i| {
                let (offsets, group) = (offsets.clone(), group.clone());
                actix_rt::spawn(async move {
                    offsets.commit(&group, vec![(tp(0), at(i))], soon()).await
                })
            })
            .collect();
        // One commit is in the store, two wait in the slot's mailbox.
        store.entered.notified().await;
        assert!(metrics.encode().contains(&depth(3)), "{}", metrics.encode());
        gate.add_permits(3);
        for p in pending {
            p.await.unwrap();
        }
        assert!(metrics.encode().contains(&depth(0)), "{}", metrics.encode());
    }

    #[actix_rt::test]
    async fn a_commit_past_its_deadline_answers_timeout_unwritten() {
        let store = Arc::new(TestStore {
            delay: Duration::from_millis(500),
            ..Default::default()
        });
        let (offsets, _) = offsets(&store, 1).await;
        let group: Arc<str> = "g".into();
        let soon_over = Instant::now() + Duration::from_millis(100);
        let result = offsets
            .commit(&group, vec![(tp(0), at(7))], soon_over)
            .await;
        assert!(
            matches!(result[..], [Err(OffsetError::Timeout)]),
            "{result:?}"
        );
        // One whose turn comes after its deadline is not written at all.
        let over = Instant::now();
        let result = offsets.commit(&group, vec![(tp(0), at(8))], over).await;
        assert!(
            matches!(result[..], [Err(OffsetError::Timeout)]),
            "{result:?}"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!store.applied.lock().contains(&8));
        // The write under way when the deadline passed completed in the slot.
        assert!(store.applied.lock().contains(&7));
    }
}
