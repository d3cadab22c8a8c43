//! The embedded store: the default backend, on disk under the data directory, built
//! on fjall (an LSM-tree key-value store; `docs/STORAGE.md` says why).
//!
//! Layout. Keyspace `meta` holds topic definitions (`topic/<name>` → JSON), the shared
//! cluster configurations (`cluster/<name>` → JSON), SCRAM credentials
//! (`scram/<mechanism>/<user>` → JSON), the ACL bindings (`acl/<binding as JSON>`, no
//! value: a set), client quotas (`quota/<[entity, key] as JSON>` → value) and the
//! producer-id block. Each topic has two keyspaces, named after its id: `r<id>` maps
//! `partition ‖ base offset` (big-endian, so keys sort by offset) to the record batch
//! exactly as served, and `i<id>` maps the same key to a 38-byte [`IndexEntry`]. Both are
//! written in one atomic fjall batch. At start the small index entries are read into
//! memory; Fetch finds its batches there and reads them with one range scan.
//!
//! Blocking work (writes, reads, fsync) runs on tokio's blocking pool, never on an
//! actor's thread.

mod index;
mod log;
mod offsets;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use iggy_kafka_actors::backend::{
    AclBinding, AppendBatch, Appended, Backend, BackendError, BackendFuture, BackendResult,
    ClientQuotas, ClusterConfigs, CommittedOffset, QuotaChange, ReadBatches, ScramCredential,
    ScramCredentials, ScramMechanism, TimestampedOffset, TopicLimits, TopicMeta, TopicPartition,
};
use iggy_kafka_actors::protocol::records;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::credentials::StoredCredential;
use crate::stored_acl::StoredAcl;
use crate::stored_quota::{stored_entity, StoredQuota};
use index::{IndexEntry, PartitionIndex};
use offsets::Offsets;

/// Producer ids are taken from disk in blocks, so handing one out rarely syncs.
const PRODUCER_ID_BLOCK: i64 = 1_000;
const PRODUCER_ID_KEY: &str = "producer-id-block-end";
const TOPIC_PREFIX: &str = "topic/";
const CLUSTER_PREFIX: &str = "cluster/";
const SCRAM_PREFIX: &str = "scram/";
const ACL_PREFIX: &str = "acl/";
const QUOTA_PREFIX: &str = "quota/";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage engine: {0}")]
    Engine(#[from] fjall::Error),
    #[error("stored topic definition '{key}' is unreadable: {source}")]
    BadTopic {
        key: String,
        source: serde_json::Error,
    },
    #[error("stored cluster configuration '{0}' is unreadable")]
    BadClusterConfig(String),
    #[error("stored SCRAM credential '{0}' is unreadable")]
    BadScramCredential(String),
    #[error("stored ACL '{key}' is unreadable: {reason}")]
    BadAcl { key: String, reason: String },
    #[error("stored client quota '{key}' is unreadable: {reason}")]
    BadQuota { key: String, reason: String },
    #[error("committed offsets of group '{0}' are unreadable")]
    BadOffset(String),
    #[error("index of topic '{topic}' is damaged: {detail}")]
    BadIndex { topic: String, detail: String },
}

impl From<StoreError> for BackendError {
    fn from(e: StoreError) -> Self {
        BackendError::Fatal(e.to_string())
    }
}

/// A topic definition as stored in `meta`.
#[derive(Serialize, Deserialize)]
struct StoredTopic {
    name: String,
    id: uuid::Uuid,
    partitions: i32,
    replication_factor: i16,
    configs: BTreeMap<String, String>,
}

struct TopicLog {
    /// Locked for the configurations, which AlterConfigs changes.
    meta: RwLock<TopicMeta>,
    records: Keyspace,
    index: Keyspace,
    partitions: Vec<Mutex<PartitionIndex>>,
}

struct ProducerIds {
    next: i64,
    block_end: i64,
}

