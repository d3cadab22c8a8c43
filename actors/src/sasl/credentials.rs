//! SCRAM credentials as a shared table (`store::shared`): table `scram`, one entry per
//! user and mechanism, keyed `<mechanism>/<user>` (`SCRAM-SHA-256/alice`), the value
//! JSON with salt and keys in base64. Never a password; the keys alone do not let
//! anyone log in with SCRAM or PLAIN.

use std::sync::Arc;

use actix::Addr;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::store::shared::{CatchUp, Edit, Modify, Rows, SharedTable, Table};
use crate::store::{ScramCredential, ScramCredentials, ScramMechanism, StoreError, StoreResult};

/// The SCRAM credential table.
pub struct Credentials;

#[derive(Serialize, Deserialize)]
struct StoredCredential {
    salt: String,
    iterations: u32,
    stored_key: String,
    server_key: String,
}

impl Table for Credentials {
    const NAME: &'static str = "scram";
    type Key = (String, ScramMechanism);
    type Value = ScramCredential;
    type View = ();

    fn encode_key((user, mechanism): &(String, ScramMechanism)) -> String {
        format!("{}/{user}", mechanism.name())
    }

    fn decode_key(key: &str) -> Result<(String, ScramMechanism), String> {
        let (mechanism, user) = key.split_once('/').ok_or("no mechanism")?;
        let mechanism = ScramMechanism::from_name(mechanism)
            .ok_or_else(|| format!("unknown mechanism {mechanism}"))?;
        Ok((user.to_string(), mechanism))
    }

    fn encode_value(c: &ScramCredential) -> Bytes {
        let stored = StoredCredential {
            salt: B64.encode(&c.salt),
            iterations: c.iterations,
            stored_key: B64.encode(&c.stored_key),
            server_key: B64.encode(&c.server_key),
        };
        Bytes::from(serde_json::to_vec(&stored).expect("credentials serialize"))
    }

    fn decode_value(value: &[u8]) -> Result<ScramCredential, String> {
        let s: StoredCredential = serde_json::from_slice(value).map_err(|e| e.to_string())?;
        let b64 = |field: &str| B64.decode(field).map_err(|e| e.to_string());
        Ok(ScramCredential {
            salt: b64(&s.salt)?,
            iterations: s.iterations,
            stored_key: b64(&s.stored_key)?,
            server_key: b64(&s.server_key)?,
        })
    }

    /// Logins read the table caught up, never a published copy.
    fn view(_: &Rows<Credentials>) {}
}

/// This gateway's copy of the credential table.
pub type CredentialStore = Addr<SharedTable<Credentials>>;

fn gone(_: actix::MailboxError) -> StoreError {
    StoreError::unavailable("credential store unavailable")
}

/// Every stored credential, caught up with what other gateways wrote, so a user made
/// or changed through another gateway a moment ago logs in as it is now.
pub async fn stored(store: &CredentialStore) -> StoreResult<ScramCredentials> {
    let rows: Arc<Rows<Credentials>> = store.send(CatchUp::default()).await.map_err(gone)??;
    let mut all = ScramCredentials::new();
    for ((user, mechanism), credential) in rows.iter() {
        all.entry(user.clone())
            .or_default()
            .insert(*mechanism, credential.clone());
    }
    Ok(all)
}

/// Stores (`Some`) or deletes (`None`) one user's credential for one mechanism.
pub async fn set(
    store: &CredentialStore,
    user: &str,
    mechanism: ScramMechanism,
    credential: Option<ScramCredential>,
) -> StoreResult<()> {
    let key = (user.to_string(), mechanism);
    let edit = match credential {
        Some(c) => Edit::Put(key, c),
        None => Edit::Delete(key),
    };
    let decide = move |_: &Rows<Credentials>| (vec![edit], ());
    store.send(Modify(Box::new(decide))).await.map_err(gone)?
}
