//! Embedded-store engine benchmark: fjall 3 vs SQLite (rusqlite), modelling Kafka partition logs.
//!
//! Each append writes one opaque record batch (the blob) keyed by (partition u32 BE, base_offset
//! u64 BE) plus a 40-byte index entry under the same key, atomically, and makes it survive a
//! process SIGKILL before returning (fjall: journal flushed to the OS; SQLite: WAL commit).
//! Reads model consumer fetches: a range scan from an offset forward until ~1 MiB is gathered.
//!
//! Run: `cargo bench --bench storage_engines`. Scale with env vars:
//! `BENCH_MB` (MiB written per engine and blob size, default 1024) and
//! `BENCH_SYNC_APPENDS` (appends in the fsync-per-append runs, default 300).

use bytes::Bytes;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, KvSeparationOptions, PersistMode};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};
use std::time::Instant;

type R<T> = Result<T, Box<dyn std::error::Error>>;

const PARTITIONS: u32 = 8;
const FETCH_MAX: usize = 1 << 20; // Kafka fetch.max.bytes-like budget per fetch
const RECORDS_PER_BATCH: u64 = 10; // base offsets advance like real batches, not by 1

/// The operations the gateway needs from its embedded store.
trait Store {
    fn append(&mut self, p: u32, base: u64, blob: &Bytes, index: &[u8; 40]) -> R<()>;
    /// Blobs of partition `p` from `from` forward until >= `max` bytes (at least one blob, as
    /// Kafka does). Returns (bytes, last base offset read).
    fn fetch(&mut self, p: u32, from: u64, max: usize) -> R<(usize, Option<u64>)>;
    fn close(&mut self);
    fn open(&mut self) -> R<()>;
    /// Startup: iterate every index entry (rebuilding in-memory log-end offsets etc.).
    fn scan_index(&mut self) -> R<usize>;
}

fn key(p: u32, base: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&p.to_be_bytes());
    k[4..].copy_from_slice(&base.to_be_bytes());
    k
}

struct Fjall {
    path: PathBuf,
    kv_separation: Option<KvSeparationOptions>,
    mode: PersistMode,
    db: Option<(Database, Keyspace, Keyspace)>, // (db, blobs, index)
}

impl Store for Fjall {
    fn open(&mut self) -> R<()> {
        let db = Database::builder(&self.path)
            // Producers send compressed batches: LZ4 on the journal would only burn CPU
            // (this is also what the gateway's embedded store sets).
            .journal_compression(fjall::CompressionType::None)
            .open()?;
        // With KV separation, values >= 1 KiB (default threshold) go to blob files, so
        // compaction rewrites only keys and pointers, not the record batches themselves.
        let kv = self.kv_separation.clone();
        let blobs = db.keyspace("blobs", || {
            KeyspaceCreateOptions::default().with_kv_separation(kv)
        })?;
        let index = db.keyspace("index", KeyspaceCreateOptions::default)?;
        self.db = Some((db, blobs, index));
        Ok(())
    }
    fn close(&mut self) {
        self.db = None; // all handles dropped: journal synced, workers joined, lock released
    }
    fn append(&mut self, p: u32, base: u64, blob: &Bytes, index: &[u8; 40]) -> R<()> {
        let (db, blobs, idx) = self.db.as_ref().ok_or("closed")?;
        // One journal entry for both keyspaces = atomic. `durability` persists inside commit,
        // under the journal lock (what db.batch() already defaults to, stated here explicitly):
        // Buffer = journal BufWriter flushed to the OS (survives SIGKILL), SyncData = fdatasync
        // (survives power loss). Bytes -> Slice is zero-copy with the bytes_1 feature.
        let mut batch = db.batch().durability(Some(self.mode));
        batch.insert(blobs, key(p, base), blob.clone());
        batch.insert(idx, key(p, base), *index);
        batch.commit()?;
        Ok(())
    }
    fn fetch(&mut self, p: u32, from: u64, max: usize) -> R<(usize, Option<u64>)> {
        let (_, blobs, _) = self.db.as_ref().ok_or("closed")?;
        let (mut total, mut last, mut out) = (0, None, Vec::new());
        for guard in blobs.range(key(p, from)..=key(p, u64::MAX)) {
            let (k, v) = guard.into_inner()?;
            let v: Bytes = v.into(); // zero-copy: Slice wraps a Bytes with the bytes_1 feature
            total += v.len();
            last = Some(u64::from_be_bytes(k[4..12].try_into()?));
            out.push(v); // a real fetch would hand these to the response encoder
            if total >= max {
                break;
            }
        }
        Ok((total, last))
    }
    fn scan_index(&mut self) -> R<usize> {
        let (_, _, idx) = self.db.as_ref().ok_or("closed")?;
        let mut n = 0;
        for guard in idx.iter() {
            let (_k, v) = guard.into_inner()?;
            n += usize::from(v.len() == 40);
        }
        Ok(n)
    }
}

