//! Tables shared by every gateway on one store, and the one mechanism that keeps a
//! gateway's copy of each: a [`SharedTable`] actor loads its table, catches up with
//! what other gateways wrote every `refresh` (and before each change), and publishes
//! the table's [`Table::View`] through a `watch` channel whenever it changed.
//!
//! A [`Table`] is a name, key and value codecs and a view, written once here; the
//! engines see only strings and bytes (`store::meta`).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::watch;

use super::meta::{Change, Meta, Since, Version};
use crate::store::{StoreError, StoreResult};

/// One kind of gateway state, kept as a table of the metadata store.
pub trait Table: Sized + 'static {
    /// The table's name in the store.
    const NAME: &'static str;
    type Key: Ord + Clone + Send + Sync + 'static;
    type Value: Clone + PartialEq + Send + Sync + 'static;
    /// What readers use: built from the rows each time they change.
    type View: Send + Sync + 'static;

    fn encode_key(key: &Self::Key) -> String;
    fn decode_key(key: &str) -> Result<Self::Key, String>;
    fn encode_value(value: &Self::Value) -> Bytes;
    fn decode_value(value: &[u8]) -> Result<Self::Value, String>;
    fn view(rows: &Rows<Self>) -> Self::View;
}

/// A table's rows, by key.
pub type Rows<T> = BTreeMap<<T as Table>::Key, <T as Table>::Value>;

/// One change to a table's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit<K, V> {
    Put(K, V),
    Delete(K),
}

/// The change as the store takes it.
fn encode<T: Table>(edit: &Edit<T::Key, T::Value>) -> Change {
    match edit {
        Edit::Put(k, v) => Change::Put {
            key: T::encode_key(k),
            value: T::encode_value(v),
        },
        Edit::Delete(k) => Change::Delete {
            key: T::encode_key(k),
        },
    }
}

/// Rows decoded from a scan; an entry that does not decode stops the load, naming it.
pub fn decode_rows<T: Table>(entries: &[(String, Bytes)]) -> StoreResult<Rows<T>> {
    entries
        .iter()
        .map(|(k, v)| decode_entry::<T>(k, v))
        .collect()
}

fn decode_entry<T: Table>(key: &str, value: &[u8]) -> StoreResult<(T::Key, T::Value)> {
    let bad = |reason: String| {
        StoreError::fatal(format!(
            "entry '{key}' of table '{}' is unreadable: {reason}",
            T::NAME
        ))
    };
    Ok((
        T::decode_key(key).map_err(bad)?,
        T::decode_value(value).map_err(bad)?,
    ))
}

/// `rows` with `changes` applied in order.
fn apply<T: Table>(rows: &Rows<T>, changes: &[Change]) -> StoreResult<Rows<T>> {
    let mut next = rows.clone();
    for change in changes {
        match change {
            Change::Put { key, value } => {
                let (k, v) = decode_entry::<T>(key, value)?;
                next.insert(k, v);
            }
            Change::Delete { key } => {
                let k = T::decode_key(key).map_err(|reason| {
                    StoreError::fatal(format!(
                        "key '{key}' of table '{}' is unreadable: {reason}",
                        T::NAME
                    ))
                })?;
                next.remove(&k);
            }
        }
    }
    Ok(next)
}

/// The rows as of `version`, brought up to date with what the store holds now.
async fn caught_up<T: Table>(
    meta: &Meta,
    version: Version,
    rows: Arc<Rows<T>>,
) -> StoreResult<(Version, Arc<Rows<T>>)> {
    match meta.since(T::NAME, version).await? {
        Since::Changes(v, changes) if changes.is_empty() => Ok((v, rows)),
        Since::Changes(v, changes) => Ok((v, Arc::new(apply::<T>(&rows, &changes)?))),
        Since::Gone => {
            let scan = meta.scan(T::NAME, "").await?;
            Ok((scan.version, Arc::new(decode_rows::<T>(&scan.entries)?)))
        }
    }
}

/// This gateway's copy of table `T`.
pub struct SharedTable<T: Table> {
    /// A connection of its own: its catch-ups and writes queue behind no one's.
    meta: Meta,
    version: Version,
    rows: Arc<Rows<T>>,
    published: watch::Sender<Arc<T::View>>,
    refresh: Duration,
}

