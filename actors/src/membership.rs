//! The membership actor: this gateway as one node of a cluster of gateways sharing a
//! backend.
//!
//! Every heartbeat it announces itself alive in table `nodes` of the metadata store
//! and reads who else is, then publishes a [`Cluster`] view. Each gateway computes partition leaders and
//! group coordinators from the same view with the same hashes, so they agree without
//! talking to each other. A node whose announcements stop drops out of every view
//! after `node_timeout`; a node shutting down announces it is leaving first. On a store
//! no other gateway shares (the embedded one) the cluster is this gateway alone.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::partitions::Partitions;
use crate::store::meta::{Change, Since, Version};
use crate::store::Meta;
use crate::store::{Endpoint, Node, StoreError, StoreResult, TopicPartition};

/// The live nodes as this gateway last saw them.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub me: Node,
    /// Live nodes by id; holds `me` unless it is leaving.
    pub nodes: Vec<Node>,
    /// This node has announced itself and read the others at least once.
    pub registered: bool,
    /// Counts the lease's lapses: a view of a later term means what was held under an
    /// earlier one may have been changed by others meanwhile.
    pub term: u64,
    /// How long this view may be acted on as coordinator; shared by every view.
    lease: Arc<Lease>,
}

/// How long a gateway may act on its view: `node_timeout` from the start of its last
/// heartbeat round that reached the store. Past it the others may have dropped it and
/// taken its groups and transactions over (the process was paused, its link cut), so it
/// coordinates nothing until a round succeeds again, and then it publishes a new view,
/// so what its coordinators held from before is read again from the store.
#[derive(Debug)]
struct Lease {
    base: Instant,
    /// Milliseconds after `base`; `u64::MAX` on a store no other gateway shares.
    until_ms: AtomicU64,
}

impl Lease {
    fn held(&self) -> bool {
        (self.base.elapsed().as_millis() as u64) < self.until_ms.load(Ordering::Acquire)
    }

    fn renew(&self, round_started: Instant, timeout: Duration) {
        let until = round_started.saturating_duration_since(self.base) + timeout;
        self.until_ms
            .store(until.as_millis() as u64, Ordering::Release);
    }
}

