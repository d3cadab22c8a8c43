//! Kafka's internal topic `__consumer_offsets`, as clients see it.
//!
//! Kafka keeps committed offsets in it; here they live in the offset store, so the
//! topic has no log. It is listed anyway, flagged internal, because clients and tools
//! act on that flag: regex subscriptions skip it, `listTopics` hides it, and some
//! wait for it to appear once a group coordinator has been asked for. It cannot be
//! created, deleted, altered or produced to; reads find it empty.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::store::TopicMeta;

pub const CONSUMER_OFFSETS: &str = "__consumer_offsets";

/// Kafka's default `offsets.topic.num.partitions`.
const PARTITIONS: i32 = 50;

pub fn is_internal(topic: &str) -> bool {
    topic == CONSUMER_OFFSETS
}

/// The topic as every gateway of the cluster describes it: its id is derived from
/// the cluster id, so all of them, across restarts, give the same one.
pub fn consumer_offsets(cluster_id: &str) -> TopicMeta {
    let key = format!("{cluster_id}/{CONSUMER_OFFSETS}");
    TopicMeta {
        name: CONSUMER_OFFSETS.into(),
        id: Uuid::new_v5(&Uuid::NAMESPACE_OID, key.as_bytes()),
        partitions: PARTITIONS,
        replication_factor: 1,
        configs: BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            ("segment.bytes".to_string(), "104857600".to_string()),
        ]),
    }
}