struct Sqlite {
    path: PathBuf,
    synchronous: &'static str, // NORMAL: WAL commit reaches the OS; FULL: fsync per commit
    conn: Option<Connection>,
}

impl Sqlite {
    // Blobs live in a rowid table keyed by (partition << 48 | base_offset): rows are clustered in
    // key order with no secondary index hop. WITHOUT ROWID is meant for small rows (SQLite
    // advises < ~1/20 page), which fits the 40-byte index entries but not 1-256 KiB blobs.
    fn rowid(p: u32, base: u64) -> i64 {
        ((p as i64) << 48) | base as i64
    }
}

impl Store for Sqlite {
    fn open(&mut self) -> R<()> {
        let conn = Connection::open(&self.path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", self.synchronous)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS blobs(id INTEGER PRIMARY KEY, data BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS idx(p INTEGER NOT NULL, base INTEGER NOT NULL,
                 entry BLOB NOT NULL, PRIMARY KEY(p, base)) WITHOUT ROWID;",
        )?;
        self.conn = Some(conn);
        Ok(())
    }
    fn close(&mut self) {
        self.conn = None; // last connection closing checkpoints the WAL into the main file
    }
    fn append(&mut self, p: u32, base: u64, blob: &Bytes, index: &[u8; 40]) -> R<()> {
        let tx = self.conn.as_mut().ok_or("closed")?.transaction()?;
        tx.prepare_cached("INSERT INTO blobs(id, data) VALUES (?1, ?2)")?
            .execute(params![Self::rowid(p, base), &blob[..]])?;
        tx.prepare_cached("INSERT INTO idx(p, base, entry) VALUES (?1, ?2, ?3)")?
            .execute(params![p, base as i64, &index[..]])?;
        tx.commit()?;
        Ok(())
    }
    fn fetch(&mut self, p: u32, from: u64, max: usize) -> R<(usize, Option<u64>)> {
        let conn = self.conn.as_ref().ok_or("closed")?;
        let mut stmt = conn
            .prepare_cached("SELECT id, data FROM blobs WHERE id >= ?1 AND id < ?2 ORDER BY id")?;
        let mut rows = stmt.query(params![Self::rowid(p, from), Self::rowid(p + 1, 0)])?;
        let (mut total, mut last, mut out) = (0, None, Vec::new());
        while let Some(row) = rows.next()? {
            let v = Bytes::copy_from_slice(row.get_ref(1)?.as_blob()?); // SQLite must copy out
            total += v.len();
            last = Some((row.get::<_, i64>(0)? & ((1 << 48) - 1)) as u64);
            out.push(v);
            if total >= max {
                break;
            }
        }
        Ok((total, last))
    }
    fn scan_index(&mut self) -> R<usize> {
        let conn = self.conn.as_ref().ok_or("closed")?;
        let mut stmt = conn.prepare_cached("SELECT p, base, entry FROM idx")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += usize::from(row.get_ref(2)?.as_blob()?.len() == 40);
        }
        Ok(n)
    }
}

/// Incompressible payload (producers usually compress batches), sliced zero-copy per append.
fn payload_pool(len: usize) -> Bytes {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    Bytes::from(v)
}

fn index_entry(base: u64, size: usize) -> [u8; 40] {
    // base(8) last_delta(4) first_ts(8) max_ts(8) size(4) count(4) crc(4): a plausible 40 bytes
    let mut e = [0u8; 40];
    e[..8].copy_from_slice(&base.to_be_bytes());
    e[8..12].copy_from_slice(&(RECORDS_PER_BATCH as u32 - 1).to_be_bytes());
    e[28..32].copy_from_slice(&(size as u32).to_be_bytes());
    e
}

