//! How much of the gateway one client may hold: connections in total and per source
//! address (Kafka's `max.connections` and `max.connections.per.ip`, with per-address
//! overrides), and bytes of requests in flight per connection and in total (Kafka's
//! `queued.max.request.bytes`). Connections over a cap are closed on accept; requests
//! over a byte budget wait unread on the socket (back-pressure, not buffering).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;

/// The resource limits of [`crate::BrokerSettings`].
#[derive(Clone, Debug)]
pub struct ResourceLimits {
    /// Connections one source address may hold open (`max.connections.per.ip`).
    pub max_connections_per_ip: usize,
    /// Per-address exceptions to `max_connections_per_ip` (`max.connections.per.ip.overrides`).
    pub max_connections_per_ip_overrides: HashMap<IpAddr, usize>,
    /// Bytes of requests one connection may have read and not yet answered.
    pub max_inflight_bytes_per_connection: usize,
    /// Bytes of requests all connections together may have read and not yet answered.
    pub queued_max_request_bytes: usize,
    /// Bytes the records of one Produce request may decompress to.
    pub max_decompressed_request_bytes: usize,
}

/// Why a connection was refused on accept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("connection limit of {0} reached")]
    Total(usize),
    #[error("connection limit of {0} for this address reached")]
    PerIp(usize),
}

impl Refused {
    /// The metric label: the setting that refused it.
    pub fn setting(&self) -> &'static str {
        match self {
            Refused::Total(_) => "max_connections",
            Refused::PerIp(_) => "max_connections_per_ip",
        }
    }
}

/// Open connections, counted in total and per source address.
pub struct ConnectionLimits {
    total: Arc<Semaphore>,
    max_total: usize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    max_per_ip: usize,
    overrides: HashMap<IpAddr, usize>,
    metrics: Arc<Metrics>,
}

impl ConnectionLimits {
    pub fn new(
        max_total: usize,
        limits: &ResourceLimits,
        metrics: Arc<Metrics>,
    ) -> Arc<ConnectionLimits> {
        Arc::new(ConnectionLimits {
            total: Arc::new(Semaphore::new(max_total)),
            max_total,
            per_ip: Mutex::new(HashMap::new()),
            max_per_ip: limits.max_connections_per_ip,
            overrides: limits.max_connections_per_ip_overrides.clone(),
            metrics,
        })
    }

    /// A place for a new connection from `ip`, held until the slot is dropped; refused
    /// (and counted) when either cap is reached.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionSlot, Refused> {
        let refused = |r: Refused| {
            self.metrics.connection_refused(r.setting());
            Err(r)
        };
        let Ok(total) = self.total.clone().try_acquire_owned() else {
            return refused(Refused::Total(self.max_total));
        };
        let cap = self.overrides.get(&ip).copied().unwrap_or(self.max_per_ip);
        let mut per_ip = self.per_ip.lock();
        let open = per_ip.entry(ip).or_default();
        if *open >= cap {
            if *open == 0 {
                per_ip.remove(&ip);
            }
            return refused(Refused::PerIp(cap));
        }
        *open += 1;
        Ok(ConnectionSlot {
            _total: total,
            ip,
            limits: self.clone(),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max_total - self.total.available_permits()
    }
}

/// A connection's place under the caps, given back when dropped.
pub struct ConnectionSlot {
    _total: OwnedSemaphorePermit,
    ip: IpAddr,
    limits: Arc<ConnectionLimits>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut per_ip = self.limits.per_ip.lock();
        if let Some(open) = per_ip.get_mut(&self.ip) {
            *open -= 1;
            if *open == 0 {
                per_ip.remove(&self.ip);
            }
        }
    }
}

/// A byte budget of requests in flight: one per connection, one for the gateway.
#[derive(Clone)]
pub struct ByteBudget {
    bytes: Arc<Semaphore>,
    capacity: usize,
}

impl ByteBudget {
    pub fn new(capacity: usize) -> ByteBudget {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        ByteBudget {
            bytes: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    /// Waits until `size` bytes are free and takes them. A request larger than the
    /// whole budget takes all of it, so it is served alone rather than never.
    pub async fn take(&self, size: usize) -> OwnedSemaphorePermit {
        let n = size.min(self.capacity) as u32;
        self.bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .expect("budget semaphores are never closed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_ip: usize, overrides: &[(&str, usize)]) -> Arc<ConnectionLimits> {
        let overrides = overrides.iter().map(|(ip, n)| (ip.parse().unwrap(), *n));
        let settings = ResourceLimits {
            max_connections_per_ip: per_ip,
            max_connections_per_ip_overrides: overrides.collect(),
            max_inflight_bytes_per_connection: 1,
            queued_max_request_bytes: 1,
            max_decompressed_request_bytes: 1,
        };
        ConnectionLimits::new(5, &settings, Metrics::new())
    }

    #[test]
    fn caps_per_address_with_overrides_and_in_total() {
        let l = limits(2, &[("10.0.0.9", 3)]);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.9".parse().unwrap();
        let first = l.admit(a).unwrap();
        let _second = l.admit(a).unwrap();
        assert_eq!(l.admit(a).err(), Some(Refused::PerIp(2)));
        drop(first);
        let _third = l.admit(a).unwrap();
        let held: Vec<_> = (0..3).map(|_| l.admit(b).unwrap()).collect();
        assert_eq!(l.open(), 5);
        assert_eq!(
            l.admit("10.0.0.2".parse().unwrap()).err(),
            Some(Refused::Total(5))
        );
        drop(held);
        assert_eq!(l.open(), 2);
        assert_eq!(l.per_ip.lock().len(), 1, "closed addresses are forgotten");
    }

    #[tokio::test]
    async fn a_request_over_the_whole_budget_takes_all_of_it() {
        let budget = ByteBudget::new(100);
        let all = budget.take(1_000).await;
        assert_eq!(budget.bytes.available_permits(), 0);
        drop(all);
        let _some = budget.take(60).await;
        let blocked = tokio::time::timeout(std::time::Duration::from_millis(50), budget.take(60));
        assert!(
            blocked.await.is_err(),
            "60 + 60 bytes fit in a budget of 100"
        );
    }
}
