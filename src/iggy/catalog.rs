//! What Iggy does not keep about a Kafka topic: its Kafka topic id, the replication
//! factor asked for and its configurations. Each change (create, alter, delete)
//! appends a record to the gateway log `topics`; the latest record of a name wins.
//!
//! A record names the Iggy creation time of the topic it describes. A topic deleted
//! and made again by a native Iggy client no longer matches its old record and is
//! served like any native topic: a topic id derived from its stream, name and
//! creation time (stable across gateway restarts), no configurations.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use iggy_kafka_actors::backend::TopicMeta;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::gateway_log::{Compact, Replay};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TopicRecord {
    pub name: String,
    #[serde(default)]
    pub deleted: bool,
    pub id: Uuid,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
    /// Iggy's `created_at` (µs) of the topic this record describes.
    pub iggy_created_at: u64,
}

impl TopicRecord {
    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("topic records serialize"))
    }
}

#[derive(Default)]
pub struct Catalog {
    records: HashMap<String, TopicRecord>,
}

impl Replay for Catalog {
    /// Unreadable records are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        match serde_json::from_slice::<TopicRecord>(record) {
            Ok(r) => self.record(r),
            Err(e) => tracing::warn!(offset, error = %e, "skipping unreadable topic record"),
        }
    }
}

impl Compact for Catalog {
    fn compacted(&self) -> Vec<Bytes> {
        self.records.values().map(TopicRecord::encode).collect()
    }
}

impl Catalog {
    fn record(&mut self, r: TopicRecord) {
        if r.deleted {
            self.records.remove(&r.name);
        } else {
            self.records.insert(r.name.clone(), r);
        }
    }

    /// The record of a topic, as a record of the Iggy topic made at `created_at`:
    /// the stored one if it describes that topic, else one for a native topic.
    pub fn record_of(
        &self,
        stream: &str,
        name: &str,
        created_at: u64,
        partitions: u32,
    ) -> TopicRecord {
        let meta = self.meta(stream, name, created_at, partitions);
        TopicRecord {
            name: name.to_string(),
            deleted: false,
            id: meta.id,
            replication_factor: meta.replication_factor,
            configs: meta.configs,
            iggy_created_at: created_at,
        }
    }

    /// The Kafka view of an Iggy topic.
    pub fn meta(&self, stream: &str, name: &str, created_at: u64, partitions: u32) -> TopicMeta {
        match self
            .records
            .get(name)
            .filter(|r| r.iggy_created_at == created_at)
        {
            Some(r) => TopicMeta {
                name: name.into(),
                id: r.id,
                partitions: partitions as i32,
                replication_factor: r.replication_factor,
                configs: r.configs.clone(),
            },
            None => TopicMeta {
                name: name.into(),
                id: derived_id(stream, name, created_at),
                partitions: partitions as i32,
                replication_factor: 1,
                configs: BTreeMap::new(),
            },
        }
    }
}

/// A stable id for a topic the gateway did not make: a v4-shaped UUID from a hash
/// of where it lives and when it was made.
fn derived_id(stream: &str, name: &str, created_at: u64) -> Uuid {
    // FNV-1a, 128-bit: stable across builds and platforms, unlike `DefaultHasher`.
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let prime: u128 = 0x0000000001000000000000000000013B;
    for b in stream
        .as_bytes()
        .iter()
        .chain(&[0])
        .chain(name.as_bytes())
        .chain(&[0])
        .chain(&created_at.to_be_bytes())
    {
        h ^= u128::from(*b);
        h = h.wrapping_mul(prime);
    }
    uuid::Builder::from_random_bytes(h.to_be_bytes()).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_record_of_the_same_incarnation_wins() {
        let record = |id: u128, created: u64, deleted: bool| TopicRecord {
            name: "t".into(),
            deleted,
            id: Uuid::from_u128(id),
            replication_factor: 3,
            configs: BTreeMap::from([("cleanup.policy".into(), "compact".into())]),
            iggy_created_at: created,
        };
        let log: Vec<(u64, Bytes)> = [record(1, 10, false), record(2, 20, false)]
            .iter()
            .enumerate()
            .map(|(i, r)| (i as u64, r.encode()))
            .collect();
        let mut catalog = Catalog::default();
        log.iter().for_each(|(o, r)| catalog.apply(*o, r));
        let meta = catalog.meta("kafka", "t", 20, 4);
        assert_eq!(meta.id, Uuid::from_u128(2));
        assert_eq!(meta.replication_factor, 3);
        assert_eq!(meta.partitions, 4);
        // Re-made natively: not the recorded topic any more.
        let native = catalog.meta("kafka", "t", 30, 1);
        assert_eq!(native.replication_factor, 1);
        assert!(native.configs.is_empty());
        assert_eq!(native.id, catalog.meta("kafka", "t", 30, 1).id, "stable");
        assert_ne!(native.id, catalog.meta("kafka", "t", 31, 1).id);
        assert_eq!(catalog.record_of("kafka", "t", 20, 4), record(2, 20, false));
        let mut rebuilt = Catalog::default();
        catalog.compacted().iter().for_each(|r| rebuilt.apply(0, r));
        assert_eq!(rebuilt.record_of("kafka", "t", 20, 4), record(2, 20, false));
        catalog.record(record(2, 20, true));
        assert!(catalog.compacted().is_empty());
        assert_eq!(catalog.meta("kafka", "t", 20, 4).replication_factor, 1);
    }
}
