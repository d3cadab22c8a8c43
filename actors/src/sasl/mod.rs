//! SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256
//! and SCRAM-SHA-512 (`docs/SECURITY.md`).
//!
//! [`Authenticator`] is shared by every connection of a gateway: the settings, the
//! credential look-ups, the bound on verifications running at once and the delays
//! after failed logins. [`Session`] is one connection's state: which requests it may
//! send, and the exchange in progress.

pub mod credentials;
pub mod plain;
pub mod scram;
mod session;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use crate::store::{ScramCredential, ScramCredentials, ScramMechanism, StoreError, Users};
use credentials::CredentialStore;
pub use session::Session;

/// A SASL mechanism the gateway can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
}

impl Mechanism {
    pub const ALL: [Mechanism; 3] = [
        Mechanism::Plain,
        Mechanism::Scram(ScramMechanism::Sha256),
        Mechanism::Scram(ScramMechanism::Sha512),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(m) => m.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Where PLAIN passwords are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlainUsers {
    /// Against the SCRAM credentials the gateway stores (derived with their salt).
    Scram,
    /// By logging in to the backend's own users (Iggy's).
    Backend,
}

/// SASL settings; the root package fills them from its configuration.
#[derive(Clone, Debug)]
pub struct SaslSettings {
    /// Mechanisms offered, in the order SaslHandshake lists them.
    pub mechanisms: Vec<Mechanism>,
    pub plain_users: PlainUsers,
    /// Kafka's `connections.max.reauth.ms`: an authentication holds this long, then the
    /// client must re-authenticate (KIP-368). `None`: for the connection's life.
    pub max_reauth: Option<Duration>,
    /// Delay before answering a failed login; doubles with each recent failure from
    /// the same address, up to `max_failed_login_delay`.
    pub failed_login_delay: Duration,
    pub max_failed_login_delay: Duration,
    /// Password checks and credential look-ups running at once; more wait their turn.
    pub max_verifications: usize,
}

impl Default for SaslSettings {
    fn default() -> SaslSettings {
        SaslSettings {
            mechanisms: vec![
                Mechanism::Scram(ScramMechanism::Sha256),
                Mechanism::Scram(ScramMechanism::Sha512),
            ],
            plain_users: PlainUsers::Scram,
            max_reauth: None,
            failed_login_delay: Duration::from_millis(100),
            max_failed_login_delay: Duration::from_secs(5),
            max_verifications: 4,
        }
    }
}

/// Failures from one address are forgotten after this long without another.
const FAILURE_MEMORY: Duration = Duration::from_secs(600);
/// Addresses whose failures are remembered at once; beyond it, new ones get the base delay.
const FAILURE_ADDRESSES: usize = 10_000;

struct Failures {
    count: u32,
    last: Instant,
}

/// What every connection of a gateway shares for SASL.
pub struct Authenticator {
    settings: SaslSettings,
    /// The store's own users, for PLAIN with `plain_users = backend`.
    users: Arc<dyn Users>,
    credentials: CredentialStore,
    verifications: Arc<Semaphore>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
    /// Makes the decoy credentials of unknown users; never leaves the process.
    decoy_key: Vec<u8>,
}

impl Authenticator {
    pub fn new(
        settings: SaslSettings,
        users: Arc<dyn Users>,
        credentials: CredentialStore,
    ) -> Authenticator {
        Authenticator {
            verifications: Arc::new(Semaphore::new(settings.max_verifications.max(1))),
            settings,
            users,
            credentials,
            failures: Mutex::new(HashMap::new()),
            decoy_key: scram::random_bytes(32),
        }
    }

    pub fn settings(&self) -> &SaslSettings {
        &self.settings
    }

    /// Every stored SCRAM credential, as of now.
    pub async fn credentials(&self) -> Result<ScramCredentials, StoreError> {
        credentials::stored(&self.credentials).await
    }

    /// Stores (`Some`) or deletes (`None`) one user's credential for one mechanism.
    pub async fn set_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: Option<ScramCredential>,
    ) -> Result<(), StoreError> {
        credentials::set(&self.credentials, user, mechanism, credential).await
    }

    /// Runs CPU-heavy verification work on the blocking pool, under the bound.
    async fn verify<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let _turn = self.verifications.acquire().await;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| StoreError::fatal_from("verification task", e))
    }

    /// The stored credential of `user` for `mechanism`; `None` when there is none.
    pub async fn scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Result<Option<ScramCredential>, StoreError> {
        let _turn = self.verifications.acquire().await;
        let mut all = self.credentials().await?;
        Ok(all
            .remove(user)
            .and_then(|mut by_mechanism| by_mechanism.remove(&mechanism)))
    }

    /// The stand-in credential an unknown user is answered with.
    pub fn decoy(&self, mechanism: ScramMechanism, user: &str) -> ScramCredential {
        scram::decoy_credential(mechanism, &self.decoy_key, user)
    }

    /// Whether a PLAIN login holds, checked where `plain_users` says. An unknown user
    /// costs the same derivation as a known one.
    pub async fn check_plain(&self, login: plain::PlainLogin) -> Result<bool, StoreError> {
        if self.settings.plain_users == PlainUsers::Backend {
            let _turn = self.verifications.acquire().await;
            return self.users.check_login(&login.user, &login.password).await;
        }
        let stored = {
            let _turn = self.verifications.acquire().await;
            self.credentials().await?.remove(&login.user)
        };
        // The strongest mechanism the user has a credential for.
        let found = stored.and_then(|mut c| {
            let m = ScramMechanism::Sha512;
            c.remove(&m).map(|c| (m, c)).or_else(|| c.pop_first())
        });
        let (mechanism, credential, known) = match found {
            Some((m, c)) => (m, c, true),
            None => {
                let m = ScramMechanism::Sha512;
                (m, self.decoy(m, &login.user), false)
            }
        };
        let matches = self
            .verify(move || scram::password_matches(mechanism, &credential, &login.password))
            .await?;
        Ok(matches && known)
    }

    /// Records a failed login from `ip`; how long to wait before answering it.
    pub fn failed_login(&self, ip: IpAddr) -> Duration {
        let now = Instant::now();
        let mut failures = self.failures.lock();
        if failures.len() >= FAILURE_ADDRESSES {
            failures.retain(|_, f| now.duration_since(f.last) < FAILURE_MEMORY);
        }
        let room = failures.len() < FAILURE_ADDRESSES;
        let count = match failures.get_mut(&ip) {
            Some(f) => {
                let recent = now.duration_since(f.last) < FAILURE_MEMORY;
                f.count = if recent { f.count.saturating_add(1) } else { 1 };
                f.last = now;
                f.count
            }
            None => {
                if room {
                    failures.insert(
                        ip,
                        Failures {
                            count: 1,
                            last: now,
                        },
                    );
                }
                1
            }
        };
        let doubled = self
            .settings
            .failed_login_delay
            .saturating_mul(1 << (count - 1).min(16));
        doubled.min(self.settings.max_failed_login_delay)
    }

    /// A successful login from `ip` clears its failures.
    pub fn logged_in(&self, ip: IpAddr) {
        self.failures.lock().remove(&ip);
    }

    /// Stores credentials for bootstrap users (`name`, `password`) that have none yet
    /// for a mechanism, so a fresh deployment can log in; ones already stored (maybe
    /// changed since with AlterUserScramCredentials) are kept.
    pub async fn add_missing_users(&self, users: Vec<(String, String)>) -> Result<(), StoreError> {
        if users.is_empty() {
            return Ok(());
        }
        let stored = self.credentials().await?;
        for (user, password) in users {
            for mechanism in ScramMechanism::ALL {
                if stored
                    .get(&user)
                    .is_some_and(|c| c.contains_key(&mechanism))
                {
                    continue;
                }
                let password = password.clone();
                let credential = self
                    .verify(move || {
                        scram::credential_for_password(
                            mechanism,
                            &password,
                            scram::DEFAULT_ITERATIONS,
                        )
                    })
                    .await?;
                self.set_credential(&user, mechanism, Some(credential))
                    .await?;
                tracing::info!(%user, mechanism = mechanism.name(), "added SCRAM credential for a bootstrap user");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::credentials::Credentials;
    use crate::store::shared::SharedTable;
    use crate::test_store::TestStore;

    #[actix_rt::test]
    async fn failed_login_delays_grow_per_address_up_to_the_bound() {
        let settings = SaslSettings {
            failed_login_delay: Duration::from_millis(100),
            max_failed_login_delay: Duration::from_millis(700),
            ..SaslSettings::default()
        };
        let backend = Arc::new(TestStore::default());
        let meta = crate::store::Meta::new(Arc::new(backend.clone()));
        let (credentials, _) = SharedTable::<Credentials>::start(&meta, Duration::from_secs(60))
            .await
            .unwrap();
        let auth = Authenticator::new(settings, backend, credentials);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let ms = |d: Duration| d.as_millis();
        assert_eq!(ms(auth.failed_login(a)), 100);
        assert_eq!(ms(auth.failed_login(a)), 200);
        assert_eq!(ms(auth.failed_login(a)), 400);
        assert_eq!(ms(auth.failed_login(a)), 700);
        assert_eq!(ms(auth.failed_login(b)), 100);
        auth.logged_in(a);
        assert_eq!(ms(auth.failed_login(a)), 100);
    }
}
