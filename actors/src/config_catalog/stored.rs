//! The shared configuration maps as a table (`store::shared`): table `cluster`, one
//! entry per map (`broker-configs`, `broker-configs/<node>`, the finalized features,
//! each gateway's reported static settings), the value the map as JSON. An empty map
//! is no entry.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::store::shared::{Edit, Rows, Table};
use crate::store::ClusterConfigs;

/// The table of shared configuration maps.
pub struct ClusterMaps;

impl Table for ClusterMaps {
    const NAME: &'static str = "cluster";
    type Key = String;
    type Value = BTreeMap<String, String>;
    type View = ClusterConfigs;

    fn encode_key(name: &String) -> String {
        name.clone()
    }

    fn decode_key(key: &str) -> Result<String, String> {
        Ok(key.to_string())
    }

    fn encode_value(map: &BTreeMap<String, String>) -> Bytes {
        Bytes::from(serde_json::to_vec(map).expect("maps serialize"))
    }

    fn decode_value(value: &[u8]) -> Result<BTreeMap<String, String>, String> {
        serde_json::from_slice(value).map_err(|e| e.to_string())
    }

    fn view(rows: &Rows<ClusterMaps>) -> ClusterConfigs {
        rows.clone()
    }
}

/// The edit that makes map `name` hold `values`.
pub fn set(
    name: String,
    values: BTreeMap<String, String>,
) -> Edit<String, BTreeMap<String, String>> {
    if values.is_empty() {
        Edit::Delete(name)
    } else {
        Edit::Put(name, values)
    }
}
