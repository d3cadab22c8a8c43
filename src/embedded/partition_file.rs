//! One partition's record batches, back to back in one append-only file
//! (`logs/<topic id>/<partition>` under the data directory). The index says where each
//! batch starts; this file only reads and writes bytes at positions. Each batch is
//! written once, by one `pwrite`, and a fetch reads its batches with one `pread`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use iggy_kafka_actors::protocol::records;
use parking_lot::{Mutex, RwLock};

use super::index::IndexEntry;

/// An I/O error, naming the partition file it came from.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct FileError {
    pub(super) path: PathBuf,
    pub(super) source: io::Error,
}

type FileResult<T> = Result<T, FileError>;

pub struct PartitionFile {
    path: PathBuf,
    /// Opened (and made) at the first write or read: a partition never written has no file.
    file: Mutex<Option<Arc<File>>>,
    /// Batches indexed since the last checkpoint (`written`, `take_dirty`).
    dirty: AtomicBool,
    /// Shared across a read, alone while a freed range is punched out, so a read never
    /// finds a hole under batches it was handed.
    holes: RwLock<()>,
}

impl PartitionFile {
    pub fn new(path: PathBuf) -> Self {
        PartitionFile {
            path,
            file: Mutex::new(None),
            dirty: AtomicBool::new(false),
            holes: RwLock::new(()),
        }
    }

    fn named<T>(&self, done: io::Result<T>) -> FileResult<T> {
        done.map_err(|source| FileError {
            path: self.path.clone(),
            source,
        })
    }

    /// Bytes in the file, 0 when there is none yet.
    pub fn len(&self) -> FileResult<u64> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => self.named(Err(e)),
        }
    }

    fn handle(&self) -> io::Result<Arc<File>> {
        let mut file = self.file.lock();
        if let Some(f) = &*file {
            return Ok(f.clone());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let opened = Arc::new(
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?,
        );
        *file = Some(opened.clone());
        Ok(opened)
    }

    pub fn write(&self, bytes: &[u8], at: u64) -> FileResult<()> {
        self.named(self.handle().and_then(|f| f.write_all_at(bytes, at)))
    }

    /// Marks a batch indexed. Marked after the index has it, so a checkpoint that
    /// clears the mark before it reads the index's end never misses the batch.
    pub fn written(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// fdatasync, whether or not anything was written.
    pub fn sync(&self) -> FileResult<()> {
        self.named(self.handle().and_then(|f| f.sync_data()))
    }

    /// Whether a batch was indexed since the last call; clears the mark.
    pub fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// Reads the batches `spans` names (called once the read holds off hole punching),
    /// contiguous in the file, with one `pread`: each batch a slice of the same buffer.
    pub fn read(&self, spans: impl FnOnce() -> Vec<IndexEntry>) -> FileResult<Vec<Bytes>> {
        let _holes = self.holes.read();
        let spans = spans();
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
            return Ok(Vec::new());
        };
        let from = first.position;
        let mut buf = vec![0; (last.end() - from) as usize];
        self.named(self.handle().and_then(|f| f.read_exact_at(&mut buf, from)))?;
        let buf = Bytes::from(buf);
        Ok(spans
            .iter()
            .map(|e| {
                let at = (e.position - from) as usize;
                buf.slice(at..at + e.size as usize)
            })
            .collect())
    }

    /// The batches `spans` names as their headers alone (the first
    /// [`records::HEADER_LEN`] bytes), control batches whole: what a transaction index
    /// reads of them (`LogCall::ReadHeaders`), one small `pread` a batch instead of every
    /// byte of the log.
    pub fn read_headers(&self, spans: impl FnOnce() -> Vec<IndexEntry>) -> FileResult<Vec<Bytes>> {
        let _holes = self.holes.read();
        let spans = spans();
        if spans.is_empty() {
            return Ok(Vec::new());
        }
        let f = self.named(self.handle())?;
        let read = |len: usize, at: u64| {
            let mut buf = vec![0; len];
            self.named(f.read_exact_at(&mut buf, at)).map(|()| buf)
        };
        (spans.iter())
            .map(|e| {
                let size = e.size as usize;
                let head = read(records::HEADER_LEN.min(size), e.position)?;
                let whole = head.len() < size && records::BatchHeader::parse(&head).control;
                Ok(Bytes::from(if whole {
                    read(size, e.position)?
                } else {
                    head
                }))
            })
            .collect()
    }

    /// Whether the file holds the batch `entry` names, whole: its length, CRC and base
    /// offset in place (`records::check_frame`). Checked at start for batches a machine
    /// crash may have left unwritten though their index entries survived.
    pub fn holds(&self, entry: &IndexEntry) -> bool {
        let mut buf = vec![0; entry.size as usize];
        self.handle()
            .and_then(|f| f.read_exact_at(&mut buf, entry.position))
            .is_ok()
            && records::check_frame(&buf).is_ok()
            && records::base_offset(&buf) == entry.base_offset
    }

    /// Cuts the file to `len`: what lies beyond no index entry names.
    pub fn truncate(&self, len: u64) -> FileResult<()> {
        self.named(self.handle().and_then(|f| f.set_len(len)))
    }

    /// Where a compaction writes the partition's new file before it takes this one's
    /// place (`<partition>.compacted`).
    pub fn compacted_path(&self) -> PathBuf {
        self.path.with_extension("compacted")
    }

    /// Makes the file at [`Self::compacted_path`] empty, to be written and synced by
    /// the caller.
    pub fn create_compacted(&self) -> FileResult<File> {
        let path = self.compacted_path();
        File::create(&path).map_err(|source| FileError { path, source })
    }

    /// Renames the compacted file over this one and syncs the directory, then runs
    /// `then` (the index's swap), with reads held off throughout: none reads the new
    /// file by the old index or the old file by the new one.
    pub fn take_compacted(&self, then: impl FnOnce()) -> FileResult<()> {
        let _holes = self.holes.write();
        let mut file = self.file.lock();
        self.named(std::fs::rename(self.compacted_path(), &self.path))?;
        self.named(sync_dir(&self.path))?;
        *file = None;
        then();
        Ok(())
    }

    /// At start: finishes the rename of a compaction whose entries the index took
    /// (`pending`), or removes the file of one it never took.
    pub fn settle_compaction(&self, pending: bool) -> FileResult<()> {
        let compacted = self.compacted_path();
        match (pending, compacted.exists()) {
            (true, true) => {
                self.named(std::fs::rename(&compacted, &self.path))?;
                self.named(sync_dir(&self.path))
            }
            (false, true) => self.named(std::fs::remove_file(&compacted)),
            (_, false) => Ok(()),
        }
    }

    /// Gives the space below `end` back to the file system (DeleteRecords freed it).
    /// Where the file system cannot punch holes the bytes stay, unread.
    pub fn free_below(&self, end: u64) -> FileResult<()> {
        let _holes = self.holes.write();
        self.named(self.handle().and_then(|f| punch_hole(&f, end)))
    }
}

