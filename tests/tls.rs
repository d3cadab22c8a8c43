//! TLS listeners: librdkafka producing and consuming over SSL next to a plain
//! listener, client certificates required, certificates reloaded when their files
//! change or on SIGHUP while open connections carry on, and handshakes that fail or
//! stall closed without harm. Certificates are made by each test (rcgen).

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::DnType;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

use support::acls::*;
use support::iggy::IggyServer;
use support::kafka::read_values;
use support::tls::{pem_certificates, write_atomically, Issued, Pki};
use support::{Gateway, RawClient, Start};

/// A gateway with a PLAINTEXT and an SSL listener serving `server`, in-process.
fn gateway(pki: &Pki, server: &Issued, extra: &[(&str, &str)]) -> Gateway {
    gateway_by(Gateway::start_with, pki, server, extra)
}

/// The same, started by `start` (`Gateway::process_with` for a signal).
fn gateway_by(start: Start, pki: &Pki, server: &Issued, extra: &[(&str, &str)]) -> Gateway {
    let (cert, key) = (server.cert.to_str().unwrap(), server.key.to_str().unwrap());
    let mut settings = vec![
        ("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"),
        ("ssl_certificate_file", cert),
        ("ssl_key_file", key),
        ("auto_create_topics_enable", "true"),
    ];
    let ca = pki.ca_file();
    let ca = ca.to_str().unwrap().to_string();
    let ca_needed = extra.iter().any(|(k, _)| *k == "ssl_client_auth");
    if ca_needed {
        settings.push(("ssl_ca_file", ca.as_str()));
    }
    settings.extend_from_slice(extra);
    start(&settings)
}

/// librdkafka settings for an SSL connection trusting the test CA, with a client
/// certificate when given.
fn ssl_client(bootstrap: SocketAddr, pki: &Pki, client: Option<&Issued>) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap.to_string())
        .set("security.protocol", "ssl")
        .set("ssl.ca.location", pki.ca_file().to_str().unwrap())
        .set("ssl.endpoint.identification.algorithm", "https");
    if let Some(client) = client {
        c.set("ssl.certificate.location", client.cert.to_str().unwrap())
            .set("ssl.key.location", client.key.to_str().unwrap());
    }
    c
}

fn plain_client(bootstrap: SocketAddr) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap.to_string());
    c
}

/// Delivery outcomes as librdkafka reports them.
#[derive(Clone, Default)]
struct Deliveries(Arc<Mutex<Vec<Result<(), String>>>>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let outcome = result.as_ref().map(|_| ()).map_err(|(e, _)| e.to_string());
        self.0.lock().unwrap().push(outcome);
    }
}

/// Produces `values` to partition 0 of `topic`, every one acknowledged.
fn produce(config: &ClientConfig, topic: &str, values: &[String]) {
    let outcomes = deliver(config, topic, values);
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
}

/// Sends `values` to partition 0 of `topic`: how librdkafka reports each delivery.
fn deliver(config: &ClientConfig, topic: &str, values: &[String]) -> Vec<Result<(), String>> {
    let deliveries = Deliveries::default();
    let producer: ThreadedProducer<Deliveries> = config
        .clone()
        .set("message.timeout.ms", "10000")
        .create_with_context(deliveries.clone())
        .expect("producer");
    for v in values {
        producer
            .send(BaseRecord::<(), _>::to(topic).partition(0).payload(v))
            .map_err(|(e, _)| e)
            .expect("queue a record");
    }
    producer.flush(Duration::from_secs(15)).expect("flush");
    let outcomes = deliveries.0.lock().unwrap().clone();
    assert_eq!(outcomes.len(), values.len());
    outcomes
}

/// Whether a client with `config` gets metadata (within 5 s).
fn served(config: &ClientConfig) -> bool {
    let consumer: BaseConsumer = config.create().expect("client");
    consumer
        .fetch_metadata(None, Duration::from_secs(5))
        .is_ok()
}

/// What librdkafka reports, error by error and log line by log line.
#[derive(Clone, Default)]
struct Reports(Arc<Mutex<Vec<String>>>);

impl ClientContext for Reports {
    fn log(&self, _: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("log {fac}: {log_message}"));
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("error {error}: {reason}"));
    }
}

impl rdkafka::consumer::ConsumerContext for Reports {}

