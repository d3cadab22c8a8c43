//! The compactor: the one owner of log compaction (`cleanup.policy=compact`). On a
//! timer it looks at every partition of the compacted topics, picks the one most due
//! and makes one pass over it: reads it from where its last pass ended (that pass's
//! [`Seed`] standing in for the part below; from the log start without one), at most
//! `compaction_pass_bytes`, decides which records stay ([`plan`]) and has the engine
//! remove the others (`LogCall::Compact`). One pass at a time, on an arbiter of its
//! own, so its work is bounded per tick and never on a request thread.
//!
//! On a store several gateways share, each compacts the partitions it leads
//! (`Cluster::leader_of`): a partition has one compactor at a time, but for the moment
//! a change of members takes to reach every gateway.
//!
//! What it remembers of each partition lives in memory: a restart forgets it, and the
//! first pass after one reads every compacted partition from its log start again
//! (Kafka keeps a checkpoint file instead); a tombstone's clock restarts then, which
//! only keeps it longer.

mod plan;

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, ActorFutureExt, Arbiter, AsyncContext, Context, WrapFuture};
use tokio::sync::watch;
use uuid::Uuid;

use crate::config_catalog::CompactionInForce;
use crate::membership::Cluster;
use crate::metrics::Metrics;
use crate::partitions::Partitions;
use crate::protocol::records;
use crate::protocol::retained::RecordsError;
use crate::settings::CompactionSettings;
use crate::store::{StoreError, TopicPartition};
use crate::topic_admin::internal::is_internal;
use crate::topics::Topics;
use crate::transactions::slot::now_ms;

use plan::{Planner, Seed};

/// Bytes asked of the log store per read of a pass.
const READ_BYTES: usize = 1 << 20;
/// Most memory the partitions' seeds hold together (as Kafka bounds its cleaner's
/// offset map): past it, a pass leaves none and the next reads from the log start.
const SEEDS_BYTES: usize = 32 << 20;

#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Records(#[from] RecordsError),
}

pub struct Compactor {
    /// The partitions' owner: their logs, and their transaction indexes to renew.
    log_owner: Partitions,
    topics: Topics,
    metrics: Arc<Metrics>,
    settings: CompactionSettings,
    cluster: watch::Receiver<Arc<Cluster>>,
    /// By topic id and partition; `None` while a pass has it.
    partitions: Option<HashMap<(Uuid, i32), PartitionState>>,
}

/// What the compactor knows of one partition from its passes.
#[derive(Clone, Debug, Default)]
struct PartitionState {
    /// The partition's bytes after its last pass, and of those the ones below that
    /// pass's end: what is written since is dirty.
    size_after: Option<u64>,
    cleaned_bytes: u64,
    last_pass_ms: i64,
    /// The end of each pass that moved it, with its time: when compaction first reached
    /// an offset, which a tombstone's `delete.retention.ms` counts from.
    reached: Vec<(i64, i64)>,
    /// When a tombstone kept by the last pass may go.
    tombstones_due: Option<i64>,
    /// When records the last pass found too young may be compacted.
    ripe_at: Option<i64>,
    /// What the last pass kept, for the next to read only what came after it.
    seed: Option<Seed>,
}

impl PartitionState {
    fn reached_at(&self, offset: i64, now: i64) -> i64 {
        (self.reached.iter())
            .find(|(end, _)| *end > offset)
            .map_or(now, |(_, at)| *at)
    }

    /// Notes a pass's end; forgets the ends every tombstone below is past its retention
    /// of, but the last of them (offsets below it stay reached that long ago).
    fn reach(&mut self, below: i64, now: i64, retention: i64) {
        if self.reached.last().is_none_or(|(end, _)| *end < below) {
            self.reached.push((below, now));
        }
        let old = (self.reached.iter())
            .take_while(|(_, at)| at.saturating_add(retention) <= now)
            .count();
        self.reached.drain(..old.saturating_sub(1));
    }