/// Appends `n` blobs round-robin over the partitions; returns seconds.
fn write(s: &mut dyn Store, pool: &Bytes, size: usize, n: usize) -> R<f64> {
    let t = Instant::now();
    for i in 0..n {
        let p = i as u32 % PARTITIONS;
        let base = (i as u64 / PARTITIONS as u64) * RECORDS_PER_BATCH;
        let off = (i * 4099) % (pool.len() - size); // varying slices of the pool, no copy
        s.append(
            p,
            base,
            &pool.slice(off..off + size),
            &index_entry(base, size),
        )?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// Consumes every partition from offset 0 with 1 MiB fetches; returns MB/s.
fn read_all(s: &mut dyn Store, expect: usize) -> R<f64> {
    let (t, mut bytes) = (Instant::now(), 0);
    for p in 0..PARTITIONS {
        let mut from = 0;
        while let (n, Some(last)) = s.fetch(p, from, FETCH_MAX)? {
            bytes += n;
            from = last + 1;
        }
    }
    assert_eq!(bytes, expect, "read back a different amount than written");
    Ok(bytes as f64 / 1e6 / t.elapsed().as_secs_f64())
}

fn dir_size(p: &Path) -> u64 {
    std::fs::read_dir(p).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => dir_size(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

/// Bytes this process (all threads) caused to be written to disk so far: appends plus the
/// engine's own rewrites (compaction, checkpoints). Linux only; 0 elsewhere.
fn disk_written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| -> u64 {
        io.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    field("write_bytes:").saturating_sub(field("cancelled_write_bytes:"))
}

fn make(engine: &str, dir: &Path, fsync: bool) -> Box<dyn Store> {
    let (path, db, conn) = (dir.join("db"), None, None);
    if engine == "sqlite" {
        let synchronous = if fsync { "FULL" } else { "NORMAL" };
        return Box::new(Sqlite {
            path,
            synchronous,
            conn,
        });
    }
    let kv_separation = (engine == "fjall-kvsep").then(KvSeparationOptions::default);
    let mode = if fsync {
        PersistMode::SyncData
    } else {
        PersistMode::Buffer
    };
    Box::new(Fjall {
        path,
        kv_separation,
        mode,
        db,
    })
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> R<()> {
    let total_mb = env("BENCH_MB", 1024);
    let sync_n = env("BENCH_SYNC_APPENDS", 300);
    let pool = payload_pool(8 << 20);
    let engines = ["fjall", "fjall-kvsep", "sqlite"];
    println!("{total_mb} MiB per run, {PARTITIONS} partitions round-robin, fetch {FETCH_MAX} B");
    println!(
        "engine         blob  appends  append/s      MB/s  hot MB/s reop MB/s close ms reopen+idx disk MiB  w-amp"
    );
    for size_kib in [1usize, 16, 256] {
        for engine in engines {
            let (size, dir) = (size_kib << 10, tempfile::tempdir()?);
            let n = (total_mb << 20) / size;
            let mut s = make(engine, dir.path(), false);
            s.open()?;
            let written = disk_written();
            let secs = write(s.as_mut(), &pool, size, n)?;
            let hot = read_all(s.as_mut(), n * size)?;
            let t = Instant::now();
            s.close(); // fjall: waits for running flush/compaction; SQLite: checkpoints the WAL
            let (close_ms, t) = (t.elapsed().as_secs_f64() * 1e3, Instant::now());
            let write_amp = (disk_written() - written) as f64 / (n * size) as f64;
            s.open()?; // fjall replays the journal here (memtables were not flushed on close)
            assert_eq!(s.scan_index()?, n);
            let reopen_ms = t.elapsed().as_secs_f64() * 1e3;
            let cold = read_all(s.as_mut(), n * size)?;
            s.close();
            println!(
                "{engine:<12} {:>5}K {n:>8} {:>9.0} {:>9.1} {hot:>9.0} {cold:>9.0} {close_ms:>8.0} {:>8.0}ms {:>8.0} {write_amp:>6.2}",
                size_kib,
                n as f64 / secs,
                (n * size) as f64 / 1e6 / secs,
                reopen_ms,
                dir_size(dir.path()) as f64 / (1 << 20) as f64,
            );
        }
    }
    println!("\nfsync per append (fjall PersistMode::SyncData, SQLite synchronous=FULL), {sync_n} appends");
    for size_kib in [1usize, 16, 256] {
        for engine in engines {
            let (size, dir) = (size_kib << 10, tempfile::tempdir()?);
            let mut s = make(engine, dir.path(), true);
            s.open()?;
            let secs = write(s.as_mut(), &pool, size, sync_n)?;
            println!(
                "{engine:<12} {size_kib:>5}K {sync_n:>8} {:>9.0} {:>9.1} {:>7.2}ms/append",
                sync_n as f64 / secs,
                (sync_n * size) as f64 / 1e6 / secs,
                secs * 1e3 / sync_n as f64,
            );
            s.close();
        }
    }
    Ok(())
}
