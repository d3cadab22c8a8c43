//! A store for the actors' unit tests, behind the storage ports (the one real seam;
//! no Kafka or Iggy is involved): metadata tables in memory, with offset commits
//! slowed and offset reads failed on purpose, and what a gateway needs to start.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{Notify, Semaphore};

use crate::settings::{BrokerSettings, TopicRules};
use crate::store::meta::{Change, MetaAnswer, MetaCall, Scan, Since, Version};
use crate::store::*;
use crate::store::{LogAnswer, LogCall, LogStore, MetaStore};

/// Metadata tables in memory, and no topics. Offset commits take `delay`, and with a
/// `gate` those of a partition 0 wait for a permit of it, telling `entered` once they
/// are in the store;
/// offset reads are immediate, or fail as a store that cannot be reached
/// (`failing_reads`). The metadata port is served by `Arc<TestStore>`, whose clients
/// share all of it.
#[derive(Default)]
pub struct TestStore {
    pub delay: Duration,
    pub gate: Option<Arc<Semaphore>>,
    pub entered: Notify,
    pub failing_reads: std::sync::atomic::AtomicBool,
    /// Offsets in the order commits were applied.
    pub applied: Mutex<Vec<i64>>,
    /// The metadata tables.
    pub meta: MemoryMeta,
}

/// Metadata tables in memory, each with the log of its writes (its version is their
/// count), so `Since` answers changes as a shared store does. Clones share them.
#[derive(Clone, Default)]
pub struct MemoryMeta(Arc<Mutex<HashMap<&'static str, MemoryTable>>>);

#[derive(Default)]
struct MemoryTable {
    rows: BTreeMap<String, Bytes>,
    writes: Vec<Vec<Change>>,
}

impl MetaStore for MemoryMeta {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        let mut tables = self.0.lock();
        let answer = match call {
            MetaCall::Write {
                table,
                expect,
                changes,
            } => {
                let t = tables.entry(table).or_default();
                if expect
                    .iter()
                    .any(|e| t.rows.get(&e.key) != e.value.as_ref())
                {
                    return Box::pin(async { Ok(MetaAnswer::Refused) });
                }
                for c in &changes {
                    match c {
                        Change::Put { key, value } => {
                            t.rows.insert(key.clone(), value.clone());
                        }
                        Change::Delete { key } => {
                            t.rows.remove(key);
                        }
                    }
                }
                t.writes.push(changes);
                MetaAnswer::Written(t.writes.len() as Version)
            }
            MetaCall::Scan { table, prefix } => {
                let t = tables.entry(table).or_default();
                MetaAnswer::Scanned(Scan {
                    version: t.writes.len() as Version,
                    entries: t
                        .rows
                        .iter()
                        .filter(|(k, _)| k.starts_with(&prefix))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                })
            }
            MetaCall::Since { table, since } => {
                let t = tables.entry(table).or_default();
                let changes = t.writes[since as usize..].concat();
                MetaAnswer::Since(Since::Changes(t.writes.len() as Version, changes))
            }
            MetaCall::Ping | MetaCall::Flush => MetaAnswer::Done,
        };
        Box::pin(async move { Ok(answer) })
    }

    fn client(&self) -> StoreResult<Arc<dyn MetaStore>> {
        Ok(Arc::new(self.clone()))
    }
}

impl MetaStore for Arc<TestStore> {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        let offsets = |table: &str| table == crate::offsets::table::TABLE;
        match call {
            MetaCall::Write {
                table,
                expect,
                changes,
            } if offsets(table) => Box::pin(async move {
                let held = changes.iter().any(|c| {
                    crate::offsets::table::parse_key(c.key())
                        .is_some_and(|(_, tp)| tp.partition == 0)
                });
                if let (Some(gate), true) = (&self.gate, held) {
                    self.entered.notify_one();
                    gate.acquire().await.expect("gate open").forget();
                }
                tokio::time::sleep(self.delay).await;
                self.applied
                    .lock()
                    .extend(changes.iter().filter_map(|c| match c {
                        Change::Put { value, .. } => {
                            crate::offsets::table::decode(value).map(|c| c.offset)
                        }
                        Change::Delete { .. } => None,
                    }));
                let write = MetaCall::Write {
                    table,
                    expect,
                    changes,
                };
                self.meta.call(write).await
            }),
            MetaCall::Scan { table, .. }
                if offsets(table)
                    && self.failing_reads.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                Box::pin(async { Err(StoreError::unavailable("reads fail on purpose")) })
            }
            call => self.meta.call(call),
        }
    }

    fn client(&self) -> StoreResult<Arc<dyn MetaStore>> {
        Ok(Arc::new(self.clone()))
    }
}

fn unused<T>() -> StoreFuture<'static, T> {
    Box::pin(async { Err(StoreError::fatal("not used by the tests")) })
}

/// No logs at all.
impl LogStore for TestStore {
    fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer> {
        match call {
            LogCall::List => Box::pin(async { Ok(LogAnswer::Listed(Vec::new())) }),
            _ => unused(),
        }
    }

    fn log_dir(&self) -> String {
        "test".into()
    }
}

impl Users for TestStore {}

/// Settings for a gateway under test (no listener: handlers are called directly).
pub fn settings() -> BrokerSettings {
    BrokerSettings {
        node_id: 0,
        cluster_id: "test".into(),
        endpoints: vec![Endpoint {
            listener: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092,
        }],
        max_request_bytes: 1 << 20,
        max_inflight_per_connection: 5,
        idle_timeout: Duration::from_secs(60),
        read_timeout: Duration::from_secs(10),
        write_timeout: Duration::from_secs(10),
        message_max_bytes: 1 << 20,
        topic_rules: TopicRules {
            auto_create_topics_enable: false,
            num_partitions: 1,
            default_replication_factor: 1,
            delete_topics_max_names: 100,
        },
        max_connections: 10,
        limits: crate::limits::ResourceLimits {
            max_connections_per_ip: 10,
            max_connections_per_ip_overrides: Default::default(),
            max_inflight_bytes_per_connection: 1 << 20,
            queued_max_request_bytes: 1 << 20,
            max_decompressed_request_bytes: 1 << 20,
        },
        offset_slots: 2,
        transaction_slots: 2,
        offsets_commit_timeout: Duration::from_secs(5),
        group_initial_rebalance_delay: Duration::ZERO,
        transaction_max_timeout_ms: 900_000,
        transactional_id_expiration: Duration::from_millis(604_800_000),
        consumer_groups: Default::default(),
        topic_refresh_interval: Duration::from_secs(60),
        node_heartbeat: Duration::from_secs(1),
        node_timeout: Duration::from_secs(5),
        sasl: Default::default(),
        authorizer: None,
        fetch_sessions: crate::fetch_sessions::SessionLimits {
            slots: 10,
            eviction_ms: 120_000,
        },
        compaction: crate::settings::CompactionSettings {
            interval: None,
            pass_bytes: 1 << 20,
        },
        txn_index_checkpoint_interval: None,
    }
}
