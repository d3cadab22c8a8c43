//! DescribeProducers (KIP-664): each partition's active producers, from the producer
//! state its log slot keeps (`Partitions::producers`), each with where its open
//! transaction began there. As Kafka's `handleDescribeProducersRequest`: an invalid
//! topic name INVALID_TOPIC_EXCEPTION, then READ on the topic
//! (TOPIC_AUTHORIZATION_FAILED), then UNKNOWN_TOPIC_OR_PARTITION. Any gateway answers
//! for any partition, since each reads the same log.

use futures_util::future::join_all;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_producers_request::DescribeProducersRequest;
use kafka_protocol::messages::describe_producers_response::{
    DescribeProducersResponse, PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::ProducerId;
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::partitions::PartitionProducer;
use crate::store::TopicPartition;
use crate::topic_admin::internal::is_internal;
use crate::topic_admin::validate_topic_name;

pub async fn handle(
    gw: Gateway,
    req: DescribeProducersRequest,
    access: Access,
) -> DescribeProducersResponse {
    let table = gw.topics.table();
    let mut topics = Vec::with_capacity(req.topics.len());
    let mut reads = Vec::new();
    for t in req.topics {
        let meta = table.get(&t.name);
        let refused = match validate_topic_name(&t.name) {
            Err(e) => Some((e.code(), e.to_string())),
            Ok(()) if !access.topic(Operation::Read, &t.name) => Some((
                ResponseError::TopicAuthorizationFailed,
                format!("READ on topic '{}' is not allowed", t.name.as_str()),
            )),
            Ok(()) => None,
        };
        let mut partitions = Vec::with_capacity(t.partition_indexes.len());
        for p in t.partition_indexes {
            let answer = PartitionResponse::default().with_partition_index(p);
            let error = refused.clone().or_else(|| match meta {
                Some(m) if (0..m.partitions).contains(&p) => None,
                _ => Some((
                    ResponseError::UnknownTopicOrPartition,
                    format!(
                        "partition {p} of topic '{}' does not exist",
                        t.name.as_str()
                    ),
                )),
            });
            if let Some((code, message)) = error {
                tracing::info!(topic = %t.name.as_str(), partition = p, "DescribeProducers: {message}");
                partitions.push(
                    answer
                        .with_error_code(code.code())
                        .with_error_message(Some(StrBytes::from_string(message))),
                );
            } else if is_internal(&t.name) {
                // No log behind it, so no producers (`topic_admin/internal.rs`).
                partitions.push(answer);
            } else {
                let tp = TopicPartition {
                    topic: t.name.as_str().into(),
                    partition: p,
                };
                reads.push(((topics.len(), partitions.len()), tp));
                partitions.push(answer);
            }
        }
        topics.push(
            TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    let partitions = &gw.partitions;
    let read = join_all(reads.iter().map(|(_, tp)| partitions.producers(tp))).await;
    for (((t, p), tp), result) in reads.into_iter().zip(read) {
        let answer = &mut topics[t].partitions[p];
        match result {
            Ok(producers) => answer.active_producers = producers.iter().map(listed).collect(),
            Err(e) => {
                tracing::warn!(partition = %tp, error = %e, "DescribeProducers: producer state not read");
                answer.error_code = e.code().code();
                answer.error_message = Some(StrBytes::from_string(e.to_string()));
            }
        }
    }
    DescribeProducersResponse::default().with_topics(topics)
}

/// A producer as Kafka lists it: no coordinator epoch is kept (-1), nor a last time
/// for producers known only from the stored history (-1).
fn listed((p, txn_start): &PartitionProducer) -> ProducerState {
    ProducerState::default()
        .with_producer_id(ProducerId(p.producer_id))
        .with_producer_epoch(p.epoch.into())
        .with_last_sequence(p.last_sequence)
        .with_last_timestamp(p.last_timestamp.unwrap_or(-1))
        .with_coordinator_epoch(-1)
        .with_current_txn_start_offset(txn_start.unwrap_or(-1))
}
