//! Log starts DeleteRecords moved, on Iggy. Iggy cannot drop a partition's messages
//! below an offset (only whole segments, oldest first, or everything with a purge,
//! which restarts the offsets), so the start is stored and the records below it are
//! hidden: table `log-starts` (`meta/`), shared by every gateway on the server, maps
//! `topic/incarnation/partition` to the start (8 bytes, big-endian). A topic made
//! again is another incarnation and starts afresh. Each gateway reads the table again
//! at most every [`REFRESH`], so a start another gateway moved hides the records there
//! within that time; on the gateway that moved it, at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy_kafka_actors::store::meta::{Change, MetaAnswer, MetaCall};
use iggy_kafka_actors::store::{StoreError, StoreResult, TopicPartition, Watermarks};
use parking_lot::Mutex;

use super::{meta, Inner};

/// The metadata table of the starts.
pub const TABLE: &str = "log-starts";
/// How stale this gateway's copy of the table may be.
const REFRESH: Duration = Duration::from_secs(1);

/// This gateway's copy of the table.
#[derive(Default)]
pub struct LogStarts {
    known: Mutex<Known>,
    /// Serializes this gateway's moves, so a later one never writes a lower start.
    moving: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Known {
    read_at: Option<Instant>,
    starts: HashMap<String, i64>,
}

fn key(tp: &TopicPartition, incarnation: u64) -> String {
    format!("{}/{incarnation}/{}", tp.topic, tp.partition)
}

impl Inner {
    /// The log start DeleteRecords left on a partition, 0 if none.
    pub(super) async fn deleted_below(self: &Arc<Self>, tp: &TopicPartition) -> StoreResult<i64> {
        let stale = {
            let mut known = self.log_starts_moved.known.lock();
            let stale = known.read_at.is_none_or(|at| at.elapsed() >= REFRESH);
            if stale {
                // Marked now: the other callers meanwhile use the copy they find.
                known.read_at = Some(Instant::now());
            }
            stale
        };
        if stale {
            self.read_log_starts().await?;
        }
        Ok(self.known_start(tp))
    }

    fn known_start(&self, tp: &TopicPartition) -> i64 {
        let Some(incarnation) = self.incarnations.lock().get(&tp.topic).copied() else {
            return 0;
        };
        let known = self.log_starts_moved.known.lock();
        known
            .starts
            .get(&key(tp, incarnation))
            .copied()
            .unwrap_or(0)
    }

    async fn read_log_starts(self: &Arc<Self>) -> StoreResult<()> {
        let call = MetaCall::Scan {
            table: TABLE,
            prefix: String::new(),
        };
        let MetaAnswer::Scanned(scan) = meta::serve(self.clone(), self.meta.conn(), call).await?
        else {
            return Err(StoreError::fatal(format!("table {TABLE}: not a scan")));
        };
        let starts = (scan.entries.into_iter())
            .filter_map(|(k, v)| Some((k, i64::from_be_bytes(v.as_ref().try_into().ok()?))))
            .collect();
        self.log_starts_moved.known.lock().starts = starts;
        Ok(())
    }

    /// `LogCall::DeleteRecords`: the partition's watermarks with the stored start,
    /// then the new start written to the table.
    pub(super) async fn delete_records(
        self: &Arc<Self>,
        tp: &TopicPartition,
        offset: i64,
    ) -> StoreResult<Watermarks> {
        let _moving = self.log_starts_moved.moving.lock().await;
        let mut w = self.watermarks(tp).await?;
        if !self.incarnations.lock().contains_key(&tp.topic) {
            self.list_logs().await?;
        }
        let incarnation = (self.incarnations.lock().get(&tp.topic).copied())
            .ok_or_else(|| StoreError::UnknownTopic(tp.topic.to_string()))?;
        self.read_log_starts().await?;
        w.log_start = w.log_start.max(self.known_start(tp));
        let Some(start) = w.moved_start(tp, offset)? else {
            return Ok(w);
        };
        let key = key(tp, incarnation);
        let changes = vec![Change::Put {
            key: key.clone(),
            value: Bytes::copy_from_slice(&start.to_be_bytes()),
        }];
        let call = MetaCall::Write {
            table: TABLE,
            changes,
        };
        meta::serve(self.clone(), self.meta.conn(), call).await?;
        self.log_starts_moved.known.lock().starts.insert(key, start);
        tracing::info!(partition = %tp, start, "log start moved; records below it are hidden");
        Ok(Watermarks {
            log_start: start,
            high: w.high,
        })
    }
}
