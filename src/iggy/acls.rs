//! ACL bindings every gateway on one Iggy server shares: each CreateAcls or DeleteAcls
//! appends a JSON record `{"create", "acls"}` to the gateway log `acls`; replaying the
//! log in order gives the set in force.

use std::collections::BTreeSet;

use bytes::Bytes;
use iggy_kafka_actors::backend::AclBinding;
use serde::{Deserialize, Serialize};

use super::gateway_log::{Compact, Replay};
use crate::stored_acl::StoredAcl;

#[derive(Serialize, Deserialize)]
pub struct AclRecord {
    /// Added when true, removed when false.
    pub create: bool,
    pub acls: Vec<StoredAcl>,
}

impl AclRecord {
    pub fn new(create: bool, bindings: &[AclBinding]) -> AclRecord {
        AclRecord {
            create,
            acls: bindings.iter().map(StoredAcl::from).collect(),
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("ACL records serialize"))
    }
}

#[derive(Default)]
pub struct Acls(BTreeSet<AclBinding>);

impl Acls {
    pub fn bindings(&self) -> Vec<AclBinding> {
        self.0.iter().cloned().collect()
    }
}

impl Replay for Acls {
    /// Unreadable records and bindings are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        let r = match serde_json::from_slice::<AclRecord>(record) {
            Ok(r) => r,
            Err(e) => return tracing::warn!(offset, error = %e, "skipping unreadable ACL record"),
        };
        for stored in r.acls {
            match stored.binding() {
                Ok(b) if r.create => {
                    self.0.insert(b);
                }
                Ok(b) => {
                    self.0.remove(&b);
                }
                Err(e) => tracing::warn!(offset, error = %e, "skipping unreadable ACL"),
            }
        }
    }
}

impl Compact for Acls {
    fn compacted(&self) -> Vec<Bytes> {
        vec![AclRecord::new(true, &self.bindings()).encode()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_and_deletes_replay_in_log_order() {
        let acl = |name: &str| AclBinding::new((2, name, 3), "User:a", "*", 3, 3).unwrap();
        let log = [
            AclRecord::new(true, &[acl("a"), acl("b")]),
            AclRecord::new(false, &[acl("a")]),
            AclRecord::new(true, &[acl("b"), acl("c")]),
        ];
        let mut state = Acls::default();
        for (i, r) in log.iter().enumerate() {
            state.apply(i as u64, &r.encode());
        }
        state.apply(9, &Bytes::from_static(b"not json"));
        assert_eq!(state.bindings(), vec![acl("b"), acl("c")]);
    }
}
