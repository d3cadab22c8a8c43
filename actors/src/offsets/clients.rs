//! The two clients an offset slot owns, each on a connection of its own to the
//! metadata store (on Iggy its own Iggy connection; the embedded store has one to
//! give, itself). The commit client is the only writer of the slot's partitions'
//! offsets; the read client answers OffsetFetch beside it, never behind a commit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;

use super::fence::Fence;
use super::held::{self, Found, Held};
use super::table;
use crate::store::meta::{Change, Expect};
use crate::store::{
    CommittedOffset, GroupCommit, Logs, Meta, StoreError, StoreResult, TopicPartition,
};

/// Writes a slot's commits, one call per commit message, and tells the log engine of
/// each once it stands (Iggy follows them in its own consumer groups).
#[derive(Clone)]
pub struct CommitClient {
    meta: Meta,
    logs: Logs,
}

impl CommitClient {
    /// A client of its own on `meta`'s store, seen to answer.
    pub async fn connect(meta: &Meta, logs: Logs) -> StoreResult<Self> {
        let meta = meta.client()?;
        meta.ping().await?;
        Ok(CommitClient { meta, logs })
    }

    /// Writes `write`, all or none, in one store write: whether it stood (`false`: its
    /// group's claim was superseded, `fence.rs`). Committed offsets are told to the log
    /// engine once they stand.
    pub async fn write(&self, write: &OffsetWrite) -> StoreResult<bool> {
        match write {
            OffsetWrite::Commit { entries, fence } => {
                let changes = (entries.iter())
                    .map(|(group, tp, offset)| change(table::key(group, tp), offset))
                    .collect();
                let expect = (fence.iter())
                    .map(|(group, fence)| fence.expect(group))
                    .collect();
                let stood = (self.meta)
                    .write_if(table::TABLE, expect, changes)
                    .await?
                    .is_some();
                if stood {
                    let offset = |o: &Option<CommittedOffset>| o.as_ref().map(|c| c.offset);
                    self.told(
                        entries
                            .iter()
                            .map(|(g, tp, o)| (g.clone(), tp.clone(), offset(o))),
                    );
                }
                Ok(stood)
            }
            OffsetWrite::Hold(entries) => self.hold(entries).await.map(|()| true),
            OffsetWrite::Settle(entries) => self.settle(entries).await.map(|()| true),
        }
    }

    /// Holds (`Some`) or releases (`None`) a transaction's offsets, each held one with
    /// what it finds committed (`held.rs`).
    async fn hold(
        &self,
        entries: &[(Arc<str>, i64, TopicPartition, Option<CommittedOffset>)],
    ) -> StoreResult<()> {
        let holding = entries.iter().filter(|e| e.3.is_some()).map(|e| &*e.0);
        let committed = self.committed(holding).await?;
        let changes = (entries.iter())
            .map(|(group, producer_id, tp, offset)| {
                let key = held::key(group, *producer_id, tp);
                let Some(offset) = offset else {
                    return Change::Delete { key };
                };
                let was = committed.get(&table::key(group, tp)).cloned();
                let held = Held {
                    offset: offset.clone(),
                    found: was.map_or(Found::Nothing, Found::Committed),
                };
                let value = held::encode(&held);
                Change::Put { key, value }
            })
            .collect();
        self.meta.write(held::TABLE, changes).await.map(|_| ())
    }

    /// Commits a transaction's held offsets where what each found committed still is:
    /// a commit made since stays, as in Kafka (`held.rs`). A refused write drops the
    /// partitions committed since and is made again with the rest.
    async fn settle(&self, entries: &[(Arc<str>, TopicPartition, Held)]) -> StoreResult<()> {
        let mut landing: Vec<_> = entries.iter().collect();
        for _ in 0..SETTLE_TRIES {
            if landing.is_empty() {
                return Ok(());
            }
            let expect = (landing.iter())
                .filter_map(|(group, tp, held)| {
                    let value = held.found.expected()?.cloned();
                    let key = table::key(group, tp);
                    Some(Expect { key, value })
                })
                .collect();
            let changes = (landing.iter())
                .map(|(group, tp, held)| change(table::key(group, tp), &Some(held.offset.clone())))
                .collect();
            if (self.meta.write_if(table::TABLE, expect, changes).await?).is_some() {
                let offset = |h: &Held| Some(h.offset.offset);
                self.told(
                    landing
                        .iter()
                        .map(|(g, tp, h)| (g.clone(), tp.clone(), offset(h))),
                );
                return Ok(());
            }
            let committed = self.committed(landing.iter().map(|e| &*e.0)).await?;
            landing.retain(|(group, tp, held)| {
                let now = committed.get(&table::key(group, tp));
                let stands = held.found.expected().is_none_or(|was| was == now);
                // Not there already (a retried settle's first write stood).
                if !stands && now != Some(&table::encode(&held.offset)) {
                    tracing::info!(group = %group, partition = %tp, offset = held.offset.offset, "a commit made after the transaction's offset stays");
                }
                stands
            });
        }
        Err(StoreError::unavailable(
            "committed offsets kept changing while a transaction's were settled",
        ))
    }

