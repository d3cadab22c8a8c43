//! What Kafka clients see of a partition over Iggy's messages: nothing below the start
//! DeleteRecords moved (`log_starts.rs`), nothing compaction removed (`compacted.rs`),
//! and a log start that stays where it was when the segments deleted below Iggy's
//! first message held removed records only.

use std::sync::Arc;

use iggy_kafka_actors::store::{StoreResult, TopicPartition, Watermarks};

use super::compacted::Removed;
use super::Inner;

pub struct View {
    pub deleted_below: i64,
    pub removed: Option<Arc<Removed>>,
}

impl View {
    /// Kafka's watermarks over Iggy's.
    pub fn watermarks(&self, iggy: Watermarks) -> Watermarks {
        let compacted = self
            .removed
            .as_ref()
            .map_or(iggy.log_start, |r| r.log_start(iggy.log_start));
        Watermarks {
            log_start: compacted.max(self.deleted_below),
            high: iggy.high,
        }
    }
}

impl Inner {
    /// The partition's view, from the tables' copies (`shared_copy.rs`); a topic whose
    /// incarnation is not known here yet has no rows.
    pub(super) async fn view(self: &Arc<Self>, tp: &TopicPartition) -> StoreResult<View> {
        let Some(key) = self.row_key(tp) else {
            return Ok(View {
                deleted_below: 0,
                removed: None,
            });
        };
        let start = self.log_starts_moved.get(self, &key).await?;
        Ok(View {
            deleted_below: start.map_or(0, |s| *s),
            removed: self.compacted.rows.get(self, &key).await?,
        })
    }

    /// The partition's watermarks as Kafka sees them.
    pub(super) async fn kafka_watermarks(
        self: &Arc<Self>,
        tp: &TopicPartition,
    ) -> StoreResult<Watermarks> {
        let view = self.view(tp).await?;
        Ok(view.watermarks(self.watermarks(tp).await?))
    }
}
