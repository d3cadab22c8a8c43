//! Raw logins: failures refused alike, v0 bare tokens, the gate before login, PLAIN against Iggy.

use crate::support;

use bytes::Bytes;
use kafka_protocol::messages::*;
use support::configs::s;
use support::sasl::{authenticate, handshake, plain_login};
use support::{call, Gateway, RawClient, Store};

use super::{metadata_v12, scram_client, scram_login, scram_mechanism, ALL_MECHANISMS, SASL};

const GENERIC: &str =
    "Authentication failed during authentication due to invalid credentials with SASL mechanism";

#[test]
fn a_wrong_password_and_an_unknown_user_are_refused_alike() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", ALL_MECHANISMS),
        ("sasl_scram_users", "alice:alice-secret"),
        ("sasl_failed_login_delay_ms", "10"),
    ]);
    let refusal = |r: &SaslAuthenticateResponse| {
        (r.error_code, r.error_message.clone(), r.auth_bytes.clone())
    };
    // PLAIN: one answer for a wrong password and an unknown user; the connection closes.
    let mut answers = Vec::new();
    for (user, password) in [("alice", "not-her-password"), ("mallory", "alice-secret")] {
        let mut c = RawClient::connect(gw.addr);
        let r = plain_login(&mut c, user, password);
        answers.push(refusal(&r));
        c.assert_closed("a failed PLAIN login");
    }
    assert_eq!(answers[0], answers[1]);
    let (code, message, _) = &answers[0];
    assert_eq!(*code, 58);
    let message = message.as_deref().unwrap();
    assert_eq!(message, format!("{GENERIC} PLAIN"));
    assert!(!message.contains("not-her-password") && !message.contains("mallory"));

    // SCRAM: an unknown user is answered a server-first message like a known one, and
    // fails on the proof with the same answer as a wrong password.
    for sha512 in [false, true] {
        let mut answers = Vec::new();
        for (user, password) in [("alice", "not-her-password"), ("mallory", "whatever")] {
            let mut c = RawClient::connect(gw.addr);
            let (server_first, last) = scram_login(&mut c, 2, sha512, user, password);
            assert!(server_first.contains(",s=") && server_first.contains(",i="));
            answers.push(refusal(&last));
            c.assert_closed(&format!("a failed {} login", scram_mechanism(sha512)));
        }
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0].0, 58);
        let mechanism = if sha512 {
            "SCRAM-SHA-512"
        } else {
            "SCRAM-SHA-256"
        };
        assert_eq!(
            answers[0].1.as_deref(),
            Some(&*format!("{GENERIC} {mechanism}"))
        );
        let mut c = RawClient::connect(gw.addr);
        assert_eq!(
            scram_login(&mut c, 2, sha512, "alice", "alice-secret")
                .1
                .error_code,
            0
        );
        assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    }
}

/// SaslHandshake v0, as kafka-python 2.0 and Sarama up to 1.40 send it: the tokens then
/// travel as bare size-prefixed frames both ways (no SaslAuthenticate). PLAIN and both
/// SCRAM mechanisms log in; a wrong password closes the connection without an answer
/// after the failed-login delay, as Kafka does, since nothing could carry error 58.
#[test]
fn handshake_v0_exchanges_bare_tokens() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", ALL_MECHANISMS),
        ("sasl_scram_users", "alice:alice-secret"),
        ("sasl_failed_login_delay_ms", "10"),
    ]);
    let handshake_v0 = |c: &mut RawClient, mechanism: &str| {
        let request = SaslHandshakeRequest::default().with_mechanism(s(mechanism));
        let r = call!(c, SaslHandshake, 0, request);
        assert_eq!(r.error_code, 0, "{r:?}");
        assert_eq!(r.mechanisms.len(), 3, "{r:?}");
    };
    // One bare token out, the bare answer back; `None` once the connection is closed.
    let bare = |c: &mut RawClient, token: &[u8]| {
        c.send_frame(token);
        c.read_frame()
    };

    let mut c = RawClient::connect(gw.addr);
    handshake_v0(&mut c, "PLAIN");
    assert_eq!(
        bare(&mut c, b"\0alice\0alice-secret").as_deref(),
        Some(&b""[..]),
        "PLAIN answers an empty token"
    );
    assert_eq!(
        metadata_v12(&mut c).brokers.len(),
        1,
        "served once logged in"
    );

    let mut c = RawClient::connect(gw.addr);
    handshake_v0(&mut c, "PLAIN");
    assert_eq!(bare(&mut c, b"\0alice\0not-her-password"), None);

    for sha512 in [false, true] {
        let mut c = RawClient::connect(gw.addr);
        handshake_v0(&mut c, scram_mechanism(sha512));
        let (_, last) = scram_client(sha512, "alice", "alice-secret", |m| bare(&mut c, m));
        assert!(
            last.is_some(),
            "SCRAM-SHA-{}",
            if sha512 { 512 } else { 256 }
        );
        assert_eq!(metadata_v12(&mut c).brokers.len(), 1);

        let mut c = RawClient::connect(gw.addr);
        handshake_v0(&mut c, scram_mechanism(sha512));
        let (_, last) = scram_client(sha512, "alice", "wrong", |m| bare(&mut c, m));
        assert_eq!(last, None, "a wrong SCRAM proof closes the connection");
    }

    // ApiVersions offers both versions, as Kafka 3.x does.
    let mut c = RawClient::connect(gw.addr);
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("sasl-test"))
        .with_client_software_version(s("1.0"));
    let versions = call!(c, ApiVersions, 3, request);
    let handshake = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::SaslHandshake as i16);
    let handshake = handshake.expect("SaslHandshake advertised");
    assert_eq!((handshake.min_version, handshake.max_version), (0, 1));
}

