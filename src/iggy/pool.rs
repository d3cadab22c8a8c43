//! Connections to the Iggy server.
//!
//! The SDK's TCP client answers one request at a time, so one shared client would
//! put every Kafka connection in one queue. The gateway keeps pools instead:
//! produce clients (a partition always uses the same one: its appends keep their
//! order and a slow partition holds up only its own slot), read clients for
//! Fetch and ListOffsets (the least busy one is taken), one admin client for topics
//! and the metadata tables, one for their snapshots (large, so never ahead of admin
//! calls), and one client that keeps Iggy's consumer offsets in step with Kafka
//! commits (Iggy stores a group's offsets only for a member, and evicts idle members'
//! sessions, so it stays apart). Actors that serialize their own calls (each offset
//! slot's commit and read clients, membership, producer ids) get connections of their
//! own through the metadata port's `client()`, not from here.
//!
//! The SDK's own reconnect-and-resend is off: a send whose answer was lost would be
//! sent twice. A client that lost its connection reconnects and signs in again on
//! its next use, and the call that saw the failure reports it (retriable).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iggy::prelude::{
    Client, IggyDuration, IggyError, TcpClient, TcpClientConfig, TcpClientReconnectionConfig,
    UserClient,
};
use iggy_common::{AutoLogin, BinaryTransport, ClientState};
use iggy_kafka_actors::store::TopicPartition;

use super::IggyConfig;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("Iggy server at {address} is unreachable after {waited:?}: {source}")]
    Unreachable {
        address: String,
        waited: Duration,
        source: IggyError,
    },
    #[error("Iggy server at {address} refused the credentials of user '{username}'")]
    BadCredentials { address: String, username: String },
    #[error("cannot sign in to the Iggy server at {address}: {source}")]
    SignIn { address: String, source: IggyError },
    #[error("cannot create an Iggy client for {address}: {source}")]
    Client { address: String, source: IggyError },
}

/// User name and password; deliberately without `Debug`, so they are never logged.
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// One SDK client and what it takes to bring it back after a disconnect.
pub struct Conn {
    client: TcpClient,
    credentials: Arc<Credentials>,
    /// Reconnects one at a time: the SDK answers a second `connect` during the
    /// first with an immediate `Ok`, before the client is usable.
    reconnect: tokio::sync::Mutex<()>,
    busy: AtomicUsize,
    /// A call saw the connection fail: reconnect before the next one.
    broken: AtomicBool,
    /// Signed in at least once (later sign-ins are reconnections, worth a log line).
    signed_in: AtomicBool,
}

/// Errors after which the connection cannot be trusted (closed, timed out mid-answer,
/// session gone); the next use reconnects.
pub fn is_connection_error(e: &IggyError) -> bool {
    matches!(
        e,
        IggyError::Disconnected
            | IggyError::CannotEstablishConnection
            | IggyError::NotConnected
            | IggyError::ConnectionClosed
            | IggyError::TcpError
            | IggyError::StaleClient
            | IggyError::EmptyResponse
            | IggyError::Unauthenticated
            | IggyError::IoError(_)
    )
}

impl Conn {
    fn new(server: &IggyConfig, credentials: Arc<Credentials>) -> Result<Conn, ConnectError> {
        let address = &server.address;
        let tls = server.tls.as_ref();
        let config = TcpClientConfig {
            server_address: address.to_string(),
            tls_enabled: tls.is_some(),
            tls_domain: tls.map(|t| t.domain.clone()).unwrap_or_default(),
            tls_ca_file: tls
                .and_then(|t| t.ca_file.as_ref())
                .map(|p| p.display().to_string()),
            auto_login: AutoLogin::Disabled,
            reconnection: TcpClientReconnectionConfig {
                enabled: false,
                max_retries: Some(0),
                interval: IggyDuration::new(Duration::from_millis(100)),
                // Without this the SDK waits 5 s before reconnecting a client that
                // was connected recently.
                reestablish_after: IggyDuration::new(Duration::from_millis(10)),
            },
            nodelay: true,
            ..TcpClientConfig::default()
        };
        let client =
            TcpClient::create(Arc::new(config)).map_err(|source| ConnectError::Client {
                address: address.to_string(),
                source,
            })?;
        Ok(Conn {
            client,
            credentials,
            reconnect: tokio::sync::Mutex::new(()),
            busy: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            signed_in: AtomicBool::new(false),
        })
    }

    /// A connection of its own, signed in on first use: for a handle that must not
    /// queue behind other callers (`MetaStore::client`).
    pub fn own(server: &IggyConfig) -> Result<Conn, ConnectError> {
        let credentials = Credentials {
            username: server.username.clone(),
            password: server.password.clone(),
        };
        Conn::new(server, Arc::new(credentials))
    }

    async fn usable(&self) -> bool {
        !self.broken.load(Ordering::Acquire)
            && self.client.get_state().await == ClientState::Authenticated
    }

