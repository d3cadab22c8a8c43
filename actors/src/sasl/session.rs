//! One connection's SASL state: the gate every request passes, and SaslHandshake and
//! SaslAuthenticate as Kafka's `SaslServerAuthenticator` serves them.
//!
//! On a SASL listener only ApiVersions, SaslHandshake and SaslAuthenticate are served
//! until authentication succeeds; anything else closes the connection, as Kafka does.
//! A failed login is answered with SASL_AUTHENTICATION_FAILED (58) and one generic
//! message after a delay, then the connection closes. With `connections.max.reauth.ms`
//! the authentication expires: the client re-authenticates on the same connection
//! (KIP-368), or its next other request closes it.
//!
//! After SaslHandshake v0 (pre-KIP-152 clients: kafka-python 2.0, Sarama up to 1.40) the
//! tokens come as bare size-prefixed frames without a request header, and go back the
//! same way; a failed login there has no SaslAuthenticate to carry its error, so the
//! connection closes after the delay without an answer, as Kafka closes it.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::scram::{self, Exchange};
use super::{plain, Authenticator, Mechanism};
use crate::protocol::versions::since;
use crate::protocol::{Answer, Reply};
use crate::session::Principal;
use crate::store::{ScramMechanism, StoreError};

/// One connection's SASL state. The futures serving SASL requests update it when they
/// finish; the actor and they share one thread, and no borrow spans an await.
pub struct Session {
    /// The listener requires SASL before other requests.
    required: bool,
    state: Rc<RefCell<State>>,
}

#[derive(Default)]
struct State {
    step: Step,
    /// The last successful authentication; a re-authentication must keep its principal
    /// and mechanism.
    authenticated: Option<Authenticated>,
    /// The exchange's tokens come as bare frames (after SaslHandshake v0).
    raw_tokens: bool,
}

struct Authenticated {
    principal: Principal,
    mechanism: Mechanism,
    /// When it stops being valid; `None`: never.
    expires: Option<Instant>,
}

#[derive(Default)]
enum Step {
    /// A SaslHandshake comes next: the first, or one beginning a re-authentication.
    #[default]
    Handshake,
    /// The mechanism's first token comes next.
    Chosen(Mechanism),
    /// SCRAM's client-final message comes next.
    Scram(ScramMechanism, Box<Exchange>),
    /// A SASL request is being served; nothing may arrive meanwhile.
    Busy,
}

/// What serving one token came to, whatever framing carried it.
enum Served {
    /// The answer token; another token is expected.
    Continue(Bytes),
    /// Authenticated; the last answer token.
    Authenticated(Bytes),
    /// Refused, after the failed-login delay: the message SaslAuthenticate carries, and
    /// why the connection closes.
    Refused(String, &'static str),
}

/// What one token of an exchange came to.
enum Token {
    /// Another token is expected after this answer.
    Continue(Step, Bytes),
    /// Authenticated as `user`; the last answer.
    Done(Mechanism, String, Bytes),
    /// Wrong credentials, or a message that makes no sense; the reason is for the log only.
    Failed(Mechanism, String),
    /// The credentials could not be checked (the store failed).
    Unavailable(Mechanism, StoreError),
}

impl Session {
    pub fn new(required: bool) -> Session {
        Session {
            required,
            state: Rc::default(),
        }
    }

    /// The principal SASL established, if any.
    pub fn principal(&self) -> Option<Principal> {
        let state = self.state.borrow();
        state.authenticated.as_ref().map(|a| a.principal.clone())
    }

    /// Whether a request of `key` may be served now; the reason to close otherwise.
    pub fn admit(&self, key: ApiKey, now: Instant) -> Result<(), String> {
        if !self.required
            || matches!(
                key,
                ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
            )
        {
            return Ok(());
        }
        let state = self.state.borrow();
        match (&state.step, &state.authenticated) {
            (Step::Handshake, Some(a)) if a.expires.is_some_and(|at| now >= at) => Err(format!(
                "{key:?} request after the authentication expired (connections.max.reauth.ms) without re-authentication"
            )),
            (Step::Handshake, Some(_)) => Ok(()),
            (Step::Handshake, None) => Err(format!(
                "unexpected {key:?} request before SASL authentication"
            )),
            _ => Err(format!(
                "unexpected {key:?} request during SASL authentication"
            )),
        }
    }

    /// Serves SaslHandshake or SaslAuthenticate.
    pub fn serve(
        &self,
        auth: &Arc<Authenticator>,
        version: i16,
        body: RequestKind,
        peer: SocketAddr,
    ) -> Reply {
        match body {
            RequestKind::SaslHandshake(r) => self.handshake(auth, version, r),
            RequestKind::SaslAuthenticate(r) => self.authenticate(auth, version, r, peer),
            other => unreachable!("not a SASL request: {other:?}"),
        }
    }

