//! The connection actor: one per client socket.
//!
//! A reader task cuts the socket into frames and hands them over one by one; it
//! holds a permit per request in flight and stops reading when the permits run out,
//! so a client that pipelines more than the limit is slowed, not buffered without
//! bound. The actor decodes each frame, starts its handler ([`api::route`]) and
//! writes the answers strictly in request order, whatever order they finish in.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use actix::io::{FramedWrite, WriteHandler};
use actix::prelude::*;
use bytes::Bytes;
use futures_util::StreamExt;
use kafka_protocol::messages::ResponseKind;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::{BytesCodec, FramedRead};

use crate::api;
use crate::gateway::Gateway;
use crate::wire::{self, FrameCodec, WireError};

pub struct Connection {
    gateway: Gateway,
    peer: SocketAddr,
    writer: FramedWrite<Bytes, OwnedWriteHalf, BytesCodec>,
    /// Sequence number the next frame gets.
    next_request: u64,
    /// Sequence number of the next answer to write.
    next_answer: u64,
    /// Answers finished early, waiting for those before them; `None` for no answer.
    finished: BTreeMap<u64, (Option<Bytes>, OwnedSemaphorePermit)>,
    /// Set when reading has ended: close once every earlier request is answered.
    last_request: Option<u64>,
    /// Dropped with the actor, which stops the reader task.
    _stop_reader: oneshot::Sender<()>,
    /// This connection's place under the gateway's connection limit.
    _slot: OwnedSemaphorePermit,
}

/// One request frame, with its in-flight permit.
#[derive(Message)]
#[rtype(result = "()")]
struct Frame(Bytes, OwnedSemaphorePermit);

/// The reader stopped: the peer closed, went idle, sent a bad frame, or the gateway is shutting down.
#[derive(Message)]
#[rtype(result = "()")]
struct ReadEnded(Option<WireError>);

impl Connection {
    /// Starts a connection actor on the current arbiter.
    pub fn start(
        gateway: Gateway,
        stream: TcpStream,
        slot: OwnedSemaphorePermit,
        shutdown: watch::Receiver<bool>,
    ) -> io::Result<()> {
        let peer = stream.peer_addr()?;
        stream.set_nodelay(true)?;
        let (read, write) = stream.into_split();
        let (stop_tx, stop_rx) = oneshot::channel();
        Connection::create(move |ctx| {
            let inflight = Arc::new(Semaphore::new(
                gateway.settings.max_inflight_per_connection.max(1),
            ));
            let codec = FrameCodec {
                max_frame: gateway.settings.max_request_bytes,
            };
            let reader = read_frames(
                FramedRead::new(read, codec),
                ctx.address(),
                inflight,
                gateway.settings.idle_timeout,
                shutdown,
                stop_rx,
            );
            actix::spawn(reader);
            Connection {
                writer: FramedWrite::new(write, BytesCodec::new(), ctx),
                gateway,
                peer,
                next_request: 0,
                next_answer: 0,
                finished: BTreeMap::new(),
                last_request: None,
                _stop_reader: stop_tx,
                _slot: slot,
            }
        });
        Ok(())
    }

    /// Records a finished answer and writes every answer now in order.
    fn finish(
        &mut self,
        seq: u64,
        answer: Option<Bytes>,
        permit: OwnedSemaphorePermit,
        ctx: &mut Context<Self>,
    ) {
        self.finished.insert(seq, (answer, permit));
        while let Some((answer, _permit)) = self.finished.remove(&self.next_answer) {
            if let Some(bytes) = answer {
                self.writer.write(bytes);
            }
            self.next_answer += 1;
        }
        self.close_if_done(ctx);
    }

    fn close_if_done(&mut self, ctx: &mut Context<Self>) {
        if self
            .last_request
            .is_some_and(|last| self.next_answer >= last)
        {
            self.writer.close();
            ctx.stop();
        }
    }

    /// Ends reading after a bad request: earlier requests are still answered, then the
    /// connection closes, as a Kafka broker closes a connection it cannot parse.
    fn refuse(&mut self, seq: u64, error: WireError, ctx: &mut Context<Self>) {
        tracing::warn!(peer = %self.peer, %error, "closing connection after a bad request");
        self.last_request = Some(seq);
        self.close_if_done(ctx);
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        tracing::debug!(peer = %self.peer, "connection opened");
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!(peer = %self.peer, "connection closed");
    }
}

impl Handler<Frame> for Connection {
    type Result = ();

    fn handle(&mut self, Frame(frame, permit): Frame, ctx: &mut Self::Context) {
        let seq = self.next_request;
        self.next_request += 1;
        if self.last_request.is_some() {
            return; // closing: nothing after a bad request is served
        }
        let request = match wire::decode_request(frame) {
            Ok(r) => r,
            Err(e) => return self.refuse(seq, e, ctx),
        };
        let version = request.header.request_api_version;
        let correlation_id = request.header.correlation_id;
        let key = request.api_key;
        let (reply, answer_version) = match request.body {
            // KIP-511: answer at v0 so the client retries with a version both know.
            None => (api::unsupported_api_versions(), 0),
            Some(body) => match api::route(&self.gateway, key, version, body) {
                Ok(reply) => (reply, version),
                Err(e) => return self.refuse(seq, e, ctx),
            },
        };
        let peer = self.peer;
        ctx.spawn(
            reply
                .into_actor(self)
                .map(move |response: Option<ResponseKind>, act, ctx| {
                    let bytes = response.and_then(|r| {
                        wire::encode_response(key, answer_version, correlation_id, &r)
                            .inspect_err(
                                |e| tracing::error!(%peer, error = %e, "dropping an answer"),
                            )
                            .ok()
                    });
                    act.finish(seq, bytes, permit, ctx);
                }),
        );
    }
}

impl Handler<ReadEnded> for Connection {
    type Result = ();

    fn handle(&mut self, ReadEnded(error): ReadEnded, ctx: &mut Self::Context) {
        match error {
            Some(e) => self.refuse(self.next_request, e, ctx),
            None => {
                self.last_request = Some(self.next_request);
                self.close_if_done(ctx);
            }
        }
    }
}

impl WriteHandler<io::Error> for Connection {
    fn error(&mut self, err: io::Error, _: &mut Self::Context) -> Running {
        tracing::debug!(peer = %self.peer, error = %err, "write failed");
        Running::Stop
    }
}

/// Reads frames while permits last; reports why it stopped.
async fn read_frames(
    mut frames: FramedRead<OwnedReadHalf, FrameCodec>,
    conn: Addr<Connection>,
    inflight: Arc<Semaphore>,
    idle: std::time::Duration,
    mut shutdown: watch::Receiver<bool>,
    mut stop: oneshot::Receiver<()>,
) {
    let ended = loop {
        let next = async {
            let permit = inflight
                .clone()
                .acquire_owned()
                .await
                .expect("never closed");
            let frame = tokio::time::timeout(idle, frames.next()).await;
            (permit, frame)
        };
        tokio::select! {
            _ = &mut stop => return,
            _ = shutdown.wait_for(|s| *s) => break None,
            (permit, frame) = next => match frame {
                Err(_) => {
                    tracing::debug!("closing idle connection");
                    break None;
                }
                Ok(None) => break None,
                Ok(Some(Err(e))) => break Some(e),
                Ok(Some(Ok(frame))) => {
                    if conn.send(Frame(frame, permit)).await.is_err() {
                        return;
                    }
                }
            },
        }
    };
    conn.do_send(ReadEnded(ended));
}
