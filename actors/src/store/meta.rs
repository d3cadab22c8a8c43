//! The metadata port: small versioned tables of keys and values, on which every kind
//! of gateway state is kept (`store::tables`): the embedded store's `meta` keyspace,
//! or one Iggy log per table. Like the log port, every call is one [`MetaCall`], so
//! one layer meters all of them.

use std::sync::Arc;

use bytes::Bytes;

use crate::store::{StoreError, StoreFuture, StoreResult};

/// How many writes a table has taken: 0 before the first. Every write to a table
/// gets a version no other write to it gets, on every gateway sharing the store, so
/// a version also serves as a unique, ordered number (producer-id blocks, node ids).
pub type Version = u64;

/// One change to a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Put { key: String, value: Bytes },
    Delete { key: String },
}

impl Change {
    pub fn key(&self) -> &str {
        match self {
            Change::Put { key, .. } | Change::Delete { key } => key,
        }
    }
}

/// What a conditional write needs to find where it lands in the table's order: `key`
/// holding `value` (`None`: no entry). A write whose conditions do not all hold changes
/// nothing, so writers that each read a key and write it back conditionally never
/// undo each other's changes, even when one's write reaches the store late.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    pub key: String,
    pub value: Option<Bytes>,
}

/// A table's entries under a prefix, in key order, as of `version`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub version: Version,
    pub entries: Vec<(String, Bytes)>,
}

/// What changed in a table since a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Since {
    /// The changes, in the order they were written, and the version after them.
    Changes(Version, Vec<Change>),
    /// The store no longer holds what came between: scan the table again.
    Gone,
}

/// One call to a metadata store.
#[derive(Debug)]
pub enum MetaCall {
    /// Applies the changes in order, all or none, if every `expect` holds. Once
    /// answered they survive a crash of the gateway process. Answers the version of
    /// this write, or [`MetaAnswer::Refused`].
    Write {
        table: &'static str,
        expect: Vec<Expect>,
        changes: Vec<Change>,
    },
    /// Every entry whose key starts with `prefix`, including what other gateways wrote
    /// before the call.
    Scan { table: &'static str, prefix: String },
    /// What changed in the table after `since`.
    Since { table: &'static str, since: Version },
    /// A cheap round trip to the store: `/readyz` is ready only while this succeeds.
    Ping,
    /// Makes everything acknowledged so far durable (called on shutdown).
    Flush,
}

impl MetaCall {
    /// The call's name, as metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            MetaCall::Write { .. } => "meta_write",
            MetaCall::Scan { .. } => "meta_scan",
            MetaCall::Since { .. } => "meta_since",
            MetaCall::Ping => "ping",
            MetaCall::Flush => "flush",
        }
    }

    /// The table the call is to; empty for Ping and Flush.
    pub fn table(&self) -> &'static str {
        match self {
            MetaCall::Write { table, .. }
            | MetaCall::Scan { table, .. }
            | MetaCall::Since { table, .. } => table,
            MetaCall::Ping | MetaCall::Flush => "",
        }
    }
}

/// What a [`MetaCall`] gets back.
#[derive(Debug)]
pub enum MetaAnswer {
    Written(Version),
    /// A write whose conditions did not hold: nothing changed.
    Refused,
    Scanned(Scan),
    Since(Since),
    Done,
}

pub trait MetaStore: Send + Sync + 'static {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer>;
    /// The same store through a connection of its own (on Iggy; the embedded store
    /// has none to give): an actor that serializes its writes owns one, so they never
    /// queue behind other actors' calls. One that cannot be had is an error for its
    /// owner to report, never a shared connection in its place.
    fn client(&self) -> StoreResult<Arc<dyn MetaStore>>;
    /// Whether other gateways may share this store (and so its tables): they then
    /// form one cluster (`membership`).
    fn shared(&self) -> bool {
        false
    }
}

/// A metadata store with typed calls. Cheap to clone.
#[derive(Clone)]
pub struct Meta(Arc<dyn MetaStore>);

impl Meta {
    pub fn new(store: Arc<dyn MetaStore>) -> Meta {
        Meta(store)
    }

    pub fn shared(&self) -> bool {
        self.0.shared()
    }

    /// A handle on a connection of its own ([`MetaStore::client`]).
    pub fn client(&self) -> StoreResult<Meta> {
        Ok(Meta(self.0.client()?))
    }

    pub async fn write(&self, table: &'static str, changes: Vec<Change>) -> StoreResult<Version> {
        self.write_if(table, Vec::new(), changes)
            .await?
            .ok_or_else(|| unexpected("meta_write"))
    }

    /// Writes `changes` if every `expect` holds where the write lands: its version, or
    /// `None` when one did not and nothing changed.
    pub async fn write_if(
        &self,
        table: &'static str,
        expect: Vec<Expect>,
        changes: Vec<Change>,
    ) -> StoreResult<Option<Version>> {
        let call = MetaCall::Write {
            table,
            expect,
            changes,
        };
        match self.0.call(call).await? {
            MetaAnswer::Written(v) => Ok(Some(v)),
            MetaAnswer::Refused => Ok(None),
            _ => Err(unexpected("meta_write")),
        }
    }

    /// Deletes `keys` from `table` in one write (none: nothing written).
    pub async fn delete(&self, table: &'static str, keys: Vec<String>) -> StoreResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let gone = keys.into_iter().map(|key| Change::Delete { key }).collect();
        self.write(table, gone).await.map(|_| ())
    }

    pub async fn scan(&self, table: &'static str, prefix: &str) -> StoreResult<Scan> {
        let prefix = prefix.to_string();
        match self.0.call(MetaCall::Scan { table, prefix }).await? {
            MetaAnswer::Scanned(scan) => Ok(scan),
            _ => Err(unexpected("meta_scan")),
        }
    }

    pub async fn since(&self, table: &'static str, since: Version) -> StoreResult<Since> {
        match self.0.call(MetaCall::Since { table, since }).await? {
            MetaAnswer::Since(changes) => Ok(changes),
            _ => Err(unexpected("meta_since")),
        }
    }

    pub async fn ping(&self) -> StoreResult<()> {
        self.done(MetaCall::Ping).await
    }

    pub async fn flush(&self) -> StoreResult<()> {
        self.done(MetaCall::Flush).await
    }

    async fn done(&self, call: MetaCall) -> StoreResult<()> {
        let name = call.name();
        match self.0.call(call).await? {
            MetaAnswer::Done => Ok(()),
            _ => Err(unexpected(name)),
        }
    }
}

fn unexpected(call: &str) -> StoreError {
    StoreError::fatal(format!(
        "the metadata store answered {call} with another kind of answer"
    ))
}