    /// Whether the next frame is a bare SASL token (after SaslHandshake v0), not a request.
    pub fn expects_raw_token(&self) -> bool {
        let state = self.state.borrow();
        state.raw_tokens && matches!(state.step, Step::Chosen(_) | Step::Scram(..))
    }

    /// Serves a bare token ([`Session::expects_raw_token`]): the answer token as a bare
    /// frame, or, on a failed login, the connection closed without an answer.
    pub fn serve_raw_token(
        &self,
        auth: &Arc<Authenticator>,
        token: Bytes,
        peer: SocketAddr,
    ) -> Reply {
        let step = std::mem::replace(&mut self.state.borrow_mut().step, Step::Busy);
        let served = self.token(auth, step, token, peer);
        Box::pin(async move {
            match served.await {
                Served::Continue(token) | Served::Authenticated(token) => Answer::Raw(token),
                Served::Refused(_, reason) => Answer::Close(reason.into()),
            }
        })
    }

    fn handshake(
        &self,
        auth: &Authenticator,
        version: i16,
        request: SaslHandshakeRequest,
    ) -> Reply {
        let offered: Vec<StrBytes> = auth
            .settings()
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        let answer = |error: Option<ResponseError>| {
            ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default()
                    .with_error_code(error.map_or(0, |e| e.code()))
                    .with_mechanisms(offered.clone()),
            )
        };
        if !self.required {
            // Kafka's KafkaApis answers SASL requests on other listeners so.
            return sent(Answer::Send(Box::new(answer(Some(
                ResponseError::IllegalSaslState,
            )))));
        }
        let mut state = self.state.borrow_mut();
        if !matches!(state.step, Step::Handshake) {
            return sent(closing(
                answer(Some(ResponseError::IllegalSaslState)),
                "SaslHandshake in the middle of a SASL exchange",
            ));
        }
        // Re-authentication (KIP-368) needs SaslAuthenticate, which v0 does not use.
        let raw_tokens = version < since::SASL_HANDSHAKE_AUTHENTICATE_REQUESTS;
        if raw_tokens && state.authenticated.is_some() {
            return sent(closing(
                answer(Some(ResponseError::IllegalSaslState)),
                "SaslHandshake v0 to re-authenticate",
            ));
        }
        let asked = request.mechanism.as_str();
        match Mechanism::from_name(asked).filter(|m| auth.settings().mechanisms.contains(m)) {
            Some(m) => {
                state.step = Step::Chosen(m);
                state.raw_tokens = raw_tokens;
                sent(Answer::Send(Box::new(answer(None))))
            }
            None => sent(closing(
                answer(Some(ResponseError::UnsupportedSaslMechanism)),
                &format!("SASL mechanism '{}' is not enabled", asked.escape_debug()),
            )),
        }
    }