/// When appended data is forced to disk. Every policy hands each batch to the OS
/// before it is acknowledged, so a crash of the gateway process loses nothing;
/// they differ in what a crash of the machine can lose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fdatasync before each acknowledgement: nothing acknowledged is lost.
    EveryBatch,
    /// fdatasync on a timer: a machine crash loses at most that interval.
    Every(Duration),
    /// Left to the OS's writeback.
    Never,
}

pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    meta: Keyspace,
    offsets: Offsets,
    topics: RwLock<HashMap<Arc<str>, Arc<TopicLog>>>,
    append_persist: PersistMode,
    producer_ids: Mutex<ProducerIds>,
}

impl EmbeddedStore {
    /// Opens (or creates) the store and loads every topic's index.
    pub fn open(dir: &Path, sync: SyncPolicy) -> Result<Self, StoreError> {
        let db = Database::builder(dir.join("fjall"))
            // Batches usually arrive compressed by the producer already.
            .journal_compression(fjall::CompressionType::None)
            .open()?;
        let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
        let offsets = Offsets::new(db.keyspace("offsets", KeyspaceCreateOptions::default)?);
        let mut topics = HashMap::new();
        for kv in meta.prefix(TOPIC_PREFIX) {
            let (key, value) = kv.into_inner()?;
            let stored: StoredTopic =
                serde_json::from_slice(&value).map_err(|source| StoreError::BadTopic {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    source,
                })?;
            let meta = TopicMeta {
                name: stored.name.into(),
                id: stored.id,
                partitions: stored.partitions,
                replication_factor: stored.replication_factor,
                configs: stored.configs,
            };
            let name = meta.name.clone();
            topics.insert(name, Arc::new(open_log(&db, meta, true)?));
        }
        let block_end = match meta.get(PRODUCER_ID_KEY)? {
            Some(v) => i64::from_be_bytes(v.as_ref().try_into().unwrap_or([0; 8])),
            None => 0,
        };
        let inner = Arc::new(Inner {
            db,
            meta,
            offsets,
            topics: RwLock::new(topics),
            append_persist: match sync {
                SyncPolicy::EveryBatch => PersistMode::SyncData,
                SyncPolicy::Every(_) | SyncPolicy::Never => PersistMode::Buffer,
            },
            producer_ids: Mutex::new(ProducerIds {
                next: block_end,
                block_end,
            }),
        });
        if let SyncPolicy::Every(interval) = sync {
            spawn_syncer(Arc::downgrade(&inner), interval);
        }
        Ok(EmbeddedStore { inner })
    }
}

/// Syncs the journal on an interval until the store is dropped.
fn spawn_syncer(store: std::sync::Weak<Inner>, every: Duration) {
    std::thread::Builder::new()
        .name("embedded-fsync".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let Some(store) = store.upgrade() else { return };
            if let Err(e) = store.db.persist(PersistMode::SyncData) {
                tracing::error!(error = %e, "periodic fsync failed");
            }
        })
        .map(drop)
        .unwrap_or_else(|e| tracing::error!(error = %e, "could not start the fsync thread"));
}

fn keyspace_names(meta: &TopicMeta) -> (String, String) {
    let id = meta.id.simple();
    (format!("r{id}"), format!("i{id}"))
}

/// Record batches are large, written once and read in order: key-value separation
/// keeps them out of compaction (written to a blob file once, not rewritten level by
/// level), and no compression, since producers usually compress batches already and
/// the CPU is better spent serving them.
fn record_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .data_block_compression_policy(fjall::config::CompressionPolicy::disabled())
        .with_kv_separation(Some(
            fjall::KvSeparationOptions::default().compression(fjall::CompressionType::None),
        ))
}

