//! SCRAM credentials as both stores write them down: JSON, salt and keys in base64.
//! Never a password; the keys alone do not let anyone log in with SCRAM or PLAIN.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use iggy_kafka_actors::backend::ScramCredential;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct StoredCredential {
    salt: String,
    iterations: u32,
    stored_key: String,
    server_key: String,
}

impl From<&ScramCredential> for StoredCredential {
    fn from(c: &ScramCredential) -> StoredCredential {
        StoredCredential {
            salt: B64.encode(&c.salt),
            iterations: c.iterations,
            stored_key: B64.encode(&c.stored_key),
            server_key: B64.encode(&c.server_key),
        }
    }
}

impl StoredCredential {
    /// The credential; `None` when a field is not base64 (a damaged record).
    pub fn credential(&self) -> Option<ScramCredential> {
        Some(ScramCredential {
            salt: B64.decode(&self.salt).ok()?,
            iterations: self.iterations,
            stored_key: B64.decode(&self.stored_key).ok()?,
            server_key: B64.decode(&self.server_key).ok()?,
        })
    }
}
