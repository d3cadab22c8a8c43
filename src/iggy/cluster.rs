//! Configurations every gateway on one Iggy server shares (dynamic broker
//! configurations, finalized features): each change appends a JSON record
//! `{"name", "values"}` to the gateway log `cluster-configs`; the latest record of a
//! name wins, and one with no values removes the name.

use std::collections::BTreeMap;

use bytes::Bytes;
use iggy_kafka_actors::backend::ClusterConfigs;
use serde::{Deserialize, Serialize};

use super::gateway_log::{Compact, Replay};

#[derive(Serialize, Deserialize)]
pub struct ClusterRecord {
    pub name: String,
    pub values: BTreeMap<String, String>,
}

impl ClusterRecord {
    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("cluster records serialize"))
    }
}

#[derive(Default)]
pub struct ClusterState(ClusterConfigs);

impl ClusterState {
    pub fn configs(&self) -> &ClusterConfigs {
        &self.0
    }
}

impl Replay for ClusterState {
    /// Unreadable records are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        match serde_json::from_slice::<ClusterRecord>(record) {
            Ok(r) if r.values.is_empty() => {
                self.0.remove(&r.name);
            }
            Ok(r) => {
                self.0.insert(r.name, r.values);
            }
            Err(e) => tracing::warn!(offset, error = %e, "skipping unreadable cluster record"),
        }
    }
}

impl Compact for ClusterState {
    fn compacted(&self) -> Vec<Bytes> {
        self.0
            .iter()
            .map(|(name, values)| {
                let (name, values) = (name.clone(), values.clone());
                ClusterRecord { name, values }.encode()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_record_of_a_name_wins_and_empty_removes() {
        let record = |name: &str, values: &[(&str, &str)]| ClusterRecord {
            name: name.into(),
            values: values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let mut state = ClusterState::default();
        let log = [
            record("a", &[("x", "1")]),
            record("b", &[("y", "2")]),
            record("a", &[("x", "3")]),
            record("b", &[]),
        ];
        for (i, r) in log.iter().enumerate() {
            state.apply(i as u64, &r.encode());
        }
        state.apply(9, &Bytes::from_static(b"not json"));
        let want = ClusterConfigs::from([(
            "a".to_string(),
            BTreeMap::from([("x".to_string(), "3".to_string())]),
        )]);
        assert_eq!(state.configs(), &want);
        let mut rebuilt = ClusterState::default();
        state.compacted().iter().for_each(|r| rebuilt.apply(0, r));
        assert_eq!(rebuilt.configs(), &want);
    }
}
