//! The two clients an offset slot owns, each on a connection of its own to the
//! metadata store (on Iggy its own Iggy connection; the embedded store has one to
//! give, itself). The commit client is the only writer of the slot's partitions'
//! offsets; the read client answers OffsetFetch beside it, never behind a commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use super::table;
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

    /// Stores (`Some`) or deletes (`None`) offsets, all or none, in one write.
    pub async fn commit(
        &self,
        entries: &[(Arc<str>, TopicPartition, Option<CommittedOffset>)],
    ) -> StoreResult<()> {
        let changes = entries
            .iter()
            .map(|(group, tp, offset)| {
                let key = table::key(group, tp);
                match offset {
                    Some(c) => Change::Put {
                        key,
                        value: table::encode(c),
                    },
                    None => Change::Delete { key },
                }
            })
            .collect();
        self.meta.write(table::TABLE, changes).await?;
        let commits: Vec<GroupCommit> = entries
            .iter()
            .map(|(group, tp, offset)| {
                (group.clone(), tp.clone(), offset.as_ref().map(|c| c.offset))
            })
            .collect();
        self.logs.committed(&commits);
        Ok(())
    }
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
                    StoreError::Fatal(format!(
                        "committed offset of group '{group}' on {tp} is unreadable"
                    ))
                }),
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
