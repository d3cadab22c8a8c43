//! The embedded store: the default backend, on disk under the data directory, built
//! on fjall (an LSM-tree key-value store; `docs/STORAGE.md` says why).
//!
//! Layout. Keyspace `meta` holds the metadata port's tables (`meta.rs`: entries
//! `<table>/<key>`, versions in keyspace `versions`). Keyspace `logs` names every
//! topic's logs (name → id, partitions, incarnation). A partition's record batches lie
//! back to back in one file, `logs/<id>/<partition>` (`partition_file.rs`), exactly as
//! served; keyspace `i<id>` maps `partition ‖ base offset` (big-endian, so keys sort by
//! offset) to a 46-byte [`IndexEntry`] saying where a batch lies. A batch goes to its
//! file first, then its entry to the index: an entry never names bytes the file lacks,
//! and a crash leaves at most an unindexed tail, cut at the next start. At start the
//! entries are read into memory; Fetch finds its batches there and reads them with one
//! `pread`.
//!
//! Blocking work (writes, reads, fsync) runs on tokio's blocking pool, never on an
//! actor's thread.

mod compaction;
mod index;
mod log;
mod meta;
mod partition_file;
mod retention;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use iggy_kafka_actors::protocol::records;
use iggy_kafka_actors::store::log::LogInfo;
use iggy_kafka_actors::store::Users;
use iggy_kafka_actors::store::{
    AppendBatch, Appended, ReadBatches, StoreError, StoreFuture, StoreResult, TimestampedOffset,
    TopicLimits, TopicPartition, Watermarks,
};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use index::{IndexEntry, PartitionIndex};
use partition_file::{FileError, PartitionFile};
use retention::Retention;

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
        "{0} holds data of an earlier storage layout of the gateway, which this version no \
         longer reads; start on an empty data directory (docs/STORAGE.md)"
    )]
    OldLayout(std::path::PathBuf),
    #[error("index of topic '{topic}' is damaged: {detail}")]
    BadIndex { topic: String, detail: String },
    #[error(transparent)]
    File(#[from] FileError),
    /// Fewer bytes free than `embedded_min_free_bytes`: refused before the engine's
    /// journal meets ENOSPC, which would poison it until a restart.
    #[error(
        "disk full: {free} bytes free under {}, fewer than the {reserve} kept in reserve \
         (embedded_min_free_bytes); writes resume once space returns",
        dir.display()
    )]
    DiskFull {
        dir: PathBuf,
        free: u64,
        reserve: u64,
    },
    #[error("free space of {}: {source}", dir.display())]
    FreeSpace {
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl From<EmbeddedError> for StoreError {
    fn from(e: EmbeddedError) -> Self {
        StoreError::fatal_from("embedded store", e)
    }
}

/// A topic's logs as keyspace `logs` keeps them, under the topic's name: the id their
/// keyspaces are named after, the partition count, the incarnation and the retention.
#[derive(Serialize, Deserialize)]
struct StoredLog {
    id: uuid::Uuid,
    partitions: i32,
    incarnation: u64,
    #[serde(default)]
    retention: Retention,
}

#[derive(Clone)]
struct TopicLog {
    info: LogInfo,
    retention: Retention,
    index: Keyspace,
    /// Where the partitions' files are.
    dir: PathBuf,
    /// Shared with the topic's next `TopicLog` when partitions are added, so an append
    /// under way on the old one lands in the index the new one serves.
    partitions: Vec<Arc<Partition>>,
}

struct Partition {
    index: Mutex<PartitionIndex>,
    file: PartitionFile,
    /// Held through each append, and by a compaction while its new file takes the
    /// old one's place, so no append lands in the file being replaced.
    appending: Mutex<()>,
    /// Held through a compaction and a DeleteRecords: the one never frees or drops
    /// batches the other is rewriting.
    rewriting: Mutex<()>,
}

impl Partition {
    fn new(dir: &Path, partition: usize, index: PartitionIndex) -> Arc<Partition> {
        Arc::new(Partition {
            index: Mutex::new(index),
            file: PartitionFile::new(dir.join(partition.to_string())),
            appending: Mutex::new(()),
            rewriting: Mutex::new(()),
        })
    }
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
    dir: PathBuf,
    /// Where each topic's directory of partition files is.
    logs_dir: PathBuf,
    db: Database,
    /// Which topics have logs (`StoredLog`).
    logs: Keyspace,
    /// The metadata port's tables (`meta.rs`), in `meta` and `versions`.
    tables: meta::MetaTables,
    topics: RwLock<HashMap<Arc<str>, Arc<TopicLog>>>,
    append_persist: PersistMode,
    /// `durability=batch`: each append syncs its file before its index entry.
    sync_each: bool,
    /// Bytes that must stay free on the data directory's disk for a write to start
    /// (`keep_free`); none unless set.
    reserve: AtomicU64,
}

impl EmbeddedStore {
    /// Opens (or creates) the store and loads every topic's index.
    pub fn open(dir: &Path, sync: SyncPolicy) -> Result<Self, EmbeddedError> {
        let db = Database::builder(dir.join("fjall"))
            // Batches usually arrive compressed by the producer already.
            .journal_compression(fjall::CompressionType::None)
            .open()?;
        let meta = db.keyspace("meta", keyspace_options)?;
        // Offsets and producer ids moved into the metadata tables (layout 2).
        if db.keyspace_exists("offsets") || meta.get("producer-id-block-end")?.is_some() {
            return Err(EmbeddedError::OldLayout(dir.to_path_buf()));
        }
        // The first layout kept topic definitions in `meta` and had no `logs`.
        let first_layout = !db.keyspace_exists("logs") && meta.first_key_value().is_some();
        let logs = db.keyspace("logs", keyspace_options)?;
        if first_layout {
            return Err(EmbeddedError::OldLayout(dir.to_path_buf()));
        }
        let logs_dir = dir.join("logs");
        let mut topics = HashMap::new();
        for kv in logs.iter() {
            let (key, value) = kv.into_inner()?;
            let name = String::from_utf8_lossy(&key).into_owned();
            let stored: StoredLog =
                serde_json::from_slice(&value).map_err(|source| EmbeddedError::BadLog {
                    key: name.clone(),
                    source,
                })?;
            // The second layout kept batches in a keyspace `r<id>` beside the index.
            if db.keyspace_exists(&format!("r{}", stored.id.simple())) {
                return Err(EmbeddedError::OldLayout(dir.to_path_buf()));
            }
            let log = open_log(&db, &logs_dir, name.as_str().into(), &stored, true)?;
            topics.insert(Arc::from(name), Arc::new(log));
        }
        remove_orphans(&logs_dir, &topics);
        let tables =
            meta::MetaTables::new(meta.clone(), db.keyspace("versions", keyspace_options)?);
        let inner = Arc::new(Inner {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            logs_dir,
            db,
            logs,
            tables,
            topics: RwLock::new(topics),
            append_persist: match sync {
                SyncPolicy::EveryBatch => PersistMode::SyncData,
                SyncPolicy::Every(_) | SyncPolicy::Never => PersistMode::Buffer,
            },
            sync_each: sync == SyncPolicy::EveryBatch,
            reserve: AtomicU64::new(0),
        });
        if let SyncPolicy::Every(interval) = sync {
            spawn_syncer(Arc::downgrade(&inner), interval);
        }
        Ok(EmbeddedStore { inner })
    }

    /// Refuses writes while fewer than `bytes` are free on the data directory's disk,
    /// so what the engine still has to write (its journal, a checkpoint) finds room.
    pub fn keep_free(&self, bytes: u64) {
        self.inner.reserve.store(bytes, Ordering::Relaxed);
    }
}

impl Inner {
    /// Whether a write may start: the disk has more than the reserve free.
    fn room(&self) -> Result<(), EmbeddedError> {
        let reserve = self.reserve.load(Ordering::Relaxed);
        if reserve == 0 {
            return Ok(());
        }
        let free = free_bytes(&self.dir).map_err(|source| EmbeddedError::FreeSpace {
            dir: self.dir.clone(),
            source,
        })?;
        if free < reserve {
            return Err(EmbeddedError::DiskFull {
                dir: self.dir.clone(),
                free,
                reserve,
            });
        }
        Ok(())
    }
}

/// Bytes an unprivileged writer may still use on the file system holding `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs writes the struct it is given; `path` is a valid C string for
    // the call, and the struct is read only after it returned success.
    let done = unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: initialised by the successful call above.
    let stats = unsafe { stats.assume_init() };
    Ok(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// Checkpoints on an interval until the store is dropped.
fn spawn_syncer(store: std::sync::Weak<Inner>, every: Duration) {
    std::thread::Builder::new()
        .name("embedded-fsync".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let Some(store) = store.upgrade() else { return };
            if let Err(e) = store.checkpoint(PersistMode::SyncData) {
                tracing::error!(error = %e, "periodic fsync failed");
            }
        })
        .map(drop)
        .unwrap_or_else(|e| tracing::error!(error = %e, "could not start the fsync thread"));
}

/// Removes the directories of logs no longer in `logs`: a crash between deleting a
/// topic's entry and its files, or an append racing the delete, leaves them.
fn remove_orphans(logs_dir: &Path, topics: &HashMap<Arc<str>, Arc<TopicLog>>) {
    let Ok(dirs) = std::fs::read_dir(logs_dir) else {
        return;
    };
    let live: HashSet<&Path> = topics.values().map(|l| l.dir.as_path()).collect();
    for dir in dirs.flatten().map(|d| d.path()) {
        if !live.contains(dir.as_path()) {
            tracing::info!(dir = %dir.display(), "removing the files of a deleted topic");
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not remove the files of a deleted topic");
            }
        }
    }
}

