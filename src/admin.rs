//! The admin listener: plain HTTP on its own port (`admin_bind_address`), for probes
//! and Prometheus, apart from the Kafka listener.
//!
//! - `/healthz`: 200 while the process runs (liveness).
//! - `/readyz`: 200 while the Kafka listener accepts connections, this gateway is
//!   registered in the cluster (`docs/CLUSTER.md`) and the backend answers a ping within
//!   [`READY_TIMEOUT`]; otherwise 503 with the reason. Not ready during startup and from
//!   the moment shutdown begins, so a Service stops sending new clients.
//! - `/metrics`: [`Metrics`] in the OpenMetrics text format.
//!
//! HTTP comes from hyper, already built into the gateway for the Iggy SDK: HTTP/1 only,
//! one task per connection, nothing else.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use iggy_kafka_actors::membership::Cluster;
use iggy_kafka_actors::store::Meta;
use iggy_kafka_actors::Metrics;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Longest a readiness check waits for the backend's ping.
const READY_TIMEOUT: Duration = Duration::from_secs(2);
/// A client must send its request head within this long.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What the admin endpoints read.
pub struct AdminState {
    metrics: Arc<Metrics>,
    /// The backend and the cluster view while the Kafka listener serves; `None` before
    /// and after.
    serving: Mutex<Option<Serving>>,
    /// The last readiness answer, so only changes are logged.
    was_ready: AtomicBool,
}

impl AdminState {
    pub fn new(metrics: Arc<Metrics>) -> Arc<AdminState> {
        Arc::new(AdminState {
            metrics,
            serving: Mutex::new(None),
            was_ready: AtomicBool::new(false),
        })
    }

    /// The Kafka listener serves, over this backend (`None`: it stopped).
    pub fn set_serving(&self, serving: Option<Serving>) {
        *self.serving.lock() = serving;
    }

    async fn readiness(&self) -> Result<(), String> {
        let serving = self.serving.lock().clone();
        let Some((backend, cluster)) = serving else {
            return Err("the Kafka listener is not serving".into());
        };
        if !cluster.borrow().is_member() {
            return Err("not registered in the cluster (starting or leaving)".into());
        }
        match tokio::time::timeout(READY_TIMEOUT, backend.ping()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("backend unreachable: {e}")),
            Err(_) => Err(format!("backend did not answer within {READY_TIMEOUT:?}")),
        }
    }

    async fn ready(&self) -> Result<(), String> {
        let ready = self.readiness().await;
        if self.was_ready.swap(ready.is_ok(), Ordering::Relaxed) != ready.is_ok() {
            match &ready {
                Ok(()) => tracing::info!("ready"),
                Err(reason) => tracing::warn!(%reason, "not ready"),
            }
        }
        ready
    }
}

/// What readiness reads while the Kafka listener serves.
pub type Serving = (Meta, watch::Receiver<Arc<Cluster>>);

/// Serves the admin endpoints until the process ends.
pub async fn serve(listener: TcpListener, state: Arc<AdminState>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "admin accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let state = state.clone();
        actix_rt::spawn(async move {
            let service = service_fn(move |request| answer(request, state.clone()));
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "admin connection ended");
            }
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    state: Arc<AdminState>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut refused = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        refused
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(refused);
    }
    Ok(match request.uri().path() {
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => match state.ready().await {
            Ok(()) => text(StatusCode::OK, "ready\n".into()),
            Err(reason) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {reason}\n"),
            ),
        },
        "/metrics" => {
            let mut metrics = text(StatusCode::OK, state.metrics.encode());
            metrics.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            metrics
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: try /healthz, /readyz or /metrics\n".into(),
        ),
    })
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
