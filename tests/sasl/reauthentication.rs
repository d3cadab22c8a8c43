//! Re-authentication (KIP-368): sessions extended, closed once expired; librdkafka's too.

use crate::support;

use std::time::Duration;

use kafka_protocol::messages::*;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use support::kafka::read_values;
use support::sasl::plain_login;
use support::{Gateway, RawClient};

use super::{client, metadata_v12, scram_login, ALL_MECHANISMS, SASL};

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