/// Asserts that a client with `config` gets no metadata (within 5 s) and that one of
/// librdkafka's reports of the failure says every part of `why` (a failure for any
/// other reason, a timeout among them, fails); `what` names the case.
fn assert_refused(config: &ClientConfig, why: &[&str], what: &str) {
    let reports = Reports::default();
    let consumer: BaseConsumer<Reports> = config
        .clone()
        // Warnings and worse: the failures, not the chatter.
        .set_log_level(rdkafka::config::RDKafkaLogLevel::Info)
        .create_with_context(reports.clone())
        .expect("client");
    let metadata = consumer.fetch_metadata(None, Duration::from_secs(5));
    assert!(metadata.is_err(), "{what}: served");
    // Errors reach the context, or the poll, as the client is polled.
    let mut polled = Vec::new();
    while let Some(event) = consumer.poll(Duration::from_millis(500)) {
        match event {
            Ok(m) => panic!("{what}: consumed {m:?}"),
            Err(e) => polled.push(format!("poll: {e}")),
        }
    }
    drop(consumer);
    let mut reports = reports.0.lock().unwrap().clone();
    reports.extend(polled);
    let said = reports.iter().any(|r| why.iter().all(|w| r.contains(w)));
    assert!(
        said,
        "{what}: refused, but not for {why:?}:\n{}",
        reports.join("\n")
    );
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[test]
fn librdkafka_over_ssl_next_to_a_plain_listener() {
    let pki = Pki::new();
    let server = pki.server("server", "gateway");
    let gw = gateway(&pki, &server, &[]);
    let (plain, ssl) = (gw.listener("PLAINTEXT"), gw.listener("SSL"));

    // Over SSL, librdkafka bootstraps, then connects to the broker Metadata names: the
    // SSL listener's address, checked against the certificate.
    let over_ssl = values("ssl", 200);
    produce(&ssl_client(ssl, &pki, None), "secure", &over_ssl);
    let over_plain = values("plain", 100);
    produce(&plain_client(plain), "secure", &over_plain);

    let all: Vec<String> = over_ssl.iter().chain(&over_plain).cloned().collect();
    assert_eq!(
        read_values(&ssl_client(ssl, &pki, None), "secure", all.len()),
        all
    );
    assert_eq!(read_values(&plain_client(plain), "secure", all.len()), all);

    // Plain Kafka on the SSL port gets nowhere, and TLS on the plain port neither.
    assert!(served(&ssl_client(ssl, &pki, None)));
    // The gateway's TLS layer closes the connection on librdkafka's first request.
    assert_refused(
        &plain_client(ssl),
        &[
            "Disconnected: connection closed by peer",
            "in state APIVERSION_QUERY",
        ],
        "plaintext on the SSL listener",
    );
    assert_refused(
        &ssl_client(plain, &pki, None),
        &[
            "SSL handshake failed",
            "connecting to a PLAINTEXT broker listener?",
        ],
        "TLS on the plain listener",
    );
}

#[test]
fn a_required_client_certificate_is_checked() {
    let pki = Pki::new();
    let server = pki.server("server", "gateway");
    let gw = gateway(&pki, &server, &[("ssl_client_auth", "required")]);
    let ssl = gw.listener("SSL");

    let alice = pki.client(
        "alice",
        &[
            (DnType::OrganizationName, "Acme"),
            (DnType::CommonName, "alice"),
        ],
    );
    produce(
        &ssl_client(ssl, &pki, Some(&alice)),
        "mtls",
        &values("a", 10),
    );
    assert_eq!(
        read_values(&ssl_client(ssl, &pki, Some(&alice)), "mtls", 10),
        values("a", 10)
    );
    assert!(served(&ssl_client(ssl, &pki, Some(&alice))));

    let anonymous = ssl_client(ssl, &pki, None);
    // rustls answers the handshake without a certificate with TLS 1.3's alert.
    assert_refused(
        &anonymous,
        &["tlsv13 alert certificate required", "SSL alert number 116"],
        "a client without a certificate",
    );

    // A certificate from another CA of the trusted CA's name (every test CA has one),
    // which librdkafka therefore presents: its signature does not verify, and rustls
    // says so with decrypt_error (51).
    let other_ca = Pki::new();
    let stranger = other_ca.client("mallory", &[(DnType::CommonName, "mallory")]);
    assert_refused(
        &ssl_client(ssl, &pki, Some(&stranger)),
        &["tlsv1 alert decrypt error", "SSL alert number 51"],
        "a certificate of another CA",
    );
    // One from a CA of another name, which librdkafka would not even present (the
    // gateway names the CAs it trusts): rustls as a client presents it anyway, and the
    // gateway refuses it as of an unknown CA (unknown_ca, 48).
    let unknown_ca = Pki::named("some other CA");
    let stranger = unknown_ca.client("mallory", &[(DnType::CommonName, "mallory")]);
    let refusal = rustls_refusal(ssl, &pki, &stranger);
    assert!(
        refusal.contains("received fatal alert: UnknownCA"),
        "a certificate of an unknown CA: {refusal}"
    );
}

/// With ACLs on, a client certificate's subject is the principal, in Kafka's RFC 2253
/// form: alice (`O=Acme, CN=alice`) is `User:CN=alice,O=Acme`, refused (29) until a
/// binding names exactly that principal, through librdkafka and in raw requests.
#[test]
fn a_client_certificate_is_the_principal_acls_name() {
    let pki = Pki::new();
    let server = pki.server("server", "gateway");
    let gw = gateway(
        &pki,
        &server,
        &[
            ("ssl_client_auth", "required"),
            ("authorizer", "standard"),
            // The PLAINTEXT listener's anonymous principal administers.
            ("super_users", "User:ANONYMOUS"),
        ],
    );
    let ssl = gw.listener("SSL");
    let mut admin = RawClient::connect(gw.listener("PLAINTEXT"));
    assert_eq!(create_topic_code(&mut admin, "mtls"), 0);
    let alice = pki.client(
        "alice",
        &[
            (DnType::OrganizationName, "Acme"),
            (DnType::CommonName, "alice"),
        ],
    );
    let mut raw = RawClient::over(pki.connect(ssl, Some(&alice)));
    let librdkafka = ssl_client(ssl, &pki, Some(&alice));

    assert_eq!(produce_code(&mut raw, "mtls"), TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(fetch_code(&mut raw, "mtls"), TOPIC_AUTHORIZATION_FAILED);
    let refused = deliver(&librdkafka, "mtls", &values("refused", 1));
    assert!(
        refused[0]
            .as_ref()
            .is_err_and(|e| e.contains("Topic authorization failed")),
        "{refused:?}"
    );
    // Bindings for other spellings of the subject do not name her.
    for other in ["User:CN=alice", "User:O=Acme,CN=alice", "User:alice"] {
        let binding = acl((TOPIC, "mtls", LITERAL), (other, "*"), ALL, ALLOW);
        assert_eq!(create_acls(&mut admin, vec![binding]), [0], "{other}");
    }
    assert_eq!(produce_code(&mut raw, "mtls"), TOPIC_AUTHORIZATION_FAILED);

    // Her topic, and the group librdkafka's reader uses.
    let exact = ("User:CN=alice,O=Acme", "*");
    let bindings = vec![
        acl((TOPIC, "mtls", LITERAL), exact, ALL, ALLOW),
        acl((GROUP, "mtls-reader", LITERAL), exact, READ, ALLOW),
    ];
    assert_eq!(create_acls(&mut admin, bindings), [0, 0]);
    assert_eq!(produce_code(&mut raw, "mtls"), 0);
    assert_eq!(fetch_code(&mut raw, "mtls"), 0);
    produce(&librdkafka, "mtls", &values("a", 10));
    let read = read_values(&librdkafka, "mtls", 11);
    assert_eq!(read[1..], values("a", 10), "{read:?}");
}

/// How a TLS connection presenting `client`'s certificate fails, in the handshake or
/// at the first answer read after it (TLS 1.3 checks a client certificate once the
/// client has finished): the rustls error. Panics if it is served.
fn rustls_refusal(addr: SocketAddr, pki: &Pki, client: &Issued) -> String {
    let mut tls = match pki.try_connect(addr, Some(client)) {
        Ok(tls) => tls,
        Err(e) => return e.to_string(),
    };
    let request = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff];
    if let Err(e) = tls.write_all(&request) {
        return e.to_string();
    }
    match tls.read(&mut [0u8; 64]) {
        Ok(n) => panic!("answered with {n} bytes"),
        Err(e) => e.to_string(),
    }
}

/// The server certificate a new TLS connection gets.
fn served_certificate(addr: SocketAddr, pki: &Pki) -> Vec<u8> {
    let tls = pki.connect(addr, None);
    tls.conn.peer_certificates().unwrap()[0].to_vec()
}

fn file_der(path: &std::path::Path) -> Vec<u8> {
    pem_certificates(path)[0].to_vec()
}

/// ApiVersions v0 over `stream`: true if a well-formed answer came back.
fn api_versions(stream: &mut impl ReadWrite) -> bool {
    // size, api key 18, version 0, correlation id 7, client id null
    let request = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff];
    if stream.write_all(&request).is_err() {
        return false;
    }
    let mut size = [0u8; 4];
    if stream.read_exact(&mut size).is_err() {
        return false;
    }
    let mut body = vec![0u8; u32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).is_ok() && body[..4] == [0, 0, 0, 7]
}

