//! The two clients an offset slot owns, each on a connection of its own to the
//! metadata store (on Iggy its own Iggy connection; the embedded store has one to
//! give, itself). The commit client is the only writer of the slot's partitions'
//! offsets; the read client answers OffsetFetch beside it, never behind a commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::fence::Fence;
use super::{held, table};
use crate::store::meta::Change;
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
        let change = |key, offset: &Option<CommittedOffset>| match offset {
            Some(c) => Change::Put {
                key,
                value: table::encode(c),
            },
            None => Change::Delete { key },
        };
        let (entries, fence) = match write {
            OffsetWrite::Commit { entries, fence } => (entries, fence),
            OffsetWrite::Hold(entries) => {
                let changes = (entries.iter())
                    .map(|(group, producer_id, tp, offset)| {
                        change(held::key(group, *producer_id, tp), offset)
                    })
                    .collect();
                return self.meta.write(held::TABLE, changes).await.map(|_| true);
            }
        };
        let changes = (entries.iter())
            .map(|(group, tp, offset)| change(table::key(group, tp), offset))
            .collect();
        let expect = (fence.iter())
            .map(|(group, fence)| fence.expect(group))
            .collect();
        if self
            .meta
            .write_if(table::TABLE, expect, changes)
            .await?
            .is_none()
        {
            return Ok(false);
        }
        let commits: Vec<GroupCommit> = entries
            .iter()
            .map(|(group, tp, offset)| {
                (group.clone(), tp.clone(), offset.as_ref().map(|c| c.offset))
            })
            .collect();
        self.logs.committed(&commits);
        Ok(true)
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
    /// Offsets a producer's transaction holds for a group until it ends (`held.rs`).
    Hold(Vec<(Arc<str>, i64, TopicPartition, Option<CommittedOffset>)>),
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
    /// `(producer id, partition, offset)`.
    pub async fn held(
        &self,
        group: &str,
        producer_id: Option<i64>,
    ) -> StoreResult<Vec<(i64, TopicPartition, CommittedOffset)>> {
        let scan = self
            .0
            .scan(held::TABLE, &held::prefix(group, producer_id))
            .await?;
        (scan.entries.iter())
            .map(|(key, value)| {
                let parsed = held::parse(group, key).zip(table::decode(value));
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
