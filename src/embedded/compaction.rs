//! Compaction of a partition's file (`LogCall::Compact`): the compactor above the port
//! decided which records stay; this rewrites the file without the others.
//!
//! Crash safety: the new file is written beside the old one (`<partition>.compacted`)
//! and synced with its directory; then one synced index write replaces the entries
//! with the new file's and sets the partition's pending key; then the new file is
//! renamed over the old one, the directory synced, and the pending key removed. A
//! start finds either no pending key (the index names the old file, whole; a leftover
//! new file is removed) or the key (the index names the new file, whole on disk under
//! one of its two names: the rename is finished). A SIGKILL at any point therefore
//! leaves one whole file that the index describes.

use std::os::unix::fs::FileExt;

use bytes::Bytes;
use fjall::{Database, PersistMode};
use iggy_kafka_actors::protocol::retained::{self, Retained};
use iggy_kafka_actors::store::{Compacted, StoreError, StoreResult, TopicPartition};

use super::index::{self, IndexEntry};
use super::partition_file::{sync_dir, FileError};
use super::{record_synced, EmbeddedError, Inner, Partition, TopicLog};

/// Most bytes a stored batch's records decompress to here; Produce checked each batch
/// within its own bound when it came.
const RECORDS_BUDGET: usize = 256 << 20;

/// Batches read from the old file at once.
const READ_CHUNK: usize = 256;

impl Inner {
    /// Rewrites the partition's file without the records below `below` that `keep`
    /// (sorted) does not hold. Appends go on meanwhile; they wait only while the new
    /// file takes the old one's place.
    pub(super) fn compact(
        &self,
        tp: &TopicPartition,
        below: i64,
        keep: &[i64],
    ) -> StoreResult<Compacted> {
        let log = self.log(tp)?;
        let partition = &log.partitions[tp.partition as usize];
        let _rewriting = partition.rewriting.lock();
        let (cleaned, bytes_before) = {
            let index = partition.index.lock();
            (index.wholly_before(below), index.size())
        };
        let Some(last) = cleaned.last() else {
            return Ok(Compacted {
                bytes_before,
                bytes_after: bytes_before,
                cleaned_bytes: 0,
            });
        };
        let mut out = NewFile::create(partition)?;
        let mut entries = Vec::new();
        for chunk in cleaned.chunks(READ_CHUNK) {
            let batches = read(partition, chunk)?;
            for (entry, batch) in chunk.iter().zip(batches) {
                let kept =
                    retained::retain(&batch, RECORDS_BUDGET, |o| keep.binary_search(&o).is_ok())
                        .map_err(|e| StoreError::fatal_from(format!("{tp}: stored batch"), e))?;
                let batch = match kept {
                    Retained::All => batch,
                    Retained::Nothing => continue,
                    Retained::Some(rewritten) => rewritten,
                };
                entries.push(out.put(entry, &batch)?);
            }
        }
        let cleaned_bytes = out.end;
        // The batches above, as they are, in two goes: most while appends go on, then
        // under the append lock those that came meanwhile.
        let mut next = last.next_offset();
        next = out.copy_from(partition, next, &mut entries)?;
        let _appending = partition.appending.lock();
        out.copy_from(partition, next, &mut entries)?;
        let end = out.finish()?;
        let old = partition.index.lock().wholly_before(i64::MAX);
        let mut write = self.db.batch().durability(Some(PersistMode::SyncAll));
        for gone in old.iter().filter(|o| entries_lack(&entries, o.base_offset)) {
            write.remove(
                &log.index,
                index::encode_key(tp.partition, gone.base_offset),
            );
        }
        for entry in &entries {
            let key = index::encode_key(tp.partition, entry.base_offset);
            write.insert(&log.index, key, entry.encode());
        }
        record_synced(&mut write, &log.index, tp.partition, end);
        let pending = index::encode_key(tp.partition, index::PENDING_KEY);
        write.insert(&log.index, pending, vec![1]);
        write.commit().map_err(EmbeddedError::from)?;
        let bytes_after = entries.iter().map(|e| u64::from(e.size)).sum();
        partition
            .file
            .take_compacted(|| partition.index.lock().replace(entries))
            .map_err(EmbeddedError::from)?;
        let mut write = self.db.batch().durability(Some(PersistMode::SyncAll));
        write.remove(&log.index, pending);
        write.commit().map_err(EmbeddedError::from)?;
        Ok(Compacted {
            bytes_before,
            bytes_after,
            cleaned_bytes,
        })
    }
}

/// True when no entry of `entries` (sorted by offset) starts at `base_offset`.
fn entries_lack(entries: &[IndexEntry], base_offset: i64) -> bool {
    entries
        .binary_search_by_key(&base_offset, |e| e.base_offset)
        .is_err()
}

/// The batches `chunk` names, read from the partition's file.
fn read(partition: &Partition, chunk: &[IndexEntry]) -> StoreResult<Vec<Bytes>> {
    Ok(partition
        .file
        .read(|| chunk.to_vec())
        .map_err(EmbeddedError::from)?)
}

/// A compaction's new file as it is written.
struct NewFile {
    file: std::fs::File,
    path: std::path::PathBuf,
    end: u64,
}

impl NewFile {
    fn create(partition: &Partition) -> StoreResult<NewFile> {
        let file = partition
            .file
            .create_compacted()
            .map_err(EmbeddedError::from)?;
        Ok(NewFile {
            file,
            path: partition.file.compacted_path(),
            end: 0,
        })
    }

    fn named<T>(&self, done: std::io::Result<T>) -> StoreResult<T> {
        done.map_err(|source| {
            let e = FileError {
                path: self.path.clone(),
                source,
            };
            EmbeddedError::from(e).into()
        })
    }

    /// Appends `batch`, which `entry` described in the old file; answers its entry here.
    fn put(&mut self, entry: &IndexEntry, batch: &[u8]) -> StoreResult<IndexEntry> {
        self.named(self.file.write_all_at(batch, self.end))?;
        let placed = IndexEntry {
            position: self.end,
            size: batch.len() as u32,
            ..*entry
        };
        self.end = placed.end();
        Ok(placed)
    }

    /// Copies the batches from `base_offset` on as they are; answers the offset after
    /// the last one copied.
    fn copy_from(
        &mut self,
        partition: &Partition,
        base_offset: i64,
        entries: &mut Vec<IndexEntry>,
    ) -> StoreResult<i64> {
        let tail = partition.index.lock().starting_at(base_offset);
        let mut next = base_offset;
        for chunk in tail.chunks(READ_CHUNK) {
            for (entry, batch) in chunk.iter().zip(read(partition, chunk)?) {
                entries.push(self.put(entry, &batch)?);
                next = entry.next_offset();
            }
        }
        Ok(next)
    }

    /// Syncs the file and its directory; answers its length.
    fn finish(self) -> StoreResult<u64> {
        self.named(self.file.sync_all())?;
        self.named(sync_dir(&self.path))?;
        Ok(self.end)
    }
}

/// At start, before the file is checked: settles a compaction a crash interrupted
/// (`PartitionFile::settle_compaction`) and removes its pending key.
pub(super) fn settle(
    db: &Database,
    log: &TopicLog,
    p: usize,
    pending: bool,
) -> Result<(), EmbeddedError> {
    log.partitions[p].file.settle_compaction(pending)?;
    if pending {
        tracing::info!(topic = %log.info.name, partition = p, "finished a compaction a stop interrupted");
        let mut write = db.batch().durability(Some(PersistMode::SyncAll));
        write.remove(&log.index, index::encode_key(p as i32, index::PENDING_KEY));
        write.commit()?;
    }
    Ok(())
}
