//! InitProducerId: a fresh producer id for every idempotent producer, as Kafka
//! hands out; transactional ids are refused, since transactions are not served.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::ProducerId;

use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;

/// A transactional producer needs WRITE on its transactional id (else
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and allowed it is refused the same way, since
/// transactions are not served); an idempotent one IDEMPOTENT_WRITE on the cluster or
/// WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED.
pub async fn handle(
    gw: Gateway,
    req: InitProducerIdRequest,
    access: Access,
) -> InitProducerIdResponse {
    let refused = |code: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(code.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    // Authorization first, as in Kafka's KafkaApis: WRITE on the transactional id, or
    // for an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    // (Kafka's `authorizeByResourceType`).
    match req.transactional_id.as_deref() {
        Some(id) if !access.allows(Operation::Write, ResourceType::TransactionalId, id) => {
            return refused(ResponseError::TransactionalIdAuthorizationFailed);
        }
        None if !access.cluster(Operation::IdempotentWrite)
            && !access.allows_any(Operation::Write, ResourceType::Topic) =>
        {
            return refused(ResponseError::ClusterAuthorizationFailed);
        }
        _ => {}
    }
    // Then the request's own checks: an empty transactional id, or only one of
    // producer id and epoch (KIP-360 bumps send both), is malformed.
    let half_known = (req.producer_id.0 == -1) != (req.producer_epoch == -1);
    if half_known || req.transactional_id.as_ref().is_some_and(|t| t.is_empty()) {
        return refused(ResponseError::InvalidRequest);
    }
    if req.transactional_id.is_some() {
        tracing::info!(
            "InitProducerId with a transactional id refused: transactions are not served"
        );
        return refused(ResponseError::TransactionalIdAuthorizationFailed);
    }
    match gw.producer_ids.allocate().await {
        Ok(id) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(e) => {
            tracing::warn!(error = %e, "producer id allocation failed");
            refused(e.code())
        }
    }
}
