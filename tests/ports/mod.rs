//! The two storage ports called directly, with no Kafka wire in between, so an
//! engine's bug is found at the port: each check is one async fn taking an [`Engine`]
//! (its [`Logs`] and [`Meta`]), and `on_every_store!(run: crate::ports::run; ...)` runs it on the
//! embedded store (a temporary directory) and on Iggy (a real `iggy-server`, SKIPPED
//! without one) as `ports::<file>::embedded::<check>` and `ports::<file>::iggy::<check>`.
//!
//! Where the engines differ by design, [`Promises`] says how, and each engine is held
//! to its own. `iggy_meta` holds what only the Iggy engine has to show (tables shared
//! by gateways on one server, snapshots, a lost answer), on the same server harness;
//! `embedded_files` what only the embedded store's partition files have to show.

mod delete_records;
mod embedded_files;
mod iggy_meta;
mod iggy_transactions;
mod log;
mod meta;
mod partitions;
mod sizes;
mod transactions;

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use iggy_kafka_actors::protocol::records;
use iggy_kafka_actors::store::{AppendBatch, Logs, Meta, ReadBatches, TopicPartition};
use iggy_kafka_gateway::{EmbeddedStore, IggyBackend, Settings};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder, TimestampType};

use crate::support::iggy::IggyServer;
use crate::support::Store;

/// What an engine does beyond what the ports ask of every engine.
#[derive(Clone, Copy, Debug)]
pub struct Promises {
    /// A read serves each batch exactly as appended but for its base offset (the
    /// embedded store); otherwise the records come back in batches of the engine's
    /// making (Iggy keeps one message a record).
    pub keeps_batches: bool,
    /// `Since` an older version answers the changes made since (Iggy's table logs);
    /// otherwise `Gone`, and the reader scans again (the embedded store keeps no log
    /// of its tables).
    pub keeps_changes: bool,
    /// Other gateways may open the same store and share its tables.
    pub shared: bool,
}

const EMBEDDED: Promises = Promises {
    keeps_batches: true,
    keeps_changes: false,
    shared: false,
};

const IGGY: Promises = Promises {
    keeps_batches: false,
    keeps_changes: true,
    shared: true,
};

/// One engine's two ports, and where it keeps its data, so it can be opened again.
pub struct Engine {
    pub logs: Logs,
    pub meta: Meta,
    pub promises: Promises,
    place: Place,
}

/// Where an engine keeps its data; outlives the engines opened on it.
#[derive(Clone)]
enum Place {
    Dir(Arc<tempfile::TempDir>),
    Iggy(Arc<IggyServer>),
}

/// Runs `check` on a fresh engine of `store`: the runner `on_every_store!(run: ...)`
/// hands each check to. Without an `iggy-server`, the Iggy run returns after the
/// SKIPPED line.
pub fn run<F: Future<Output = ()>>(store: Store, check: impl FnOnce(Engine) -> F) {
    let place = match store {
        Store::Embedded => Place::Dir(Arc::new(tempfile::tempdir().expect("temp dir"))),
        Store::Iggy => match IggyServer::start() {
            Some(server) => Place::Iggy(Arc::new(server)),
            None => return,
        },
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async move { check(Engine::open(place).await).await });
}

impl Engine {
    /// Opens the engine on `place` as the gateway's `start` does, from default settings.
    async fn open(place: Place) -> Engine {
        match &place {
            Place::Dir(dir) => {
                let settings = Settings {
                    data_dir: dir.path().join("data"),
                    ..Settings::default()
                };
                let store = EmbeddedStore::open(&settings.data_dir, settings.sync_policy())
                    .unwrap_or_else(|e| panic!("the embedded store did not open: {e}"));
                let store = Arc::new(store);
                Engine {
                    logs: Logs::new(store.clone()),
                    meta: Meta::new(store),
                    promises: EMBEDDED,
                    place,
                }
            }
            Place::Iggy(server) => {
                let store = Arc::new(iggy_backend(server, |_| {}).await);
                Engine {
                    logs: Logs::new(store.clone()),
                    meta: Meta::new(store),
                    promises: IGGY,
                    place,
                }
            }
        }
    }

    /// The engine closed and opened again on the same data, as a restarted gateway
    /// opens it.
    pub async fn restart(self) -> Engine {
        let place = self.place.clone();
        drop(self);
        Engine::open(place).await
    }

    /// A second gateway's engine on the same store, where stores are shared (Iggy); on
    /// the embedded store one gateway alone owns the data directory.
    pub async fn another(&self) -> Option<Engine> {
        match &self.place {
            Place::Dir(_) => None,
            Place::Iggy(_) => Some(Engine::open(self.place.clone()).await),
        }
    }
}

