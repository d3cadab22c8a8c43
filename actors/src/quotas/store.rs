//! Client quotas as a shared table (`store::shared`): table `quota`, one entry per
//! (entity, quota key), keyed by `[entity, key]` as JSON with the protocol's entity
//! type names and Kafka's quota keys, the value as a decimal number. Every gateway on
//! the store shares them and enforces them on its own traffic.

use std::sync::Arc;

use actix::Addr;
use bytes::Bytes;

use super::{apply, ClientQuotas, QuotaChange, QuotaEntity, QuotaTable};
use crate::store::shared::{CatchUp, Edit, Modify, Rows, SharedTable, Table};
use crate::store::{StoreError, StoreResult};

/// The client-quota table.
pub struct Quotas;

/// An entity as stored: (entity type, name) pairs; a `null` name is `<default>`.
type StoredEntity = Vec<(String, Option<String>)>;

impl Table for Quotas {
    const NAME: &'static str = "quota";
    type Key = (QuotaEntity, String);
    type Value = f64;
    type View = QuotaTable;

    fn encode_key((entity, key): &(QuotaEntity, String)) -> String {
        let entity: StoredEntity = entity
            .parts()
            .iter()
            .map(|(t, name)| (t.name().to_string(), name.clone()))
            .collect();
        serde_json::to_string(&(entity, key)).expect("quota keys serialize")
    }

    fn decode_key(key: &str) -> Result<(QuotaEntity, String), String> {
        let (entity, key): (StoredEntity, String) =
            serde_json::from_str(key).map_err(|e| e.to_string())?;
        let entity =
            QuotaEntity::parse(entity.iter().map(|(t, name)| (t.as_str(), name.as_deref())))?;
        Ok((entity, key))
    }

    fn encode_value(value: &f64) -> Bytes {
        Bytes::from(value.to_string())
    }

    fn decode_value(value: &[u8]) -> Result<f64, String> {
        serde_json::from_slice(value).map_err(|e| e.to_string())
    }

    fn view(rows: &Rows<Quotas>) -> QuotaTable {
        QuotaTable::new(&quotas_of(rows))
    }
}

/// The rows as entity → key → value.
fn quotas_of(rows: &Rows<Quotas>) -> ClientQuotas {
    let mut quotas = ClientQuotas::new();
    apply(
        &mut quotas,
        rows.iter().map(|((entity, key), value)| QuotaChange {
            entity: entity.clone(),
            key: key.clone(),
            value: Some(*value),
        }),
    );
    quotas
}

/// This gateway's copy of the quota table.
pub type QuotaStore = Addr<SharedTable<Quotas>>;

fn gone(_: actix::MailboxError) -> StoreError {
    StoreError::unavailable("quota store unavailable")
}

/// Every stored quota, caught up with what other gateways wrote.
pub async fn stored(store: &QuotaStore) -> StoreResult<ClientQuotas> {
    let rows: Arc<Rows<Quotas>> = store.send(CatchUp::default()).await.map_err(gone)??;
    Ok(quotas_of(&rows))
}

/// Applies the changes in order, all or none; this gateway enforces them from its
/// next request on.
pub async fn alter(store: &QuotaStore, changes: Vec<QuotaChange>) -> StoreResult<()> {
    let decide = move |_: &Rows<Quotas>| {
        let edits = changes
            .into_iter()
            .map(|c| match c.value {
                Some(v) => Edit::Put((c.entity, c.key), v),
                None => Edit::Delete((c.entity, c.key)),
            })
            .collect();
        (edits, ())
    };
    store.send(Modify(Box::new(decide))).await.map_err(gone)?
}
