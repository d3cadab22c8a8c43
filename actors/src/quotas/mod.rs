//! Client quotas: Kafka's `producer_byte_rate` and `consumer_byte_rate` per user
//! principal and client id, and `connection_creation_rate` per IP, stored in the backend (every gateway on it shares them)
//! and enforced by each gateway on its own traffic, as each Kafka broker enforces them
//! on its own (`docs/SECURITY.md`).
//!
//! The stored quotas are a shared table ([`store`]): this gateway's copy catches up
//! every refresh interval and applies its own AlterClientQuotas at once, and
//! publishes them as a [`QuotaTable`]. A Produce
//! or Fetch looks its quota up there (Kafka's precedence, most specific first) and
//! records its bytes in the [`rate::Rate`] of the entity the quota is for; over the
//! quota, the answer carries the throttle time and the connection reads nothing more
//! from the client until it has passed (KIP-219). A connection from an IP over its
//! connection rate is closed after the throttle time, unserved, as Kafka's acceptor does.

pub mod entity;
pub mod rate;
pub mod store;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{RequestKind, ResponseKind};
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

pub use entity::{
    apply, ClientQuotas, EntityType, FilterError, QuotaChange, QuotaEntity, QuotaFilter, QuotaKey,
};
use rate::Rate;

use crate::metrics::Metrics;
use crate::protocol::fetch_answer::FetchAnswer;
use crate::protocol::Answer;
use crate::session::Caller;

/// Sensors kept before idle ones are dropped (Kafka expires them after an hour idle).
const MAX_SENSORS: usize = 10_000;

/// The enforced quotas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Produce,
    Fetch,
    Connection,
}

/// One part of a quota lookup key: a name, `<default>`, or no such part.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Part {
    Named(String),
    Default,
    Absent,
}

/// An entity's (producer, consumer) byte rates, where set.
type ByteRates = (Option<f64>, Option<f64>);

/// The enforced quotas in force, indexed for the per-request lookup.
#[derive(Debug, Default, PartialEq)]
pub struct QuotaTable {
    /// User part → client-id part → byte rates.
    rates: HashMap<Part, HashMap<Part, ByteRates>>,
    /// Connection creation rates by IP; `None` is `<default>`.
    connections: HashMap<Option<IpAddr>, f64>,
}

impl QuotaTable {
    pub fn new(stored: &ClientQuotas) -> QuotaTable {
        let part = |e: &QuotaEntity, t| match e.name(t) {
            None => Part::Absent,
            Some(None) => Part::Default,
            Some(Some(n)) => Part::Named(n.to_string()),
        };
        let mut rates: HashMap<Part, HashMap<Part, _>> = HashMap::new();
        let mut connections = HashMap::new();
        for (e, values) in stored {
            if let Some(ip) = e.name(EntityType::Ip) {
                // Stored entities were checked on the way in: their IPs parse.
                let ip = match ip.map(str::parse) {
                    Some(Ok(ip)) => Some(ip),
                    Some(Err(_)) => continue,
                    None => None,
                };
                if let Some(rate) = values.get(QuotaKey::ConnectionCreationRate.name()) {
                    connections.insert(ip, *rate);
                }
                continue;
            }
            let produce = values.get(QuotaKey::ProducerByteRate.name()).copied();
            let fetch = values.get(QuotaKey::ConsumerByteRate.name()).copied();
            if produce.is_some() || fetch.is_some() {
                rates
                    .entry(part(e, EntityType::User))
                    .or_default()
                    .insert(part(e, EntityType::ClientId), (produce, fetch));
            }
        }
        QuotaTable { rates, connections }
    }