impl Cluster {
    pub fn single(me: Node) -> Cluster {
        Cluster {
            nodes: vec![me.clone()],
            me,
            registered: false,
            term: 0,
            lease: Arc::new(Lease {
                base: Instant::now(),
                until_ms: AtomicU64::new(u64::MAX),
            }),
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

    /// Whether this gateway coordinates `group` now: its view names it, and the view
    /// is held (`Lease`).
    pub fn coordinates(&self, group: &str) -> bool {
        !self.nodes.is_empty() && self.coordinator_of(group).id == self.me.id && self.held()
    }

    /// Whether this view may be acted on as coordinator now (`Lease`).
    pub fn held(&self) -> bool {
        self.lease.held()
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

/// A node's announcement, as table `nodes` keeps it under the node's id: JSON with
/// every listener's advertised address, whether it is alive, and a count that moves
/// with every heartbeat, so each one is a change the others see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Announcement {
    alive: bool,
    beat: u64,
    listeners: Vec<(String, String, u16)>,
}

const NODES: &str = "nodes";
const NODE_IDS: &str = "node-ids";

impl Announcement {
    fn of(node: &Node, alive: bool, beat: u64) -> Announcement {
        let listeners = node
            .endpoints
            .iter()
            .map(|e| (e.listener.clone(), e.host.clone(), e.port))
            .collect();
        Announcement {
            alive,
            beat,
            listeners,
        }
    }

    fn node(&self, id: i32) -> Node {
        let endpoints = self
            .listeners
            .iter()
            .map(|(listener, host, port)| Endpoint {
                listener: listener.clone(),
                host: host.clone(),
                port: *port,
            })
            .collect();
        Node { id, endpoints }
    }

    fn change(&self, id: i32) -> Change {
        Change::Put {
            key: id.to_string(),
            value: serde_json::to_vec(self)
                .expect("announcements serialize")
                .into(),
        }
    }
}

/// The node id of the gateway advertising `address` (`host:port`) on a store gateways
/// share: the one it had before if it ran at that address, else one no other gateway
/// holds (from the version of the write that claims it, unique to the table: the
/// first gateway gets 0, as a gateway alone has by default).
pub async fn allocate_node_id(meta: &Meta, address: &str) -> StoreResult<i32> {
    let known = meta.scan(NODE_IDS, address).await?;
    if let Some((_, id)) = known.entries.iter().find(|(a, _)| a == address) {
        let id = std::str::from_utf8(id).ok().and_then(|s| s.parse().ok());
        return id.ok_or_else(|| StoreError::fatal(format!("node id of {address} is unreadable")));
    }
    let claim = Change::Put {
        key: String::new(),
        value: address.as_bytes().to_vec().into(),
    };
    let version = meta.write(NODE_IDS, vec![claim]).await?;
    let id = i32::try_from(version - 1).map_err(|_| StoreError::fatal("node ids exhausted"))?;
    let named = Change::Put {
        key: address.to_string(),
        value: id.to_string().into(),
    };
    meta.write(NODE_IDS, vec![named]).await?;
    Ok(id)
}

/// What this gateway has read of table `nodes`: each node's announcement and when it
/// last changed, by this gateway's own clock (so skewed clocks do not matter).
#[derive(Default)]
struct Seen {
    version: Version,
    latest: HashMap<i32, (Announcement, Instant)>,
}

impl Seen {
    /// Reads what changed since the last read (everything, the first time or when the
    /// store no longer holds what came between).
    async fn catch_up(&mut self, meta: &Meta) -> StoreResult<()> {
        let now = Instant::now();
        let changes = match meta.since(NODES, self.version).await? {
            Since::Changes(version, changes) => {
                self.version = version;
                changes
            }
            Since::Gone => {
                let scan = meta.scan(NODES, "").await?;
                self.version = scan.version;
                self.latest.clear();
                scan.entries
                    .into_iter()
                    .map(|(key, value)| Change::Put { key, value })
                    .collect()
            }
        };
        for change in changes {
            let Ok(id) = change.key().parse::<i32>() else {
                continue;
            };
            match change {
                Change::Put { value, .. } => match serde_json::from_slice::<Announcement>(&value) {
                    Ok(a) => {
                        // Two live gateways cannot share an address: an older id with
                        // the same one is this gateway's predecessor, restarted in place.
                        let first = a.listeners.first().cloned();
                        self.latest.retain(|other, (old, _)| {
                            *other == id || old.listeners.first().cloned() != first
                        });
                        self.latest.insert(id, (a, now));
                    }
                    Err(e) => {
                        tracing::warn!(node = id, error = %e, "skipping an unreadable announcement")
                    }
                },
                Change::Delete { .. } => {
                    self.latest.remove(&id);
                }
            }
        }
        Ok(())
    }

    /// Nodes that said they are alive within `timeout`.
    fn live(&self, timeout: Duration) -> Vec<Node> {
        let mut live: Vec<Node> = self
            .latest
            .iter()
            .filter(|(_, (a, at))| a.alive && at.elapsed() <= timeout)
            .map(|(id, (a, _))| a.node(*id))
            .collect();
        live.sort_by_key(|n| n.id);
        live
    }
}

pub struct Membership {
    /// A client of its own: heartbeats never queue behind other calls.
    meta: Meta,
    me: Node,
    heartbeat: Duration,
    timeout: Duration,
    leaving: bool,
    /// A heartbeat round is running; the next tick skips rather than piles up.
    busy: bool,
    beats: u64,
    seen: Arc<tokio::sync::Mutex<Seen>>,
    partitions: Partitions,
    view: watch::Sender<Arc<Cluster>>,
}

/// Announces `me` and reads who else is alive.
async fn round(
    meta: &Meta,
    seen: &tokio::sync::Mutex<Seen>,
    (me, alive, beat): (&Node, bool, u64),
    timeout: Duration,
) -> StoreResult<Vec<Node>> {
    meta.write(NODES, vec![Announcement::of(me, alive, beat).change(me.id)])
        .await?;
    let mut seen = seen.lock().await;
    seen.catch_up(meta).await?;
    Ok(seen.live(timeout))
}

impl Membership {
    /// Registers this node (its first heartbeat) and starts the actor; the receiver
    /// always holds the latest view. On a store no other gateway shares, the cluster is
    /// this gateway alone and nothing is announced.
    pub async fn start_with(
        meta: &Meta,
        me: Node,
        (heartbeat, timeout): (Duration, Duration),
        partitions: Partitions,
    ) -> Result<(Addr<Membership>, watch::Receiver<Arc<Cluster>>), StoreError> {
        let meta = meta.client()?;
        let seen = Arc::new(tokio::sync::Mutex::new(Seen::default()));
        let (shared, started) = (meta.shared(), Instant::now());
        let live = if shared {
            round(&meta, &seen, (&me, true, 0), timeout).await?
        } else {
            Vec::new()
        };
        let (view, rx) = watch::channel(Arc::new(Cluster::single(me.clone())));
        let mut actor = Membership {
            meta,
            me,
            heartbeat,
            timeout,
            leaving: false,
            busy: false,
            beats: 0,
            seen,
            partitions,
            view,
        };
        actor.publish(live, shared.then_some(started));
        Ok((actor.start(), rx))
    }

    /// Publishes the view of `nodes`, seen by a heartbeat round that started at
    /// `round`, which renews the lease; a new view also when the lease had lapsed,
    /// though the nodes are the same.
    fn publish(&mut self, mut nodes: Vec<Node>, round: Option<Instant>) {
        nodes.retain(|n| n.id != self.me.id);
        if !self.leaving {
            nodes.push(self.me.clone());
        }
        nodes.sort_by_key(|n| n.id);
        nodes.dedup_by_key(|n| n.id);
        let was = self.view.borrow().clone();
        let lapsed = !was.lease.held();
        if let Some(started) = round {
            was.lease.renew(started, self.timeout);
        }
        if was.nodes == nodes && !lapsed {
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
            lapsed,
            "cluster membership changed"
        );
        // Partitions may have been appended to through other nodes: idempotent
        // producer state is read again from the store before its next use.
        self.partitions.forget_producers();
        self.view.send_replace(Arc::new(Cluster {
            nodes,
            registered: true,
            term: was.term + u64::from(lapsed),
            ..(*was).clone()
        }));
    }

    fn beat(&mut self, ctx: &mut Context<Self>) {
        if self.busy || self.leaving || !self.meta.shared() {
            return;
        }
        self.busy = true;
        self.beats += 1;
        let (meta, seen, me) = (self.meta.clone(), self.seen.clone(), self.me.clone());
        let (beat, timeout) = (self.beats, self.timeout);
        let started = Instant::now();
        let round = async move { round(&meta, &seen, (&me, true, beat), timeout).await };
        ctx.spawn(round.into_actor(self).map(move |seen, act, _| {
            act.busy = false;
            match seen {
                Ok(nodes) => act.publish(nodes, Some(started)),
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
        self.publish(others, None);
        let (meta, me, beat) = (self.meta.clone(), self.me.clone(), self.beats + 1);
        Box::pin(async move {
            if !meta.shared() {
                return;
            }
            let left = Announcement::of(&me, false, beat).change(me.id);
            if let Err(e) = meta.write(NODES, vec![left]).await {
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
            endpoints: vec![crate::store::Endpoint {
                listener: "PLAINTEXT".into(),
                host: "h".into(),
                port: 9092,
            }],
        }
    }

    fn cluster(me: i32, ids: &[i32]) -> Cluster {
        Cluster {
            nodes: ids.iter().map(|&i| node(i)).collect(),
            registered: true,
            ..Cluster::single(node(me))
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
