//! The membership actor: this gateway as one node of a cluster of gateways sharing a
//! backend.
//!
//! Every heartbeat it announces itself alive through the backend and reads who else
//! is, then publishes a [`Cluster`] view. Each gateway computes partition leaders and
//! group coordinators from the same view with the same hashes, so they agree without
//! talking to each other. A node whose announcements stop drops out of every view
//! after `node_timeout`; a node shutting down announces it is leaving first. On the
//! embedded store the cluster is this gateway alone.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::watch;

use crate::backend::{Backend, BackendError, Node, TopicPartition};
use crate::log_slot::{ForgetProducers, LogSlot};

/// The live nodes as this gateway last saw them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub me: Node,
    /// Live nodes by id; holds `me` unless it is leaving.
    pub nodes: Vec<Node>,
    /// This node has announced itself and read the others at least once.
    pub registered: bool,
}

impl Cluster {
    pub fn single(me: Node) -> Cluster {
        Cluster {
            nodes: vec![me.clone()],
            me,
            registered: false,
        }
    }

    /// Registered and not leaving: what `/readyz` waits for.
    pub fn is_member(&self) -> bool {
        self.registered && self.nodes.iter().any(|n| n.id == self.me.id)
    }

    /// Nodes clients are sent to: the live ones, or this one alone when none is
    /// (the last node leaving).
    pub fn brokers(&self) -> &[Node] {
        if self.nodes.is_empty() {
            std::slice::from_ref(&self.me)
        } else {
            &self.nodes
        }
    }

    /// The node announced as a partition's leader: consecutive partitions of a topic
    /// go round the nodes, starting at a place the topic name picks, so load spreads.
    /// Any node serves any partition; this only steers clients.
    pub fn leader_of(&self, tp: &TopicPartition) -> &Node {
        let nodes = self.brokers();
        let start = stable_hash(&tp.topic) as usize;
        &nodes[(start.wrapping_add(tp.partition.max(0) as usize)) % nodes.len()]
    }

    /// The node coordinating a group: highest random weight (rendezvous) hashing, so
    /// a node leaving moves only its own groups and a node joining takes only its share.
    pub fn coordinator_of(&self, group: &str) -> &Node {
        self.brokers()
            .iter()
            .max_by_key(|n| stable_hash(&(group, n.id)))
            .expect("routable nodes are never empty")
    }

    /// Whether this gateway coordinates `group` now.
    pub fn coordinates(&self, group: &str) -> bool {
        !self.nodes.is_empty() && self.coordinator_of(group).id == self.me.id
    }

    /// The node Kafka clients are told is the controller.
    pub fn controller(&self) -> &Node {
        &self.brokers()[0]
    }
}

/// FNV-1a over the value's `Hash` output: the same on every gateway and every build,
/// which `DefaultHasher` does not promise.
fn stable_hash<T: Hash + ?Sized>(value: &T) -> u64 {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100000001b3);
            }
        }
    }
    let mut h = Fnv(0xcbf29ce484222325);
    value.hash(&mut h);
    h.finish()
}

pub struct Membership {
    backend: Arc<dyn Backend>,
    me: Node,
    heartbeat: Duration,
    timeout: Duration,
    leaving: bool,
    /// A heartbeat round is running; the next tick skips rather than piles up.
    busy: bool,
    log_slots: Arc<[Addr<LogSlot>]>,
    view: watch::Sender<Arc<Cluster>>,
}

impl Membership {
    /// Registers this node (its first heartbeat) and starts the actor; the receiver
    /// always holds the latest view.
    pub async fn start_with(
        backend: Arc<dyn Backend>,
        me: Node,
        (heartbeat, timeout): (Duration, Duration),
        log_slots: Arc<[Addr<LogSlot>]>,
    ) -> Result<(Addr<Membership>, watch::Receiver<Arc<Cluster>>), BackendError> {
        backend.announce(&me, true).await?;
        let live = backend.live_nodes(timeout).await?;
        let (view, rx) = watch::channel(Arc::new(Cluster::single(me.clone())));
        let mut actor = Membership {
            backend,
            me,
            heartbeat,
            timeout,
            leaving: false,
            busy: false,
            log_slots,
            view,
        };
        actor.publish(live);
        Ok((actor.start(), rx))
    }

