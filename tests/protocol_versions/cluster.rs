//! The cluster APIs answered from the gateways' own view: DescribeCluster.

use crate::support;

use kafka_protocol::messages::*;
use support::{call, RawClient};

pub(super) fn describe_cluster(c: &mut RawClient, v: i16) {
    let request = DescribeClusterRequest::default().with_endpoint_type(1);
    let r = call!(c, DescribeCluster, v, request);
    assert_eq!((r.error_code, r.brokers.len()), (0, 1), "{r:?}");
    assert_eq!(r.controller_id, r.brokers[0].broker_id);
}