/// Opens a topic's keyspaces; `load` reads the index back into memory.
fn open_log(db: &Database, meta: TopicMeta, load: bool) -> Result<TopicLog, StoreError> {
    let (r, i) = keyspace_names(&meta);
    let records = db.keyspace(&r, record_options)?;
    let index = db.keyspace(&i, KeyspaceCreateOptions::default)?;
    let mut partitions: Vec<PartitionIndex> = (0..meta.partitions)
        .map(|_| PartitionIndex::default())
        .collect();
    if load {
        for kv in index.iter() {
            let (key, value) = kv.into_inner()?;
            let bad = |detail: String| StoreError::BadIndex {
                topic: meta.name.to_string(),
                detail,
            };
            let (partition, _) = index::decode_key(&key).ok_or_else(|| bad("short key".into()))?;
            let entry = IndexEntry::decode(&value).ok_or_else(|| bad("short entry".into()))?;
            partitions
                .get_mut(partition as usize)
                .ok_or_else(|| bad(format!("partition {partition} out of range")))?
                .push(entry);
        }
    }
    Ok(TopicLog {
        meta: RwLock::new(meta),
        records,
        index,
        partitions: partitions.into_iter().map(Mutex::new).collect(),
    })
}

impl Inner {
    fn log(&self, tp: &TopicPartition) -> BackendResult<Arc<TopicLog>> {
        let topics = self.topics.read();
        let log = topics
            .get(&tp.topic)
            .ok_or_else(|| BackendError::UnknownTopic(tp.topic.to_string()))?;
        if tp.partition < 0 || tp.partition as usize >= log.partitions.len() {
            return Err(BackendError::UnknownPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            });
        }
        Ok(log.clone())
    }

    fn append(&self, tp: &TopicPartition, batch: AppendBatch) -> BackendResult<Appended> {
        let log = self.log(tp)?;
        let slot = &log.partitions[tp.partition as usize];
        // Appends to one partition never overlap (its log slot serializes them), so the
        // offset read here is still the next one when the write lands.
        let base_offset = slot.lock().watermarks().high;
        let placed = records::place(batch.bytes, base_offset);
        let entry = IndexEntry::new(base_offset, &batch.header, placed.len());
        let key = index::encode_key(tp.partition, base_offset);
        let mut write = self.db.batch().durability(Some(self.append_persist));
        write.insert(&log.records, key, placed);
        write.insert(&log.index, key, entry.encode());
        write.commit().map_err(StoreError::from)?;
        let mut index = slot.lock();
        index.push(entry);
        Ok(Appended {
            base_offset,
            watermarks: index.watermarks(),
        })
    }

    fn read(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> BackendResult<ReadBatches> {
        let log = self.log(tp)?;
        let (range, watermarks) = {
            let index = log.partitions[tp.partition as usize].lock();
            (index.batches_from(offset, max_bytes), index.watermarks())
        };
        let Some((first, last)) = range else {
            return Ok(ReadBatches {
                batches: Vec::new(),
                watermarks,
            });
        };
        let from = index::encode_key(tp.partition, first);
        let to = index::encode_key(tp.partition, last);
        let mut batches = Vec::new();
        for kv in log.records.range(from..=to) {
            batches.push(Bytes::from(kv.value().map_err(StoreError::from)?));
        }
        Ok(ReadBatches {
            batches,
            watermarks,
        })
    }

    /// The stored batch starting at `base_offset`, decoded.
    fn records_of(
        &self,
        log: &TopicLog,
        partition: i32,
        base_offset: i64,
    ) -> BackendResult<Vec<kafka_protocol::records::Record>> {
        let value = log
            .records
            .get(index::encode_key(partition, base_offset))
            .map_err(StoreError::from)?
            .ok_or_else(|| {
                BackendError::Fatal(format!("batch at offset {base_offset} is missing"))
            })?;
        let mut bytes = Bytes::from(value);
        kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes)
            .map(|set| set.records)
            .map_err(|e| {
                BackendError::Fatal(format!(
                    "stored batch at offset {base_offset} is unreadable: {e}"
                ))
            })
    }

    /// The first record in the batch at `base_offset` matching `wanted`.
    fn find_record(
        &self,
        tp: &TopicPartition,
        base_offset: Option<i64>,
        wanted: impl Fn(i64) -> bool,
    ) -> BackendResult<Option<TimestampedOffset>> {
        let Some(base_offset) = base_offset else {
            return Ok(None);
        };
        let log = self.log(tp)?;
        Ok(self
            .records_of(&log, tp.partition, base_offset)?
            .into_iter()
            .find(|r| wanted(r.timestamp))
            .map(|r| TimestampedOffset {
                offset: r.offset,
                timestamp: r.timestamp,
            }))
    }

    /// Writes a topic's definition and makes it durable.
    fn store_topic(&self, topic: &TopicMeta) -> BackendResult<()> {
        let stored = StoredTopic {
            name: topic.name.to_string(),
            id: topic.id,
            partitions: topic.partitions,
            replication_factor: topic.replication_factor,
            configs: topic.configs.clone(),
        };
        let json = serde_json::to_vec(&stored).map_err(|e| BackendError::Fatal(e.to_string()))?;
        self.meta
            .insert(format!("{TOPIC_PREFIX}{}", topic.name), json)
            .map_err(StoreError::from)?;
        self.persist()
    }

    fn persist(&self) -> BackendResult<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(StoreError::from)?;
        Ok(())
    }

    fn create_topic(&self, topic: TopicMeta) -> BackendResult<()> {
        let mut topics = self.topics.write();
        if topics.contains_key(&topic.name) {
            return Err(BackendError::TopicExists(topic.name.to_string()));
        }
        self.store_topic(&topic)?;
        let name = topic.name.clone();
        topics.insert(name, Arc::new(open_log(&self.db, topic, false)?));
        Ok(())
    }

    fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> BackendResult<()> {
        let topics = self.topics.read();
        let log = topics
            .get(name)
            .ok_or_else(|| BackendError::UnknownTopic(name.to_string()))?;
        let mut meta = log.meta.write();
        let altered = TopicMeta {
            configs,
            ..meta.clone()
        };
        self.store_topic(&altered)?;
        *meta = altered;
        Ok(())
    }

    fn cluster_configs(&self) -> BackendResult<ClusterConfigs> {
        let mut out = ClusterConfigs::new();
        for kv in self.meta.prefix(CLUSTER_PREFIX) {
            let (key, value) = kv.into_inner().map_err(StoreError::from)?;
            let name = String::from_utf8_lossy(&key[CLUSTER_PREFIX.len()..]).into_owned();
            let values = serde_json::from_slice(&value)
                .map_err(|_| StoreError::BadClusterConfig(name.clone()))?;
            out.insert(name, values);
        }
        Ok(out)
    }

    fn set_cluster_config(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> BackendResult<()> {
        let key = format!("{CLUSTER_PREFIX}{name}");
        if values.is_empty() {
            self.meta.remove(key).map_err(StoreError::from)?;
        } else {
            let json =
                serde_json::to_vec(&values).map_err(|e| BackendError::Fatal(e.to_string()))?;
            self.meta.insert(key, json).map_err(StoreError::from)?;
        }
        self.persist()
    }

    fn scram_credentials(&self) -> BackendResult<ScramCredentials> {
        let mut out = ScramCredentials::new();
        for kv in self.meta.prefix(SCRAM_PREFIX) {
            let (key, value) = kv.into_inner().map_err(StoreError::from)?;
            let key = String::from_utf8_lossy(&key[SCRAM_PREFIX.len()..]).into_owned();
            let bad = || StoreError::BadScramCredential(key.clone());
            let (mechanism, user) = key.split_once('/').ok_or_else(bad)?;
            let mechanism = ScramMechanism::from_name(mechanism).ok_or_else(bad)?;
            let credential = serde_json::from_slice::<StoredCredential>(&value)
                .ok()
                .and_then(|c| c.credential())
                .ok_or_else(bad)?;
            out.entry(user.to_string())
                .or_default()
                .insert(mechanism, credential);
        }
        Ok(out)
    }

    fn acls(&self) -> BackendResult<Vec<AclBinding>> {
        let mut out = Vec::new();
        for kv in self.meta.prefix(ACL_PREFIX) {
            let key = kv.key().map_err(StoreError::from)?;
            let key = String::from_utf8_lossy(&key[ACL_PREFIX.len()..]).into_owned();
            let bad = |reason: String| StoreError::BadAcl {
                key: key.clone(),
                reason,
            };
            let stored: StoredAcl = serde_json::from_str(&key).map_err(|e| bad(e.to_string()))?;
            out.push(stored.binding().map_err(bad)?);
        }
        Ok(out)
    }

    fn client_quotas(&self) -> BackendResult<ClientQuotas> {
        let mut out = ClientQuotas::new();
        for kv in self.meta.prefix(QUOTA_PREFIX) {
            let (key, value) = kv.into_inner().map_err(StoreError::from)?;
            let key = String::from_utf8_lossy(&key[QUOTA_PREFIX.len()..]).into_owned();
            let bad = |reason: String| StoreError::BadQuota {
                key: key.clone(),
                reason,
            };
            let (entity, name): (Vec<(String, Option<String>)>, String) =
                serde_json::from_str(&key).map_err(|e| bad(e.to_string()))?;
            let value: f64 = serde_json::from_slice(&value).map_err(|e| bad(e.to_string()))?;
            let stored = StoredQuota {
                entity,
                key: name,
                value: Some(value),
            };
            iggy_kafka_actors::quotas::apply(&mut out, [stored.change().map_err(bad)?]);
        }
        Ok(out)
    }

    /// Applies the changes in one atomic batch (the last change of a key wins).
    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendResult<()> {
        let mut last: BTreeMap<String, Option<f64>> = BTreeMap::new();
        for c in &changes {
            let key = serde_json::to_string(&(stored_entity(&c.entity), &c.key))
                .map_err(|e| BackendError::Fatal(e.to_string()))?;
            last.insert(format!("{QUOTA_PREFIX}{key}"), c.value);
        }
        let mut batch = self.db.batch();
        for (key, value) in last {
            match value {
                Some(v) => batch.insert(&self.meta, key, v.to_string()),
                None => batch.remove(&self.meta, key),
            }
        }
        batch.commit().map_err(StoreError::from)?;
        self.persist()
    }

    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendResult<()> {
        let key = format!("{SCRAM_PREFIX}{}/{user}", mechanism.name());
        match credential {
            Some(c) => {
                let json = serde_json::to_vec(&StoredCredential::from(&c))
                    .map_err(|e| BackendError::Fatal(e.to_string()))?;
                self.meta.insert(key, json).map_err(StoreError::from)?;
            }
            None => self.meta.remove(key).map_err(StoreError::from)?,
        }
        self.persist()
    }

    /// Creates (`true`) or deletes the bindings in one atomic batch.
    fn change_acls(&self, bindings: Vec<AclBinding>, create: bool) -> BackendResult<()> {
        let mut batch = self.db.batch();
        for b in &bindings {
            let json = serde_json::to_string(&StoredAcl::from(b))
                .map_err(|e| BackendError::Fatal(e.to_string()))?;
            let key = format!("{ACL_PREFIX}{json}");
            match create {
                true => batch.insert(&self.meta, key, Vec::<u8>::new()),
                false => batch.remove(&self.meta, key),
            }
        }
        batch.commit().map_err(StoreError::from)?;
        self.persist()
    }

    fn delete_topic(&self, name: &str) -> BackendResult<()> {
        let mut topics = self.topics.write();
        let log = topics
            .remove(name)
            .ok_or_else(|| BackendError::UnknownTopic(name.to_string()))?;
        self.meta
            .remove(format!("{TOPIC_PREFIX}{name}"))
            .map_err(StoreError::from)?;
        self.offsets.forget_topic(name)?;
        self.persist()?;
        self.db
            .delete_keyspace(log.records.clone())
            .map_err(StoreError::from)?;
        self.db
            .delete_keyspace(log.index.clone())
            .map_err(StoreError::from)?;
        Ok(())
    }

    fn allocate_producer_id(&self) -> BackendResult<i64> {
        let mut ids = self.producer_ids.lock();
        if ids.next >= ids.block_end {
            let end = ids.block_end + PRODUCER_ID_BLOCK;
            self.meta
                .insert(PRODUCER_ID_KEY, end.to_be_bytes().to_vec())
                .map_err(StoreError::from)?;
            self.persist()?;
            ids.block_end = end;
        }
        ids.next += 1;
        Ok(ids.next - 1)
    }
}

