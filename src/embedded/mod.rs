//! The embedded store: the default backend, on disk under the data directory, built
//! on fjall (an LSM-tree key-value store; `docs/STORAGE.md` says why).
//!
//! Layout. Keyspace `meta` holds the metadata port's tables (`meta.rs`: entries
//! `<table>/<key>`, versions in keyspace `versions`). Keyspace `logs` names every
//! topic's logs (name → id, partitions, incarnation); each topic has two keyspaces, named after its id: `r<id>` maps
//! `partition ‖ base offset` (big-endian, so keys sort by offset) to the record batch
//! exactly as served, and `i<id>` maps the same key to a 38-byte [`IndexEntry`]. Both are
//! written in one atomic fjall batch. At start the small index entries are read into
//! memory; Fetch finds its batches there and reads them with one range scan.
//!
//! Blocking work (writes, reads, fsync) runs on tokio's blocking pool, never on an
//! actor's thread.

mod index;
mod log;
mod meta;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use iggy_kafka_actors::protocol::records;
use iggy_kafka_actors::store::log::LogInfo;
use iggy_kafka_actors::store::Users;
use iggy_kafka_actors::store::{
    AppendBatch, Appended, ReadBatches, StoreError, StoreFuture, StoreResult, TimestampedOffset,
    TopicPartition, Watermarks,
};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use index::{IndexEntry, PartitionIndex};

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("storage engine: {0}")]
    Engine(#[from] fjall::Error),
    #[error("stored log '{key}' is unreadable: {source}")]
    BadLog {
        key: String,
        source: serde_json::Error,
    },
    #[error("metadata store: {0}")]
    BadMeta(String),
    #[error(
        "{0} holds data of the gateway's first storage layout, which this version no \
         longer reads; start on an empty data directory (docs/STORAGE.md)"
    )]
    OldLayout(std::path::PathBuf),
    #[error("index of topic '{topic}' is damaged: {detail}")]
    BadIndex { topic: String, detail: String },
}

impl From<EmbeddedError> for StoreError {
    fn from(e: EmbeddedError) -> Self {
        StoreError::Fatal(e.to_string())
    }
}

/// A topic's logs as keyspace `logs` keeps them, under the topic's name: the id their
/// keyspaces are named after, the partition count and the incarnation.
#[derive(Serialize, Deserialize)]
struct StoredLog {
    id: uuid::Uuid,
    partitions: i32,
    incarnation: u64,
}

struct TopicLog {
    info: LogInfo,
    records: Keyspace,
    index: Keyspace,
    /// Shared with the topic's next `TopicLog` when partitions are added, so an append
    /// under way on the old one lands in the index the new one serves.
    partitions: Vec<Arc<Mutex<PartitionIndex>>>,
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
    /// The data directory, made absolute: the log directory DescribeLogDirs names.
    dir: std::path::PathBuf,
    db: Database,
    /// Which topics have logs (`StoredLog`).
    logs: Keyspace,
    /// The metadata port's tables (`meta.rs`), in `meta` and `versions`.
    tables: meta::MetaTables,
    topics: RwLock<HashMap<Arc<str>, Arc<TopicLog>>>,
    append_persist: PersistMode,
}

