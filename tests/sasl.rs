//! SASL on a SASL_PLAINTEXT listener: librdkafka producing and consuming with PLAIN,
//! SCRAM-SHA-256 and SCRAM-SHA-512; failed logins (58, one message for a wrong password
//! and an unknown user, the connection closed; the growing delays are unit-tested in
//! `actors/src/sasl/mod.rs`); the gate before authentication; the SCRAM
//! credential APIs; credentials across restarts; re-authentication (KIP-368).

use crate::support;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sha2::{Digest, Sha256, Sha512};
use support::kafka::read_values;
use support::sasl::{authenticate, handshake, plain_login};
use support::{call, Gateway, RawClient, Store};

const SASL: &str = "SASL_PLAINTEXT://127.0.0.1:0";
const BOTH: &str = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0";
const ALL_MECHANISMS: &str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512";
const GENERIC: &str =
    "Authentication failed during authentication due to invalid credentials with SASL mechanism";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

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

async fn create_topic(config: &ClientConfig, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = config.create().expect("admin client");
    let results = admin
        .create_topics(
            &[NewTopic::new(topic, 1, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("create topics");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

fn produce(config: &ClientConfig, topic: &str, values: &[String]) {
    let producer: ThreadedProducer<DefaultProducerContext> = config
        .clone()
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    for v in values {
        producer
            .send(BaseRecord::<(), str>::to(topic).payload(v))
            .expect("queued");
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
}

/// Whether librdkafka gets metadata through the gateway with these credentials.
fn metadata_works(config: &ClientConfig) -> bool {
    let consumer: BaseConsumer = config.create().expect("consumer");
    consumer
        .fetch_metadata(None, Duration::from_secs(5))
        .is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn rdkafka_produces_and_consumes_with_plain_and_both_scram_mechanisms() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", ALL_MECHANISMS),
        ("sasl_scram_users", "alice:alice-secret,bob:bob:with:colons"),
    ]);
    for (i, mechanism) in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        .iter()
        .enumerate()
    {
        let (user, password) = if i == 1 {
            ("bob", "bob:with:colons")
        } else {
            ("alice", "alice-secret")
        };
        let config = client(&gw.bootstrap(), mechanism, user, password);
        let topic = format!("sasl-{}", mechanism.to_lowercase());
        create_topic(&config, &topic).await;
        let values: Vec<String> = (0..20).map(|n| format!("{mechanism}-{n}")).collect();
        produce(&config, &topic, &values);
        assert_eq!(read_values(&config, &topic, values.len()), values);
        // The same client with a wrong password gets nothing through.
        assert!(!metadata_works(&client(
            &gw.bootstrap(),
            mechanism,
            user,
            "wrong"
        )));
    }
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

// ---- SCRAM credential APIs -----------------------------------------------------------

fn upsertion(
    user: &str,
    mechanism: i8,
    iterations: i32,
    password: &str,
) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = salted(mechanism == 2, password, &salt, iterations.max(1) as u32);
    ScramCredentialUpsertion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
        .with_iterations(iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted))
}

fn deletion(user: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
}

fn alter(
    c: &mut RawClient,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    let request = AlterUserScramCredentialsRequest::default()
        .with_deletions(deletions)
        .with_upsertions(upsertions);
    let mut r: Vec<_> = call!(c, AlterUserScramCredentials, 0, request)
        .results
        .into_iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.map(|m| m.to_string()),
            )
        })
        .collect();
    r.sort();
    r
}

/// A user as DescribeUserScramCredentials answers: name, error code, (mechanism, iterations).
type Described = (String, i16, Vec<(i8, i32)>);