/// Most a keyspace's memtable holds before fjall writes it out (fjall's default: 64
/// MiB). Its entries are small (index entries, offsets, metadata), and each topic has a
/// keyspace, so fjall's default let a long-running gateway's memory grow by tens of MiB
/// a topic before the first flush (the soak in `tests/faults/soak.rs`). Applies to
/// keyspaces made from now on: fjall keeps each one's options with it.
const MEMTABLE_BYTES: u64 = 4 << 20;

fn keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES)
}

/// Opens a topic's index keyspace; `load` reads it back into memory and checks what
/// a crash may have left.
fn open_log(
    db: &Database,
    logs_dir: &Path,
    name: Arc<str>,
    stored: &StoredLog,
    load: bool,
) -> Result<TopicLog, EmbeddedError> {
    let id = stored.id.simple();
    let index = db.keyspace(&format!("i{id}"), keyspace_options)?;
    let dir = logs_dir.join(id.to_string());
    let mut partitions: Vec<PartitionIndex> = (0..stored.partitions)
        .map(|_| PartitionIndex::default())
        .collect();
    let mut synced = vec![0; partitions.len()];
    let mut pending = vec![false; partitions.len()];
    if load {
        for kv in index.iter() {
            let (key, value) = kv.into_inner()?;
            let bad = |detail: String| EmbeddedError::BadIndex {
                topic: name.to_string(),
                detail,
            };
            let (p, offset) = index::decode_key(&key).ok_or_else(|| bad("short key".into()))?;
            let partition = partitions
                .get_mut(p as usize)
                .ok_or_else(|| bad(format!("partition {p} out of range")))?;
            let value_i64 = || index::decode_i64(&value).ok_or_else(|| bad("short value".into()));
            match offset {
                index::START_KEY => partition.set_start(value_i64()?),
                index::SYNCED_KEY => synced[p as usize] = value_i64()? as u64,
                index::PENDING_KEY => pending[p as usize] = true,
                _ => partition
                    .push(IndexEntry::decode(&value).ok_or_else(|| bad("short entry".into()))?),
            }
        }
    }
    let log = TopicLog {
        info: LogInfo {
            name,
            partitions: stored.partitions,
            incarnation: stored.incarnation,
        },
        retention: stored.retention,
        index,
        partitions: partitions
            .into_iter()
            .enumerate()
            .map(|(p, index)| Partition::new(&dir, p, index))
            .collect(),
        dir,
    };
    if load {
        for (p, pending) in pending.into_iter().enumerate() {
            compaction::settle(db, &log, p, pending)?;
        }
        for (p, synced) in synced.into_iter().enumerate() {
            recover(db, &log, p, synced)?;
        }
    }
    Ok(log)
}

