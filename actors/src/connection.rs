//! The connection actor: one per client socket.
//!
//! A reader task cuts the socket into frames and hands them over one by one; a
//! writer task writes the answers. Each request holds a place among the connection's
//! requests in flight and its bytes in the connection's and the gateway's budgets
//! from reading until its answer is written; reading stops until they are free (a
//! frame's size is read first, its body only once its bytes are granted), so neither
//! a client that pipelines too much nor one that stops reading its answers makes the
//! gateway buffer without bound. The actor decodes each frame, hands it to the
//! [`layers`] (authentication, quotas, authorization, routing, metrics) and queues
//! the answers strictly in request order, whatever order they finish in.

use std::collections::BTreeMap;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;

use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;

use crate::gateway::Gateway;
use crate::layers::{self, Served};
use crate::limits::{ByteBudget, ConnectionSlot};
use crate::metrics::ConnectionMeter;
use crate::protocol::envelope;
use crate::protocol::framing::{self, AnswerFrame, FrameCodec, FramePart};
use crate::protocol::{Answer, WireError};
use crate::sasl;
use crate::session::{Caller, Listener, Principal};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseKind};

pub struct Connection {
    gateway: Gateway,
    peer: SocketAddr,
    /// The listener it came through: its name and security protocol.
    listener: Listener,
    /// Whom this connection's requests speak for until SASL names someone.
    principal: Principal,
    /// SASL state: what may be served before authentication, and the exchange.
    sasl: sasl::Session,
    /// Answers for the writer task, in request order, each with what its request holds.
    answers: mpsc::UnboundedSender<(AnswerFrame, Held)>,
    /// Sequence number the next frame gets.
    next_request: u64,
    /// Sequence number of the next answer to write.
    next_answer: u64,
    /// Answers finished early, waiting for those before them; `None` for no answer.
    finished: BTreeMap<u64, (Option<AnswerFrame>, Held)>,
    /// Set when reading has ended: close once every earlier request is answered.
    last_request: Option<u64>,
    /// Until when the reader hands over no request: a client over its quota (KIP-219).
    muted_until: watch::Sender<Instant>,
    /// Dropped with the actor, which stops the reader task.
    _stop_reader: oneshot::Sender<()>,
}

/// What a request holds from reading until its answer is written: its place among
/// the connection's requests in flight, and its bytes in the connection's and the
/// gateway's budgets.
struct Held {
    _place: OwnedSemaphorePermit,
    _bytes: OwnedSemaphorePermit,
    _queued: OwnedSemaphorePermit,
}

/// One request frame, with what it holds.
#[derive(Message)]
#[rtype(result = "()")]
struct Frame(Bytes, Held);

/// The reader stopped: the peer closed, went idle, sent a bad frame, or the gateway is shutting down.
#[derive(Message)]
#[rtype(result = "()")]
struct ReadEnded(Option<WireError>);

impl Connection {
    /// Starts a connection actor on the current arbiter, on a socket's two halves (plain
    /// or TLS) that came through `listener`, for `principal`.
    pub fn start(
        gateway: Gateway,
        (read, write): (
            impl AsyncRead + Unpin + 'static,
            impl AsyncWrite + Unpin + 'static,
        ),
        peer: SocketAddr,
        (listener, principal): (Listener, Principal),
        slot: ConnectionSlot,
        shutdown: watch::Receiver<bool>,
    ) {
        let (stop_tx, stop_rx) = oneshot::channel();
        let (answers, to_write) = mpsc::unbounded_channel();
        let (muted_until, mute) = watch::channel(Instant::now());
        let settings = gateway.settings.clone();
        actix::spawn(write_answers(
            write,
            to_write,
            settings.write_timeout,
            peer,
            slot,
            gateway.metrics.connection_opened(),
        ));
        Connection::create(move |ctx| {
            let budgets = Budgets {
                places: Arc::new(Semaphore::new(settings.max_inflight_per_connection.max(1))),
                bytes: ByteBudget::new(settings.limits.max_inflight_bytes_per_connection),
                queued: gateway.queued_request_bytes.clone(),
            };
            let frames = FramedRead::new(read, FrameCodec::new(settings.max_request_bytes));
            let timeouts = ReadTimeouts {
                idle: settings.idle_timeout,
                request: settings.read_timeout,
            };
            actix::spawn(read_frames(
                frames,
                ctx.address(),
                (budgets, mute),
                timeouts,
                shutdown,
                stop_rx,
            ));
            Connection {
                answers,
                gateway,
                peer,
                sasl: sasl::Session::new(listener.protocol.uses_sasl()),
                listener,
                principal,
                next_request: 0,
                next_answer: 0,
                finished: BTreeMap::new(),
                last_request: None,
                muted_until,
                _stop_reader: stop_tx,
            }
        });
    }

