//! SCRAM credentials every gateway on one Iggy server shares: each change appends a
//! JSON record `{"user", "mechanism", "credential"}` to the gateway log
//! `scram-credentials`; the latest record of a user and mechanism wins, and one
//! without a credential deletes it.

use bytes::Bytes;
use iggy_kafka_actors::backend::{ScramCredential, ScramCredentials, ScramMechanism};
use serde::{Deserialize, Serialize};

use super::gateway_log::{Compact, Replay};
use crate::credentials::StoredCredential;

#[derive(Serialize, Deserialize)]
pub struct ScramRecord {
    user: String,
    mechanism: String,
    credential: Option<StoredCredential>,
}

impl ScramRecord {
    pub fn new(
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<&ScramCredential>,
    ) -> Self {
        ScramRecord {
            user: user.to_string(),
            mechanism: mechanism.name().to_string(),
            credential: credential.map(StoredCredential::from),
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("SCRAM records serialize"))
    }
}

#[derive(Default)]
pub struct ScramState(ScramCredentials);

impl ScramState {
    pub fn credentials(&self) -> &ScramCredentials {
        &self.0
    }
}

impl Replay for ScramState {
    /// Unreadable records are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        let Some((r, mechanism)) = serde_json::from_slice::<ScramRecord>(record)
            .ok()
            .and_then(|r| ScramMechanism::from_name(&r.mechanism).map(|m| (r, m)))
        else {
            tracing::warn!(offset, "skipping unreadable SCRAM credential record");
            return;
        };
        match r.credential.as_ref().map(StoredCredential::credential) {
            Some(Some(c)) => {
                self.0.entry(r.user).or_default().insert(mechanism, c);
            }
            Some(None) => tracing::warn!(offset, "skipping damaged SCRAM credential record"),
            None => {
                if let Some(by_mechanism) = self.0.get_mut(&r.user) {
                    by_mechanism.remove(&mechanism);
                    if by_mechanism.is_empty() {
                        self.0.remove(&r.user);
                    }
                }
            }
        }
    }
}

impl Compact for ScramState {
    fn compacted(&self) -> Vec<Bytes> {
        self.0
            .iter()
            .flat_map(|(user, by_mechanism)| {
                by_mechanism
                    .iter()
                    .map(|(m, c)| ScramRecord::new(user, *m, Some(c)).encode())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_record_wins_and_a_deletion_removes() {
        let cred = |n: u8| ScramCredential {
            salt: vec![n],
            iterations: 4096,
            stored_key: vec![n; 32],
            server_key: vec![n; 32],
        };
        let (m256, m512) = (ScramMechanism::Sha256, ScramMechanism::Sha512);
        let log = [
            ScramRecord::new("alice", m256, Some(&cred(1))),
            ScramRecord::new("alice", m512, Some(&cred(2))),
            ScramRecord::new("bob", m256, Some(&cred(3))),
            ScramRecord::new("alice", m256, Some(&cred(4))),
            ScramRecord::new("bob", m256, None),
        ];
        let mut state = ScramState::default();
        for (i, r) in log.iter().enumerate() {
            state.apply(i as u64, &r.encode());
        }
        state.apply(9, &Bytes::from_static(b"not json"));
        let alice = &state.credentials()["alice"];
        assert_eq!(alice[&m256], cred(4));
        assert_eq!(alice[&m512], cred(2));
        assert!(!state.credentials().contains_key("bob"));
        let mut rebuilt = ScramState::default();
        for r in state.compacted() {
            rebuilt.apply(0, &r);
        }
        assert_eq!(rebuilt.credentials(), state.credentials());
    }
}