    fn authenticate(
        &self,
        auth: &Arc<Authenticator>,
        version: i16,
        request: SaslAuthenticateRequest,
        peer: SocketAddr,
    ) -> Reply {
        let illegal = |message: &'static str| {
            ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code())
                    .with_error_message(Some(StrBytes::from_static_str(message))),
            )
        };
        if !self.required {
            return sent(Answer::Send(Box::new(illegal(
                "SaslAuthenticate request received after successful authentication",
            ))));
        }
        let step = std::mem::replace(&mut self.state.borrow_mut().step, Step::Busy);
        match step {
            Step::Chosen(_) | Step::Scram(..) => {}
            // Kafka answers this on an authenticated connection and keeps it open.
            Step::Handshake if self.principal().is_some() => {
                self.state.borrow_mut().step = Step::Handshake;
                return sent(Answer::Send(Box::new(illegal(
                    "SaslAuthenticate request received after successful authentication",
                ))));
            }
            Step::Handshake | Step::Busy => {
                return sent(Answer::Close(
                    "SaslAuthenticate without a SaslHandshake before it".into(),
                ))
            }
        }
        let served = self.token(auth, step, request.auth_bytes, peer);
        let max_reauth = auth.settings().max_reauth;
        Box::pin(async move {
            let mut response = SaslAuthenticateResponse::default();
            match served.await {
                Served::Continue(token) => {
                    response.auth_bytes = token;
                    Answer::Send(Box::new(ResponseKind::SaslAuthenticate(response)))
                }
                Served::Authenticated(token) => {
                    response.auth_bytes = token;
                    if version >= since::SASL_AUTHENTICATE_SESSION_LIFETIME {
                        response.session_lifetime_ms =
                            max_reauth.map_or(0, |d| d.as_millis().try_into().unwrap_or(i64::MAX));
                    }
                    Answer::Send(Box::new(ResponseKind::SaslAuthenticate(response)))
                }
                Served::Refused(message, reason) => {
                    response.error_code = ResponseError::SaslAuthenticationFailed.code();
                    response.error_message = Some(StrBytes::from_string(message));
                    closing(ResponseKind::SaslAuthenticate(response), reason)
                }
            }
        })
    }

    /// Serves one token of the exchange at `step`, in either framing: the next step, or
    /// the login recorded, or a failure logged and delayed.
    fn token(
        &self,
        auth: &Arc<Authenticator>,
        step: Step,
        token: Bytes,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = Served> + 'static {
        let (auth, state) = (auth.clone(), self.state.clone());
        async move {
            let outcome = exchange(&auth, step, token).await;
            let reauthenticating = state.borrow().authenticated.is_some();
            let outcome = match outcome {
                Token::Done(m, user, token) => {
                    let previous = state
                        .borrow()
                        .authenticated
                        .as_ref()
                        .map(|a| (a.principal.clone(), a.mechanism));
                    let principal = Principal::user(&user);
                    match previous {
                        Some((p, _)) if p != principal => {
                            Token::Failed(m, "re-authentication as another principal".into())
                        }
                        Some((_, pm)) if pm != m => {
                            Token::Failed(m, "re-authentication with another mechanism".into())
                        }
                        _ => Token::Done(m, user, token),
                    }
                }
                other => other,
            };
            match outcome {
                Token::Continue(next, token) => {
                    state.borrow_mut().step = next;
                    Served::Continue(token)
                }
                Token::Done(m, user, token) => {
                    let max_reauth = auth.settings().max_reauth;
                    let principal = Principal::user(&user);
                    tracing::info!(%peer, %principal, mechanism = m.name(), reauthenticating, "authenticated");
                    auth.logged_in(peer.ip());
                    *state.borrow_mut() = State {
                        step: Step::Handshake,
                        authenticated: Some(Authenticated {
                            principal,
                            mechanism: m,
                            expires: max_reauth.map(|d| Instant::now() + d),
                        }),
                        raw_tokens: false,
                    };
                    Served::Authenticated(token)
                }
                Token::Failed(m, reason) => {
                    let delay = auth.failed_login(peer.ip());
                    tracing::info!(%peer, mechanism = m.name(), %reason, ?delay, "failed authentication");
                    tokio::time::sleep(delay).await;
                    let phase = if reauthenticating {
                        "re-authentication"
                    } else {
                        "authentication"
                    };
                    let message = format!(
                        "Authentication failed during {phase} due to invalid credentials with SASL mechanism {}",
                        m.name()
                    );
                    Served::Refused(message, "failed authentication")
                }
                Token::Unavailable(m, error) => {
                    tracing::warn!(%peer, mechanism = m.name(), %error, "cannot check credentials");
                    let message =
                        "Authentication failed: credentials cannot be checked now, retry later";
                    Served::Refused(message.into(), "credential store unavailable")
                }
            }
        }
    }
}

/// Serves one token of the exchange at `step`.
async fn exchange(auth: &Authenticator, step: Step, token: Bytes) -> Token {
    match step {
        Step::Chosen(Mechanism::Plain) => {
            let m = Mechanism::Plain;
            let Some(login) = plain::parse(&token) else {
                return Token::Failed(m, "malformed PLAIN message".into());
            };
            let user = login.user.clone();
            match auth.check_plain(login).await {
                Ok(true) => Token::Done(m, user, Bytes::new()),
                Ok(false) => Token::Failed(
                    m,
                    format!("invalid credentials for user '{}'", user.escape_debug()),
                ),
                Err(e) => Token::Unavailable(m, e),
            }
        }
        Step::Chosen(Mechanism::Scram(sm)) => {
            let m = Mechanism::Scram(sm);
            let first = match scram::parse_client_first(&token) {
                Ok(first) => first,
                Err(e) => return Token::Failed(m, e.to_string()),
            };
            match auth.scram_credential(&first.user, sm).await {
                Ok(credential) => {
                    let decoy = auth.decoy(sm, &first.user);
                    let (exchange, server_first) = Exchange::start(sm, first, credential, decoy);
                    Token::Continue(Step::Scram(sm, Box::new(exchange)), server_first.into())
                }
                Err(e) => Token::Unavailable(m, e),
            }
        }
        Step::Scram(sm, exchange) => {
            let m = Mechanism::Scram(sm);
            let user = exchange.user().to_string();
            match exchange.finish(&token) {
                Ok(server_final) => Token::Done(m, user, server_final.into()),
                Err(e) => Token::Failed(m, format!("{e} (user '{}')", user.escape_debug())),
            }
        }
        Step::Handshake | Step::Busy => unreachable!("checked before the exchange"),
    }
}