/// Each user's credentials; `None` asks for every user.
fn describe(c: &mut RawClient, users: Option<&[&str]>) -> Vec<Described> {
    let users = users.map(|u| {
        u.iter()
            .map(|n| UserName::default().with_name(s(n)))
            .collect()
    });
    let request = DescribeUserScramCredentialsRequest::default().with_users(users);
    let r = call!(c, DescribeUserScramCredentials, 0, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.results
        .into_iter()
        .map(|u| {
            let infos = u
                .credential_infos
                .iter()
                .map(|i| (i.mechanism, i.iterations))
                .collect();
            (u.user.to_string(), u.error_code, infos)
        })
        .collect()
}

#[test]
fn scram_credentials_are_managed_with_the_kafka_apis() {
    let gw = Gateway::start_with(&[
        ("listeners", BOTH),
        ("sasl_scram_users", "admin:admin-secret"),
    ]);
    let sasl = gw.listener("SASL_PLAINTEXT").to_string();
    let mut c = RawClient::connect(gw.listener("PLAINTEXT"));
    let ok = |user: &str| (user.to_string(), 0, None);
    assert_eq!(
        alter(
            &mut c,
            vec![],
            vec![
                upsertion("carol", 1, 4096, "carol-1"),
                upsertion("dave", 2, 8192, "dave-1")
            ]
        ),
        [ok("carol"), ok("dave")]
    );
    assert_eq!(
        describe(&mut c, Some(&["carol", "dave", "nobody"])),
        [
            ("carol".into(), 0, vec![(1, 4096)]),
            ("dave".into(), 0, vec![(2, 8192)]),
            ("nobody".into(), 91, vec![]),
        ]
    );
    let everyone: Vec<String> = describe(&mut c, None).into_iter().map(|u| u.0).collect();
    assert_eq!(everyone, ["admin", "carol", "dave"]);
    // Kafka's refusals, per user, and nothing stored for the refused ones.
    let refused = alter(
        &mut c,
        vec![deletion("erin", 1), deletion("", 1)],
        vec![
            upsertion("frank", 1, 1024, "x"),
            upsertion("grace", 3, 4096, "x"),
            upsertion("heidi", 1, 4096, "x"),
            upsertion("heidi", 2, 4096, "x"),
            upsertion("ivan", 2, 20000, "x"),
        ],
    );
    let codes: Vec<(&str, i16)> = refused.iter().map(|(u, e, _)| (u.as_str(), *e)).collect();
    assert_eq!(
        codes,
        [
            ("", 93),
            ("erin", 91),
            ("frank", 93),
            ("grace", 33),
            ("heidi", 92),
            ("ivan", 93)
        ],
        "{refused:?}"
    );
    assert_eq!(refused[2].2.as_deref(), Some("Too few iterations"));
    assert_eq!(refused[5].2.as_deref(), Some("Too many iterations"));
    let everyone: Vec<String> = describe(&mut c, None).into_iter().map(|u| u.0).collect();
    assert_eq!(everyone, ["admin", "carol", "dave"]);
    let mut twice = describe(&mut c, Some(&["carol", "carol"]));
    assert_eq!(twice.len(), 1);
    assert_eq!(twice.remove(0).1, 92);

    // The stored credentials log in through librdkafka; a deleted one no longer does.
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-1"
    )));
    assert!(!metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-512",
        "dave",
        "dave-1"
    )));
    assert!(
        !metadata_works(&client(&sasl, "SCRAM-SHA-256", "dave", "dave-1")),
        "no SHA-256 credential"
    );
    assert_eq!(
        alter(&mut c, vec![], vec![upsertion("carol", 1, 4096, "carol-2")]),
        [ok("carol")]
    );
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert_eq!(
        alter(&mut c, vec![deletion("carol", 1)], vec![]),
        [ok("carol")]
    );
    assert!(!metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert_eq!(describe(&mut c, Some(&["carol"]))[0].1, 91);
}

fn credentials_survive_a_restart(store: Store) {
    // A process: the credentials are read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(
        store,
        &[
            ("listeners", SASL),
            ("sasl_scram_users", "admin:admin-secret"),
        ],
    ) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        scram_login(&mut c, 2, true, "admin", "admin-secret")
            .1
            .error_code,
        0
    );
    assert_eq!(
        alter(&mut c, vec![], vec![upsertion("judy", 2, 4096, "judy-1")]),
        [("judy".to_string(), 0, None)]
    );
    drop(c);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        scram_login(&mut c, 2, true, "judy", "judy-1").1.error_code,
        0
    );
    let described = describe(&mut c, Some(&["admin", "judy"]));
    assert_eq!(
        described,
        [
            ("admin".into(), 0, vec![(1, 8192), (2, 8192)]),
            ("judy".into(), 0, vec![(2, 4096)]),
        ]
    );
    // The bootstrap user kept its first credentials (the salt in its server-first).
    let mut c1 = RawClient::connect(gw.addr);
    let (first_before, _) = scram_login(&mut c1, 2, false, "admin", "admin-secret");
    gw.restart_after_kill();
    let mut c2 = RawClient::connect(gw.addr);
    let (first_after, last) = scram_login(&mut c2, 2, false, "admin", "admin-secret");
    assert_eq!(last.error_code, 0);
    let salt = |m: &str| m.split(',').nth(1).unwrap().to_string();
    assert_eq!(salt(&first_before), salt(&first_after));
}

// ---- re-authentication (KIP-368) -----------------------------------------------------