    /// How many entities have an enforced quota.
    pub fn len(&self) -> usize {
        self.rates.values().map(HashMap::len).sum::<usize>() + self.connections.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The quota of `kind` for a user and client id, with the sensor it is measured
    /// in, by Kafka's precedence: `/users/<u>/clients/<c>`, `/users/<u>/clients/<default>`,
    /// `/users/<u>`, `/users/<default>/clients/<c>`, `/users/<default>/clients/<default>`,
    /// `/users/<default>`, `/clients/<c>`, `/clients/<default>`. As in Kafka, a quota
    /// from an entity naming a part is measured per actual name of that part (each
    /// client id under `/clients/<default>` has its own), one naming no such part is
    /// shared (all of a user's clients under `/users/<u>`).
    fn resolve(&self, kind: Kind, user: &str, client: &str) -> Option<(f64, SensorKey)> {
        if self.rates.is_empty() {
            return None;
        }
        let (u, c) = (Part::Named(user.into()), Part::Named(client.into()));
        let order: [(&Part, &Part); 8] = [
            (&u, &c),
            (&u, &Part::Default),
            (&u, &Part::Absent),
            (&Part::Default, &c),
            (&Part::Default, &Part::Default),
            (&Part::Default, &Part::Absent),
            (&Part::Absent, &c),
            (&Part::Absent, &Part::Default),
        ];
        let found = order.into_iter().find_map(|(up, cp)| {
            let (produce, fetch) = self.rates.get(up)?.get(cp)?;
            let quota = match kind {
                Kind::Produce => (*produce)?,
                _ => (*fetch)?,
            };
            let name = |p: &Part, n: &str| match p {
                Part::Absent => String::new(),
                _ => n.to_string(),
            };
            Some((quota, (kind, name(up, user), name(cp, client))))
        });
        found
    }

    /// The connection creation rate of an IP (`/ips/<ip>`, else `/ips/<default>`),
    /// measured per IP.
    fn connection_rate(&self, ip: IpAddr) -> Option<(f64, SensorKey)> {
        if self.connections.is_empty() {
            return None;
        }
        let quota = self
            .connections
            .get(&Some(ip))
            .or(self.connections.get(&None))?;
        Some((*quota, (Kind::Connection, ip.to_string(), String::new())))
    }
}

/// (quota, user, client id) a rate is measured for; empty names where the quota's
/// entity has no such part.
type SensorKey = (Kind, String, String);

/// This gateway's quotas: the table in force and the rates measured against it.
#[derive(Clone)]
pub struct Quotas {
    pub store: store::QuotaStore,
    pub table: watch::Receiver<Arc<QuotaTable>>,
    sensors: Arc<RwLock<HashMap<SensorKey, Arc<Mutex<Rate>>>>>,
    epoch: Instant,
    metrics: Arc<Metrics>,
}

/// What a Produce or Fetch owes its quota, worked out as it arrives and settled once
/// its answer is ready.
pub enum Metered {
    Free,
    /// A produce's throttle time, its bytes already recorded.
    Produce(Duration),
    /// A fetch, recorded once its answer's size is known.
    Fetch {
        rate: Arc<Mutex<Rate>>,
        quota: f64,
    },
}

impl Quotas {
    pub fn new(
        (store, table): (store::QuotaStore, watch::Receiver<Arc<QuotaTable>>),
        metrics: Arc<Metrics>,
    ) -> Quotas {
        Quotas {
            store,
            table,
            sensors: Arc::default(),
            epoch: Instant::now(),
            metrics,
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Meters a request as it arrives (`size`: its frame's bytes). A Fetch asks for
    /// no more than its quota allows over a window, as Kafka caps it.
    pub fn meter(&self, caller: &Caller, size: usize, body: &mut RequestKind) -> Metered {
        let kind = match body {
            RequestKind::Produce(_) => Kind::Produce,
            RequestKind::Fetch(_) => Kind::Fetch,
            _ => return Metered::Free,
        };
        let resolved = self
            .table
            .borrow()
            .resolve(kind, &caller.principal.name, &caller.client_id);
        let Some((quota, key)) = resolved else {
            return Metered::Free;
        };
        let rate = self.sensor(key);
        match body {
            RequestKind::Fetch(f) => {
                let window_bytes = quota * ((rate::SAMPLES - 1) * rate::SAMPLE_MS) as f64 / 1e3;
                f.max_bytes = f.max_bytes.min(window_bytes.min(i32::MAX as f64) as i32);
                Metered::Fetch { rate, quota }
            }
            _ => {
                let ms = rate
                    .lock()
                    .record_and_throttle(size as f64, quota, self.now_ms());
                if ms > 0 {
                    tracing::debug!(principal = %caller.principal, client_id = %caller.client_id, ms, "produce throttled");
                    self.metrics.throttled(QuotaKey::ProducerByteRate.name());
                }
                Metered::Produce(Duration::from_millis(ms))
            }
        }
    }

    /// How long a new connection from `ip` is held before being closed unserved: zero
    /// unless it is over its IP's `connection_creation_rate`. As Kafka's
    /// `ConnectionQuotas`, a refused connection is not counted and the wait is at most
    /// one sample (1 s).
    pub fn connection_throttle(&self, ip: IpAddr) -> Duration {
        let resolved = self.table.borrow().connection_rate(ip);
        let Some((quota, key)) = resolved else {
            return Duration::ZERO;
        };
        let now = self.now_ms();
        let rate = self.sensor(key);
        let mut rate = rate.lock();
        let ms = rate.record_and_throttle(1.0, quota, now);
        if ms > 0 {
            rate.record(-1.0, now);
            let limit = QuotaKey::ConnectionCreationRate.name();
            self.metrics.connection_refused(limit);
        }
        Duration::from_millis(ms.min(rate::SAMPLE_MS))
    }

    /// Settles a metered request against its answer: the throttle time goes into the
    /// answer, and a throttled Fetch answers nothing (its bytes are not counted), as
    /// Kafka's. Returns how long the connection must stay muted.
    pub fn settle(&self, metered: Metered, version: i16, answer: &mut Answer) -> Duration {
        let throttle = match metered {
            Metered::Free => return Duration::ZERO,
            Metered::Produce(d) => d,
            Metered::Fetch { rate, quota } => {
                let Answer::Fetch(f) = answer else {
                    return Duration::ZERO;
                };
                let size = f.size(version) as f64;
                let now = self.now_ms();
                let mut rate = rate.lock();
                let ms = rate.record_and_throttle(size, quota, now);
                if ms > 0 {
                    rate.record(-size, now);
                    **f = FetchAnswer::default();
                    self.metrics.throttled(QuotaKey::ConsumerByteRate.name());
                }
                Duration::from_millis(ms)
            }
        };
        let ms = i32::try_from(throttle.as_millis()).unwrap_or(i32::MAX);
        match answer {
            Answer::Send(response) => {
                if let ResponseKind::Produce(p) = response.as_mut() {
                    p.throttle_time_ms = ms;
                }
            }
            Answer::Fetch(f) => f.set_throttle_time_ms(ms),
            _ => {}
        }
        throttle
    }

    /// The rate an entity is measured in, made on first use; idle ones go once there
    /// are many.
    fn sensor(&self, key: SensorKey) -> Arc<Mutex<Rate>> {
        if let Some(rate) = self.sensors.read().get(&key) {
            return rate.clone();
        }
        let mut sensors = self.sensors.write();
        if sensors.len() >= MAX_SENSORS {
            let now = self.now_ms();
            let window = rate::SAMPLES * rate::SAMPLE_MS;
            sensors.retain(|_, r| now.saturating_sub(r.lock().last_ms()) < window);
        }
        sensors.entry(key).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Entity<'a> = &'a [(&'a str, Option<&'a str>)];

    fn table(entries: &[(Entity, &str, f64)]) -> QuotaTable {
        let mut stored = ClientQuotas::new();
        for (parts, key, value) in entries {
            let change = QuotaChange {
                entity: QuotaEntity::parse(parts.iter().copied()).unwrap(),
                key: key.to_string(),
                value: Some(*value),
            };
            apply(&mut stored, [change]);
        }
        QuotaTable::new(&stored)
    }

    const P: &str = "producer_byte_rate";
    const C: &str = "consumer_byte_rate";

    #[test]
    fn the_most_specific_quota_wins_per_key() {
        let t = table(&[
            (&[("client-id", None)], P, 1.0),
            (&[("client-id", Some("c"))], P, 2.0),
            (&[("user", None)], P, 3.0),
            (&[("user", Some("u")), ("client-id", Some("c"))], C, 9.0),
            (&[("user", Some("u"))], P, 4.0),
        ]);
        let key = |u: &str, c: &str| (Kind::Produce, u.to_string(), c.to_string());
        assert_eq!(
            t.resolve(Kind::Produce, "u", "c"),
            Some((4.0, key("u", "")))
        );
        assert_eq!(
            t.resolve(Kind::Produce, "v", "c"),
            Some((3.0, key("v", "")))
        );
        assert_eq!(
            t.resolve(Kind::Fetch, "u", "c"),
            Some((9.0, (Kind::Fetch, "u".into(), "c".into())))
        );
        assert_eq!(t.resolve(Kind::Fetch, "u", "d"), None);
        let clients = table(&[
            (&[("client-id", None)], P, 1.0),
            (&[("client-id", Some("c"))], P, 2.0),
        ]);
        assert_eq!(
            clients.resolve(Kind::Produce, "u", "c"),
            Some((2.0, key("", "c")))
        );
        // Each client id under the default has its own sensor.
        assert_eq!(
            clients.resolve(Kind::Produce, "u", "d"),
            Some((1.0, key("", "d")))
        );
        assert_eq!(table(&[]).resolve(Kind::Produce, "u", "c"), None);
    }

    #[test]
    fn an_ip_has_its_own_rate_else_the_default() {
        let rate = "connection_creation_rate";
        let t = table(&[
            (&[("ip", None)], rate, 5.0),
            (&[("ip", Some("10.0.0.1"))], rate, 2.0),
        ]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let key = |s: &str| (Kind::Connection, s.to_string(), String::new());
        assert_eq!(
            t.connection_rate(ip("10.0.0.1")),
            Some((2.0, key("10.0.0.1")))
        );
        assert_eq!(
            t.connection_rate(ip("10.0.0.2")),
            Some((5.0, key("10.0.0.2")))
        );
        assert_eq!(t.resolve(Kind::Produce, "u", "c"), None);
    }
}