impl EmbeddedStore {
    /// Opens (or creates) the store and loads every topic's index.
    pub fn open(dir: &Path, sync: SyncPolicy) -> Result<Self, EmbeddedError> {
        let db = Database::builder(dir.join("fjall"))
            // Batches usually arrive compressed by the producer already.
            .journal_compression(fjall::CompressionType::None)
            .open()?;
        let meta = db.keyspace("meta", KeyspaceCreateOptions::default)?;
        // Offsets and producer ids moved into the metadata tables (layout 2).
        if db.keyspace_exists("offsets") || meta.get("producer-id-block-end")?.is_some() {
            return Err(EmbeddedError::OldLayout(dir.to_path_buf()));
        }
        // The first layout kept topic definitions in `meta` and had no `logs`.
        let first_layout = !db.keyspace_exists("logs") && meta.first_key_value().is_some();
        let logs = db.keyspace("logs", KeyspaceCreateOptions::default)?;
        if first_layout {
            return Err(EmbeddedError::OldLayout(dir.to_path_buf()));
        }
        let mut topics = HashMap::new();
        for kv in logs.iter() {
            let (key, value) = kv.into_inner()?;
            let name = String::from_utf8_lossy(&key).into_owned();
            let stored: StoredLog =
                serde_json::from_slice(&value).map_err(|source| EmbeddedError::BadLog {
                    key: name.clone(),
                    source,
                })?;
            let log = open_log(&db, name.as_str().into(), &stored, true)?;
            topics.insert(Arc::from(name), Arc::new(log));
        }
        let tables = meta::MetaTables::new(
            meta.clone(),
            db.keyspace("versions", KeyspaceCreateOptions::default)?,
        );
        let inner = Arc::new(Inner {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            db,
            logs,
            tables,
            topics: RwLock::new(topics),
            append_persist: match sync {
                SyncPolicy::EveryBatch => PersistMode::SyncData,
                SyncPolicy::Every(_) | SyncPolicy::Never => PersistMode::Buffer,
            },
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

fn keyspace_names(id: &uuid::Uuid) -> (String, String) {
    let id = id.simple();
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
fn open_log(
    db: &Database,
    name: Arc<str>,
    stored: &StoredLog,
    load: bool,
) -> Result<TopicLog, EmbeddedError> {
    let (r, i) = keyspace_names(&stored.id);
    let records = db.keyspace(&r, record_options)?;
    let index = db.keyspace(&i, KeyspaceCreateOptions::default)?;
    let mut partitions: Vec<PartitionIndex> = (0..stored.partitions)
        .map(|_| PartitionIndex::default())
        .collect();
    if load {
        for kv in index.iter() {
            let (key, value) = kv.into_inner()?;
            let bad = |detail: String| EmbeddedError::BadIndex {
                topic: name.to_string(),
                detail,
            };
            let (partition, offset) =
                index::decode_key(&key).ok_or_else(|| bad("short key".into()))?;
            let partition = partitions
                .get_mut(partition as usize)
                .ok_or_else(|| bad(format!("partition {partition} out of range")))?;
            if offset == index::START_KEY {
                let start = index::decode_start(&value).ok_or_else(|| bad("short start".into()))?;
                partition.set_start(start);
            } else {
                let entry = IndexEntry::decode(&value).ok_or_else(|| bad("short entry".into()))?;
                partition.push(entry);
            }
        }
    }
    Ok(TopicLog {
        info: LogInfo {
            name,
            partitions: stored.partitions,
            incarnation: stored.incarnation,
        },
        records,
        index,
        partitions: partitions
            .into_iter()
            .map(|p| Arc::new(Mutex::new(p)))
            .collect(),
    })
}

impl Inner {
    fn log(&self, tp: &TopicPartition) -> StoreResult<Arc<TopicLog>> {
        let topics = self.topics.read();
        let log = topics
            .get(&tp.topic)
            .ok_or_else(|| StoreError::UnknownTopic(tp.topic.to_string()))?;
        if tp.partition < 0 || tp.partition as usize >= log.partitions.len() {
            return Err(StoreError::UnknownPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            });
        }
        Ok(log.clone())
    }

    fn append(&self, tp: &TopicPartition, batch: AppendBatch) -> StoreResult<Appended> {
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
        write.commit().map_err(EmbeddedError::from)?;
        let mut index = slot.lock();
        index.push(entry);
        Ok(Appended {
            base_offset,
            watermarks: index.watermarks(),
        })
    }

    fn read(&self, tp: &TopicPartition, offset: i64, max_bytes: usize) -> StoreResult<ReadBatches> {
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
            batches.push(Bytes::from(kv.value().map_err(EmbeddedError::from)?));
        }
        Ok(ReadBatches {
            batches,
            watermarks,
        })
    }

    /// Moves a partition's log start (`LogCall::DeleteRecords`): the new start and the
    /// removal of the batches wholly below it in one atomic write, then the index.
    /// The partition's lock is held throughout, so two calls never interleave; an
    /// append meanwhile lands above the high watermark checked here.
    fn delete_records(&self, tp: &TopicPartition, offset: i64) -> StoreResult<Watermarks> {
        let log = self.log(tp)?;
        let mut index = log.partitions[tp.partition as usize].lock();
        let w = index.watermarks();
        let Some(start) = w.moved_start(tp, offset)? else {
            return Ok(w);
        };
        let mut write = self.db.batch().durability(Some(self.append_persist));
        write.insert(
            &log.index,
            index::encode_key(tp.partition, index::START_KEY),
            start.to_be_bytes().to_vec(),
        );
        for base_offset in index.wholly_below(start) {
            let key = index::encode_key(tp.partition, base_offset);
            write.remove(&log.records, key);
            write.remove(&log.index, key);
        }
        write.commit().map_err(EmbeddedError::from)?;
        index.delete_before(start);
        Ok(index.watermarks())
    }

    /// The stored batch starting at `base_offset`, decoded.
    fn records_of(
        &self,
        log: &TopicLog,
        partition: i32,
        base_offset: i64,
    ) -> StoreResult<Vec<kafka_protocol::records::Record>> {
        let value = log
            .records
            .get(index::encode_key(partition, base_offset))
            .map_err(EmbeddedError::from)?
            .ok_or_else(|| {
                StoreError::Fatal(format!("batch at offset {base_offset} is missing"))
            })?;
        let mut bytes = Bytes::from(value);
        kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes)
            .map(|set| set.records)
            .map_err(|e| {
                StoreError::Fatal(format!(
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
    ) -> StoreResult<Option<TimestampedOffset>> {
        let Some(base_offset) = base_offset else {
            return Ok(None);
        };
        let log = self.log(tp)?;
        let start = log.partitions[tp.partition as usize]
            .lock()
            .watermarks()
            .log_start;
        Ok(self
            .records_of(&log, tp.partition, base_offset)?
            .into_iter()
            .find(|r| r.offset >= start && wanted(r.timestamp))
            .map(|r| TimestampedOffset {
                offset: r.offset,
                timestamp: r.timestamp,
            }))
    }

    fn persist(&self) -> StoreResult<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(EmbeddedError::from)?;
        Ok(())
    }

    fn list_logs(&self) -> Vec<LogInfo> {
        let topics = self.topics.read();
        topics.values().map(|log| log.info.clone()).collect()
    }

    /// Makes a topic's keyspaces and records them in `logs`, durably. Its incarnation
    /// is the time it was made, in µs, later than any before it.
    fn create_log(&self, name: Arc<str>, partitions: i32) -> StoreResult<LogInfo> {
        let mut topics = self.topics.write();
        if topics.contains_key(&name) {
            return Err(StoreError::TopicExists(name.to_string()));
        }
        let latest = topics
            .values()
            .map(|l| l.info.incarnation)
            .max()
            .unwrap_or(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let stored = StoredLog {
            id: uuid::Uuid::new_v4(),
            partitions,
            incarnation: now.max(latest + 1),
        };
        let json = serde_json::to_vec(&stored).map_err(|e| StoreError::Fatal(e.to_string()))?;
        self.logs
            .insert(&*name, json)
            .map_err(EmbeddedError::from)?;
        self.persist()?;
        let log = open_log(&self.db, name.clone(), &stored, false)?;
        let info = log.info.clone();
        topics.insert(name, Arc::new(log));
        Ok(info)
    }

    /// Grows a topic's logs to `partitions`: the new count recorded in `logs`, durably,
    /// then a `TopicLog` that shares the old partitions' indexes and adds empty ones.
    /// Records of every partition live in the topic's two keyspaces already, keyed by
    /// partition, so nothing else is made.
    fn add_partitions(&self, name: &Arc<str>, partitions: i32) -> StoreResult<()> {
        let mut topics = self.topics.write();
        let log = topics
            .get(name)
            .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?
            .clone();
        if partitions <= log.info.partitions {
            return Err(StoreError::HasPartitions {
                topic: name.to_string(),
                partitions: log.info.partitions,
            });
        }
        let value = self
            .logs
            .get(&**name)
            .map_err(EmbeddedError::from)?
            .ok_or_else(|| StoreError::Fatal(format!("topic '{name}' has no entry in 'logs'")))?;
        let mut stored: StoredLog =
            serde_json::from_slice(&value).map_err(|source| EmbeddedError::BadLog {
                key: name.to_string(),
                source,
            })?;
        stored.partitions = partitions;
        let json = serde_json::to_vec(&stored).map_err(|e| StoreError::Fatal(e.to_string()))?;
        self.logs
            .insert(&**name, json)
            .map_err(EmbeddedError::from)?;
        self.persist()?;
        let mut indexes = log.partitions.clone();
        indexes.resize_with(partitions as usize, Default::default);
        let grown = TopicLog {
            info: LogInfo {
                partitions,
                ..log.info.clone()
            },
            records: log.records.clone(),
            index: log.index.clone(),
            partitions: indexes,
        };
        topics.insert(name.clone(), Arc::new(grown));
        Ok(())
    }

    fn delete_log(&self, name: &str) -> StoreResult<()> {
        let mut topics = self.topics.write();
        let log = topics
            .remove(name)
            .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?;
        self.logs.remove(name).map_err(EmbeddedError::from)?;
        self.persist()?;
        self.db
            .delete_keyspace(log.records.clone())
            .map_err(EmbeddedError::from)?;
        self.db
            .delete_keyspace(log.index.clone())
            .map_err(EmbeddedError::from)?;
        Ok(())
    }
}

/// Runs blocking store work off the actor threads.
fn blocking<T: Send + 'static>(
    inner: &Arc<Inner>,
    work: impl FnOnce(&Inner) -> StoreResult<T> + Send + 'static,
) -> StoreFuture<'static, T> {
    let inner = inner.clone();
    Box::pin(async move {
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|e| StoreError::Fatal(format!("storage task failed: {e}")))?
    })
}

/// One gateway alone owns the data directory: no users of its own, nothing to ping.
impl Users for EmbeddedStore {}