    /// Records a finished answer and writes every answer now in order.
    fn finish(
        &mut self,
        seq: u64,
        answer: Option<AnswerFrame>,
        held: Held,
        ctx: &mut Context<Self>,
    ) {
        self.finished.insert(seq, (answer, held));
        while let Some((answer, held)) = self.finished.remove(&self.next_answer) {
            self.next_answer += 1;
            // No answer (acks=0): what the request held is simply released.
            if let Some(frame) = answer {
                if self.answers.send((frame, held)).is_err() {
                    // The writer gave up on this client (write failed or timed out).
                    ctx.stop();
                    return;
                }
            }
        }
        self.close_if_done(ctx);
    }

    fn close_if_done(&mut self, ctx: &mut Context<Self>) {
        // Stopping drops the answer queue; the writer finishes it, then closes.
        if self
            .last_request
            .is_some_and(|last| self.next_answer >= last)
        {
            ctx.stop();
        }
    }

    fn caller(&self, header: &RequestHeader) -> Caller {
        Caller {
            client_id: header
                .client_id
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default(),
            host: format!("/{}", self.peer.ip()),
            principal: self
                .sasl
                .principal()
                .unwrap_or_else(|| self.principal.clone()),
            listener: self.listener.name.clone(),
        }
    }

    /// Ends reading after a bad request: earlier requests are still answered, then the
    /// connection closes, as a Kafka broker closes a connection it cannot parse.
    fn refuse(&mut self, seq: u64, error: WireError, ctx: &mut Context<Self>) {
        tracing::warn!(peer = %self.peer, %error, "closing connection after a bad request");
        self.close_before(seq, ctx);
    }

    /// Serves nothing from request `seq` on; closes once the ones before are answered.
    fn close_before(&mut self, seq: u64, ctx: &mut Context<Self>) {
        self.last_request = Some(self.last_request.map_or(seq, |last| last.min(seq)));
        self.close_if_done(ctx);
    }

    /// Writes request `seq`'s answer, or ends the connection, as the layers decided;
    /// an answer goes out in request order, encoded at `correlation_id` and the version
    /// the layers give, after which a throttled connection reads nothing for a while.
    fn reply(
        &mut self,
        (seq, held): (u64, Held),
        served: Served,
        (key, correlation_id): (ApiKey, i32),
        ctx: &mut Context<Self>,
    ) {
        let (reply, version) = match served {
            Served::Reply { reply, version } => (reply, version),
            Served::Close(reason) => {
                tracing::info!(peer = %self.peer, %reason, "closing connection");
                return self.close_before(seq, ctx);
            }
            Served::Refuse(e) => return self.refuse(seq, e, ctx),
        };
        let peer = self.peer;
        ctx.spawn(
            reply
                .into_actor(self)
                .map(move |(answer, throttle), act, ctx| {
                    if !throttle.is_zero() {
                        let until = Instant::now() + throttle;
                        act.muted_until.send_modify(|u| *u = (*u).max(until));
                    }
                    let encoded = |frame: Result<AnswerFrame, WireError>| {
                        frame
                            .inspect_err(
                                |e| tracing::error!(%peer, error = %e, "dropping an answer"),
                            )
                            .ok()
                    };
                    let encode = |r: &ResponseKind| {
                        encoded(
                            envelope::encode_response(key, version, correlation_id, r)
                                .map(AnswerFrame::from),
                        )
                    };
                    let frame = match answer {
                        Answer::Raw(token) => Some(framing::framed(&token).into()),
                        Answer::Send(r) => encode(&r),
                        Answer::Fetch(f) => encoded(f.encode(version, correlation_id)),
                        Answer::SendAndClose(r, reason) => {
                            tracing::info!(%peer, %reason, "closing connection after this answer");
                            act.close_before(seq + 1, ctx);
                            encode(&r)
                        }
                        Answer::Nothing => None,
                        Answer::Close(reason) => {
                            tracing::info!(%peer, %reason, "closing connection");
                            act.close_before(seq + 1, ctx);
                            None
                        }
                    };
                    act.finish(seq, frame, held, ctx);
                }),
        );
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        tracing::debug!(peer = %self.peer, listener = %self.listener.name, "connection opened");
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!(peer = %self.peer, "connection closed");
    }
}

