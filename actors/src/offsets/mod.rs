//! Committed consumer-group offsets: the table they live in ([`table`]), those
//! transactions hold until they end ([`held`]), the claims that keep a lost
//! coordinator's late commit from landing ([`fence`]), the slots
//! that own them ([`slot`]), the two clients each slot owns ([`clients`]), and
//! [`Offsets`], the one way handlers reach them. It hides which slot owns a partition:
//! a request sends at most one message per slot (all its partitions on that slot), so
//! a huge request cannot starve others.

pub mod clients;
pub mod fence;
pub mod held;
pub mod slot;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, ArbiterHandle};

use crate::metrics::Metrics;
use crate::store::{CommittedOffset, TopicPartition};
use crate::store::{Logs, Meta};
use clients::{CommitClient, OffsetWrite, ReadClient};
use fence::Fence;
use held::Held;
pub use slot::OffsetError;
use slot::{CommitOffsets, ListCommitted, OffsetSlot, ReadHeld, ReadOffsets};

#[derive(Clone)]
pub struct Offsets {
    slots: Arc<[Addr<OffsetSlot>]>,
    /// Each commit's and read's deadline from when it is asked (Kafka's
    /// `offsets.commit.timeout.ms`), as the slots' actor timeout.
    timeout: Duration,
    metrics: Arc<Metrics>,
}

