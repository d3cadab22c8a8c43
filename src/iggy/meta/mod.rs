//! The metadata port ([`MetaStore`]) on Iggy, for any table: the engine knows tables
//! by name only, keys and values are bytes to it.
//!
//! - Table `T` is the one-partition log `meta.T` in the gateway stream (setting
//!   `iggy_gateway_stream`), made on first use like the other state logs: never
//!   expiring, every write saved, capped, with a companion `meta.T.snapshots`
//!   (`gateway_log.rs`).
//! - A write is one Iggy message holding its changes in order ([`table`] gives the
//!   encoding), so it is applied all or none; its version is its offset + 1: version
//!   `N` is "the first `N` records applied", unique per table across every gateway on
//!   the server, and Iggy's log order is the order of the writes.
//! - Each gateway keeps a replica of every table it used (entries and version), loaded
//!   from the latest snapshot and the records after it. It changes only by reading
//!   the log: it catches up before every Scan and Since and after every Write, so
//!   what other gateways wrote first is applied first, and a write whose answer was
//!   lost (answered Unavailable) is applied when, and only if, the log has it.
//! - The gateway that sees a table `iggy_snapshot_records` records past its latest
//!   snapshot writes a new one from its replica, unless another gateway just did;
//!   so loading replays about that many records at most, and Since answers
//!   [`Since::Gone`] for versions whose records Iggy has since dropped.

mod table;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iggy::prelude::{IggyError, SystemClient};
use iggy_kafka_actors::store::meta::{
    Change, Expect, MetaAnswer, MetaCall, MetaStore, Scan, Since, Version,
};
use iggy_kafka_actors::store::{StoreError, StoreFuture, StoreResult};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use super::errors::backend_error;
use super::gateway_log::{self, LoadError, Replayed};
use super::pool::{Conn, ConnectError};
use super::{run_timed, IggyConfig, Inner};
use table::{decode_write, encode_write, Table};

/// The log of a table.
pub fn log_of(table: &str) -> String {
    format!("meta.{table}")
}

/// The replicas of the tables used so far, shared by every handle on the backend.
pub struct Tables {
    replicas: Mutex<HashMap<&'static str, Arc<Replica>>>,
    /// The connection of the backend's own handle; [`client`] handles have theirs.
    conn: Arc<Conn>,
}

impl Tables {
    pub fn new(config: &IggyConfig) -> Result<Tables, ConnectError> {
        Ok(Tables {
            replicas: Mutex::new(HashMap::new()),
            conn: Arc::new(Conn::own(config)?),
        })
    }

    /// The connection of the backend's own handle.
    pub fn conn(&self) -> Arc<Conn> {
        self.conn.clone()
    }
}

struct Replica {
    log: String,
    /// Loaded on first use, by the first caller; the others wait for it.
    state: OnceCell<Mutex<Replayed<Table>>>,
    /// A snapshot of it is being written from here.
    snapshotting: AtomicBool,
}

impl Replica {
    fn state(&self) -> &Mutex<Replayed<Table>> {
        self.state.get().expect("a replica is loaded before use")
    }
}

/// A handle on the tables through a connection of its own ([`MetaStore::client`]).
struct MetaClient {
    handle: tokio::runtime::Handle,
    inner: Arc<Inner>,
    request_timeout: Duration,
    conn: Arc<Conn>,
}

impl MetaStore for MetaClient {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        let task = serve(self.inner.clone(), self.conn.clone(), call);
        run_timed(&self.handle, self.request_timeout, task)
    }

    fn client(&self) -> StoreResult<Arc<dyn MetaStore>> {
        client(&self.handle, &self.inner, self.request_timeout)
    }

    fn shared(&self) -> bool {
        true
    }
}

/// A new handle with a connection of its own, sharing the replicas.
pub(super) fn client(
    handle: &tokio::runtime::Handle,
    inner: &Arc<Inner>,
    request_timeout: Duration,
) -> StoreResult<Arc<dyn MetaStore>> {
    let conn = Conn::own(&inner.config).map_err(|e| {
        StoreError::fatal_from("no Iggy connection of its own for a metadata client", e)
    })?;
    Ok(Arc::new(MetaClient {
        handle: handle.clone(),
        inner: inner.clone(),
        request_timeout,
        conn: Arc::new(conn),
    }))
}

