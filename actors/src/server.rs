//! The listener: accepts sockets, enforces the connection limit, and starts each
//! connection actor on one of the worker arbiters (one per core), round robin.

use std::sync::Arc;

use actix::ArbiterHandle;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::connection::Connection;
use crate::gateway::Gateway;

/// Accepts connections until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    gateway: Gateway,
    workers: Vec<ArbiterHandle>,
    connections: Arc<Semaphore>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut next = 0usize;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|s| *s) => break,
            accepted = listener.accept() => accepted,
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
        let Ok(slot) = connections.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = gateway.settings.max_connections, "connection limit reached; refusing");
            continue;
        };
        // A tokio socket belongs to the runtime that registered it: move the plain socket
        // to the worker and register it there.
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "could not hand over connection");
                continue;
            }
        };
        let (gateway, shutdown) = (gateway.clone(), shutdown.clone());
        let worker = &workers[next % workers.len()];
        next = next.wrapping_add(1);
        worker.spawn(async move {
            let started = tokio::net::TcpStream::from_std(stream)
                .and_then(|s| Connection::start(gateway, s, slot, shutdown));
            if let Err(e) = started {
                tracing::warn!(%peer, error = %e, "could not start connection");
            }
        });
    }
    tracing::info!("stopped accepting connections");
}