/// Drops the index entries past the synced part of a partition's file whose batches
/// are not whole in it (a machine crash wrote back the index before the file), and
/// cuts the file's unindexed tail (a crash between the two writes).
fn recover(db: &Database, log: &TopicLog, p: usize, synced: u64) -> Result<(), EmbeddedError> {
    let partition = &log.partitions[p];
    let mut index = partition.index.lock();
    let lost: Vec<i64> = index
        .unsynced(synced)
        .iter()
        .skip_while(|e| partition.file.holds(e))
        .map(|e| e.base_offset)
        .collect();
    if let Some(&from) = lost.first() {
        tracing::warn!(
            topic = %log.info.name, partition = p, from_offset = from, batches = lost.len(),
            "batches past the synced part of the partition's file are not on disk (a machine crash?); dropped"
        );
        index.truncate_from(from);
    }
    let end = index.end();
    if !lost.is_empty() || synced > end {
        let mut write = db.batch().durability(Some(PersistMode::SyncAll));
        for base_offset in lost {
            write.remove(&log.index, index::encode_key(p as i32, base_offset));
        }
        // What is written from `end` on is not synced, whatever was there before.
        record_synced(&mut write, &log.index, p as i32, end);
        write.commit()?;
    }
    let file = &partition.file;
    if file.len()? > end {
        file.truncate(end)?;
    }
    Ok(())
}

