//! The gateway as a library: settings, storage, actors, listeners, and a graceful stop.
//!
//! [`start`] brings a gateway up from [`Settings`] inside the caller's actix System and
//! returns its bound addresses with a way to stop it. The program (`src/main.rs`) wraps
//! it with logging, the command line, the stdout lines scripts read, signals and the
//! exit code; the integration tests start gateways in-process with it.

mod admin;
mod embedded;
mod iggy;
mod listeners;
pub mod settings;
mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::Arbiter;
use iggy_kafka_actors::limits::ConnectionLimits;
use iggy_kafka_actors::metrics::MeteredMeta;
use iggy_kafka_actors::store::Users;
use iggy_kafka_actors::store::{LogStore, Meta, MetaStore};
use iggy_kafka_actors::tls::TlsListener;
use iggy_kafka_actors::{server, Gateway, Metrics, Threads};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

/// The embedded engine, public for the port conformance tests (`tests/ports/`), which
/// open it from [`Settings`] as [`start`] does and call its two ports directly.
pub use crate::embedded::{EmbeddedStore, SyncPolicy};
/// The Iggy engine, public for the same tests (built from [`Settings::iggy`]).
pub use crate::iggy::IggyBackend;
use crate::settings::BackendKind;
pub use crate::settings::{LogFormat, Settings};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the embedded store in {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: embedded::EmbeddedError,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Iggy(#[from] iggy::StartError),
    #[error("configuration error: {0}")]
    Settings(#[from] settings::SettingsError),
    #[error("TLS: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("cannot start the gateway: {0}")]
    Gateway(#[from] iggy_kafka_actors::config_catalog::StartError),
    #[error("cannot store the SCRAM credentials of the bootstrap users: {0}")]
    ScramUsers(iggy_kafka_actors::StoreError),
}

/// Whether SIGHUP reloads the TLS files. A handler is process-wide: the program's to
/// install, never a gateway's started inside another program (the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sighup {
    /// SIGHUP reloads the TLS files at once (`src/main.rs`).
    ReloadsTls,
    /// No handler is installed; changed TLS files still reload when next polled.
    Untouched,
}

/// A gateway [`start`] brought up: serving until asked to stop.
pub struct Running {
    /// Every listener's name and bound address, in configured order.
    pub listeners: Vec<(String, SocketAddr)>,
    /// The first listener's address.
    pub addr: SocketAddr,
    /// The admin listener's address (`/healthz`, `/readyz`, `/metrics`).
    pub admin: SocketAddr,
    stop: Stop,
    /// The shutdown, which waits for `stop` and ends once the gateway has stopped.
    shutdown: JoinHandle<()>,
}

/// Asks a [`Running`] gateway to stop gracefully, as SIGTERM asks the program; usable
/// from any thread.
#[derive(Clone, Debug)]
pub struct Stop(Arc<Notify>);

impl Stop {
    pub fn stop(&self) {
        self.0.notify_one();
    }
}

impl Running {
    /// A handle that asks this gateway to stop.
    pub fn stop_handle(&self) -> Stop {
        self.stop.clone()
    }

    /// Stops the gateway gracefully and returns once it has stopped.
    pub async fn stop(self) {
        self.stop.stop();
        self.stopped().await
    }

    /// Returns once the gateway has stopped, after a [`Stop`].
    pub async fn stopped(self) {
        if let Err(e) = self.shutdown.await {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}

/// Binds a listener; port 0 picks a free port. Returns it with the address it got.
async fn listen(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), StartError> {
    let bind = |source| StartError::Bind { addr, source };
    let listener = TcpListener::bind(addr).await.map_err(bind)?;
    let bound = listener.local_addr().map_err(bind)?;
    Ok((listener, bound))
}

/// Starts a gateway on the caller's actix System: once this returns, every listener
/// accepts connections and the admin listener reports ready. It serves until
/// [`Running::stop`] (or a [`Stop`]); the stop then runs as SIGTERM's: not ready, leave
/// the cluster, stop accepting, finish requests in flight, flush.
pub async fn start(settings: Settings, sighup: Sighup) -> Result<Running, StartError> {
    // The admin listener comes first: liveness holds while the backend connects, and
    // readiness says why the gateway is not serving yet.
    let metrics = Metrics::new();
    let admin_state = admin::AdminState::new(metrics.clone());
    let (admin_listener, admin_bound) = listen(settings.admin_bind_address).await?;
    actix_rt::spawn(admin::serve(admin_listener, admin_state.clone()));
    tracing::info!(%admin_bound, "admin listener up (/healthz, /readyz, /metrics)");

    // Each engine serves the two ports, and the logins of its own users.
    let (logs, meta, users): (Arc<dyn LogStore>, Arc<dyn MetaStore>, Arc<dyn Users>) =
        match settings.backend {
            BackendKind::Embedded => {
                let store = EmbeddedStore::open(&settings.data_dir, settings.sync_policy())
                    .map_err(|source| StartError::Store {
                        dir: settings.data_dir.clone(),
                        source,
                    })?;
                store.keep_free(settings.embedded_min_free_bytes);
                store.enforce_retention_every(Duration::from_millis(
                    settings.retention_check_interval_ms,
                ));
                let store = Arc::new(store);
                (store.clone(), store.clone(), store)
            }
            BackendKind::Iggy => {
                let store = Arc::new(iggy::IggyBackend::start(settings.iggy()?).await?);
                (store.clone(), store.clone(), store)
            }
        };
    // Loaded before any listener binds: bad TLS files stop startup.
    let tls = match settings.tls()? {
        Some(files) => Some(TlsListener {
            config: tls::watch_files(
                files,
                Duration::from_millis(settings.ssl_reload_interval_ms),
                sighup == Sighup::ReloadsTls,
            )?,
            handshake_timeout: Duration::from_millis(settings.ssl_handshake_timeout_ms),
        }),
        None => None,
    };
    let mut bound = Vec::new();
    for config in settings.listeners()? {
        let (socket, at) = listen(config.bind).await?;
        bound.push((config, socket, at));
    }
    let endpoints: Vec<_> = bound.iter().map(|(c, _, at)| (c.clone(), *at)).collect();
    let worker_count = match settings.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let workers: Vec<Arbiter> = (0..worker_count).map(|_| Arbiter::new()).collect();
    let handles: Vec<_> = workers.iter().map(Arbiter::handle).collect();
    // Log slots on threads of their own where appends block (`blocks_in_append`),
    // else on the workers in turn.
    let (slot_threads, slot_handles): (Vec<Arbiter>, Vec<_>) = match logs.blocks_in_append() {
        true => {
            let own: Vec<Arbiter> = (0..settings.log_slots).map(|_| Arbiter::new()).collect();
            let handles = own.iter().map(Arbiter::handle).collect();
            (own, handles)
        }
        false => {
            let shared = (0..settings.log_slots).map(|i| handles[i % handles.len()].clone());
            (Vec::new(), shared.collect())
        }
    };
    // A metered handle of the store beside the gateway's: readiness pings it (a failed
    // ping counted as any store call), shutdown flushes it.
    let store_meta = Meta::new(Arc::new(MeteredMeta::new(meta.clone(), metrics.clone())));
    let gateway = Gateway::start(
        settings.broker(&endpoints),
        logs,
        meta,
        users,
        metrics,
        Threads {
            workers: &handles,
            log_slots: &slot_handles,
        },
    )
    .await?;
    gateway
        .sasl
        .add_missing_users(settings.sasl_scram_users()?)
        .await
        .map_err(StartError::ScramUsers)?;
    let (groups, partitions) = (gateway.groups.clone(), gateway.partitions.clone());

    let (stop, stopping) = watch::channel(false);
    let connections = ConnectionLimits::new(
        settings.max_connections,
        &gateway.settings.limits,
        gateway.metrics.clone(),
    );
    let mut listeners = Vec::new();
    let mut accepting = Vec::new();
    for (config, socket, at) in bound {
        tracing::info!(listener = %config.name, protocol = ?config.protocol, %at, "listening");
        listeners.push((config.name.clone(), at));
        accepting.push(actix_rt::spawn(server::serve(
            socket,
            (
                config.listener(),
                config.protocol.uses_tls().then(|| tls.clone()).flatten(),
            ),
            gateway.clone(),
            handles.clone(),
            connections.clone(),
            stopping.clone(),
        )));
    }
    drop(gateway);
    admin_state.set_serving(Some((store_meta.clone(), groups.watch_cluster())));
    let first = endpoints[0].1;
    tracing::info!(data_dir = %settings.data_dir.display(), "gateway ready");

    let asked = Arc::new(Notify::new());
    let stop_asked = asked.clone();
    let shutdown = actix_rt::spawn(async move {
        stop_asked.notified().await;
        // Not ready from now on, so a Service sends new clients to the other gateways.
        admin_state.set_serving(None);
        // Leave the cluster first, while still serving: the other gateways take over this
        // one's groups and partitions at their next heartbeat, and clients sent elsewhere
        // (NOT_COORDINATOR, Metadata without this node) find them ready.
        let others = groups.cluster().nodes.len() > 1;
        groups.leave().await;
        if others {
            tracing::info!("left the cluster; handing over before closing connections");
            tokio::time::sleep(Duration::from_millis(settings.node_heartbeat_ms * 2)).await;
        }
        tracing::info!("shutting down: no new connections, finishing requests in flight");
        let _ = stop.send(true);
        for accept in accepting {
            let _ = accept.await;
        }
        let drained =
            tokio::time::timeout(Duration::from_millis(settings.shutdown_timeout_ms), async {
                while connections.open() > 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await;
        if drained.is_err() {
            tracing::warn!("shutdown timeout reached with connections still open");
        }
        // After the last append: a restart reads the logs on from here.
        if let Err(e) = partitions.save_txn_indexes().await {
            tracing::warn!(error = %e, "cannot save the transaction indexes");
        }
        if let Err(e) = store_meta.flush().await {
            tracing::error!(error = %e, "final flush failed");
        }
        let threads: Vec<Arbiter> = workers.into_iter().chain(slot_threads).collect();
        for t in &threads {
            t.stop();
        }
        // Their connections and the store's last references go with them, so a caller
        // that goes on (a test reusing the data directory) finds everything closed.
        for t in threads {
            let _ = t.join();
        }
        tracing::info!("stopped");
    });
    Ok(Running {
        listeners,
        addr: first,
        admin: admin_bound,
        stop: Stop(asked),
        shutdown,
    })
}
