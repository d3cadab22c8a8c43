//! SASL on a SASL_PLAINTEXT listener: librdkafka producing and consuming with PLAIN,
//! SCRAM-SHA-256 and SCRAM-SHA-512; failed logins (58, one message for a wrong password
//! and an unknown user, the connection closed; the growing delays are unit-tested in
//! `actors/src/sasl/mod.rs`); the gate before authentication; the SCRAM
//! credential APIs; credentials across restarts; re-authentication (KIP-368).

mod librdkafka_clients;
mod logins;
mod reauthentication;
mod scram_credentials;
mod settings;

use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::messages::*;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use sha2::{Digest, Sha256, Sha512};
use support::sasl::{authenticate, handshake};
use support::{call, RawClient};

const SASL: &str = "SASL_PLAINTEXT://127.0.0.1:0";
const ALL_MECHANISMS: &str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512";

// ---- librdkafka ----------------------------------------------------------------------

fn client(bootstrap: &str, mechanism: &str, user: &str, password: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanisms", mechanism)
        .set("sasl.username", user)
        .set("sasl.password", password);
    c
}

/// Whether librdkafka gets metadata through the gateway with these credentials.
fn metadata_works(config: &ClientConfig) -> bool {
    let consumer: BaseConsumer = config.create().expect("consumer");
    consumer
        .fetch_metadata(None, Duration::from_secs(5))
        .is_ok()
}

// ---- raw SASL exchanges --------------------------------------------------------------

fn hmac_of(sha512: bool, key: &[u8], data: &[u8]) -> Vec<u8> {
    if sha512 {
        let mut m = Hmac::<Sha512>::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    } else {
        let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    }
}

fn salted(sha512: bool, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    if sha512 {
        pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password.as_bytes(), salt, iterations).to_vec()
    } else {
        pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password.as_bytes(), salt, iterations).to_vec()
    }
}

fn scram_mechanism(sha512: bool) -> &'static str {
    if sha512 {
        "SCRAM-SHA-512"
    } else {
        "SCRAM-SHA-256"
    }
}

/// A SCRAM login by the RFC 5802 client steps at SaslAuthenticate `v`: the server-first
/// message, then the final answer (checked against the server signature on success).
fn scram_login(
    c: &mut RawClient,
    v: i16,
    sha512: bool,
    user: &str,
    password: &str,
) -> (String, SaslAuthenticateResponse) {
    assert_eq!(handshake(c, scram_mechanism(sha512)).error_code, 0);
    let mut last = None;
    let (server_first, _) = scram_client(sha512, user, password, |message| {
        let r = authenticate(c, v, message);
        let token = (r.error_code == 0).then(|| r.auth_bytes.clone());
        last = Some(r);
        token
    });
    (server_first, last.expect("a final answer"))
}

/// The RFC 5802 client steps, each message sent by `send`, which returns the server's
/// answer (`None`: refused): the server-first message, and the server-final one if the
/// login succeeded, checked against the server signature.
fn scram_client(
    sha512: bool,
    user: &str,
    password: &str,
    mut send: impl FnMut(&[u8]) -> Option<Bytes>,
) -> (String, Option<Bytes>) {
    let bare = format!("n={user},r=clientnonce123");
    let first = send(format!("n,,{bare}").as_bytes()).expect("a server-first message");
    let server_first = String::from_utf8(first.to_vec()).unwrap();
    let fields: Vec<&str> = server_first.split(',').collect();
    let nonce = fields[0].strip_prefix("r=").unwrap();
    assert!(nonce.starts_with("clientnonce123"), "{server_first}");
    let salt = B64.decode(fields[1].strip_prefix("s=").unwrap()).unwrap();
    let iterations: u32 = fields[2].strip_prefix("i=").unwrap().parse().unwrap();
    let salted = salted(sha512, password, &salt, iterations);
    let client_key = hmac_of(sha512, &salted, b"Client Key");
    let stored_key = if sha512 {
        Sha512::digest(&client_key).to_vec()
    } else {
        Sha256::digest(&client_key).to_vec()
    };
    let without_proof = format!("c=biws,r={nonce}");
    let auth = format!("{bare},{server_first},{without_proof}");
    let signature = hmac_of(sha512, &stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    let last = send(format!("{without_proof},p={}", B64.encode(proof)).as_bytes());
    if let Some(server_final) = &last {
        let server_key = hmac_of(sha512, &salted, b"Server Key");
        let expected = format!(
            "v={}",
            B64.encode(hmac_of(sha512, &server_key, auth.as_bytes()))
        );
        assert_eq!(server_final, expected.as_bytes(), "the server's signature");
    }
    (server_first, last)
}

fn metadata_v12(c: &mut RawClient) -> MetadataResponse {
    call!(c, Metadata, 12, MetadataRequest::default())
}
