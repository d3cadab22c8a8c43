//! Log starts DeleteRecords moved, on Iggy. Iggy cannot drop a partition's messages
//! below an offset (only whole segments, oldest first, or everything with a purge,
//! which restarts the offsets), so the start is stored and the records below it are
//! hidden: table `log-starts` (`meta/`), shared by every gateway on the server, maps
//! `topic/incarnation/partition` to the start (8 bytes, big-endian). A topic made
//! again is another incarnation and starts afresh. A start another gateway moved hides
//! the records there within the copy's refresh (`shared_copy.rs`); on the gateway that
//! moved it, at once.

use std::sync::Arc;

use bytes::Bytes;
use iggy_kafka_actors::store::{StoreResult, TopicPartition, Watermarks};

use super::shared_copy::{Row, SharedCopy};
use super::Inner;

/// The metadata table of the starts.
pub const TABLE: &str = "log-starts";

pub type LogStarts = SharedCopy<i64>;

impl Row for i64 {
    fn decode(bytes: &Bytes) -> Option<i64> {
        Some(i64::from_be_bytes(bytes.as_ref().try_into().ok()?))
    }

    fn encode(&self) -> Bytes {
        Bytes::copy_from_slice(&self.to_be_bytes())
    }
}

impl Inner {
    /// `LogCall::DeleteRecords`: the partition's watermarks with the stored start,
    /// then the new start written to the table.
    pub(super) async fn delete_records(
        self: &Arc<Self>,
        tp: &TopicPartition,
        offset: i64,
    ) -> StoreResult<Watermarks> {
        let _writing = self.log_starts_moved.writing.lock().await;
        let mut w = self.kafka_watermarks(tp).await?;
        let key = self.row_key_to_write(tp).await?;
        self.log_starts_moved.read(self).await?;
        let known = self.log_starts_moved.known(&key);
        w.log_start = w.log_start.max(known.map_or(0, |s| *s));
        let Some(start) = w.moved_start(tp, offset)? else {
            return Ok(w);
        };
        self.log_starts_moved.put(self, key, start).await?;
        tracing::info!(partition = %tp, start, "log start moved; records below it are hidden");
        Ok(Watermarks {
            log_start: start,
            high: w.high,
        })
    }
}
