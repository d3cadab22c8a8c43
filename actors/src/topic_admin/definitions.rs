//! What the log store does not keep about a Kafka topic: its topic id, the
//! replication factor asked for and its configurations, as a table of the metadata
//! store: table `topic`, one entry per topic name, JSON naming the incarnation of the
//! logs it describes. Logs made again under the same name (by a native Iggy client,
//! say) no longer match and are served like any native topic: a topic id derived from
//! the name and incarnation (stable across restarts), no configurations.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::log::LogInfo;
use crate::store::shared::{Rows, Table};
use crate::store::TopicMeta;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub id: Uuid,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
    /// The [`LogInfo::incarnation`] of the logs this describes.
    pub incarnation: u64,
}

/// The topic-definition table.
pub struct Definitions;

impl Table for Definitions {
    const NAME: &'static str = "topic";
    type Key = String;
    type Value = Definition;
    /// The topic admin combines the rows with the logs itself.
    type View = ();

    fn encode_key(name: &String) -> String {
        name.clone()
    }

    fn decode_key(key: &str) -> Result<String, String> {
        Ok(key.to_string())
    }

    fn encode_value(d: &Definition) -> Bytes {
        Bytes::from(serde_json::to_vec(d).expect("definitions serialize"))
    }

    fn decode_value(value: &[u8]) -> Result<Definition, String> {
        serde_json::from_slice(value).map_err(|e| e.to_string())
    }

    fn view(_: &Rows<Definitions>) {}
}

/// The Kafka view of `log`: its definition if one describes these very logs, else
/// that of a native topic; and whether it was defined.
pub fn topic(log: &LogInfo, definitions: &Rows<Definitions>) -> (TopicMeta, bool) {
    let definition = definitions
        .get(&*log.name)
        .filter(|d| d.incarnation == log.incarnation);
    let topic = match definition {
        Some(d) => TopicMeta {
            name: log.name.clone(),
            id: d.id,
            partitions: log.partitions,
            replication_factor: d.replication_factor,
            configs: d.configs.clone(),
        },
        None => TopicMeta {
            name: log.name.clone(),
            id: derived_id(&log.name, log.incarnation),
            partitions: log.partitions,
            replication_factor: 1,
            configs: BTreeMap::new(),
        },
    };
    (topic, definition.is_some())
}

/// A stable id for a topic the gateway did not make: a v4-shaped UUID from a hash of
/// its name and incarnation.
fn derived_id(name: &str, incarnation: u64) -> Uuid {
    // FNV-1a, 128-bit: stable across builds and platforms, unlike `DefaultHasher`.
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let prime: u128 = 0x0000000001000000000000000000013B;
    for b in name
        .as_bytes()
        .iter()
        .chain(&[0])
        .chain(&incarnation.to_be_bytes())
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
    fn a_definition_describes_only_the_logs_it_was_made_for() {
        let log = |incarnation| LogInfo {
            name: "t".into(),
            partitions: 4,
            incarnation,
        };
        let defs = Rows::<Definitions>::from([(
            "t".to_string(),
            Definition {
                id: Uuid::from_u128(2),
                replication_factor: 3,
                configs: BTreeMap::from([("cleanup.policy".into(), "compact".into())]),
                incarnation: 20,
            },
        )]);
        let (made, defined) = topic(&log(20), &defs);
        assert_eq!(
            (made.id, made.replication_factor, made.partitions, defined),
            (Uuid::from_u128(2), 3, 4, true)
        );
        // Made again natively: not the defined topic any more.
        let (native, defined) = topic(&log(30), &defs);
        assert!(!defined);
        assert_eq!(native.replication_factor, 1);
        assert!(native.configs.is_empty());
        assert_eq!(native.id, topic(&log(30), &defs).0.id, "stable");
        assert_ne!(native.id, topic(&log(31), &defs).0.id);
    }
}
