//! DescribeCluster: the live gateways as Metadata lists them (their addresses on the
//! listener the request came through), the cluster id and the controller, as a Kafka
//! broker answers it (`AuthHelper.computeDescribeClusterResponse`). Every gateway is
//! a broker endpoint: a request for controllers (endpoint type 2) answers
//! MISMATCHED_ENDPOINT_TYPE, as a Kafka broker does; no gateway is ever fenced.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::describe_cluster_response::{
    DescribeClusterBroker, DescribeClusterResponse,
};
use kafka_protocol::messages::BrokerId;
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::session::Caller;

/// Kafka's `EndpointType`: what a request asks to describe.
const BROKERS: i8 = 1;
const CONTROLLERS: i8 = 2;

/// "Not requested" in the authorized-operations field.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

/// Needs no ACL, as in Kafka; the cluster's authorized operations, when asked, are 0
/// without DESCRIBE on the cluster.
pub fn handle(
    gw: &Gateway,
    version: i16,
    req: &DescribeClusterRequest,
    caller: &Caller,
    access: &Access,
) -> DescribeClusterResponse {
    // v0 carries no endpoint type (it reads 1) and answers INVALID_REQUEST for any error.
    let refuse = |code: ResponseError, message: String| {
        tracing::debug!(endpoint_type = req.endpoint_type, %message, "describe cluster refused");
        let code = if version == 0 {
            ResponseError::InvalidRequest
        } else {
            code
        };
        DescribeClusterResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    match req.endpoint_type {
        BROKERS => {}
        CONTROLLERS => {
            return refuse(
                ResponseError::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an \
                 endpoint of type CONTROLLER"
                    .into(),
            )
        }
        other => {
            return refuse(
                ResponseError::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    let cluster = gw.groups.cluster();
    let brokers: Vec<DescribeClusterBroker> = cluster
        .brokers()
        .iter()
        .filter_map(|n| {
            let at = n.endpoint(&caller.listener)?;
            Some(
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(n.id))
                    .with_host(StrBytes::from_string(at.host.clone()))
                    .with_port(at.port as i32),
            )
        })
        .collect();
    // A controller without an address on this listener is answered -1, as in Kafka.
    let controller = cluster.controller().id;
    let controller = if brokers.iter().any(|b| b.broker_id.0 == controller) {
        controller
    } else {
        -1
    };
    let operations = if !req.include_cluster_authorized_operations {
        OPERATIONS_NOT_REQUESTED
    } else if access.cluster(Operation::Describe) {
        access.operations(ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    };
    DescribeClusterResponse::default()
        .with_endpoint_type(BROKERS)
        .with_cluster_id(StrBytes::from_string(gw.settings.cluster_id.clone()))
        .with_controller_id(BrokerId(controller))
        .with_brokers(brokers)
        .with_cluster_authorized_operations(operations)
}
