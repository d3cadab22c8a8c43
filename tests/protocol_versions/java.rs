//! Kafka 4.4's newest versions through the Java client 4.4 (`tests/clients/Protocol44Java.java`):
//! the check runs through a proxy the gateway advertises, which notes every request's
//! version, so what the client negotiated is known and each API that changed between
//! Kafka 4.1 and 4.4 (`vendor/README.md`) must have been used at its newest version.

use crate::support;

use support::client_checks;
use support::proxy::Proxy;
use support::versions::served;
use support::{Gateway, Store};

/// The APIs Kafka 4.2-4.4 gave a new version, and that the check uses. The Java client
/// sends OffsetCommit and OffsetFetch v10 (topic ids) only for a KIP-848 group, so the
/// check's group is one.
const CHANGED: &[(i16, &str)] = &[
    (18, "ApiVersions"),
    (8, "OffsetCommit"),
    (9, "OffsetFetch"),
    (28, "TxnOffsetCommit"),
    (2, "ListOffsets"),
    (35, "DescribeLogDirs"),
    (42, "DeleteGroups"),
    (27, "WriteTxnMarkers"),
];

support::on_every_store!(java_4_4_client_uses_kafka_4_4_newest_versions);

fn java_4_4_client_uses_kafka_4_4_newest_versions(store: Store) {
    let Some(jars) = client_checks::java_jars().into_iter().find(|jars| {
        let version = std::fs::read_to_string(jars.join("kafka-clients.version"));
        version.is_ok_and(|v| v.trim().starts_with("4.4"))
    }) else {
        support::skipped("no kafka-clients 4.4 jars (run .ci/client-deps.sh)");
        return;
    };
    let port = support::iggy::free_port();
    let proxy = Proxy::start(([127, 0, 0, 1], port).into());
    let advertised = proxy.addr.port().to_string();
    let bind = format!("127.0.0.1:{port}");
    let settings = [
        ("bind_address", bind.as_str()),
        ("advertised_host", "127.0.0.1"),
        ("advertised_port", advertised.as_str()),
    ];
    let Some(_gw) = Gateway::start_on(store, &settings) else {
        return;
    };
    client_checks::java(&jars, "Protocol44Java", &proxy.addr.to_string());
    let requests = proxy.requests();
    let mut short = Vec::new();
    for &(key, name) in CHANGED {
        let newest = served(key)
            .unwrap_or_else(|| panic!("{name} not served"))
            .max;
        let used: Vec<i16> = (requests.iter())
            .filter(|(k, _)| *k == key)
            .map(|&(_, v)| v)
            .collect();
        if !used.contains(&newest) {
            short.push(format!("{name}: sent at {used:?}, newest served v{newest}"));
        }
    }
    assert!(short.is_empty(), "{}", short.join("\n"));
}