    /// Notes the size a pass left the partition at. Records that came while it ran
    /// (`moved`: the log's end is not where the pass read to) lie past what it read but
    /// count in that size: the partition is left written then, so a pass comes for
    /// them even when nothing more is written.
    fn sized(&mut self, size_after: u64, moved: bool) {
        self.size_after = (!moved).then_some(size_after);
    }

    /// Share of `size` written since the last pass.
    fn dirty_ratio(&self, size: u64) -> f64 {
        match size {
            0 => 0.0,
            _ => size.saturating_sub(self.cleaned_bytes) as f64 / size as f64,
        }
    }

    /// Whether a pass is due: bytes came since the last one and the dirty ratio or
    /// `max.compaction.lag.ms` says so, or a tombstone may go, or records too young at
    /// the last pass no longer are.
    fn due(&self, size: u64, rules: &CompactionInForce, now: i64) -> bool {
        let written = self.size_after != Some(size) && size > 0;
        let ratio = self.dirty_ratio(size);
        let lagging = now.saturating_sub(self.last_pass_ms) >= rules.max_compaction_lag_ms;
        (written && ratio > 0.0 && (ratio >= rules.min_cleanable_dirty_ratio || lagging))
            || self.tombstones_due.is_some_and(|due| due <= now)
            || self.ripe_at.is_some_and(|ripe| ripe <= now)
    }
}

/// One partition picked for a pass.
struct Pick {
    tp: TopicPartition,
    key: (Uuid, i32),
    rules: CompactionInForce,
    size: u64,
}

impl Compactor {
    /// Starts the compactor on an arbiter of its own, when the settings ask for it and
    /// the engine can compact.
    pub fn start(
        (log_owner, topics): (Partitions, Topics),
        metrics: Arc<Metrics>,
        settings: CompactionSettings,
        cluster: watch::Receiver<Arc<Cluster>>,
    ) {
        if settings.interval.is_none() || !log_owner.logs().compacts() {
            return;
        }
        let compactor = Compactor {
            log_owner,
            topics,
            metrics,
            settings,
            cluster,
            partitions: Some(HashMap::new()),
        };
        Compactor::start_in_arbiter(&Arbiter::new().handle(), |_| compactor);
    }

    /// A tick: unless a pass is under way, picks the partition most due and passes
    /// over it.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        // Passes go on only while this gateway's view of the cluster is its own to act on.
        let cluster = self.cluster.borrow().clone();
        if !cluster.held() {
            return;
        }
        let Some(mut partitions) = self.partitions.take() else {
            return;
        };
        let table = self.topics.table();
        let config = self.topics.config();
        let compacted: Vec<_> = (table.all().into_iter())
            .filter(|t| !is_internal(&t.name))
            .filter_map(|t| Some((t.clone(), config.compaction(&t.configs)?)))
            .collect();
        let (log_owner, metrics) = (self.log_owner.clone(), self.metrics.clone());
        let pass_bytes = self.settings.pass_bytes;
        let work = async move {
            partitions.retain(|(id, _), _| compacted.iter().any(|(t, _)| t.id == *id));
            let now = now_ms();
            let mut best: Option<(f64, Pick)> = None;
            for (topic, rules) in compacted {
                let sizes = match log_owner.logs().sizes(topic.name.clone()).await {
                    Ok(sizes) => sizes,
                    Err(e) => {
                        tracing::warn!(topic = %topic.name, error = %e, "compactor: no sizes");
                        continue;
                    }
                };
                for (p, size) in sizes.into_iter().enumerate() {
                    let tp = TopicPartition {
                        topic: topic.name.clone(),
                        partition: p as i32,
                    };
                    if cluster.leader_of(&tp).id != cluster.me.id {
                        continue;
                    }
                    let key = (topic.id, p as i32);
                    let state = partitions.entry(key).or_default();
                    if state.cleaned_bytes > size {
                        *state = PartitionState::default(); // records deleted under it
                    }
                    let ratio = state.dirty_ratio(size);
                    metrics.compaction.dirty_ratio(&topic.name, p as i32, ratio);
                    if state.due(size, &rules, now) && best.as_ref().is_none_or(|b| ratio > b.0) {
                        let pick = Pick {
                            tp,
                            key,
                            rules,
                            size,
                        };
                        best = Some((ratio, pick));
                    }
                }
            }
            if let Some((_, pick)) = best {
                let state = partitions.entry(pick.key).or_default();
                if let Err(e) = pass(&log_owner, &pick, state, (pass_bytes, now), &metrics).await {
                    tracing::warn!(partition = %pick.tp, error = %e, "compaction pass failed");
                }
                let seeds = partitions.values().filter_map(|s| s.seed.as_ref());
                let over = seeds.map(Seed::bytes).sum::<usize>() > SEEDS_BYTES;
                if let Some(state) = partitions.get_mut(&pick.key).filter(|_| over) {
                    state.seed = None;
                }
            }
            partitions
        };
        ctx.spawn(
            work.into_actor(self)
                .map(|partitions, act, _| act.partitions = Some(partitions)),
        );
    }
}