/// Answers one call through `conn`.
pub(super) async fn serve(
    inner: Arc<Inner>,
    conn: Arc<Conn>,
    call: MetaCall,
) -> StoreResult<MetaAnswer> {
    let at = At {
        inner: &inner,
        conn: &conn,
    };
    Ok(match call {
        MetaCall::Write {
            table,
            expect,
            changes,
        } => at.write(table, &expect, &changes).await?,
        MetaCall::Scan { table, prefix } => MetaAnswer::Scanned(at.scan(table, &prefix).await?),
        MetaCall::Since { table, since } => MetaAnswer::Since(at.since(table, since).await?),
        MetaCall::Ping => {
            // Through this handle's own connection, which this opens if need be.
            let c = conn.ready().await.map_err(|e| backend_error(e, None, ""))?;
            c.check(c.ping().await)
                .map_err(|e| backend_error(e, None, ""))?;
            MetaAnswer::Done
        }
        MetaCall::Flush => {
            // Table logs save every write; this persists the partitions written.
            inner.flush().await?;
            MetaAnswer::Done
        }
    })
}

/// The backend as one handle sees it: the shared replicas, its own connection.
struct At<'a> {
    inner: &'a Arc<Inner>,
    conn: &'a Conn,
}

impl At<'_> {
    fn gateway_stream(&self) -> &str {
        &self.inner.config.gateway_stream
    }

    async fn write(
        &self,
        table: &'static str,
        expect: &[Expect],
        changes: &[Change],
    ) -> StoreResult<MetaAnswer> {
        let replica = self.replica(table).await?;
        let record = encode_write(expect, changes);
        let offset = gateway_log::append(self.conn, self.gateway_stream(), &replica.log, record)
            .await
            .map_err(|e| self.iggy_error(e, &replica.log))?;
        // Read the log up to this write rather than apply it alone: what other
        // gateways wrote before it lands first, as on every other gateway.
        let caught_up = self.catch_up(&replica).await;
        if expect.is_empty() {
            // The write stands either way; a failed catch-up is redone by the next call.
            if let Err(e) = caught_up {
                tracing::warn!(log = %replica.log, error = %e, "table not caught up after a write");
            }
            return Ok(MetaAnswer::Written(offset + 1));
        }
        // Whether a conditional write applied is known only from where it landed.
        caught_up?;
        let applied = replica.state().lock().state().applied(offset);
        match applied {
            Some(true) => Ok(MetaAnswer::Written(offset + 1)),
            Some(false) => Ok(MetaAnswer::Refused),
            None => Err(StoreError::unavailable(format!(
                "whether the conditional write at {offset} of '{}' applied is no longer known",
                replica.log
            ))),
        }
    }

    async fn scan(&self, table: &'static str, prefix: &str) -> StoreResult<Scan> {
        let replica = self.replica(table).await?;
        self.catch_up(&replica).await?;
        let state = replica.state().lock();
        Ok(Scan {
            version: state.next(),
            entries: state.state().scan(prefix),
        })
    }

    async fn since(&self, table: &'static str, since: Version) -> StoreResult<Since> {
        let replica = self.replica(table).await?;
        self.catch_up(&replica).await?;
        let (current, recent) = {
            let state = replica.state().lock();
            let current = state.next();
            (current, state.state().recent(since, current))
        };
        if since > current {
            return Err(StoreError::fatal(format!(
                "changes of table '{table}' asked since version {since}, past its end \
                 (version {current})"
            )));
        }
        if since == current {
            return Ok(Since::Changes(current, Vec::new()));
        }
        if let Some(changes) = recent {
            return Ok(Since::Changes(current, changes));
        }
        let log = &replica.log;
        let records = gateway_log::read_from(self.conn, self.gateway_stream(), log, since)
            .await
            .map_err(|e| self.iggy_error(e, log))?;
        let (Some(&(first, _)), Some(&(last, _))) = (records.first(), records.last()) else {
            return Ok(Since::Gone);
        };
        if first != since {
            // Iggy dropped the records after `since`; only a snapshot covers them.
            return Ok(Since::Gone);
        }
        let mut changes = Vec::new();
        for (offset, record) in &records {
            let write = decode_write(record).ok_or_else(|| malformed(log, *offset))?;
            if !write.expect.is_empty() {
                // Whether it applied depends on the entries where it landed.
                return Ok(Since::Gone);
            }
            changes.extend(write.changes);
        }
        Ok(Since::Changes(last + 1, changes))
    }

    /// The replica of `table`, loaded (and its logs made) on first use.
    async fn replica(&self, table: &'static str) -> StoreResult<Arc<Replica>> {
        let replica = self
            .inner
            .meta
            .replicas
            .lock()
            .entry(table)
            .or_insert_with(|| {
                Arc::new(Replica {
                    log: log_of(table),
                    state: OnceCell::new(),
                    snapshotting: AtomicBool::new(false),
                })
            })
            .clone();
        let log = &replica.log;
        replica
            .state
            .get_or_try_init(|| async {
                let fsync = self.inner.config.fsync;
                gateway_log::ensure_state_log(self.conn, self.gateway_stream(), log, fsync)
                    .await
                    .map_err(|e| self.iggy_error(e, log))?;
                let loaded: Replayed<Table> =
                    gateway_log::load(self.conn, self.gateway_stream(), log)
                        .await
                        .map_err(|e| self.load_error(e, log))?;
                tracing::info!(
                    log,
                    version = loaded.next(),
                    replayed = loaded.since_snapshot(),
                    "loaded a table (its snapshot, then the records after it)"
                );
                Ok::<_, StoreError>(Mutex::new(loaded))
            })
            .await?;
        Ok(replica)
    }

    /// Applies what was appended to the table's log since the replica last read it,
    /// then starts a snapshot if one is due.
    async fn catch_up(&self, replica: &Arc<Replica>) -> StoreResult<()> {
        let log = &replica.log;
        gateway_log::catch_up(self.conn, self.gateway_stream(), log, replica.state())
            .await
            .map_err(|e| self.load_error(e, log))?;
        let (malformed_at, since_snapshot) = {
            let state = replica.state().lock();
            (state.state().malformed(), state.since_snapshot())
        };
        if let Some(offset) = malformed_at {
            return Err(malformed(log, offset));
        }
        if since_snapshot >= self.inner.config.snapshot_records.max(1)
            && !replica.snapshotting.swap(true, Ordering::AcqRel)
        {
            let (inner, replica) = (self.inner.clone(), replica.clone());
            tokio::spawn(async move {
                if let Err(e) = snapshot(&inner, &replica).await {
                    tracing::warn!(log = %replica.log, error = %e, "table snapshot not written");
                }
                replica.snapshotting.store(false, Ordering::Release);
            });
        }
        Ok(())
    }

    fn iggy_error(&self, e: IggyError, log: &str) -> StoreError {
        table_error(e, self.gateway_stream(), log)
    }

    fn load_error(&self, e: LoadError, log: &str) -> StoreError {
        match e {
            LoadError::Iggy(e) => self.iggy_error(e, log),
            // A hole or a broken snapshot: retrying will not mend it.
            other => StoreError::fatal(other.to_string()),
        }
    }
}