impl Offsets {
    /// `n` slots spread over `arbiters`, each with a commit client and a read client,
    /// once the table is seen to load whole (a store that lost part of it stops
    /// startup, naming it, rather than serve offsets with a hole in them).
    pub async fn start(
        (meta, logs): (&Meta, &Logs),
        (n, timeout): (usize, Duration),
        arbiters: &[ArbiterHandle],
        metrics: Arc<Metrics>,
    ) -> Result<Offsets, OffsetError> {
        let n = n.max(1);
        let mut slots = Vec::with_capacity(n);
        for i in 0..n {
            // Each client answers once before the slot serves: its connection is up.
            let slot = OffsetSlot::new(
                CommitClient::connect(meta, logs.clone()).await?,
                ReadClient::connect(meta).await?,
            );
            slots.push(OffsetSlot::start_in_arbiter(
                &arbiters[i % arbiters.len()],
                |_| slot,
            ));
        }
        metrics.offset_slots.show(n);
        let offsets = Offsets {
            slots: slots.into(),
            timeout,
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

    /// Sends each slot its part of `items`, as `write` makes it, and waits for every
    /// answer until `deadline` (the actor timeout of each message): results in the
    /// order given.
    async fn write<T>(
        &self,
        items: Vec<T>,
        tp: impl Fn(&T) -> &TopicPartition,
        write: impl Fn(Vec<T>) -> OffsetWrite,
        deadline: Instant,
    ) -> Vec<Result<(), OffsetError>> {
        let mut out = vec![Err(OffsetError::Timeout); items.len()];
        let sent: Vec<_> = self
            .by_slot(items, tp)
            .into_iter()
            .map(|(slot, at, items)| {
                let msg = CommitOffsets {
                    write: write(items),
                    deadline,
                    queued: self.metrics.offset_slots.enter(slot),
                    span: tracing::Span::current(),
                };
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

    /// [`Offsets::write`] of committed offsets, under `fence`'s claim if given.
    async fn commit_entries(
        &self,
        entries: Vec<(Arc<str>, TopicPartition, Option<CommittedOffset>)>,
        fence: Option<(Arc<str>, Fence)>,
        deadline: Instant,
    ) -> Vec<Result<(), OffsetError>> {
        let write = |entries| OffsetWrite::Commit {
            entries,
            fence: fence.clone(),
        };
        self.write(entries, |e| &e.1, write, deadline).await
    }

    /// Stores (`Some`) or deletes (`None`) a group's offsets, each within the timeout,
    /// while the coordinator's claim of the group (`fence`, when given) stands;
    /// results in the order given.
    pub async fn commit(
        &self,
        group: &Arc<str>,
        entries: Vec<(TopicPartition, Option<CommittedOffset>)>,
        fence: Option<Fence>,
    ) -> Vec<Result<(), OffsetError>> {
        let entries = entries
            .into_iter()
            .map(|(tp, offset)| (group.clone(), tp, offset))
            .collect();
        let fence = fence.map(|f| (group.clone(), f));
        self.commit_entries(entries, fence, Instant::now() + self.timeout)
            .await
    }

    /// A group's committed offsets for these partitions, in the order given; `None`
    /// where there is none. Each slot's read client answers, beside its commits,
    /// within the timeout.
    pub async fn fetch(
        &self,
        group: &str,
        partitions: Vec<TopicPartition>,
    ) -> Result<Vec<Option<CommittedOffset>>, OffsetError> {
        let deadline = Instant::now() + self.timeout;
        let mut out = vec![None; partitions.len()];
        let group: Arc<str> = group.into();
        for (slot, at, partitions) in self.by_slot(partitions, |tp| tp) {
            let _queued = self.metrics.offset_slots.enter(slot);
            let wait = deadline.saturating_duration_since(Instant::now());
            let read = ReadOffsets {
                group: group.clone(),
                partitions,
                span: tracing::Span::current(),
            };
            let read = self.slots[slot]
                .send(read)
                .timeout(wait)
                .await
                .unwrap_or(Err(OffsetError::Timeout))?;
            for (i, offset) in at.into_iter().zip(read) {
                out[i] = offset;
            }
        }
        Ok(out)
    }

    /// The whole table's `(group, partition)`s (`group`'s only, if given), read by the
    /// first slot's read client: the table is one, its entries spread over the slots.
    /// Within `wait`.
    async fn list(
        &self,
        group: Option<&str>,
        wait: Duration,
    ) -> Result<Vec<(Arc<str>, TopicPartition)>, OffsetError> {
        let msg = ListCommitted {
            group: group.map(Into::into),
        };
        self.slots[0]
            .send(msg)
            .timeout(wait)
            .await
            .unwrap_or(Err(OffsetError::Timeout))
    }

    /// Every partition `group` has a committed offset for.
    pub async fn partitions(&self, group: &str) -> Result<Vec<TopicPartition>, OffsetError> {
        Ok(self
            .list(Some(group), self.timeout)
            .await?
            .into_iter()
            .map(|(_, tp)| tp)
            .collect())
    }

    /// Every group with at least one committed offset.
    pub async fn groups(&self) -> Result<Vec<String>, OffsetError> {
        let groups: BTreeSet<String> = self
            .list(None, self.timeout)
            .await?
            .into_iter()
            .map(|(g, _)| g.to_string())
            .collect();
        Ok(groups.into_iter().collect())
    }

    /// Holds a transaction's offsets for `group` until it ends (`held.rs`), all or
    /// none within the timeout.
    pub async fn hold(
        &self,
        group: &Arc<str>,
        producer_id: i64,
        offsets: Vec<(TopicPartition, CommittedOffset)>,
    ) -> Result<(), OffsetError> {
        let entries = (offsets.into_iter())
            .map(|(tp, offset)| (group.clone(), producer_id, tp, Some(offset)))
            .collect();
        let deadline = Instant::now() + self.timeout;
        (self
            .write(entries, |e| &e.2, OffsetWrite::Hold, deadline)
            .await)
            .into_iter()
            .collect()
    }

    /// The offsets open transactions hold for `group` (one producer's, if given), read
    /// by the first slot's read client as `list` is.
    async fn read_held(
        &self,
        group: &str,
        producer_id: Option<i64>,
    ) -> Result<Vec<(i64, TopicPartition, Held)>, OffsetError> {
        let msg = ReadHeld {
            group: group.into(),
            producer_id,
        };
        self.slots[0]
            .send(msg)
            .timeout(self.timeout)
            .await
            .unwrap_or(Err(OffsetError::Timeout))
    }

    /// The partitions of `group` some open transaction holds an offset for.
    pub async fn pending(&self, group: &str) -> Result<BTreeSet<TopicPartition>, OffsetError> {
        let held = self.read_held(group, None).await?;
        Ok(held.into_iter().map(|(_, tp, _)| tp).collect())
    }

    /// Ends what a producer's transaction holds for `group`: committed (`commit`) where
    /// no commit came since it was held (`held.rs`), then released; or released only.
    /// A failure leaves them held, for the end's retry.
    pub async fn settle(
        &self,
        group: &Arc<str>,
        producer_id: i64,
        commit: bool,
    ) -> Result<(), OffsetError> {
        let held = self.read_held(group, Some(producer_id)).await?;
        if held.is_empty() {
            return Ok(());
        }
        let released = (held.iter())
            .map(|(_, tp, _)| (group.clone(), producer_id, tp.clone(), None))
            .collect();
        if commit {
            let deadline = Instant::now() + self.timeout;
            // The transaction's coordinator settles it, not the group's: no claim.
            let entries = (held.into_iter())
                .map(|(_, tp, held)| (group.clone(), tp, held))
                .collect();
            (self
                .write(entries, |e| &e.1, OffsetWrite::Settle, deadline)
                .await)
                .into_iter()
                .collect::<Result<(), _>>()?;
        }
        let deadline = Instant::now() + self.timeout;
        (self
            .write(released, |e| &e.2, OffsetWrite::Hold, deadline)
            .await)
            .into_iter()
            .collect()
    }

    /// Removes every group's offsets on a deleted topic, each through the slot that
    /// owns its partition.
    pub async fn forget_topic(&self, topic: &str, deadline: Instant) -> Result<(), OffsetError> {
        let doomed = self
            .list(None, deadline.saturating_duration_since(Instant::now()))
            .await?
            .into_iter()
            .filter(|(_, tp)| &*tp.topic == topic)
            .map(|(group, tp)| (group, tp, None))
            .collect();
        self.commit_entries(doomed, None, deadline)
            .await
            .into_iter()
            .collect()
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

    /// `n` slots over `store` with a 10 s timeout, and the metrics they report to.
    async fn offsets(store: &Arc<TestStore>, n: usize) -> (Offsets, Arc<Metrics>) {
        offsets_within(store, n, Duration::from_secs(10)).await
    }

    async fn offsets_within(
        store: &Arc<TestStore>,
        n: usize,
        timeout: Duration,
    ) -> (Offsets, Arc<Metrics>) {
        let metrics = Metrics::new();
        let meta = Meta::new(Arc::new(store.clone()));
        let logs = Logs::new(store.clone());
        let arbiters = [Arbiter::current()];
        let offsets =
            Offsets::start((&meta, &logs), (n, timeout), &arbiters, metrics.clone()).await;
        (offsets.unwrap(), metrics)
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
                actix_rt::spawn(
                    async move { offsets.commit(&group, vec![(tp(0), at(i))], None).await },
                )
            })
            .collect();
        for p in pending {
            assert!(p.await.unwrap().into_iter().all(|r| r.is_ok()));
        }
        assert_eq!(*store.applied.lock(), (0..20).collect::<Vec<_>>());
        let read = offsets.fetch("g", vec![tp(0)]).await.unwrap();
        assert_eq!(read, vec![at(19)]);
    }

    #[actix_rt::test]
    async fn held_offsets_are_pending_until_settled_and_committed_only_at_a_commit() {
        let store = Arc::new(TestStore::default());
        let (offsets, _) = offsets(&store, 2).await;
        let (first, other) = on_two_slots(&offsets);
        let (g, g2): (Arc<str>, Arc<str>) = ("g".into(), "g2".into());
        let offset = |o| at(o).unwrap();
        let both = vec![(first.clone(), offset(5)), (other.clone(), offset(9))];
        offsets.hold(&g, 7, both).await.unwrap();
        offsets
            .hold(&g, 8, vec![(first.clone(), offset(6))])
            .await
            .unwrap();
        offsets
            .hold(&g2, 7, vec![(first.clone(), offset(1))])
            .await
            .unwrap();
        let pending = offsets.pending("g").await.unwrap();
        assert_eq!(
            pending,
            [first.clone(), other.clone()].into_iter().collect()
        );
        // Producer 8 aborts: nothing committed, its hold gone, producer 7's stays.
        offsets.settle(&g, 8, false).await.unwrap();
        let read = offsets.fetch("g", vec![first.clone()]).await.unwrap();
        assert_eq!(read, vec![None]);
        offsets.settle(&g, 7, true).await.unwrap();
        let read = offsets
            .fetch("g", vec![first.clone(), other])
            .await
            .unwrap();
        assert_eq!(read, vec![at(5), at(9)]);
        assert!(offsets.pending("g").await.unwrap().is_empty());
        assert_eq!(
            offsets.pending("g2").await.unwrap().len(),
            1,
            "another group's stay"
        );
        assert_eq!(offsets.fetch("g2", vec![first]).await.unwrap(), vec![None]);
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
            actix_rt::spawn(async move { offsets.commit(&group, vec![(stuck, at(1))], None).await })
        };
        store.entered.notified().await;
        let read = offsets.fetch("g", vec![stuck.clone()]).await.unwrap();
        assert_eq!(read, vec![None]);
        let done = offsets
            .commit(&group, vec![(free.clone(), at(2))], None)
            .await;
        assert!(done[0].is_ok(), "{done:?}");
        // Both answered while the first commit was still held.
        assert_eq!(*store.applied.lock(), [2]);
        gate.add_permits(1);
        assert!(pending.await.unwrap()[0].is_ok());
        let read = offsets.fetch("g", vec![stuck, free]).await.unwrap();
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
                actix_rt::spawn(
                    async move { offsets.commit(&group, vec![(tp(0), at(i))], None).await },
                )
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
        let timeout = Duration::from_millis(100);
        let (offsets, _) = offsets_within(&store, 1, timeout).await;
        let group: Arc<str> = "g".into();
        let asked = Instant::now();
        let result = offsets.commit(&group, vec![(tp(0), at(7))], None).await;
        assert!(
            matches!(result[..], [Err(OffsetError::Timeout)]),
            "{result:?}"
        );
        let took = asked.elapsed();
        assert!(took < timeout * 3, "answered after {took:?}");
        // One whose turn comes after its deadline (behind the write still under way)
        // is not written at all.
        let result = offsets.commit(&group, vec![(tp(0), at(8))], None).await;
        assert!(
            matches!(result[..], [Err(OffsetError::Timeout)]),
            "{result:?}"
        );
        // A read is answered meanwhile, beside the write.
        assert_eq!(offsets.fetch("g", vec![tp(0)]).await.unwrap(), vec![None]);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!store.applied.lock().contains(&8));
        // The write under way when the deadline passed completed in the slot.
        assert!(store.applied.lock().contains(&7));
    }
}
