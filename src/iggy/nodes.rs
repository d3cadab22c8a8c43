//! Gateways sharing an Iggy server find each other through the gateway log `nodes`:
//! each appends `{"id", "host", "port", "alive", "listeners"}` every heartbeat, and
//! `alive: false` when it leaves. `host` and `port` are the first listener's, its
//! identity; `listeners` holds every listener's advertised address (records of
//! gateways older than listeners lack it: their one address is PLAINTEXT). Liveness is judged by the Iggy server's append times, compared with
//! the newest announcement in the log, so gateways with skewed clocks still agree.
//! Node ids come from the `node-ids` log: the offset of the record a gateway appended
//! at startup, unique for as long as the server keeps its data.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use iggy_kafka_actors::backend::{Endpoint, Node};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeRecord {
    pub id: i32,
    pub host: String,
    pub port: u16,
    pub alive: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<EndpointRecord>,
}

/// One listener's advertised address in a node record.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct EndpointRecord {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl NodeRecord {
    pub fn new(node: &Node, alive: bool) -> NodeRecord {
        let first = &node.endpoints[0];
        NodeRecord {
            id: node.id,
            host: first.host.clone(),
            port: first.port,
            alive,
            listeners: node
                .endpoints
                .iter()
                .map(|e| EndpointRecord {
                    name: e.listener.clone(),
                    host: e.host.clone(),
                    port: e.port,
                })
                .collect(),
        }
    }

    fn node(&self) -> Node {
        let endpoints = if self.listeners.is_empty() {
            vec![Endpoint {
                listener: "PLAINTEXT".into(),
                host: self.host.clone(),
                port: self.port,
            }]
        } else {
            self.listeners
                .iter()
                .map(|e| Endpoint {
                    listener: e.name.clone(),
                    host: e.host.clone(),
                    port: e.port,
                })
                .collect()
        };
        Node {
            id: self.id,
            endpoints,
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("node records serialize"))
    }
}

/// The latest announcement of every node, with its server time.
#[derive(Default)]
pub struct Nodes {
    latest: HashMap<i32, (NodeRecord, u64)>,
    /// The newest announcement's time: "now" by the server's clock.
    newest: u64,
}

impl Nodes {
    /// Applies a record appended at `micros` (server time).
    pub fn apply_timed(&mut self, micros: u64, record: &Bytes) {
        match serde_json::from_slice::<NodeRecord>(record) {
            Ok(r) => {
                self.newest = self.newest.max(micros);
                // Two live gateways cannot share an address: an older id announcing the
                // same one is this gateway's predecessor, restarted in place.
                self.latest.retain(|id, (old, _)| {
                    *id == r.id || (&old.host, old.port) != (&r.host, r.port)
                });
                self.latest.insert(r.id, (r, micros));
            }
            Err(e) => tracing::warn!(error = %e, "skipping unreadable node record"),
        }
    }

    /// Nodes whose last announcement says alive and is at most `timeout` older than
    /// the newest one.
    pub fn live(&self, timeout: Duration) -> Vec<Node> {
        let since = self.newest.saturating_sub(timeout.as_micros() as u64);
        let mut live: Vec<Node> = self
            .latest
            .values()
            .filter(|(r, at)| r.alive && *at >= since)
            .map(|(r, _)| r.node())
            .collect();
        live.sort_by_key(|n| n.id);
        live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: i32, alive: bool) -> Bytes {
        NodeRecord {
            id,
            host: format!("h{id}"),
            port: 9092,
            alive,
            listeners: Vec::new(),
        }
        .encode()
    }

    #[test]
    fn silent_and_leaving_nodes_drop_out() {
        let mut nodes = Nodes::default();
        let s = 1_000_000u64;
        nodes.apply_timed(s, &rec(1, true));
        nodes.apply_timed(s, &rec(2, true));
        nodes.apply_timed(s, &rec(3, true));
        nodes.apply_timed(2 * s, &rec(3, false));
        nodes.apply_timed(7 * s, &rec(1, true));
        let ids: Vec<i32> = nodes
            .live(Duration::from_secs(5))
            .iter()
            .map(|n| n.id)
            .collect();
        // 2 was last heard 6 s before the newest announcement; 3 left.
        assert_eq!(ids, [1]);
        nodes.apply_timed(8 * s, &rec(2, true));
        let ids: Vec<i32> = nodes
            .live(Duration::from_secs(5))
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(ids, [1, 2], "back once it speaks again");
        // Node 1 restarted in place as node 4: its old id goes at once.
        let mut again = rec(4, true);
        again = Bytes::from(
            String::from_utf8(again.to_vec())
                .unwrap()
                .replace("h4", "h1"),
        );
        nodes.apply_timed(9 * s, &again);
        let ids: Vec<i32> = nodes
            .live(Duration::from_secs(5))
            .iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(ids, [2, 4]);
    }

    #[test]
    fn every_listener_is_announced_and_old_records_still_read() {
        let endpoint = |listener: &str, port| Endpoint {
            listener: listener.into(),
            host: "gw".into(),
            port,
        };
        let node = Node {
            id: 7,
            endpoints: vec![endpoint("PLAINTEXT", 9092), endpoint("SSL", 9093)],
        };
        let mut nodes = Nodes::default();
        nodes.apply_timed(1, &NodeRecord::new(&node, true).encode());
        // A gateway from before listeners wrote no `listeners`.
        let old = br#"{"id":3,"host":"old","port":9092,"alive":true}"#;
        nodes.apply_timed(2, &Bytes::from_static(old));
        let live = nodes.live(Duration::from_secs(5));
        assert_eq!(
            live[0].endpoints,
            [Endpoint {
                listener: "PLAINTEXT".into(),
                host: "old".into(),
                port: 9092
            }]
        );
        assert_eq!(live[1], node);
    }
}