/// A backend on `server` from the gateway's default settings, after `tune` has its
/// say (`iggy_snapshot_records`, `iggy_request_timeout_ms`, ...).
pub async fn iggy_backend(server: &IggyServer, tune: impl FnOnce(&mut Settings)) -> IggyBackend {
    let mut settings = Settings {
        iggy_address: server.addr.to_string(),
        iggy_connect_timeout_ms: 10_000,
        ..Settings::default()
    };
    tune(&mut settings);
    let config = settings.iggy().expect("Iggy settings");
    IggyBackend::start(config)
        .await
        .unwrap_or_else(|e| panic!("the Iggy backend did not start: {e}"))
}

pub fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// A record of no producer at `timestamp`, with a key, a value and a header.
pub fn record(n: usize, timestamp: i64) -> Record {
    let mut r = crate::support::record(
        Some(format!("key-{n}").as_bytes()),
        format!("value-{n}").as_bytes(),
        timestamp,
    );
    let header = StrBytes::from_static_str("h");
    r.headers
        .insert(header, Some(Bytes::from(vec![n as u8; 3])));
    r
}

/// One batch of `records`, their offsets and sequences set from their places in it,
/// validated and decompressed as Produce does it.
pub fn batch_of(mut records: Vec<Record>, compression: Compression) -> AppendBatch {
    for (i, r) in records.iter_mut().enumerate() {
        r.offset = i as i64;
        // The encoder keeps records in one batch while offset − sequence stays put;
        // a producer without idempotence sends base sequence −1.
        r.sequence = if r.producer_id < 0 {
            i as i32 - 1
        } else {
            r.sequence.wrapping_add(i as i32)
        };
    }
    let bytes = crate::support::batch(&records, compression);
    let header = records::validate(&bytes).unwrap_or_else(|e| panic!("a bad test batch: {e:?}"));
    let records = records::batch_records(&bytes, usize::MAX).expect("a test batch decompresses");
    AppendBatch {
        header,
        bytes,
        records,
        whole: false,
    }
}

/// `count` uncompressed records, numbered from `first`, at timestamps `ts(n)`.
pub fn batch(first: usize, count: usize, ts: impl Fn(usize) -> i64) -> AppendBatch {
    let records = (first..first + count).map(|n| record(n, ts(n))).collect();
    batch_of(records, Compression::None)
}

/// An idempotent producer's batch of `count` records from sequence `sequence`.
pub fn idempotent(producer_id: i64, epoch: i16, sequence: i32, count: usize) -> AppendBatch {
    let records = (0..count)
        .map(|n| Record {
            producer_id,
            producer_epoch: epoch,
            sequence,
            ..record(n, 1_700_000_000_000 + n as i64)
        })
        .collect();
    batch_of(records, Compression::None)
}

/// What a consumer sees of a record: offset, timestamp and its type, key, value,
/// headers.
pub type Seen = (
    i64,
    i64,
    TimestampType,
    Option<Bytes>,
    Option<Bytes>,
    Vec<(String, Option<Bytes>)>,
);

pub fn seen(r: &Record) -> Seen {
    let headers = r.headers.iter();
    (
        r.offset,
        r.timestamp,
        r.timestamp_type,
        r.key.clone(),
        r.value.clone(),
        headers.map(|(k, v)| (k.to_string(), v.clone())).collect(),
    )
}

/// Every record of the batches read, in order, as a consumer decodes them: records of
/// a log-append-time batch take the batch's timestamp, as Kafka clients give them.
pub fn records_read(read: &ReadBatches) -> Vec<Record> {
    read.batches
        .iter()
        .flat_map(|b| {
            let header = records::BatchHeader::parse(b);
            let mut records = RecordBatchDecoder::decode(&mut b.clone())
                .unwrap_or_else(|e| panic!("a batch read back does not decode: {e}"))
                .records;
            for r in records.iter_mut().filter(|_| header.log_append_time) {
                r.timestamp = header.max_timestamp;
            }
            records
        })
        .collect()
}

/// What a consumer sees of `batch` appended at `base_offset`.
pub fn seen_of(batch: &AppendBatch, base_offset: i64) -> Vec<Seen> {
    let placed = records::place(batch.bytes.clone(), base_offset);
    records_read(&ReadBatches {
        batches: vec![placed],
        ..ReadBatches::default()
    })
    .iter()
    .map(seen)
    .collect()
}