/// Everything the peer sends on `s` until it closes it (end of stream or a reset);
/// still open at the read timeout fails, naming `what`.
fn until_closed(s: &mut TcpStream, what: &str) -> Vec<u8> {
    use std::io::ErrorKind::*;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ConnectionReset | ConnectionAborted) => return got,
            Err(e) => panic!("{what}: not closed ({e}) after {got:?}"),
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 15 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_changed_certificate_is_served_to_new_connections_only() {
    let pki = Pki::new();
    let first = pki.server("server", "first");
    let gw = gateway(&pki, &first, &[("ssl_reload_interval_ms", "200")]);
    let ssl = gw.listener("SSL");
    assert_eq!(served_certificate(ssl, &pki), file_der(&first.cert));
    let mut open = pki.connect(ssl, None);
    assert!(api_versions(&mut open));

    // A broken certificate is not taken: the first one stays.
    let served_first = file_der(&first.cert);
    write_atomically(&first.cert, b"-----BEGIN CERTIFICATE-----\nnot base64\n");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(served_certificate(ssl, &pki), served_first);

    // A new pair written in place is served to new connections.
    let second = pki.server("server", "second");
    let want = file_der(&second.cert);
    wait_for("new certificate served", || {
        served_certificate(ssl, &pki) == want
    });
    // The connection opened before carries on with the old session.
    assert!(
        api_versions(&mut open),
        "an open connection was dropped by the reload"
    );
}

