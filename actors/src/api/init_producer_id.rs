//! InitProducerId: a fresh producer id for every idempotent producer, as Kafka
//! hands out; for a transactional id, the id and a bumped epoch from its coordinator
//! (`transactions/slot.rs`), which first ends what the previous incarnation left open.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::ProducerId;

use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::protocol::versions::since;
use crate::transactions::slot::Init;
use crate::transactions::state::{OldEpoch, TxnError};

/// A transactional producer needs WRITE on its transactional id (else
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one IDEMPOTENT_WRITE on the
/// cluster or WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED. A fenced
/// producer's recovery (KIP-360) is refused INVALID_PRODUCER_EPOCH below v4,
/// PRODUCER_FENCED from it, as Kafka answers.
pub async fn handle(
    gw: Gateway,
    version: i16,
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
    if let Some(id) = req.transactional_id.as_deref() {
        return transactional(&gw, id, &req).await.unwrap_or_else(|e| {
            tracing::info!(transactional_id = %id.as_str(), error = %e, "InitProducerId refused");
            refused(e.code_with(OldEpoch::at(
                version,
                since::INIT_PRODUCER_ID_PRODUCER_FENCED,
            )))
        });
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

/// The transactional id's producer id and new epoch, from its coordinator; the
/// timeout must be within `transaction.max.timeout.ms` (INVALID_TRANSACTION_TIMEOUT).
async fn transactional(
    gw: &Gateway,
    id: &str,
    req: &InitProducerIdRequest,
) -> Result<InitProducerIdResponse, TxnError> {
    let max = gw.settings.transaction_max_timeout_ms;
    if !(1..=max).contains(&req.transaction_timeout_ms) {
        return Err(TxnError::InvalidTimeout {
            asked: req.transaction_timeout_ms,
            max,
        });
    }
    let known = (req.producer_id.0 != -1).then_some((req.producer_id.0, req.producer_epoch));
    let init = Init {
        id: id.to_string(),
        timeout_ms: req.transaction_timeout_ms,
        known,
    };
    let answer = gw.transactions.ask(id, init).await;
    let (producer_id, epoch) = answer.map_err(|e| TxnError::Gone(e.into()))??;
    Ok(InitProducerIdResponse::default()
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch))
}
