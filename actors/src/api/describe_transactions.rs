//! DescribeTransactions (KIP-664): each transactional id's state from the slot that
//! coordinates it (`transactions/slot.rs`, `Describe`). As Kafka: DESCRIBE on the id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), TRANSACTIONAL_ID_NOT_FOUND for an id with
//! no state, NOT_COORDINATOR when another gateway coordinates it.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_transactions_request::DescribeTransactionsRequest;
use kafka_protocol::messages::describe_transactions_response::{
    DescribeTransactionsResponse, TopicData, TransactionState,
};
use kafka_protocol::messages::{ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::transactions::slot::Describe;
use crate::transactions::state::{TxnError, TxnState};

pub async fn handle(
    gw: Gateway,
    req: DescribeTransactionsRequest,
    access: Access,
) -> DescribeTransactionsResponse {
    // Every slot is asked before any answer is awaited.
    let asks: Vec<_> = (req.transactional_ids.into_iter())
        .map(|id| {
            let name = id.to_string();
            let ask = (access.allows(Operation::Describe, ResourceType::TransactionalId, &name))
                .then(|| gw.transactions.ask(&name, Describe(name.clone())));
            (id, ask)
        })
        .collect();
    let mut described = Vec::with_capacity(asks.len());
    for (id, ask) in asks {
        let answer = TransactionState::default().with_transactional_id(id.clone());
        let result = match ask {
            None => Err(ResponseError::TransactionalIdAuthorizationFailed),
            Some(ask) => match ask.await {
                Ok(Ok(Some(state))) => Ok(state),
                Ok(Ok(None)) => Err(TxnError::UnknownId(id.to_string())),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(TxnError::Gone(e.into())),
            }
            .map_err(|e| {
                tracing::info!(transactional_id = %id.as_str(), error = %e, "DescribeTransactions refused");
                e.code()
            }),
        };
        described.push(match result {
            Ok(state) => with_state(answer, &state),
            Err(e) => answer.with_error_code(e.code()),
        });
    }
    DescribeTransactionsResponse::default().with_transaction_states(described)
}

/// The answer for a known id: its state, producer, timeout, start and partitions.
fn with_state(answer: TransactionState, s: &TxnState) -> TransactionState {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in &s.partitions {
        by_topic.entry(topic).or_default().push(*partition);
    }
    let topics = by_topic.into_iter().map(|(topic, partitions)| {
        TopicData::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(partitions)
    });
    answer
        .with_transaction_state(StrBytes::from_static_str(s.phase.kafka_name()))
        .with_transaction_timeout_ms(s.timeout_ms)
        .with_transaction_start_time_ms(s.start_ms())
        .with_producer_id(ProducerId(s.producer_id))
        .with_producer_epoch(s.epoch)
        .with_topics(topics.collect())
}
