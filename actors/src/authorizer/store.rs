//! ACL bindings as a shared table (`store::shared`): table `acl`, one entry per
//! binding, keyed by the binding as JSON with Kafka's wire codes (which never change
//! meaning), with no value: a set every gateway on the store shares. Changes run one
//! at a time through this gateway's [`SharedTable`], on the latest bindings.

use std::sync::Arc;

use actix::Addr;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{AclBinding, AclFilter, AclTable};
use crate::store::shared::{CatchUp, Edit, Modify, Rows, SharedTable, Table};
use crate::store::{StoreError, StoreResult};

/// The ACL table.
pub struct Acls;

#[derive(Serialize, Deserialize)]
struct StoredAcl {
    resource_type: i8,
    name: String,
    pattern_type: i8,
    principal: String,
    host: String,
    operation: i8,
    permission: i8,
}

impl Table for Acls {
    const NAME: &'static str = "acl";
    type Key = AclBinding;
    type Value = ();
    type View = AclTable;

    fn encode_key(b: &AclBinding) -> String {
        let stored = StoredAcl {
            resource_type: b.pattern.resource_type.code(),
            name: b.pattern.name.clone(),
            pattern_type: b.pattern.pattern_type.code(),
            principal: b.entry.principal.clone(),
            host: b.entry.host.clone(),
            operation: b.entry.operation.code(),
            permission: b.entry.permission.code(),
        };
        serde_json::to_string(&stored).expect("ACLs serialize")
    }

    fn decode_key(key: &str) -> Result<AclBinding, String> {
        let s: StoredAcl = serde_json::from_str(key).map_err(|e| e.to_string())?;
        AclBinding::new(
            (s.resource_type, &s.name, s.pattern_type),
            &s.principal,
            &s.host,
            s.operation,
            s.permission,
        )
        .map_err(|e| e.to_string())
    }

    fn encode_value(_: &()) -> Bytes {
        Bytes::new()
    }

    fn decode_value(_: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn view(rows: &Rows<Acls>) -> AclTable {
        AclTable::new(rows.keys().cloned())
    }
}

/// This gateway's copy of the ACL table.
pub type AclStore = Addr<SharedTable<Acls>>;

fn gone(_: actix::MailboxError) -> StoreError {
    StoreError::unavailable("ACL store unavailable")
}

/// Stores these bindings (ones already stored stay stored once).
pub async fn create(store: &AclStore, bindings: Vec<AclBinding>) -> StoreResult<()> {
    for b in &bindings {
        tracing::info!(acl = %b, "creating ACL");
    }
    let decide = move |rows: &Rows<Acls>| {
        let edits = bindings
            .into_iter()
            .filter(|b| !rows.contains_key(b))
            .map(|b| Edit::Put(b, ()))
            .collect();
        (edits, ())
    };
    store.send(Modify(Box::new(decide))).await.map_err(gone)?
}

/// Removes every binding each filter matches; the answer lists them, filter by filter.
pub async fn delete(
    store: &AclStore,
    filters: Vec<AclFilter>,
) -> StoreResult<Vec<Vec<AclBinding>>> {
    let decide = move |rows: &Rows<Acls>| {
        let matched: Vec<Vec<AclBinding>> = filters
            .iter()
            .map(|f| rows.keys().filter(|b| f.matches(b)).cloned().collect())
            .collect();
        let mut doomed: Vec<AclBinding> = matched.iter().flatten().cloned().collect();
        doomed.sort();
        doomed.dedup();
        for b in &doomed {
            tracing::info!(acl = %b, "deleting ACL");
        }
        (doomed.into_iter().map(Edit::Delete).collect(), matched)
    };
    store.send(Modify(Box::new(decide))).await.map_err(gone)?
}

/// The bindings a filter matches, as stored now (caught up first, so a change made
/// through another gateway a moment ago is listed).
pub async fn describe(store: &AclStore, filter: AclFilter) -> StoreResult<Vec<AclBinding>> {
    let rows: Arc<Rows<Acls>> = store.send(CatchUp::default()).await.map_err(gone)??;
    Ok(rows.keys().filter(|b| filter.matches(b)).cloned().collect())
}