    fn publish(&mut self, mut nodes: Vec<Node>) {
        nodes.retain(|n| n.id != self.me.id);
        if !self.leaving {
            nodes.push(self.me.clone());
        }
        nodes.sort_by_key(|n| n.id);
        nodes.dedup_by_key(|n| n.id);
        let was = self.view.borrow().clone();
        if was.nodes == nodes {
            if !was.registered {
                tracing::info!(node = self.me.id, "registered in the cluster");
                self.view.send_replace(Arc::new(Cluster {
                    registered: true,
                    ..(*was).clone()
                }));
            }
            return;
        }
        tracing::info!(
            nodes = ?nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
            "cluster membership changed"
        );
        // Partitions may have been appended to through other nodes: idempotent
        // producer state is read again from the backend before its next use.
        for slot in self.log_slots.iter() {
            slot.do_send(ForgetProducers);
        }
        self.view.send_replace(Arc::new(Cluster {
            me: self.me.clone(),
            nodes,
            registered: true,
        }));
    }

    fn beat(&mut self, ctx: &mut Context<Self>) {
        if self.busy || self.leaving {
            return;
        }
        self.busy = true;
        let (backend, me, timeout) = (self.backend.clone(), self.me.clone(), self.timeout);
        let round = async move {
            backend.announce(&me, true).await?;
            backend.live_nodes(timeout).await
        };
        ctx.spawn(round.into_actor(self).map(|seen, act, _| {
            act.busy = false;
            match seen {
                Ok(nodes) => act.publish(nodes),
                // The last view stands; clients keep being served from it.
                Err(e) => tracing::warn!(error = %e, "cluster heartbeat failed"),
            }
        }));
    }
}

impl Actor for Membership {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.heartbeat, Self::beat);
    }
}

/// Leave the cluster: stop routing anything here, then tell the other nodes.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Leave;

impl Handler<Leave> for Membership {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Leave, _: &mut Self::Context) -> Self::Result {
        self.leaving = true;
        let others = self.view.borrow().nodes.clone();
        self.publish(others);
        let (backend, me) = (self.backend.clone(), self.me.clone());
        Box::pin(async move {
            if let Err(e) = backend.announce(&me, false).await {
                tracing::warn!(error = %e, "could not announce leaving the cluster");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: i32) -> Node {
        Node {
            id,
            endpoints: vec![crate::backend::Endpoint {
                listener: "PLAINTEXT".into(),
                host: "h".into(),
                port: 9092,
            }],
        }
    }

    fn cluster(me: i32, ids: &[i32]) -> Cluster {
        Cluster {
            me: node(me),
            nodes: ids.iter().map(|&i| node(i)).collect(),
            registered: true,
        }
    }

    #[test]
    fn leaders_spread_over_every_node() {
        let c = cluster(1, &[1, 2, 3]);
        let tp = |p| TopicPartition {
            topic: "t".into(),
            partition: p,
        };
        let mut leaders: Vec<i32> = (0..6).map(|p| c.leader_of(&tp(p)).id).collect();
        leaders.sort();
        assert_eq!(leaders, [1, 1, 2, 2, 3, 3]);
    }

    #[test]
    fn a_node_leaving_moves_only_its_own_groups() {
        let before = cluster(1, &[1, 2, 3]);
        let after = cluster(1, &[1, 3]);
        let groups: Vec<String> = (0..200).map(|i| format!("g{i}")).collect();
        let mut owned_by_2 = 0;
        for g in &groups {
            let was = before.coordinator_of(g).id;
            if was == 2 {
                owned_by_2 += 1;
            } else {
                assert_eq!(after.coordinator_of(g).id, was, "{g} moved needlessly");
            }
        }
        assert!(owned_by_2 > 30, "node 2 owned {owned_by_2} of 200");
        // Every node agrees, whichever it is.
        assert_eq!(
            cluster(3, &[1, 3]).coordinator_of("g7"),
            after.coordinator_of("g7")
        );
    }

    #[test]
    fn a_leaving_node_coordinates_nothing() {
        let leaving = cluster(1, &[2, 3]);
        assert!((0..50).all(|i| !leaving.coordinates(&format!("g{i}"))));
        let alone = cluster(1, &[]);
        assert!(!alone.coordinates("g"));
        assert_eq!(alone.controller().id, 1, "still routable to itself");
    }
}