    /// The client, connected and signed in. Check each call's result with
    /// [`Lease::check`], so a failed connection is replaced.
    pub async fn ready(&self) -> Result<Lease<'_>, IggyError> {
        let lease = Lease::new(self);
        if !self.usable().await {
            let _one = self.reconnect.lock().await;
            if !self.usable().await {
                // Drop whatever half state the last failure left behind.
                let _ = self.client.disconnect().await;
                self.client.connect().await?;
                let c = &self.credentials;
                self.client.login_user(&c.username, &c.password).await?;
                self.broken.store(false, Ordering::Release);
                if self.signed_in.swap(true, Ordering::Relaxed) {
                    tracing::info!("reconnected to Iggy");
                }
            }
        }
        Ok(lease)
    }

    /// Forgets the connection, so the next use reconnects and signs in again.
    pub async fn reset(&self) {
        let _one = self.reconnect.lock().await;
        let _ = self.client.disconnect().await;
    }

    fn load(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }
}

/// A client in use; counts toward its load until dropped.
pub struct Lease<'a>(&'a Conn);

impl<'a> Lease<'a> {
    fn new(conn: &'a Conn) -> Self {
        conn.busy.fetch_add(1, Ordering::Relaxed);
        Lease(conn)
    }
}

impl Lease<'_> {
    /// Passes a call's result through, noting a failed connection.
    pub fn check<T>(&self, result: Result<T, IggyError>) -> Result<T, IggyError> {
        if let Err(e) = &result {
            if is_connection_error(e) {
                self.0.broken.store(true, Ordering::Release);
            }
        }
        result
    }
}

impl std::ops::Deref for Lease<'_> {
    type Target = TcpClient;
    fn deref(&self) -> &TcpClient {
        &self.0.client
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether `username` logs in to the Iggy server with `password`, on a connection of
/// its own that is closed right after.
pub async fn check_login(
    server: &IggyConfig,
    username: &str,
    password: &str,
) -> Result<bool, IggyError> {
    let credentials = Arc::new(Credentials {
        username: username.to_string(),
        password: password.to_string(),
    });
    let conn = Conn::new(server, credentials).map_err(|_| IggyError::CannotEstablishConnection)?;
    conn.client.connect().await?;
    let login = conn.client.login_user(username, password).await;
    let _ = conn.client.disconnect().await;
    match login {
        Ok(_) => Ok(true),
        Err(
            IggyError::InvalidCredentials
            | IggyError::InvalidUsername
            | IggyError::InvalidPassword
            | IggyError::UserInactive
            | IggyError::Unauthenticated,
        ) => Ok(false),
        Err(e) => Err(e),
    }
}

pub struct Pools {
    pub admin: Conn,
    pub mirror: Conn,
    /// Snapshots of the gateway logs, which may be large, never ahead of admin calls.
    pub snapshots: Conn,
    produce: Vec<Conn>,
    read: Vec<Conn>,
}

impl Pools {
    /// Connects every client; retries unreachable servers with backoff until
    /// `connect_timeout`, but fails at once on refused credentials.
    pub async fn connect(config: &IggyConfig) -> Result<Pools, ConnectError> {
        let credentials = Arc::new(Credentials {
            username: config.username.clone(),
            password: config.password.clone(),
        });
        let admin = Conn::new(config, credentials.clone())?;
        first_contact(&admin, config).await?;
        let mirror = Conn::new(config, credentials.clone())?;
        let snapshots = Conn::new(config, credentials.clone())?;
        let signed_in = || async {
            let conn = Conn::new(config, credentials.clone())?;
            conn.ready().await.map_err(|source| ConnectError::SignIn {
                address: config.address.clone(),
                source,
            })?;
            Ok::<_, ConnectError>(conn)
        };
        let mut produce = Vec::new();
        for _ in 0..config.produce_clients {
            produce.push(signed_in().await?);
        }
        let mut read = Vec::new();
        for _ in 0..config.read_clients {
            read.push(signed_in().await?);
        }
        tracing::info!(
            address = %config.address,
            produce = produce.len(),
            read = read.len(),
            "connected to Iggy"
        );
        Ok(Pools {
            admin,
            mirror,
            snapshots,
            produce,
            read,
        })
    }

    /// The produce client of a partition, for life.
    pub fn producer(&self, tp: &TopicPartition) -> &Conn {
        &self.produce[tp.slot(self.produce.len())]
    }

    /// The read client with the fewest calls in progress.
    pub fn reader(&self) -> &Conn {
        self.read
            .iter()
            .min_by_key(|c| c.load())
            .expect("at least one read client")
    }
}

/// Connects and signs in the first client, telling an absent or not yet ready server
/// (retried: a server just restarted may accept the socket and then drop it) from
/// refused credentials (not retried).
async fn first_contact(conn: &Conn, config: &IggyConfig) -> Result<(), ConnectError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(100);
    loop {
        let attempt = match conn.client.connect().await {
            Ok(()) => conn
                .client
                .login_user(&config.username, &config.password)
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        let source = match attempt {
            Ok(()) => return Ok(()),
            Err(IggyError::InvalidCredentials | IggyError::Unauthenticated) => {
                return Err(ConnectError::BadCredentials {
                    address: config.address.clone(),
                    username: config.username.clone(),
                });
            }
            Err(source) => source,
        };
        let waited = started.elapsed();
        let Some(left) = config
            .connect_timeout
            .checked_sub(waited)
            .filter(|l| !l.is_zero())
        else {
            return Err(ConnectError::Unreachable {
                address: config.address.clone(),
                waited,
                source,
            });
        };
        tracing::warn!(address = %config.address, error = %source, retry_in = ?backoff.min(left), "Iggy server not reachable yet");
        tokio::time::sleep(backoff.min(left)).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
        let _ = conn.client.disconnect().await;
    }
}