impl Handler<Frame> for Connection {
    type Result = ();

    fn handle(&mut self, Frame(frame, held): Frame, ctx: &mut Self::Context) {
        let seq = self.next_request;
        self.next_request += 1;
        let started = Instant::now();
        let size = frame.len();
        self.gateway.metrics.received(size);
        if self.last_request.is_some() {
            return; // closing: nothing after a bad request is served
        }
        if self.sasl.expects_raw_token() {
            let served =
                layers::serve_raw_token(&self.gateway, &self.sasl, self.peer, (frame, started));
            return self.reply((seq, held), served, (ApiKey::SaslAuthenticate, 0), ctx);
        }
        let request = match envelope::decode_request(frame) {
            Ok(r) => r,
            Err(e) => return self.refuse(seq, e, ctx),
        };
        let (key, correlation_id) = (request.api_key, request.header.correlation_id);
        let caller = self.caller(&request.header);
        let who = (self.peer, caller);
        let served = layers::serve(&self.gateway, &self.sasl, who, (request, size, started));
        self.reply((seq, held), served, (key, correlation_id), ctx);
    }
}

impl Handler<ReadEnded> for Connection {
    type Result = ();

    fn handle(&mut self, ReadEnded(error): ReadEnded, ctx: &mut Self::Context) {
        match error {
            Some(e) => self.refuse(self.next_request, e, ctx),
            None => self.close_before(self.next_request, ctx),
        }
    }
}

/// How long the reader waits: for a first byte, and for the rest of a request.
struct ReadTimeouts {
    idle: Duration,
    request: Duration,
}

/// What a request must be granted before its frame is read.
struct Budgets {
    /// Places among the connection's requests in flight.
    places: Arc<Semaphore>,
    /// The connection's bytes of requests in flight.
    bytes: ByteBudget,
    /// The gateway's bytes of requests in flight, shared by every connection.
    queued: ByteBudget,
}

