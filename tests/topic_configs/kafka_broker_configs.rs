//! Broker configurations as Kafka 4.4 answers them (issue 34): every key Kafka describes
//! for a broker (tests/kafka_configs/kafka-4.4-broker-describe.tsv, from a real Kafka
//! 4.4), librdkafka's AlterConfigs of a per-broker key (`do_test_AlterConfigs`), and the
//! Java Admin check that also passes against Kafka 4.4 itself (BrokerConfigsJava).

use std::collections::BTreeMap;

use rdkafka::admin::{AlterConfig, ConfigSource, ResourceSpecifier};

use crate::support;

use support::configs::*;
use support::{client_checks, Gateway, RawClient, Store};

/// What Kafka 4.4 described for broker 1 of a fresh KRaft combined node.
const KAFKA_DESCRIBED: &str = include_str!("../kafka_configs/kafka-4.4-broker-describe.tsv");

/// DescribeConfigs' type codes by Kafka's names.
fn type_code(kind: &str) -> i8 {
    let kinds = [
        "UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS",
        "PASSWORD",
    ];
    kinds.iter().position(|k| *k == kind).expect("a Kafka type") as i8
}

/// Every key Kafka 4.4 describes for a broker is described by the gateway, with
/// Kafka's type, sensitivity and read-only flag.
fn every_key_kafka_describes_is_described(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let r = describe(&mut c, 4, (4, "0"), None, false);
    assert_eq!(r.error_code, 0, "{r:?}");
    let ours: BTreeMap<&str, _> = r.configs.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut missing = Vec::new();
    let mut differ = Vec::new();
    for line in KAFKA_DESCRIBED.lines() {
        let [name, kind, read_only, sensitive, _source] = line.split('\t').collect::<Vec<_>>()[..]
        else {
            panic!("bad line {line:?}");
        };
        let Some(e) = ours.get(name) else {
            missing.push(name);
            continue;
        };
        let want = (type_code(kind), read_only == "true", sensitive == "true");
        let got = (e.config_type, e.read_only, e.is_sensitive);
        if got != want {
            differ.push(format!("{name}: {got:?}, Kafka {want:?}"));
        }
    }
    assert_eq!(KAFKA_DESCRIBED.lines().count(), 350);
    assert!(missing.is_empty(), "not described: {missing:?}");
    assert!(differ.is_empty(), "{differ:#?}");
}

/// librdkafka's `0081-admin` `do_test_AlterConfigs` shape: AlterConfigs of a broker
/// configuration Kafka changes per broker, described back as DYNAMIC_BROKER_CONFIG; a
/// read-only one refused (nothing changes); one Kafka does not define stored (as
/// Kafka stores it) and described without its value.
async fn librdkafka_alters_broker_configs_as_kafka_does(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let admin = support::kafka::admin(&gw.bootstrap());
    let opts = rdkafka::admin::AdminOptions::new();
    let broker = ResourceSpecifier::Broker(0);
    let relogin = "sasl.kerberos.min.time.before.relogin";
    let alter = |key: &'static str, value: &'static str| AlterConfig::new(broker).set(key, value);
    let done = admin
        .alter_configs([&alter(relogin, "58000")], &opts)
        .await
        .unwrap();
    assert!(done[0].is_ok(), "{done:?}");
    let described = admin.describe_configs([&broker], &opts).await.unwrap();
    let configs = described[0].as_ref().unwrap();
    let e = configs.get(relogin).unwrap();
    assert_eq!(
        (e.value.as_deref(), &e.source, e.is_read_only),
        (Some("58000"), &ConfigSource::DynamicBroker, false)
    );
    // rust-rdkafka's alter_configs drops each resource's error (it answers Ok): the
    // refusal shows as nothing changed (its code and message: BrokerConfigsJava).
    admin
        .alter_configs([&alter("delete.topic.enable", "false")], &opts)
        .await
        .unwrap();
    let described = admin.describe_configs([&broker], &opts).await.unwrap();
    let configs = described[0].as_ref().unwrap();
    let e = configs.get("delete.topic.enable").unwrap();
    assert_eq!(
        (e.value.as_deref(), &e.source, e.is_read_only),
        (Some("true"), &ConfigSource::Default, true)
    );
    let e = configs.get(relogin).unwrap();
    assert_eq!(
        (e.value.as_deref(), &e.source),
        (Some("58000"), &ConfigSource::DynamicBroker)
    );
    // AlterConfigs replaces the broker's set: the unknown name alone is left.
    let done = admin
        .alter_configs([&alter("no.such.config", "1")], &opts)
        .await
        .unwrap();
    assert!(done[0].is_ok(), "{done:?}");
    let described = admin.describe_configs([&broker], &opts).await.unwrap();
    let configs = described[0].as_ref().unwrap();
    let e = configs.get("no.such.config").unwrap();
    assert_eq!(
        (
            e.value.as_deref(),
            &e.source,
            e.is_read_only,
            e.is_sensitive
        ),
        (None, &ConfigSource::DynamicBroker, true, true)
    );
    let e = configs.get(relogin).unwrap();
    assert_eq!(
        (e.value.as_deref(), &e.source),
        (Some("60000"), &ConfigSource::Default)
    );
}

/// librdkafka's AlterConfigs of each broker configuration Kafka keeps read-only that the
/// gateway's settings set changes nothing: DescribeConfigs shows the setting's value
/// as STATIC_BROKER_CONFIG, read-only, before and after (the refusal's code and
/// message, which rust-rdkafka drops: `broker_configs.rs`).
async fn librdkafka_cannot_alter_the_static_broker_configs(store: Store) {
    use super::broker_configs::{with_static_settings, STATIC_SETTINGS};
    let Some(gw) = with_static_settings(store) else {
        return;
    };
    let admin = support::kafka::admin(&gw.bootstrap());
    let opts = rdkafka::admin::AdminOptions::new();
    let broker = ResourceSpecifier::Broker(0);
    for &(_, _, name, value) in STATIC_SETTINGS {
        let done = admin
            .alter_configs([&AlterConfig::new(broker).set(name, value)], &opts)
            .await
            .unwrap();
        assert_eq!(done.len(), 1, "{done:?}");
        let described = admin.describe_configs([&broker], &opts).await.unwrap();
        let configs = described[0].as_ref().unwrap();
        for &(_, setting, name, _) in STATIC_SETTINGS {
            let e = configs.get(name).unwrap();
            assert_eq!(
                (e.value.as_deref(), &e.source, e.is_read_only),
                (Some(setting), &ConfigSource::StaticBroker, true),
                "{name}"
            );
        }
    }
}

/// The Java Admin check (3.9 and 4.x clients) that passes against Kafka 4.4: per-broker,
/// cluster-wide `min.insync.replicas` (KIP-966), read-only, listener-only and unknown
/// configurations, each with Kafka's answer.
fn java_admin_gets_kafkas_answers(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    for jars in client_checks::java_jars() {
        client_checks::java(&jars, "BrokerConfigsJava", &gw.bootstrap());
    }
}

support::on_every_store!(
    every_key_kafka_describes_is_described,
    java_admin_gets_kafkas_answers
);

mod rdkafka_admin {
    support::on_every_store!(async:
        librdkafka_alters_broker_configs_as_kafka_does,
        librdkafka_cannot_alter_the_static_broker_configs,
    );
    use super::*;
}