/// fsyncs the directory holding `file`, so a rename or a new file in it lasts.
pub fn sync_dir(file: &Path) -> io::Result<()> {
    match file.parent() {
        Some(dir) => File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

fn punch_hole(file: &File, end: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(end) else {
        return Ok(());
    };
    // SAFETY: fallocate on a descriptor this function borrows for the call; no memory
    // is passed.
    let done = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            0,
            len,
        )
    };
    match done {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
            e => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(base_offset: i64, position: u64, size: u32) -> IndexEntry {
        IndexEntry {
            base_offset,
            position,
            record_count: 1,
            max_timestamp: 0,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            size,
        }
    }

    /// A v2 batch header of `size` bytes at `base_offset` with a right CRC.
    fn batch(base_offset: i64, size: usize) -> Vec<u8> {
        let mut b = vec![7u8; size];
        b[..8].copy_from_slice(&base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&((size - 12) as u32).to_be_bytes());
        b[16] = 2;
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    #[test]
    fn reads_batches_by_position_and_checks_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let file = PartitionFile::new(dir.path().join("t").join("0"));
        assert_eq!(file.len().unwrap(), 0, "no file before the first write");
        let (a, b) = (batch(0, 64), batch(3, 100));
        file.write(&a, 0).unwrap();
        file.write(&b, 64).unwrap();
        assert!(!file.take_dirty());
        file.written();
        assert!(file.take_dirty() && !file.take_dirty());
        let read = file
            .read(|| vec![entry(0, 0, 64), entry(3, 64, 100)])
            .unwrap();
        assert_eq!(read, vec![Bytes::from(a), Bytes::from(b.clone())]);
        assert!(file.holds(&entry(3, 64, 100)));
        assert!(!file.holds(&entry(4, 64, 100)), "another base offset");
        assert!(!file.holds(&entry(3, 64, 90)), "another length");
        assert!(!file.holds(&entry(3, 164, 100)), "beyond the end");
        let mut torn = b;
        torn[50] ^= 1;
        file.write(&torn, 164).unwrap();
        assert!(
            !file.holds(&entry(3, 164, 100)),
            "a CRC that does not match"
        );
        file.truncate(164).unwrap();
        assert_eq!(file.len().unwrap(), 164);
        file.free_below(64).unwrap();
        assert_eq!(file.len().unwrap(), 164, "punching keeps the size");
        assert!(
            file.holds(&entry(3, 64, 100)),
            "the batch above is untouched"
        );
    }
}