fn peer_went_away(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

/// Reads frames while the budgets allow, handing each over once the connection is
/// not muted; reports why it stopped.
async fn read_frames<R: AsyncRead + Unpin>(
    mut frames: FramedRead<R, FrameCodec>,
    conn: Addr<Connection>,
    (budgets, mute): (Budgets, watch::Receiver<Instant>),
    timeouts: ReadTimeouts,
    mut shutdown: watch::Receiver<bool>,
    mut stop: oneshot::Receiver<()>,
) {
    let ended = loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = shutdown.wait_for(|s| *s) => break None,
            frame = async {
                let frame = next_request(&mut frames, &budgets, &timeouts).await;
                // A throttled client's next request waits out its throttle time.
                let until = *mute.borrow();
                if until > Instant::now() {
                    tokio::time::sleep_until(until.into()).await;
                }
                frame
            } => match frame {
                Ok(Some((frame, held))) => {
                    if conn.send(Frame(frame, held)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break None,
                // A TLS client that closed without close_notify, as Kafka clients do, or
                // a client that went away (killed, or its host): an ordinary close.
                Err(WireError::Io(e)) if peer_went_away(&e) => {
                    tracing::debug!(error = %e, "client went away");
                    break None
                }
                Err(e) => break Some(e),
            },
        }
    };
    conn.do_send(ReadEnded(ended));
}

/// The next request frame with what it holds; `None` when the peer closed or stayed
/// idle too long. Its size is read once it has a place in flight, its body once its
/// bytes are granted (the connection's first, so one connection waiting for its own
/// budget never holds the gateway's).
async fn next_request<R: AsyncRead + Unpin>(
    frames: &mut FramedRead<R, FrameCodec>,
    budgets: &Budgets,
    timeouts: &ReadTimeouts,
) -> Result<Option<(Bytes, Held)>, WireError> {
    let Ok(place) = budgets.places.clone().acquire_owned().await else {
        return Ok(None);
    };
    let size = match next_part(frames, timeouts, false).await? {
        Some(FramePart::Size(size)) => size,
        Some(FramePart::Body(_)) => unreachable!("the codec cuts a size before each body"),
        None => return Ok(None),
    };
    let bytes = budgets.bytes.take(size).await;
    let queued = budgets.queued.take(size).await;
    let body = match next_part(frames, timeouts, true).await? {
        Some(FramePart::Body(body)) => body,
        _ => return Ok(None), // the peer closed before sending it
    };
    let held = Held {
        _place: place,
        _bytes: bytes,
        _queued: queued,
    };
    Ok(Some((body, held)))
}

/// The next part of a frame; `None` when the peer closed or, between frames, stayed
/// idle too long. A frame begun must complete within about `request` (between one
/// and two of it), its size and its body each.
async fn next_part<R: AsyncRead + Unpin>(
    frames: &mut FramedRead<R, FrameCodec>,
    timeouts: &ReadTimeouts,
    in_frame: bool,
) -> Result<Option<FramePart>, WireError> {
    let step = timeouts.request.min(timeouts.idle);
    let mut idle_for = Duration::ZERO;
    let mut partial_seen = false;
    loop {
        // Cancel-safe: bytes already read stay in the FramedRead buffer.
        match tokio::time::timeout(step, frames.next()).await {
            Ok(part) => return part.transpose(),
            Err(_) if !in_frame && frames.read_buffer().is_empty() => {
                idle_for += step;
                if idle_for >= timeouts.idle {
                    tracing::debug!("closing idle connection");
                    return Ok(None);
                }
            }
            Err(_) if partial_seen => return Err(WireError::SlowRequest(timeouts.request)),
            Err(_) => partial_seen = true,
        }
    }
}

/// Writes queued answers; gives up on a client that does not read them in time. The
/// connection counts as open, in the limit and the metrics, until this ends.
async fn write_answers<W: AsyncWrite + Unpin>(
    mut socket: W,
    mut answers: mpsc::UnboundedReceiver<(AnswerFrame, Held)>,
    timeout: Duration,
    peer: SocketAddr,
    _slot: ConnectionSlot,
    meter: ConnectionMeter,
) {
    while let Some((frame, _held)) = answers.recv().await {
        match tokio::time::timeout(timeout, write_frame(&mut socket, &frame)).await {
            Ok(Ok(())) => meter.sent(frame.total_len()),
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "write failed");
                return;
            }
            Err(_) => {
                tracing::warn!(%peer, ?timeout, "client is not reading its answers; closing");
                return;
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// At most this many buffers a write (Linux refuses more than 1024 in one `writev`).
const MAX_SLICES: usize = 1024;

/// Writes a frame's buffers in order with vectored writes, so a Fetch answer's stored
/// batches go to the socket (or TLS) as they are; until all is written.
async fn write_frame<W: AsyncWrite + Unpin>(
    socket: &mut W,
    frame: &AnswerFrame,
) -> std::io::Result<()> {
    let pieces = frame.pieces().iter().filter(|p| !p.is_empty());
    let mut slices: Vec<IoSlice> = pieces.map(|p| IoSlice::new(p)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let upto = rest.len().min(MAX_SLICES);
        let written = socket.write_vectored(&rest[..upto]).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, written);
    }
    Ok(())
}
