//! The two clients an offset slot owns, each on a connection of its own to the
//! metadata store (on Iggy its own Iggy connection; the embedded store has one to
//! give, itself). The commit client is the only writer of the slot's partitions'
//! offsets; the read client answers OffsetFetch beside it, never behind a commit.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::table;
use crate::store::meta::Change;
use crate::store::{CommittedOffset, Meta, StoreError, StoreResult, TopicPartition};

/// Writes a slot's commits, one call per commit message.
#[derive(Clone)]
pub struct CommitClient(Meta);

impl CommitClient {
    /// A client of its own on `meta`'s store, seen to answer.
    pub async fn connect(meta: &Meta) -> StoreResult<Self> {
        let client = meta.client();
        client.ping().await?;
        Ok(CommitClient(client))
    }

    /// Stores (`Some`) or deletes (`None`) offsets of one group, all or none.
    pub async fn commit(
        &self,
        group: &str,
        entries: &[(TopicPartition, Option<CommittedOffset>)],
    ) -> StoreResult<()> {
        let changes = entries
            .iter()
            .map(|(tp, offset)| {
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
        self.0.write(table::TABLE, changes).await.map(drop)
    }
}

/// Reads a slot's committed offsets.
#[derive(Clone)]
pub struct ReadClient(Meta);

impl ReadClient {
    /// A client of its own on `meta`'s store, seen to answer.
    pub async fn connect(meta: &Meta) -> StoreResult<Self> {
        let client = meta.client();
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
}