#[test]
fn sighup_reloads_the_certificate() {
    let pki = Pki::new();
    let first = pki.server("server", "first");
    // Polling far apart: only the signal can bring the new certificate in time. A
    // process, for the signal.
    let gw = gateway_by(
        Gateway::process_with,
        &pki,
        &first,
        &[("ssl_reload_interval_ms", "3600000")],
    );
    let ssl = gw.listener("SSL");
    let old = file_der(&first.cert);
    assert_eq!(served_certificate(ssl, &pki), old);
    let second = pki.server("server", "second");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        served_certificate(ssl, &pki),
        old,
        "reloaded without being asked"
    );
    gw.signal("HUP");
    let want = file_der(&second.cert);
    wait_for("certificate reloaded on SIGHUP", || {
        served_certificate(ssl, &pki) == want
    });
}

#[test]
fn stalled_and_garbage_handshakes_are_closed_and_harmless() {
    let pki = Pki::new();
    let server = pki.server("server", "gateway");
    let gw = gateway(&pki, &server, &[("ssl_handshake_timeout_ms", "500")]);
    let ssl = gw.listener("SSL");

    // Connected, silent: closed once the handshake timeout passes, with nothing sent
    // (still open at the 10 s read timeout fails).
    let mut silent = TcpStream::connect(ssl).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    support::assert_closed(&mut silent, "a silent TLS connection");

    // A plaintext Kafka request instead of a ClientHello: never answered; the gateway
    // sends TLS's fatal decode_error alert (a TLS 1.2 record: alert, level 2, 50) and
    // closes.
    let mut plain = TcpStream::connect(ssl).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff];
    plain.write_all(&request).unwrap();
    let got = until_closed(&mut plain, "plaintext on the SSL listener");
    assert_eq!(
        got,
        [21, 3, 3, 0, 2, 2, 50],
        "plaintext on the SSL listener"
    );

    // Both listeners still serve.
    let mut tls = pki.connect(ssl, None);
    assert!(api_versions(&mut tls));
    let mut tcp = TcpStream::connect(gw.listener("PLAINTEXT")).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(api_versions(&mut tcp));
}

#[test]
fn the_gateway_reaches_iggy_over_tls() {
    let pki = Pki::new();
    let iggy = pki.server("iggy", "iggy");
    let (cert, key) = (iggy.cert.to_str().unwrap(), iggy.key.to_str().unwrap());
    let Some(server) = IggyServer::start_with_env(&[
        ("IGGY_TCP_TLS_ENABLED", "true"),
        ("IGGY_TCP_TLS_SELF_SIGNED", "false"),
        ("IGGY_TCP_TLS_CERT_FILE", cert),
        ("IGGY_TCP_TLS_KEY_FILE", key),
    ]) else {
        return;
    };
    let ca = pki.ca_file();
    // A process: restarted after a SIGKILL, refusing to start (exit code, stderr).
    let mut gw = server.process_gateway_with(&[
        ("iggy_tls_enabled", "true"),
        ("iggy_tls_domain", "localhost"),
        ("iggy_tls_ca_file", ca.to_str().unwrap()),
    ]);
    produce(&plain_client(gw.addr), "via-tls", &values("t", 20));
    assert_eq!(
        read_values(&plain_client(gw.addr), "via-tls", 20),
        values("t", 20)
    );

    // The same server without TLS on the gateway's side: no connection, no start.
    let (code, stderr) = gw.refused_restart_with(&[
        ("iggy_tls_enabled", "false"),
        ("iggy_connect_timeout_ms", "2000"),
    ]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains(&server.addr.to_string()), "{stderr}");
}
