//! The embedded store as a metadata store: keyspace `meta` holds every table's
//! entries under `<table>/<key>`, keyspace `versions` each table's version (`u64`,
//! big-endian), written in the same atomic batch as the changes. One gateway owns a
//! data directory, so no one else writes: a table has changed since a version exactly
//! when its version moved, and the reader then scans it again.

use std::collections::HashMap;

use bytes::Bytes;
use fjall::{Keyspace, PersistMode};
use iggy_kafka_actors::store::meta::{
    Change, Expect, MetaAnswer, MetaCall, MetaStore, Scan, Since, Version,
};
use iggy_kafka_actors::store::{StoreError, StoreFuture, StoreResult};
use parking_lot::Mutex;

use super::{blocking, EmbeddedError, EmbeddedStore, Inner};

/// The metadata keyspaces and the versions read so far; the lock makes a write and
/// its version one step.
pub(super) struct MetaTables {
    entries: Keyspace,
    versions: Keyspace,
    known: Mutex<HashMap<&'static str, Version>>,
}

fn entry_key(table: &str, key: &str) -> String {
    format!("{table}/{key}")
}

impl MetaTables {
    pub(super) fn new(entries: Keyspace, versions: Keyspace) -> MetaTables {
        MetaTables {
            entries,
            versions,
            known: Mutex::new(HashMap::new()),
        }
    }

    fn version_of(
        &self,
        known: &mut HashMap<&'static str, Version>,
        table: &'static str,
    ) -> Result<Version, EmbeddedError> {
        if let Some(v) = known.get(table) {
            return Ok(*v);
        }
        let v = match self.versions.get(table)? {
            Some(raw) => u64::from_be_bytes(raw.as_ref().try_into().map_err(|_| {
                EmbeddedError::BadMeta(format!("version of table '{table}' is {} bytes", raw.len()))
            })?),
            None => 0,
        };
        known.insert(table, v);
        Ok(v)
    }
}

impl Inner {
    /// The write's version, or `Refused` when an `expect` does not hold: checked
    /// under the lock every write takes, so nothing lands between check and write.
    fn meta_write(
        &self,
        table: &'static str,
        expect: &[Expect],
        changes: &[Change],
    ) -> StoreResult<MetaAnswer> {
        self.room()?;
        let tables = &self.tables;
        let mut known = tables.known.lock();
        for e in expect {
            let held = tables.entries.get(entry_key(table, &e.key));
            let held = held.map_err(EmbeddedError::from)?;
            if held.as_deref() != e.value.as_deref() {
                return Ok(MetaAnswer::Refused);
            }
        }
        let version = tables.version_of(&mut known, table)? + 1;
        let mut batch = self.db.batch().durability(Some(self.append_persist));
        for change in changes {
            match change {
                Change::Put { key, value } => {
                    batch.insert(&tables.entries, entry_key(table, key), value.as_ref())
                }
                Change::Delete { key } => batch.remove(&tables.entries, entry_key(table, key)),
            }
        }
        batch.insert(&tables.versions, table, version.to_be_bytes());
        batch.commit().map_err(EmbeddedError::from)?;
        known.insert(table, version);
        Ok(MetaAnswer::Written(version))
    }

    fn meta_scan(&self, table: &'static str, prefix: &str) -> StoreResult<Scan> {
        let tables = &self.tables;
        // The version first: a write landing meanwhile makes the scan newer, never older.
        let version = tables.version_of(&mut tables.known.lock(), table)?;
        let skip = table.len() + 1;
        let mut entries = Vec::new();
        for kv in tables.entries.prefix(entry_key(table, prefix)) {
            let (key, value) = kv.into_inner().map_err(EmbeddedError::from)?;
            let key = std::str::from_utf8(&key[skip..])
                .map_err(|_| {
                    EmbeddedError::BadMeta(format!("a key of table '{table}' is not UTF-8"))
                })?
                .to_string();
            entries.push((key, Bytes::from(value.to_vec())));
        }
        Ok(Scan { version, entries })
    }

    fn meta_since(&self, table: &'static str, since: Version) -> StoreResult<Since> {
        let version = self
            .tables
            .version_of(&mut self.tables.known.lock(), table)?;
        match since {
            s if s == version => Ok(Since::Changes(version, Vec::new())),
            s if s < version => Ok(Since::Gone),
            s => Err(StoreError::fatal(format!(
                "table '{table}' is at version {version}, not {s}"
            ))),
        }
    }
}

impl MetaStore for EmbeddedStore {
    fn call(&self, call: MetaCall) -> StoreFuture<'_, MetaAnswer> {
        match call {
            MetaCall::Write {
                table,
                expect,
                changes,
            } => blocking(&self.inner, move |s| s.meta_write(table, &expect, &changes)),
            MetaCall::Scan { table, prefix } => blocking(&self.inner, move |s| {
                s.meta_scan(table, &prefix).map(MetaAnswer::Scanned)
            }),
            MetaCall::Since { table, since } => {
                let answer = self.inner.meta_since(table, since).map(MetaAnswer::Since);
                Box::pin(async move { answer })
            }
            MetaCall::Ping => Box::pin(async { Ok(MetaAnswer::Done) }),
            MetaCall::Flush => blocking(&self.inner, |s| {
                s.checkpoint(PersistMode::SyncAll)?;
                Ok(MetaAnswer::Done)
            }),
        }
    }

    fn client(&self) -> StoreResult<std::sync::Arc<dyn MetaStore>> {
        Ok(std::sync::Arc::new(EmbeddedStore {
            inner: self.inner.clone(),
        }))
    }
}