#[test]
fn reauthentication_extends_the_session_and_expiry_closes_the_connection() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_enabled_mechanisms", ALL_MECHANISMS),
        ("sasl_scram_users", "alice:alice-secret,bob:bob-secret"),
        ("connections_max_reauth_ms", "1500"),
    ]);
    // v1+ tells the client its session lifetime.
    let mut c = RawClient::connect(gw.addr);
    let (_, r) = scram_login(&mut c, 1, false, "alice", "alice-secret");
    assert_eq!((r.error_code, r.session_lifetime_ms), (0, 1500));
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    // Re-authenticating on the same connection before expiry keeps it serving past the
    // first lifetime.
    std::thread::sleep(Duration::from_millis(1000));
    let (_, r) = scram_login(&mut c, 2, false, "alice", "alice-secret");
    assert_eq!((r.error_code, r.session_lifetime_ms), (0, 1500));
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(metadata_v12(&mut c).brokers.len(), 1);
    // Past the lifetime without re-authenticating: the next request closes it.
    std::thread::sleep(Duration::from_millis(1600));
    c.send(
        ApiKey::Metadata,
        12,
        &RequestKind::Metadata(MetadataRequest::default()),
    );
    c.assert_closed("a request after the session expired");
    // A re-authentication may not change the principal.
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(plain_login(&mut c, "alice", "alice-secret").error_code, 0);
    let r = plain_login(&mut c, "bob", "bob-secret");
    assert_eq!(r.error_code, 58);
    c.assert_closed("a re-authentication as another principal");
}

/// Keeps librdkafka's latest statistics.
#[derive(Default)]
struct Stats(std::sync::Mutex<Option<rdkafka::Statistics>>);

impl rdkafka::ClientContext for Stats {
    fn stats(&self, statistics: rdkafka::Statistics) {
        *self.0.lock().unwrap() = Some(statistics);
    }
}

impl rdkafka::producer::ProducerContext for Stats {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: ()) {}
}

#[test]
fn librdkafka_reauthenticates_without_losing_its_connection() {
    let gw = Gateway::start_with(&[
        ("listeners", SASL),
        ("sasl_scram_users", "alice:alice-secret"),
        ("connections_max_reauth_ms", "1000"),
    ]);
    let config = client(&gw.bootstrap(), "SCRAM-SHA-512", "alice", "alice-secret");
    let producer: ThreadedProducer<Stats> = config
        .clone()
        .set("statistics.interval.ms", "200")
        .create_with_context(Stats::default())
        .expect("producer");
    // Four lifetimes of records, one every 100 ms: each must be acknowledged.
    for n in 0..40 {
        producer
            .send(BaseRecord::<(), str>::to("reauth").payload(&format!("r{n}")))
            .expect("queued");
        producer
            .flush(Duration::from_secs(10))
            .expect("acknowledged");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stats = producer
        .context()
        .0
        .lock()
        .unwrap()
        .clone()
        .expect("statistics");
    // Re-authenticated on its connections (several handshakes), never disconnected.
    let scrape = support::admin::Scrape::take(gw.admin);
    let handshakes = scrape.sum(
        "iggy_kafka_gateway_requests_total",
        &[("api", "SaslHandshake")],
    );
    let connects: i64 = stats
        .brokers
        .values()
        .map(|b| b.connects.unwrap_or(0))
        .sum();
    let disconnects: i64 = stats
        .brokers
        .values()
        .map(|b| b.disconnects.unwrap_or(0))
        .sum();
    assert_eq!(disconnects, 0, "{:?}", stats.brokers);
    assert!(
        handshakes as i64 >= connects + 3,
        "{handshakes} handshakes, {connects} connects"
    );
    assert_eq!(read_values(&config, "reauth", 40).len(), 40);
}

// ---- PLAIN against Iggy's users ------------------------------------------------------

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

#[test]
fn sasl_settings_are_checked_at_startup_without_showing_passwords() {
    // A process: refused starts, with exit codes and stderr.
    let mut gw = Gateway::process();
    let (code, stderr) = gw.refused_restart_with(&[("sasl_plain_backend", "iggy")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("sasl_plain_backend"), "{stderr}");
    let (code, stderr) =
        gw.refused_restart_with(&[("sasl_scram_users", "alice:very-secret,broken")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("sasl_scram_users") && stderr.contains("entry 2"),
        "{stderr}"
    );
    assert!(!stderr.contains("very-secret"), "{stderr}");
    let (code, stderr) = gw.refused_restart_with(&[("sasl_enabled_mechanisms", "PLAIN,GSSAPI")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("GSSAPI"), "{stderr}");
}

support::on_every_store!(credentials_survive_a_restart);