/// Failed logins from one address, again and again, and after a success: each is
/// answered SASL_AUTHENTICATION_FAILED (58) and its connection closed. How the delay
/// before each answer grows, and that a success clears it, is unit-tested without a
/// clock (`actors/src/sasl/mod.rs`).
#[test]
fn failed_logins_from_one_address_are_refused_and_closed_each_time() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", "PLAIN"),
        ("sasl_scram_users", "alice:alice-secret"),
        ("sasl_failed_login_delay_ms", "50"),
        ("sasl_failed_login_max_delay_ms", "200"),
    ]);
    let refused = |n: usize| {
        let mut c = RawClient::connect(gw.addr);
        assert_eq!(handshake(&mut c, "PLAIN").error_code, 0);
        let r = authenticate(&mut c, 2, b"\0alice\0wrong");
        assert_eq!(r.error_code, 58, "failed login {n}: {r:?}");
        c.assert_closed(&format!("failed login {n}"));
    };
    (0..4).for_each(refused);
    // A success is served; the failures after it are refused alike.
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "alice", "alice-secret").error_code, 0);
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    (4..6).for_each(refused);
}

#[test]
fn requests_before_authentication_close_the_connection() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", ALL_MECHANISMS),
        ("sasl_scram_users", "alice:alice-secret"),
    ]);
    // ApiVersions is served before authentication, and lists the SASL APIs.
    let mut c = RawClient::connect(gw.addr);
    let versions = call!(
        c,
        ApiVersions,
        3,
        ApiVersionsRequest::default()
            .with_client_software_name(s("sasl-test"))
            .with_client_software_version(s("1.0"))
    );
    assert!(versions
        .api_keys
        .iter()
        .any(|k| k.api_key == ApiKey::SaslAuthenticate as i16));
    // Anything else before the handshake: closed, unanswered.
    c.send(
        ApiKey::Metadata,
        12,
        &RequestKind::Metadata(MetadataRequest::default()),
    );
    c.assert_closed("Metadata before the handshake");
    // ...and between the handshake and the login.
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(handshake(&mut c, "PLAIN").error_code, 0);
    c.send(
        ApiKey::Metadata,
        12,
        &RequestKind::Metadata(MetadataRequest::default()),
    );
    c.assert_closed("Metadata between the handshake and the login");
    // SaslAuthenticate without a handshake.
    let mut c = RawClient::connect(gw.addr);
    let request = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret"));
    c.send(
        ApiKey::SaslAuthenticate,
        2,
        &RequestKind::SaslAuthenticate(request),
    );
    c.assert_closed("SaslAuthenticate without a handshake");
    // A mechanism that is not enabled: UNSUPPORTED_SASL_MECHANISM (33) with the list, then closed.
    let gw2 = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_scram_users", "alice:alice-secret"),
    ]);
    let mut c = RawClient::connect(gw2.addr);
    let r = handshake(&mut c, "PLAIN");
    assert_eq!(r.error_code, 33);
    let offered: Vec<&str> = r.mechanisms.iter().map(|m| m.as_str()).collect();
    assert_eq!(offered, ["SCRAM-SHA-256", "SCRAM-SHA-512"]);
    c.assert_closed("a mechanism not enabled");
    // After the login everything is served; a second SaslAuthenticate is ILLEGAL_SASL_STATE (34).
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "alice", "alice-secret").error_code, 0);
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    assert_eq!(
        authenticate(&mut c, 2, b"\0alice\0alice-secret").error_code,
        34
    );
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
}

#[test]
fn plain_checks_iggy_users_on_the_iggy_backend_only() {
    let Some(gw) = Gateway::start_on(
        Store::Iggy,
        &[
            ("listeners", SASL),
            ("sasl_enabled_mechanisms", "PLAIN"),
            ("sasl_plain_backend", "iggy"),
        ],
    ) else {
        return;
    };
    // The harness's Iggy server has its default root user iggy/iggy.
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "iggy", "iggy").error_code, 0);
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "iggy", "not-iggy").error_code, 58);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "nobody", "iggy").error_code, 58);
}
