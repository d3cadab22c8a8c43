//! The layers a request passes on its way to the route table and back, in order, so
//! the connection actor only frames, orders and writes:
//!
//! 1. authentication: on a SASL listener nothing but ApiVersions and the SASL requests
//!    is served before the login, and the SASL requests are answered here;
//! 2. quotas: a Produce or Fetch is metered against its client quota as it arrives
//!    (a Fetch asks no more than the quota allows), and its answer carries the
//!    throttle time, for which the connection then reads nothing (KIP-219);
//! 3. authorization: the caller's [`Access`], by the ACLs in force as it arrived;
//! 4. routing: [`api::route`];
//!
//! and outermost, metrics: every request answered is counted and timed once, with
//! its answer as the client gets it.
//!
//! Each request is served inside a span of its own (`request`: API, version,
//! correlation id, client id, principal, listener), entered while it is routed and on
//! its answer's future; the messages it sends to the actors that own state carry the
//! span, and they enter it for the work they do for it, down to the store call.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use kafka_protocol::messages::{ApiKey, RequestKind};
use tracing::Instrument;

use crate::api;
use crate::gateway::Gateway;
use crate::protocol::envelope::Request;
use crate::protocol::{Answer, Reply, WireError};
use crate::quotas::Metered;
use crate::sasl;
use crate::session::Caller;

/// What becomes of one request.
pub enum Served {
    /// This answer once worked out, encoded at `version`, and how long the connection
    /// then reads nothing more (a throttled client).
    Reply {
        reply: LocalBoxFuture<'static, (Answer, Duration)>,
        version: i16,
    },
    /// Nothing from here on is served: the connection closes once the requests before
    /// are answered.
    Close(String),
    /// A request that cannot be served: the same, with the error logged.
    Refuse(WireError),
}

/// Serves one decoded request from `caller`, through every layer.
pub fn serve(
    gw: &Gateway,
    session: &sasl::Session,
    (peer, caller): (SocketAddr, Caller),
    (request, size, started): (Request, usize, Instant),
) -> Served {
    let (key, version) = (request.api_key, request.header.request_api_version);
    let span = tracing::info_span!(
        "request",
        api = ?key,
        version,
        correlation_id = request.header.correlation_id,
        client_id = %caller.client_id,
        principal = %caller.principal,
        listener = %caller.listener,
    );
    let _routing = span.enter();
    // Authentication.
    if let Err(reason) = session.admit(key, started) {
        return Served::Close(reason);
    }
    let (reply, answer_version, metered) = match request.body {
        // KIP-511: answer at v0 so the client retries with a version both know.
        None => (api::unsupported_api_versions(), 0, Metered::Free),
        Some(body @ (RequestKind::SaslHandshake(_) | RequestKind::SaslAuthenticate(_))) => {
            let reply = session.serve(&gw.sasl, version, body, peer);
            (reply, version, Metered::Free)
        }
        Some(mut body) => {
            // Quotas, on the way in.
            let metered = gw.quotas.meter(&caller, size, &mut body);
            // Authorization, then routing.
            let access = gw.access(&caller);
            match api::route(gw, key, version, body, caller, access) {
                Ok(reply) => (reply, version, metered),
                Err(e) => return Served::Refuse(e),
            }
        }
    };
    let reply = settled(gw, reply, metered, (key, version), started);
    Served::Reply {
        reply: reply.instrument(span.clone()).boxed_local(),
        version: answer_version,
    }
}

/// A bare SASL token after SaslHandshake v0: served by the authentication layer alone,
/// counted as SaslAuthenticate v0.
pub fn serve_raw_token(
    gw: &Gateway,
    session: &sasl::Session,
    peer: SocketAddr,
    (token, started): (Bytes, Instant),
) -> Served {
    let reply = session.serve_raw_token(&gw.sasl, token, peer);
    let raw = (ApiKey::SaslAuthenticate, 0);
    Served::Reply {
        reply: settled(gw, reply, Metered::Free, raw, started),
        version: 0,
    }
}

/// The way back out: the quota settled (the throttle time in the answer and for the
/// connection), then the answer counted and timed.
fn settled(
    gw: &Gateway,
    reply: Reply,
    metered: Metered,
    (key, version): (ApiKey, i16),
    started: Instant,
) -> LocalBoxFuture<'static, (Answer, Duration)> {
    let (quotas, metrics) = (gw.quotas.clone(), gw.metrics.clone());
    reply
        .map(move |mut answer| {
            let throttle = quotas.settle(metered, version, &mut answer);
            metrics.answered(key, version, &answer, started);
            (answer, throttle)
        })
        .boxed_local()
}
