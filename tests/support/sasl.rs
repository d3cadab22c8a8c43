//! Raw SASL exchanges (`tests/sasl/`, and the ACL tests' logins): SaslHandshake and
//! SaslAuthenticate requests, and a whole PLAIN login.

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::{call, configs::s, RawClient};

/// SaslHandshake v1 naming `mechanism`.
pub fn handshake(c: &mut RawClient, mechanism: &str) -> SaslHandshakeResponse {
    call!(
        c,
        SaslHandshake,
        1,
        SaslHandshakeRequest::default().with_mechanism(s(mechanism))
    )
}

/// SaslAuthenticate `v` carrying `token`.
pub fn authenticate(c: &mut RawClient, v: i16, token: &[u8]) -> SaslAuthenticateResponse {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
    call!(c, SaslAuthenticate, v, request)
}

/// A PLAIN login (handshake, then SaslAuthenticate v2): the last answer.
pub fn plain_login(c: &mut RawClient, user: &str, password: &str) -> SaslAuthenticateResponse {
    assert_eq!(handshake(c, "PLAIN").error_code, 0);
    authenticate(c, 2, format!("\0{user}\0{password}").as_bytes())
}