fn sent(answer: Answer) -> Reply {
    Box::pin(std::future::ready(answer))
}

fn closing(response: ResponseKind, reason: &str) -> Answer {
    Answer::SendAndClose(Box::new(response), reason.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::credentials::Credentials;
    use crate::sasl::SaslSettings;
    use crate::store::shared::SharedTable;
    use crate::test_store::TestStore;

    async fn authenticator(mechanisms: Vec<Mechanism>) -> Arc<Authenticator> {
        let backend = Arc::new(TestStore::default());
        let meta = crate::store::Meta::new(Arc::new(backend.clone()));
        let refresh = std::time::Duration::from_secs(60);
        let (credentials, _) = SharedTable::<Credentials>::start(&meta, refresh)
            .await
            .unwrap();
        let m = ScramMechanism::Sha512;
        let alice = scram::credential_for_password(m, "wonderland", scram::MIN_ITERATIONS);
        let settings = SaslSettings {
            mechanisms,
            failed_login_delay: std::time::Duration::ZERO,
            ..SaslSettings::default()
        };
        let auth = Authenticator::new(settings, backend, credentials);
        auth.set_credential("alice", m, Some(alice)).await.unwrap();
        Arc::new(auth)
    }

    async fn send(session: &Session, auth: &Arc<Authenticator>, body: RequestKind) -> Answer {
        let peer = "127.0.0.1:5000".parse().unwrap();
        session.serve(auth, 2, body, peer).await
    }

    fn plain(token: &'static [u8]) -> RequestKind {
        RequestKind::SaslAuthenticate(
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(token)),
        )
    }

    fn handshake(mechanism: &'static str) -> RequestKind {
        RequestKind::SaslHandshake(
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)),
        )
    }

    #[actix_rt::test]
    async fn plain_sets_the_principal_and_opens_the_gate() {
        let auth = authenticator(vec![Mechanism::Plain]).await;
        let session = Session::new(true);
        let now = Instant::now();
        assert!(session.admit(ApiKey::ApiVersions, now).is_ok());
        assert!(session.admit(ApiKey::Metadata, now).is_err());
        let Answer::Send(r) = send(&session, &auth, handshake("PLAIN")).await else {
            panic!("handshake not answered");
        };
        assert!(matches!(*r, ResponseKind::SaslHandshake(ref h) if h.error_code == 0));
        assert!(session.admit(ApiKey::Metadata, now).is_err());
        let Answer::Send(r) = send(&session, &auth, plain(b"\0alice\0wonderland")).await else {
            panic!("login not answered");
        };
        assert!(matches!(*r, ResponseKind::SaslAuthenticate(ref a) if a.error_code == 0));
        assert_eq!(session.principal(), Some(Principal::user("alice")));
        assert!(session.admit(ApiKey::Metadata, Instant::now()).is_ok());
    }

    #[actix_rt::test]
    async fn a_wrong_password_and_an_unknown_user_fail_alike_and_close() {
        let auth = authenticator(vec![Mechanism::Plain]).await;
        let mut answers = Vec::new();
        for token in [&b"\0alice\0wrong"[..], b"\0nobody\0wonderland"] {
            let session = Session::new(true);
            send(&session, &auth, handshake("PLAIN")).await;
            let Answer::SendAndClose(r, _) = send(&session, &auth, plain(token)).await else {
                panic!("a failed login must close the connection");
            };
            let ResponseKind::SaslAuthenticate(a) = *r else {
                panic!("not a SaslAuthenticate answer");
            };
            assert_eq!(session.principal(), None);
            answers.push((a.error_code, a.error_message));
        }
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0].0, 58);
        let message = answers[0].1.as_deref().unwrap();
        assert!(!message.contains("wrong") && !message.contains("wonderland"));
    }

    #[actix_rt::test]
    async fn a_disabled_mechanism_is_refused_with_the_enabled_ones() {
        let auth = authenticator(vec![Mechanism::Scram(ScramMechanism::Sha512)]).await;
        let session = Session::new(true);
        let Answer::SendAndClose(r, _) = send(&session, &auth, handshake("PLAIN")).await else {
            panic!("an unsupported mechanism must close the connection");
        };
        let ResponseKind::SaslHandshake(h) = *r else {
            panic!("not a SaslHandshake answer");
        };
        assert_eq!(h.error_code, 33);
        assert_eq!(h.mechanisms, [StrBytes::from_static_str("SCRAM-SHA-512")]);
    }
}
