//! DescribeCluster (60): the brokers, cluster id and controller Metadata answers, at
//! every served version; a request for controllers answers MISMATCHED_ENDPOINT_TYPE
//! (114) and an unknown endpoint type UNSUPPORTED_ENDPOINT_TYPE (115), as a Kafka
//! broker answers them; authorized operations when asked.

use crate::support;

use kafka_protocol::messages::*;
use support::versions::served;
use support::{call, Gateway, RawClient, Store};

support::on_every_store!(
    every_version_lists_the_brokers_metadata_lists,
    endpoint_types_other_than_brokers_are_refused_as_kafka_does,
);

const DESCRIBE_CLUSTER: i16 = 60;

fn versions() -> std::ops::RangeInclusive<i16> {
    let api = served(DESCRIBE_CLUSTER).expect("DescribeCluster is served");
    api.min..=api.max
}

fn describe(c: &mut RawClient, v: i16, endpoint_type: i8) -> DescribeClusterResponse {
    let mut request = DescribeClusterRequest::default().with_endpoint_type(endpoint_type);
    if v >= 2 {
        request = request.with_include_fenced_brokers(true);
    }
    call!(c, DescribeCluster, v, request)
}

fn every_version_lists_the_brokers_metadata_lists(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let metadata = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    let brokers: Vec<_> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id, b.host.to_string(), b.port, false))
        .collect();
    assert_eq!(brokers.len(), 1, "{metadata:?}");
    assert_eq!(brokers[0].2, gw.addr.port() as i32);
    for v in versions() {
        let r = describe(&mut c, v, 1);
        assert_eq!((r.error_code, &r.error_message), (0, &None), "v{v}: {r:?}");
        let listed: Vec<_> = r
            .brokers
            .iter()
            .map(|b| (b.broker_id, b.host.to_string(), b.port, b.is_fenced))
            .collect();
        assert_eq!(listed, brokers, "v{v}");
        assert_eq!(Some(&r.cluster_id), metadata.cluster_id.as_ref(), "v{v}");
        assert_eq!(r.controller_id, metadata.controller_id, "v{v}");
        assert_eq!(r.endpoint_type, 1, "v{v}");
        // Not asked: i32::MIN. Asked, with no authorizer: every cluster operation,
        // DESCRIBE (8) and ALTER (7) among them.
        assert_eq!(r.cluster_authorized_operations, i32::MIN, "v{v}");
        let asked = DescribeClusterRequest::default()
            .with_endpoint_type(1)
            .with_include_cluster_authorized_operations(true);
        let r = call!(c, DescribeCluster, v, asked);
        let ops = r.cluster_authorized_operations;
        assert!(
            ops > 0 && ops & (1 << 8) != 0 && ops & (1 << 7) != 0,
            "v{v}: {ops:b}"
        );
    }
}

fn endpoint_types_other_than_brokers_are_refused_as_kafka_does(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    // v0 has no endpoint type on the wire: it always describes brokers.
    for v in versions().filter(|&v| v >= 1) {
        let r = describe(&mut c, v, 2);
        let message = "The request was sent to an endpoint of type BROKER, but we wanted an \
                       endpoint of type CONTROLLER";
        assert_eq!(
            (r.error_code, r.error_message.as_deref(), r.brokers.len()),
            (114, Some(message), 0),
            "v{v}"
        );
        let r = describe(&mut c, v, 7);
        assert_eq!(
            (r.error_code, r.error_message.as_deref()),
            (115, Some("Unsupported endpoint type 7")),
            "v{v}"
        );
    }
}