/// One pass over a partition: reads it from its log start, plans, has the engine
/// remove what the plan does not keep, and notes what it did.
async fn pass(
    log_owner: &Partitions,
    pick: &Pick,
    state: &mut PartitionState,
    (pass_bytes, now): (usize, i64),
    metrics: &Metrics,
) -> Result<(), PassError> {
    let logs = log_owner.logs();
    let watermarks = logs.watermarks(pick.tp.clone()).await?;
    let seed = state.seed.take();
    let mut planner = Planner::new(pick.rules, now, watermarks, logs.splits_batches(), seed);
    // Below a seeded start, the bytes the last pass left clean stay so.
    let from = planner.start();
    let (mut offset, mut read) = (from, 0);
    let clean_below = if from > watermarks.log_start {
        state.cleaned_bytes
    } else {
        0
    };
    'reading: while offset < watermarks.high && read < pass_bytes {
        let got = logs.read(pick.tp.clone(), offset, READ_BYTES).await?;
        if got.batches.is_empty() {
            break;
        }
        for batch in got.batches {
            if !planner.take(&batch)? {
                break 'reading;
            }
            read += batch.len();
            offset = records::end_offset(&batch);
        }
    }
    let plan = planner.finish(|offset| state.reached_at(offset, now));
    let (cleaned_bytes, size_after, reclaimed) = if plan.removes {
        let done = logs
            .compact(pick.tp.clone(), plan.below, plan.keep.into())
            .await?;
        // Markers may have gone with their transactions' records: what the partition's
        // transaction index holds of them is learnt from the log again.
        log_owner.compacted(&pick.tp);
        let reclaimed = done.bytes_before.saturating_sub(done.bytes_after);
        tracing::debug!(partition = %pick.tp, from, below = plan.below, reclaimed, "compacted");
        (done.cleaned_bytes, done.bytes_after, reclaimed)
    } else {
        (clean_below + plan.bytes_below, pick.size, 0)
    };
    metrics.compaction.passed(reclaimed);
    let moved = logs.watermarks(pick.tp.clone()).await?.high != watermarks.high;
    state.cleaned_bytes = cleaned_bytes;
    state.sized(size_after, moved);
    state.last_pass_ms = now;
    state.tombstones_due = plan.tombstones_due;
    state.ripe_at = plan.ripe_at;
    state.seed = plan.seed;
    state.reach(plan.below, now, pick.rules.delete_retention_ms);
    Ok(())
}

impl Actor for Compactor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(every) = self.settings.interval {
            ctx.run_interval(every, Self::tick);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_that_came_during_a_pass_leave_the_partition_due() {
        let rules = CompactionInForce {
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 0,
        };
        // A pass cleaned 100 of the 1000 bytes it found: the rest came while it ran.
        let mut state = PartitionState {
            cleaned_bytes: 100,
            ..PartitionState::default()
        };
        state.sized(1000, true);
        assert!(state.due(1000, &rules, 0), "due with nothing written since");
        state.sized(1000, false);
        assert!(
            !state.due(1000, &rules, 0),
            "a log that stayed put is not due"
        );
        assert!(state.due(1001, &rules, 0), "until something is written");
    }
}