impl<T: Table> SharedTable<T> {
    /// Loads the table and starts keeping it up to date.
    pub async fn start(
        meta: &Meta,
        refresh: Duration,
    ) -> StoreResult<(Addr<SharedTable<T>>, watch::Receiver<Arc<T::View>>)> {
        let meta = meta.client()?;
        let scan = meta.scan(T::NAME, "").await?;
        let rows = Arc::new(decode_rows::<T>(&scan.entries)?);
        let (published, view) = watch::channel(Arc::new(T::view(&rows)));
        let table = SharedTable {
            meta,
            version: scan.version,
            rows,
            published,
            refresh,
        };
        Ok((table.start(), view))
    }

    /// Takes `rows` at `version` as the table's state, publishing it if it changed.
    fn settle(&mut self, version: Version, rows: Arc<Rows<T>>) {
        self.version = version;
        if !Arc::ptr_eq(&rows, &self.rows) && *rows != *self.rows {
            self.published.send_replace(Arc::new(T::view(&rows)));
            tracing::info!(table = T::NAME, rows = rows.len(), "shared table changed");
        }
        self.rows = rows;
    }

    /// Catches up, then answers the rows; `wait`ed or atomic, so one at a time.
    fn catch_up(&self) -> impl ActorFuture<Self, Output = StoreResult<Arc<Rows<T>>>> + 'static {
        let (meta, version, rows) = (self.meta.clone(), self.version, self.rows.clone());
        async move { caught_up::<T>(&meta, version, rows).await }
            .into_actor(self)
            .map(|caught, act, _| {
                let (version, rows) = caught?;
                act.settle(version, rows.clone());
                Ok(rows)
            })
    }
}

impl<T: Table> Actor for SharedTable<T> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.refresh, |act, ctx| {
            ctx.wait(act.catch_up().map(|caught, _, _| {
                if let Err(e) = caught {
                    tracing::warn!(table = T::NAME, error = %e, "cannot catch up with the shared table");
                }
            }));
        });
    }
}

/// Catch up with what other gateways wrote, then answer the rows.
pub struct CatchUp<T>(PhantomData<T>);

impl<T> Default for CatchUp<T> {
    fn default() -> Self {
        CatchUp(PhantomData)
    }
}

impl<T: Table> Message for CatchUp<T> {
    type Result = StoreResult<Arc<Rows<T>>>;
}

impl<T: Table> Handler<CatchUp<T>> for SharedTable<T> {
    type Result = AtomicResponse<Self, StoreResult<Arc<Rows<T>>>>;

    fn handle(&mut self, _: CatchUp<T>, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(Box::pin(self.catch_up()))
    }
}

/// What a [`Modify`] decides, from the rows as they are: the edits to write and the
/// answer to give.
pub type Decide<T, R> =
    Box<dyn FnOnce(&Rows<T>) -> (Vec<Edit<<T as Table>::Key, <T as Table>::Value>>, R) + Send>;

/// Catch up, decide the edits on the latest rows, write them (all or none), apply and
/// publish them. Modifications on one gateway run one at a time.
pub struct Modify<T: Table, R>(pub Decide<T, R>);

impl<T: Table, R: 'static> Message for Modify<T, R> {
    type Result = StoreResult<R>;
}

impl<T: Table, R: 'static> Handler<Modify<T, R>> for SharedTable<T> {
    type Result = AtomicResponse<Self, StoreResult<R>>;

    fn handle(&mut self, msg: Modify<T, R>, _: &mut Self::Context) -> Self::Result {
        let meta = self.meta.clone();
        AtomicResponse::new(Box::pin(self.catch_up().then(move |rows, act, _| {
            let (version, before) = (act.version, act.rows.clone());
            async move {
                let rows = rows?;
                let (edits, answer) = (msg.0)(&rows);
                if edits.is_empty() {
                    return Ok((version, before, answer));
                }
                let changes: Vec<Change> = edits.iter().map(encode::<T>).collect();
                meta.write(T::NAME, changes).await?;
                // Reading the write back also applies what others wrote before it.
                let (version, rows) = caught_up::<T>(&meta, version, before).await?;
                Ok((version, rows, answer))
            }
            .into_actor(act)
            .map(|done: StoreResult<_>, act, _| {
                let (version, rows, answer) = done?;
                act.settle(version, rows);
                Ok(answer)
            })
        })))
    }
}
