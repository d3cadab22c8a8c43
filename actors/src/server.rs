//! A listener's accept loop: accepts sockets, enforces the connection limits (in total
//! and per source address) and IP connection-rate quotas, and starts each connection actor on one of the worker
//! arbiters (one per core), round robin. Each configured listener runs one loop; the
//! connection limits are shared by all. On a TLS listener the handshake runs on the
//! worker, bounded in time; a failed one is logged and closes that socket only.

use std::sync::Arc;

use actix::ArbiterHandle;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::connection::Connection;
use crate::gateway::Gateway;
use crate::limits::ConnectionLimits;
use crate::session::{Listener, Principal};
use crate::tls::TlsListener;

/// Accepts connections on `socket` for `listener` (wrapped in `tls` when given) until
/// `shutdown` turns true.
pub async fn serve(
    socket: TcpListener,
    (listener, tls): (Listener, Option<TlsListener>),
    gateway: Gateway,
    workers: Vec<ArbiterHandle>,
    connections: Arc<ConnectionLimits>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut next = 0usize;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|s| *s) => break,
            accepted = socket.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: keep serving the others.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = match connections.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(refused) => {
                tracing::warn!(%peer, setting = refused.setting(), "{refused}; closing");
                continue;
            }
        };
        // Over its IP's `connection_creation_rate`: closed unserved after the throttle
        // time, as Kafka's acceptor closes it (still counted against the limits meanwhile).
        let throttle = gateway.quotas.connection_throttle(peer.ip());
        if !throttle.is_zero() {
            tracing::info!(%peer, ?throttle, "connection_creation_rate exceeded; closing after the throttle time");
            actix::spawn(async move {
                tokio::time::sleep(throttle).await;
                drop((stream, slot));
            });
            continue;
        }
        // A tokio socket belongs to the runtime that registered it: move the plain socket
        // to the worker and register it there.
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "could not hand over connection");
                continue;
            }
        };
        let (gateway, listener, shutdown) = (gateway.clone(), listener.clone(), shutdown.clone());
        let tls = tls.clone();
        let worker = &workers[next % workers.len()];
        next = next.wrapping_add(1);
        worker.spawn(async move {
            let stream = match tokio::net::TcpStream::from_std(stream) {
                Ok(s) => s,
                Err(e) => return tracing::warn!(%peer, error = %e, "could not start connection"),
            };
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
            }
            let Some(tls) = tls else {
                let (halves, who) = (stream.into_split(), (listener, Principal::anonymous()));
                return Connection::start(gateway, halves, peer, who, slot, shutdown);
            };
            match tls.accept(stream).await {
                Ok((stream, principal)) => {
                    let halves = tokio::io::split(stream);
                    Connection::start(gateway, halves, peer, (listener, principal), slot, shutdown);
                }
                Err(e) => tracing::info!(%peer, listener = %listener.name, error = %e, "TLS handshake failed"),
            }
        });
    }
    tracing::info!(listener = %listener.name, "stopped accepting connections");
}
