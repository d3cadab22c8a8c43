//! ACL bindings as both backends store them: JSON with Kafka's wire codes, which
//! never change meaning.

use iggy_kafka_actors::backend::AclBinding;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct StoredAcl {
    resource_type: i8,
    name: String,
    pattern_type: i8,
    principal: String,
    host: String,
    operation: i8,
    permission: i8,
}

impl From<&AclBinding> for StoredAcl {
    fn from(b: &AclBinding) -> StoredAcl {
        StoredAcl {
            resource_type: b.pattern.resource_type.code(),
            name: b.pattern.name.clone(),
            pattern_type: b.pattern.pattern_type.code(),
            principal: b.entry.principal.clone(),
            host: b.entry.host.clone(),
            operation: b.entry.operation.code(),
            permission: b.entry.permission.code(),
        }
    }
}

impl StoredAcl {
    /// The binding, or why it is not one (a damaged or foreign record).
    pub fn binding(&self) -> Result<AclBinding, String> {
        AclBinding::new(
            (self.resource_type, &self.name, self.pattern_type),
            &self.principal,
            &self.host,
            self.operation,
            self.permission,
        )
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_comes_back_as_stored() {
        let b = AclBinding::new((2, "pay-", 4), "User:alice", "10.0.0.1", 3, 2).unwrap();
        let json = serde_json::to_vec(&StoredAcl::from(&b)).unwrap();
        let back: StoredAcl = serde_json::from_slice(&json).unwrap();
        assert_eq!(back.binding().unwrap(), b);
    }
}
