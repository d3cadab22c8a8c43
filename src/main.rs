//! The gateway program: settings, storage, actors, listeners, and a graceful stop.

mod admin;
mod embedded;
mod iggy;
mod listeners;
mod settings;
mod tls;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use actix::Arbiter;
use iggy_kafka_actors::limits::ConnectionLimits;
use iggy_kafka_actors::membership::Leave;
use iggy_kafka_actors::store::{LogStore, MetaStore};
use iggy_kafka_actors::tls::TlsListener;
use iggy_kafka_actors::{server, Backend, Gateway, Metrics};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::embedded::EmbeddedStore;
use crate::settings::{BackendKind, Settings};

#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("cannot open the embedded store in {dir}: {source}")]
    Store {
        dir: PathBuf,
        source: embedded::StoreError,
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
    ScramUsers(iggy_kafka_actors::BackendError),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            // The storage engine's own info lines (flushes, compactions) are noise here,
            // and so are the Iggy SDK's per-connection ones.
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,lsm_tree=warn,fjall=warn,iggy=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let config_file = match parse_args() {
        Ok(f) => f,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::load(config_file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    match actix_rt::System::new().block_on(run(settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "gateway stopped");
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--config PATH` is the only argument.
fn parse_args() -> Result<Option<PathBuf>, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => Ok(None),
        (Some("--config"), Some(path), None) => Ok(Some(PathBuf::from(path))),
        _ => Err("usage: iggy-kafka-gateway [--config PATH]\nsettings also come from IGGY_KAFKA_* variables".into()),
    }
}

/// Binds a listener; port 0 picks a free port. Returns it with the address it got.
async fn listen(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), StartError> {
    let bind = |source| StartError::Bind { addr, source };
    let listener = TcpListener::bind(addr).await.map_err(bind)?;
    let bound = listener.local_addr().map_err(bind)?;
    Ok((listener, bound))
}

async fn run(settings: Settings) -> Result<(), StartError> {
    // The admin listener comes first: liveness holds while the backend connects, and
    // readiness says why the gateway is not serving yet.
    let metrics = Metrics::new();
    let admin_state = admin::AdminState::new(metrics.clone());
    let (admin_listener, admin_bound) = listen(settings.admin_bind_address).await?;
    actix_rt::spawn(admin::serve(admin_listener, admin_state.clone()));
    tracing::info!(%admin_bound, "admin listener up (/healthz, /readyz, /metrics)");

    // Each engine serves the two ports, and the logins of its own users.
    let (logs, meta, users): (Arc<dyn LogStore>, Arc<dyn MetaStore>, Arc<dyn Backend>) =
        match settings.backend {
            BackendKind::Embedded => {
                let store = EmbeddedStore::open(&settings.data_dir, settings.sync_policy())
                    .map_err(|source| StartError::Store {
                        dir: settings.data_dir.clone(),
                        source,
                    })?;
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
    let gateway = Gateway::start(
        settings.broker(&endpoints),
        logs,
        meta,
        users,
        metrics,
        &handles,
    )
    .await?;
    gateway
        .sasl
        .add_missing_users(settings.sasl_scram_users()?)
        .await
        .map_err(StartError::ScramUsers)?;
    let metered_meta = gateway.meta.clone();
    let (membership, cluster) = (gateway.membership.clone(), gateway.cluster.clone());

    let (stop, stopping) = watch::channel(false);
    let connections = ConnectionLimits::new(
        settings.max_connections,
        &gateway.settings.limits,
        gateway.metrics.clone(),
    );
    // Tests and scripts read the bound addresses from these lines: one per listener,
    // then the first listener's again as "listening on", then the admin listener's.
    let mut lines = String::new();
    let mut accepting = Vec::new();
    for (config, socket, at) in bound {
        tracing::info!(listener = %config.name, protocol = ?config.protocol, %at, "listening");
        lines += &format!("iggy-kafka-gateway listener {} on {at}\n", config.name);
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
    admin_state.set_serving(Some((metered_meta.clone(), cluster.clone())));
    let first = endpoints[0].1;
    tracing::info!(data_dir = %settings.data_dir.display(), "gateway ready");
    lines += &format!(
        "iggy-kafka-gateway listening on {first}\niggy-kafka-gateway admin on http://{admin_bound}\n"
    );
    // One write, so a reader that stops after the first lines cannot make the rest fail.
    let _ = std::io::stdout().lock().write_all(lines.as_bytes());

    wait_for_signal().await;
    // Not ready from now on, so a Service sends new clients to the other gateways.
    admin_state.set_serving(None);
    // Leave the cluster first, while still serving: the other gateways take over this
    // one's groups and partitions at their next heartbeat, and clients sent elsewhere
    // (NOT_COORDINATOR, Metadata without this node) find them ready.
    let others = cluster.borrow().nodes.len() > 1;
    let _ = membership.send(Leave).await;
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
    if let Err(e) = metered_meta.flush().await {
        tracing::error!(error = %e, "final flush failed");
    }
    for w in workers {
        w.stop();
    }
    tracing::info!("stopped");
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "no SIGTERM handler; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