/// Runs blocking store work off the actor threads.
fn blocking<T: Send + 'static>(
    inner: &Arc<Inner>,
    work: impl FnOnce(&Inner) -> BackendResult<T> + Send + 'static,
) -> BackendFuture<'static, T> {
    let inner = inner.clone();
    Box::pin(async move {
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| BackendError::Fatal(format!("storage task failed: {e}")))?
    })
}

impl Backend for EmbeddedStore {
    fn topics(&self) -> BackendFuture<'_, Vec<TopicMeta>> {
        let topics = self
            .inner
            .topics
            .read()
            .values()
            .map(|log| log.meta.read().clone())
            .collect();
        Box::pin(async move { Ok(topics) })
    }

    /// Nothing here removes records, so the limits are stored configurations only.
    fn create_topic(&self, topic: TopicMeta, _: TopicLimits) -> BackendFuture<'_, ()> {
        blocking(&self.inner, move |s| s.create_topic(topic))
    }

    fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        _: TopicLimits,
    ) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        blocking(&self.inner, move |s| s.alter_topic_configs(&name, configs))
    }

    fn cluster_configs(&self) -> BackendFuture<'_, ClusterConfigs> {
        blocking(&self.inner, |s| s.cluster_configs())
    }

    fn set_cluster_config(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        blocking(&self.inner, move |s| s.set_cluster_config(&name, values))
    }

    fn acls(&self) -> BackendFuture<'_, Vec<AclBinding>> {
        blocking(&self.inner, |s| s.acls())
    }

    fn create_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        blocking(&self.inner, move |s| s.change_acls(bindings, true))
    }

    fn delete_acls(&self, bindings: Vec<AclBinding>) -> BackendFuture<'_, ()> {
        blocking(&self.inner, move |s| s.change_acls(bindings, false))
    }

    fn client_quotas(&self) -> BackendFuture<'_, ClientQuotas> {
        blocking(&self.inner, |s| s.client_quotas())
    }

    fn alter_client_quotas(&self, changes: Vec<QuotaChange>) -> BackendFuture<'_, ()> {
        blocking(&self.inner, move |s| s.alter_client_quotas(changes))
    }

    fn delete_topic(&self, name: &str) -> BackendFuture<'_, ()> {
        let name = name.to_string();
        blocking(&self.inner, move |s| s.delete_topic(&name))
    }

    fn allocate_producer_id(&self) -> BackendFuture<'_, i64> {
        blocking(&self.inner, |s| s.allocate_producer_id())
    }

    fn commit_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> BackendFuture<'_, ()> {
        let (group, tp) = (group.to_string(), tp.clone());
        blocking(&self.inner, move |s| {
            Ok(s.offsets.commit(&group, &tp, offset)?)
        })
    }

    fn committed_offset(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> BackendFuture<'_, Option<CommittedOffset>> {
        let (group, tp) = (group.to_string(), tp.clone());
        blocking(&self.inner, move |s| Ok(s.offsets.get(&group, &tp)?))
    }

    fn committed_partitions(&self, group: &str) -> BackendFuture<'_, Vec<TopicPartition>> {
        let group = group.to_string();
        blocking(&self.inner, move |s| Ok(s.offsets.partitions(&group)?))
    }

    fn offset_groups(&self) -> BackendFuture<'_, Vec<String>> {
        blocking(&self.inner, |s| Ok(s.offsets.groups()?))
    }

    fn scram_credentials(&self) -> BackendFuture<'_, ScramCredentials> {
        blocking(&self.inner, |s| s.scram_credentials())
    }

    fn set_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> BackendFuture<'_, ()> {
        let user = user.to_string();
        blocking(&self.inner, move |s| {
            s.set_scram_credential(&user, mechanism, credential)
        })
    }

    /// In-process: nothing to reach.
    fn ping(&self) -> BackendFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn flush(&self) -> BackendFuture<'_, ()> {
        blocking(&self.inner, |s| {
            s.db.persist(PersistMode::SyncAll)
                .map_err(StoreError::from)?;
            Ok(())
        })
    }
}
