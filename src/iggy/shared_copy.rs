//! A gateway's copy of a metadata table every gateway on the server writes, keyed by
//! partition (`topic/incarnation/partition`): the log starts DeleteRecords moved
//! (`log_starts.rs`) and the offsets compaction removed (`compacted.rs`). Each gateway
//! reads the table again at most every [`REFRESH`], so what another gateway wrote
//! shows here within that time; what this one writes, at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy_kafka_actors::store::meta::{Change, MetaAnswer, MetaCall};
use iggy_kafka_actors::store::{StoreError, StoreResult, TopicPartition};
use parking_lot::Mutex;

use super::{meta, Inner};

/// How stale a gateway's copy may be.
const REFRESH: Duration = Duration::from_secs(1);

/// A value kept in such a table.
pub trait Row: Sized + Send + Sync + 'static {
    fn decode(bytes: &Bytes) -> Option<Self>;
    fn encode(&self) -> Bytes;
}

pub struct SharedCopy<T> {
    table: &'static str,
    known: Mutex<Known<T>>,
    /// Serializes this gateway's writes, so each is made from the latest copy.
    pub writing: tokio::sync::Mutex<()>,
}

struct Known<T> {
    read_at: Option<Instant>,
    /// Each row with the bytes it was decoded from: a refresh decodes changed rows only.
    rows: HashMap<String, (Bytes, Arc<T>)>,
}

impl Inner {
    /// The partition's key in such tables, when its topic's incarnation is known here.
    pub(super) fn row_key(&self, tp: &TopicPartition) -> Option<String> {
        let incarnation = self.incarnations.lock().get(&tp.topic).copied()?;
        Some(format!("{}/{incarnation}/{}", tp.topic, tp.partition))
    }

    /// [`Inner::row_key`] for a write: the topics are listed when the incarnation is
    /// not known yet.
    pub(super) async fn row_key_to_write(&self, tp: &TopicPartition) -> StoreResult<String> {
        if let Some(key) = self.row_key(tp) {
            return Ok(key);
        }
        self.list_logs().await?;
        self.row_key(tp)
            .ok_or_else(|| StoreError::UnknownTopic(tp.topic.to_string()))
    }
}

impl<T: Row> SharedCopy<T> {
    pub fn new(table: &'static str) -> SharedCopy<T> {
        SharedCopy {
            table,
            known: Mutex::new(Known {
                read_at: None,
                rows: HashMap::new(),
            }),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// The row at `key` ([`Inner::row_key`]), from a copy at most [`REFRESH`] old.
    pub async fn get(&self, inner: &Arc<Inner>, key: &str) -> StoreResult<Option<Arc<T>>> {
        let stale = {
            let mut known = self.known.lock();
            let stale = known.read_at.is_none_or(|at| at.elapsed() >= REFRESH);
            if stale {
                // Marked now: the other callers meanwhile use the copy they find.
                known.read_at = Some(Instant::now());
            }
            stale
        };
        if stale {
            self.read(inner).await?;
        }
        Ok(self.known(key))
    }

    /// The row at `key` in this gateway's copy as it is.
    pub fn known(&self, key: &str) -> Option<Arc<T>> {
        let known = self.known.lock();
        known.rows.get(key).map(|(_, row)| row.clone())
    }

    /// Reads the whole table again.
    pub async fn read(&self, inner: &Arc<Inner>) -> StoreResult<()> {
        let call = MetaCall::Scan {
            table: self.table,
            prefix: String::new(),
        };
        let MetaAnswer::Scanned(scan) = meta::serve(inner.clone(), inner.meta.conn(), call).await?
        else {
            return Err(StoreError::fatal(format!(
                "table {}: not a scan",
                self.table
            )));
        };
        let mut known = self.known.lock();
        let mut before = std::mem::take(&mut known.rows);
        for (k, bytes) in scan.entries {
            let row = match before.remove(&k) {
                Some((was, row)) if was == bytes => row,
                _ => match T::decode(&bytes) {
                    Some(row) => Arc::new(row),
                    None => {
                        tracing::warn!(table = self.table, key = %k, "unreadable row left out");
                        continue;
                    }
                },
            };
            known.rows.insert(k, (bytes, row));
        }
        Ok(())
    }

    /// Writes the partition's row (the caller holds [`SharedCopy::writing`]).
    pub async fn put(&self, inner: &Arc<Inner>, key: String, row: T) -> StoreResult<()> {
        let bytes = row.encode();
        let changes = vec![Change::Put {
            key: key.clone(),
            value: bytes.clone(),
        }];
        let call = MetaCall::Write {
            table: self.table,
            expect: Vec::new(),
            changes,
        };
        meta::serve(inner.clone(), inner.meta.conn(), call).await?;
        self.known.lock().rows.insert(key, (bytes, Arc::new(row)));
        Ok(())
    }
}