/// Records in `write` that a partition's file is on disk up to `end`.
fn record_synced(write: &mut fjall::OwnedWriteBatch, index: &Keyspace, partition: i32, end: u64) {
    let key = index::encode_key(partition, index::SYNCED_KEY);
    write.insert(index, key, (end as i64).to_be_bytes().to_vec());
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

    /// Writes `batches` one after the other into the partition's file, then their index
    /// entries in one journal write (one sync with `durability=batch`).
    fn append(&self, tp: &TopicPartition, batches: Vec<AppendBatch>) -> StoreResult<Vec<Appended>> {
        self.room()?;
        let log = self.log(tp)?;
        let partition = &log.partitions[tp.partition as usize];
        let file = &partition.file;
        let _appending = partition.appending.lock();
        // Appends to one partition never overlap (its log slot serializes them), so the
        // offset and position read here are still the next ones when the writes land.
        let (mut next_offset, mut position) = {
            let index = partition.index.lock();
            (index.watermarks().high, index.end())
        };
        let mut write = self.db.batch().durability(Some(self.append_persist));
        let mut entries = Vec::with_capacity(batches.len());
        for batch in batches {
            let placed = records::place(batch.bytes, next_offset);
            file.write(&placed, position).map_err(EmbeddedError::from)?;
            let entry = IndexEntry::new(next_offset, position, &batch.header, placed.len());
            write.insert(
                &log.index,
                index::encode_key(tp.partition, next_offset),
                entry.encode(),
            );
            (next_offset, position) = (entry.next_offset(), entry.end());
            entries.push(entry);
        }
        if self.sync_each {
            file.sync().map_err(EmbeddedError::from)?;
            record_synced(&mut write, &log.index, tp.partition, position);
        }
        write.commit().map_err(EmbeddedError::from)?;
        let appended = {
            let mut index = partition.index.lock();
            let appended = entries.into_iter().map(|entry| {
                let base_offset = entry.base_offset;
                index.push(entry);
                Appended {
                    base_offset,
                    watermarks: index.watermarks(),
                }
            });
            appended.collect()
        };
        file.written();
        Ok(appended)
    }

    /// The batches from `offset`, up to about `max_bytes` of them; with `headers_only`,
    /// each as its header alone but control batches (`LogCall::ReadHeaders`).
    fn read(
        &self,
        tp: &TopicPartition,
        offset: i64,
        max_bytes: usize,
        headers_only: bool,
    ) -> StoreResult<ReadBatches> {
        let log = self.log(tp)?;
        let partition = &log.partitions[tp.partition as usize];
        let mut watermarks = Watermarks::default();
        let spans = || {
            let index = partition.index.lock();
            watermarks = index.watermarks();
            index.batches_from(offset, max_bytes)
        };
        let file = &partition.file;
        let batches = match headers_only {
            true => file.read_headers(spans),
            false => file.read(spans),
        };
        let batches = batches.map_err(EmbeddedError::from)?;
        Ok(ReadBatches {
            stored_read: batches.iter().map(|b| b.len() as u64).sum(),
            batches,
            watermarks,
            ..ReadBatches::default()
        })
    }

    /// Moves a partition's log start (`LogCall::DeleteRecords`): the new start and the
    /// removal of the index entries wholly below it in one atomic write, then the
    /// index in memory, then the space in the file. The partition's lock is held until
    /// the index is done, so two calls never interleave; an append meanwhile lands
    /// above the high watermark checked here.
    fn delete_records(&self, tp: &TopicPartition, offset: i64) -> StoreResult<Watermarks> {
        let log = self.log(tp)?;
        let partition = &log.partitions[tp.partition as usize];
        let _rewriting = partition.rewriting.lock();
        let (watermarks, free) = {
            let mut index = partition.index.lock();
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
                write.remove(&log.index, index::encode_key(tp.partition, base_offset));
            }
            write.commit().map_err(EmbeddedError::from)?;
            index.delete_before(start);
            (index.watermarks(), index.kept_from())
        };
        if free > 0 {
            if let Err(e) = partition.file.free_below(free) {
                tracing::warn!(error = %e, "could not free the space of deleted records");
            }
        }
        Ok(watermarks)
    }

    /// The stored batch starting at `base_offset`, decoded.
    fn records_of(
        &self,
        log: &TopicLog,
        partition: i32,
        base_offset: i64,
    ) -> StoreResult<Vec<kafka_protocol::records::Record>> {
        let partition = &log.partitions[partition as usize];
        let mut bytes = partition
            .file
            .read(|| {
                partition
                    .index
                    .lock()
                    .entry(base_offset)
                    .into_iter()
                    .collect()
            })
            .map_err(EmbeddedError::from)?
            .pop()
            .ok_or_else(|| {
                StoreError::fatal(format!("batch at offset {base_offset} is missing"))
            })?;
        kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes)
            .map(|set| set.records)
            .map_err(|e| {
                StoreError::fatal_from(
                    format!("stored batch at offset {base_offset} is unreadable"),
                    e,
                )
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
            .index
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

    /// Syncs every partition file written since the last checkpoint, records in the
    /// index how far each is on disk, and syncs the journal (`mode`). Topics are held
    /// still meanwhile, so none is deleted under the write.
    fn checkpoint(&self, mode: PersistMode) -> StoreResult<()> {
        let topics = self.topics.read();
        let mut write = self.db.batch().durability(Some(mode));
        for log in topics.values() {
            for (p, partition) in log.partitions.iter().enumerate() {
                if !partition.file.take_dirty() {
                    continue;
                }
                let end = partition.index.lock().end();
                if let Err(e) = partition.file.sync() {
                    partition.file.written(); // still to sync
                    return Err(EmbeddedError::from(e).into());
                }
                record_synced(&mut write, &log.index, p as i32, end);
            }
        }
        write.commit().map_err(EmbeddedError::from)?;
        drop(topics);
        self.db.persist(mode).map_err(EmbeddedError::from)?;
        Ok(())
    }

    fn list_logs(&self) -> Vec<LogInfo> {
        let topics = self.topics.read();
        topics.values().map(|log| log.info.clone()).collect()
    }

    /// Makes a topic's keyspaces and records them in `logs`, durably. Its incarnation
    /// is the time it was made, in µs, later than any before it.
    fn create_log(
        &self,
        name: Arc<str>,
        partitions: i32,
        limits: &TopicLimits,
    ) -> StoreResult<LogInfo> {
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
            retention: limits.into(),
        };
        let json =
            serde_json::to_vec(&stored).map_err(|e| StoreError::fatal_from("topic entry", e))?;
        self.logs
            .insert(&*name, json)
            .map_err(EmbeddedError::from)?;
        self.persist()?;
        let log = open_log(&self.db, &self.logs_dir, name.clone(), &stored, false)?;
        let info = log.info.clone();
        topics.insert(name, Arc::new(log));
        Ok(info)
    }

    /// Grows a topic's logs to `partitions`: the new count recorded in `logs`, durably,
    /// then a `TopicLog` that shares the old partitions and adds empty ones. The index
    /// keyspace holds every partition's entries already, and a partition's file is made
    /// at its first append, so nothing else is made.
    fn add_partitions(&self, name: &Arc<str>, partitions: i32) -> StoreResult<()> {
        self.update_log(name, |stored, log| {
            if partitions <= log.info.partitions {
                return Err(StoreError::HasPartitions {
                    topic: name.to_string(),
                    partitions: log.info.partitions,
                });
            }
            stored.partitions = partitions;
            log.info.partitions = partitions;
            for p in log.partitions.len()..partitions as usize {
                log.partitions
                    .push(Partition::new(&log.dir, p, PartitionIndex::default()));
            }
            Ok(())
        })
    }

    /// Changes a topic's `logs` entry and its `TopicLog` together: `change` edits
    /// both (or refuses), the entry is written durably, then the new `TopicLog` (which
    /// shares the old one's partitions) takes the old one's place.
    fn update_log(
        &self,
        name: &Arc<str>,
        change: impl FnOnce(&mut StoredLog, &mut TopicLog) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut topics = self.topics.write();
        let mut log = TopicLog::clone(
            topics
                .get(name)
                .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?,
        );
        let value = self
            .logs
            .get(&**name)
            .map_err(EmbeddedError::from)?
            .ok_or_else(|| StoreError::fatal(format!("topic '{name}' has no entry in 'logs'")))?;
        let mut stored: StoredLog =
            serde_json::from_slice(&value).map_err(|source| EmbeddedError::BadLog {
                key: name.to_string(),
                source,
            })?;
        change(&mut stored, &mut log)?;
        let json =
            serde_json::to_vec(&stored).map_err(|e| StoreError::fatal_from("topic entry", e))?;
        self.logs
            .insert(&**name, json)
            .map_err(EmbeddedError::from)?;
        self.persist()?;
        topics.insert(name.clone(), Arc::new(log));
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
            .delete_keyspace(log.index.clone())
            .map_err(EmbeddedError::from)?;
        // Left behind, they go at the next start (`remove_orphans`).
        if let Err(e) = std::fs::remove_dir_all(&log.dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %log.dir.display(), error = %e, "could not remove a deleted topic's files");
            }
        }
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
            .map_err(|e| StoreError::fatal_from("storage task", e))?
    })
}

/// One gateway alone owns the data directory: no users of its own, nothing to ping.
impl Users for EmbeddedStore {}
