//! Listeners: several side by side, each answering Metadata and FindCoordinator with
//! every broker's address on the listener the request came through (Kafka's
//! `listeners`, `listener_security_protocol_map`, `advertised_listeners`).

use crate::support;

use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::protocol::StrBytes;
use support::{call, Gateway, RawClient, Store};

/// (host, port) of each broker in Metadata, and of the group's coordinator, asked
/// through `addr`.
fn advertised(addr: std::net::SocketAddr) -> (Vec<(String, i32)>, (String, i32)) {
    let mut c = RawClient::connect(addr);
    let md = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    let brokers = md
        .brokers
        .iter()
        .map(|b| (b.host.to_string(), b.port))
        .collect();
    let req = FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g"));
    let fc = call!(c, FindCoordinator, 3, req);
    assert_eq!(fc.error_code, 0, "{fc:?}");
    let batched = FindCoordinatorRequest::default()
        .with_coordinator_keys(vec![StrBytes::from_static_str("g")]);
    let fc4 = call!(c, FindCoordinator, 4, batched);
    let c4 = &fc4.coordinators[0];
    assert_eq!(
        (c4.host.to_string(), c4.port),
        (fc.host.to_string(), fc.port),
        "batched and single lookups agree"
    );
    (brokers, (fc.host.to_string(), fc.port))
}

fn each_listener_advertises_its_own_address(store: Store) {
    let Some(gw) = Gateway::start_on(
        store,
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,internal://127.0.0.1:0",
            ),
            ("listener_security_protocol_map", "INTERNAL:PLAINTEXT"),
            ("advertised_listeners", "INTERNAL://gw.internal:19092"),
        ],
    ) else {
        return;
    };
    let plain = gw.listener("PLAINTEXT");
    let internal = gw.listener("INTERNAL");
    assert_ne!(plain, internal);
    assert_eq!(
        gw.addr, plain,
        "the first listener is the one reported first"
    );

    let (brokers, coordinator) = advertised(plain);
    let me = ("127.0.0.1".to_string(), plain.port() as i32);
    assert_eq!(brokers, std::slice::from_ref(&me));
    assert_eq!(coordinator, me);

    let (brokers, coordinator) = advertised(internal);
    let me = ("gw.internal".to_string(), 19092);
    assert_eq!(brokers, std::slice::from_ref(&me));
    assert_eq!(coordinator, me);
}

support::on_every_store!(each_listener_advertises_its_own_address);
