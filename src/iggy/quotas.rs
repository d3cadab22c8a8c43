//! Client quotas every gateway on one Iggy server shares: each AlterClientQuotas
//! appends a JSON record `{"changes"}` to the gateway log `client-quotas`; replaying
//! the log in order gives the quotas in force.

use bytes::Bytes;
use iggy_kafka_actors::backend::{ClientQuotas, QuotaChange};
use iggy_kafka_actors::quotas::apply;
use serde::{Deserialize, Serialize};

use super::gateway_log::{Compact, Replay};
use crate::stored_quota::StoredQuota;

#[derive(Serialize, Deserialize)]
pub struct QuotaRecord {
    pub changes: Vec<StoredQuota>,
}

impl QuotaRecord {
    pub fn new(changes: &[QuotaChange]) -> QuotaRecord {
        QuotaRecord {
            changes: changes.iter().map(StoredQuota::from).collect(),
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("quota records serialize"))
    }
}

#[derive(Default)]
pub struct Quotas(ClientQuotas);

impl Quotas {
    pub fn quotas(&self) -> &ClientQuotas {
        &self.0
    }
}

impl Replay for Quotas {
    /// Unreadable records and changes are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        let r = match serde_json::from_slice::<QuotaRecord>(record) {
            Ok(r) => r,
            Err(e) => {
                return tracing::warn!(offset, error = %e, "skipping unreadable client-quota record")
            }
        };
        for stored in r.changes {
            match stored.change() {
                Ok(c) => apply(&mut self.0, [c]),
                Err(e) => tracing::warn!(offset, error = %e, "skipping unreadable client quota"),
            }
        }
    }
}

impl Compact for Quotas {
    fn compacted(&self) -> Vec<Bytes> {
        let changes: Vec<QuotaChange> = self
            .0
            .iter()
            .flat_map(|(entity, values)| {
                values.iter().map(|(key, value)| QuotaChange {
                    entity: entity.clone(),
                    key: key.clone(),
                    value: Some(*value),
                })
            })
            .collect();
        vec![QuotaRecord::new(&changes).encode()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_kafka_actors::backend::QuotaEntity;

    #[test]
    fn changes_replay_in_log_order_and_compact_to_the_same_state() {
        let client = |name| QuotaEntity::parse([("client-id", Some(name))]).unwrap();
        let set = |e: &QuotaEntity, key: &str, value| QuotaChange {
            entity: e.clone(),
            key: key.into(),
            value,
        };
        let (a, b) = (client("a"), client("b"));
        let log = [
            QuotaRecord::new(&[set(&a, "producer_byte_rate", Some(10.0))]),
            QuotaRecord::new(&[set(&b, "consumer_byte_rate", Some(20.0))]),
            QuotaRecord::new(&[set(&a, "producer_byte_rate", None)]),
        ];
        let mut state = Quotas::default();
        for (i, r) in log.iter().enumerate() {
            state.apply(i as u64, &r.encode());
        }
        state.apply(9, &Bytes::from_static(b"not json"));
        assert_eq!(state.quotas().len(), 1);
        assert_eq!(state.quotas()[&b]["consumer_byte_rate"], 20.0);
        let mut rebuilt = Quotas::default();
        for r in state.compacted() {
            rebuilt.apply(0, &r);
        }
        assert_eq!(rebuilt.quotas(), state.quotas());
    }
}
