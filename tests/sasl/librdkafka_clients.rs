//! librdkafka producing and consuming over SASL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.

use crate::support;

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use support::kafka::read_values;
use support::Gateway;

use super::{client, metadata_works, ALL_MECHANISMS, SASL};

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