/// Iggy's answer about a table log as a backend error: retriable when Iggy says so.
fn table_error(e: IggyError, stream: &str, log: &str) -> StoreError {
    match backend_error(e, None, log) {
        // A table is never unknown: its log was deleted under the gateway.
        StoreError::UnknownTopic(_) | StoreError::UnknownPartition { .. } => StoreError::fatal(
            format!("table log '{log}' is missing from Iggy stream '{stream}'"),
        ),
        other => other,
    }
}

fn malformed(log: &str, offset: u64) -> StoreError {
    StoreError::fatal(format!(
        "table log '{log}' holds a record at offset {offset} that is not a table write"
    ))
}

/// Writes a snapshot of a table from its replica, through the snapshot connection
/// (large writes never hold up calls), unless another gateway has just written one.
async fn snapshot(inner: &Inner, replica: &Replica) -> StoreResult<()> {
    let (conn, stream, log) = (
        &inner.pools.snapshots,
        inner.config.gateway_stream.as_str(),
        replica.log.as_str(),
    );
    let every = inner.config.snapshot_records.max(1);
    let error = |e| table_error(e, stream, log);
    if let Some(upto) = gateway_log::latest_marker(conn, stream, log)
        .await
        .map_err(error)?
    {
        let mut state = replica.state().lock();
        if state.next().saturating_sub(upto) < every {
            // Never past what this replica applied: its count since then stays right.
            let upto = upto.min(state.next());
            state.snapshot_written(upto);
            return Ok(());
        }
    }
    let (upto, records) = {
        let state = replica.state().lock();
        if let Some(offset) = state.state().malformed() {
            return Err(malformed(log, offset));
        }
        (state.next(), gateway_log::Compact::compacted(state.state()))
    };
    gateway_log::write_snapshot(conn, stream, log, upto, &records)
        .await
        .map_err(error)?;
    replica.state().lock().snapshot_written(upto);
    tracing::info!(log, upto, entries = records.len(), "table snapshot written");
    Ok(())
}