    /// The committed entries of `groups` as stored, by key.
    async fn committed(
        &self,
        groups: impl Iterator<Item = &str>,
    ) -> StoreResult<HashMap<String, Bytes>> {
        let groups: BTreeSet<&str> = groups.collect();
        let mut out = HashMap::new();
        for group in groups {
            let scan = self
                .meta
                .scan(table::TABLE, &table::group_prefix(group))
                .await?;
            out.extend(scan.entries);
        }
        Ok(out)
    }

    /// Tells the log engine of offsets that stand.
    fn told(&self, commits: impl Iterator<Item = GroupCommit>) {
        self.logs.committed(&commits.collect::<Vec<_>>());
    }
}

/// How often a settle is tried while commits of its partitions keep coming between.
const SETTLE_TRIES: usize = 4;

/// A change that stores (`Some`) or deletes (`None`) the committed offset at `key`.
fn change(key: String, offset: &Option<CommittedOffset>) -> Change {
    match offset {
        Some(c) => Change::Put {
            key,
            value: table::encode(c),
        },
        None => Change::Delete { key },
    }
}

/// What a slot writes for its partitions: each entry stores (`Some`) or deletes
/// (`None`) an offset.
#[derive(Debug)]
pub enum OffsetWrite {
    /// Committed offsets: a group's, or, for a deleted topic, every group's; written
    /// only while the group's claim stands, when one is given.
    Commit {
        entries: Vec<(Arc<str>, TopicPartition, Option<CommittedOffset>)>,
        fence: Option<(Arc<str>, Fence)>,
    },
    /// Offsets a producer's transaction holds for a group until it ends (`held.rs`):
    /// held (`Some`) or released (`None`).
    Hold(Vec<(Arc<str>, i64, TopicPartition, Option<CommittedOffset>)>),
    /// A committed transaction's held offsets, each written where what it found
    /// committed still is.
    Settle(Vec<(Arc<str>, TopicPartition, Held)>),
}

/// Reads a slot's committed offsets.
#[derive(Clone)]
pub struct ReadClient(Meta);

impl ReadClient {
    /// A client of its own on `meta`'s store, seen to answer.
    pub async fn connect(meta: &Meta) -> StoreResult<Self> {
        let client = meta.client()?;
        client.ping().await?;
        Ok(ReadClient(client))
    }

    /// `group`'s committed offsets of these partitions, in their order; `None` where
    /// there is none.
    pub async fn read(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> StoreResult<Vec<Option<CommittedOffset>>> {
        let scan = self
            .0
            .scan(table::TABLE, &table::group_prefix(group))
            .await?;
        let stored: BTreeMap<&str, &Bytes> =
            scan.entries.iter().map(|(k, v)| (k.as_str(), v)).collect();
        partitions
            .iter()
            .map(|tp| match stored.get(table::key(group, tp).as_str()) {
                None => Ok(None),
                Some(v) => table::decode(v).map(Some).ok_or_else(|| {
                    StoreError::fatal(format!(
                        "committed offset of group '{group}' on {tp} is unreadable"
                    ))
                }),
            })
            .collect()
    }

    /// The offsets held for `group` by open transactions (one producer's, if given):
    /// `(producer id, partition, what it holds)`.
    pub async fn held(
        &self,
        group: &str,
        producer_id: Option<i64>,
    ) -> StoreResult<Vec<(i64, TopicPartition, Held)>> {
        let scan = self
            .0
            .scan(held::TABLE, &held::prefix(group, producer_id))
            .await?;
        (scan.entries.iter())
            .map(|(key, value)| {
                let parsed = held::parse(group, key).zip(held::decode(value));
                let ((producer, tp), offset) = parsed.ok_or_else(|| {
                    StoreError::fatal(format!(
                        "offset held for group '{group}' under '{key}' is unreadable"
                    ))
                })?;
                Ok((producer, tp, offset))
            })
            .collect()
    }

    /// Every `(group, partition)` with a committed offset: `group`'s (its length-prefixed
    /// name is a prefix no other group's keys start with), or every group's.
    pub async fn list(&self, group: Option<&str>) -> StoreResult<Vec<(Arc<str>, TopicPartition)>> {
        let prefix = group.map(table::group_prefix).unwrap_or_default();
        let scan = self.0.scan(table::TABLE, &prefix).await?;
        Ok(scan
            .entries
            .iter()
            .filter_map(|(k, _)| table::parse_key(k))
            .map(|(g, tp)| (g.as_str().into(), tp))
            .collect())
    }
}
