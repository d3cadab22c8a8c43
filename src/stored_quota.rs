//! Client-quota changes as both backends store them: JSON with the protocol's entity
//! type names and Kafka's quota keys, which never change meaning.

use iggy_kafka_actors::backend::{QuotaChange, QuotaEntity};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct StoredQuota {
    /// (entity type, name) pairs; a `null` name is the `<default>` entity.
    pub entity: Vec<(String, Option<String>)>,
    pub key: String,
    /// `None` removes the key.
    pub value: Option<f64>,
}

impl From<&QuotaChange> for StoredQuota {
    fn from(c: &QuotaChange) -> StoredQuota {
        StoredQuota {
            entity: stored_entity(&c.entity),
            key: c.key.clone(),
            value: c.value,
        }
    }
}

/// An entity's stored form.
pub fn stored_entity(entity: &QuotaEntity) -> Vec<(String, Option<String>)> {
    entity
        .parts()
        .iter()
        .map(|(t, name)| (t.name().to_string(), name.clone()))
        .collect()
}

impl StoredQuota {
    /// The change, or why it is not one (a damaged or foreign record).
    pub fn change(&self) -> Result<QuotaChange, String> {
        let entity = QuotaEntity::parse(
            self.entity
                .iter()
                .map(|(t, name)| (t.as_str(), name.as_deref())),
        )?;
        Ok(QuotaChange {
            entity,
            key: self.key.clone(),
            value: self.value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_comes_back_as_stored() {
        let entity = QuotaEntity::parse([("user", Some("alice")), ("client-id", None)]).unwrap();
        for value in [Some(1024.0), None] {
            let c = QuotaChange {
                entity: entity.clone(),
                key: "producer_byte_rate".into(),
                value,
            };
            let json = serde_json::to_vec(&StoredQuota::from(&c)).unwrap();
            let back: StoredQuota = serde_json::from_slice(&json).unwrap();
            assert_eq!(back.change().unwrap(), c);
        }
    }
}
