//! Iggy's answers as the storage ports' errors: what was not found, what is worth
//! retrying, what is not.

use iggy::prelude::{Identifier, IggyError};
use iggy_kafka_actors::store::{StoreError, StoreResult, TopicPartition};

use super::pool;

pub fn named(name: &str) -> StoreResult<Identifier> {
    Identifier::named(name).map_err(|e| StoreError::fatal_from(format!("name '{name}'"), e))
}

/// Iggy's answer as a backend error; `topic` names what was asked for.
pub fn backend_error(e: IggyError, tp: Option<&TopicPartition>, topic: &str) -> StoreError {
    match e {
        IggyError::StreamIdNotFound(..)
        | IggyError::StreamNameNotFound(..)
        | IggyError::TopicIdNotFound(..)
        | IggyError::TopicNameNotFound(..) => StoreError::UnknownTopic(topic.to_string()),
        IggyError::PartitionNotFound(..) => StoreError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        // What this server answers for a partition it does not have.
        IggyError::ResourceNotFound(_) if tp.is_some() => StoreError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        IggyError::TopicNameAlreadyExists(..) => StoreError::TopicExists(topic.to_string()),
        // A lost connection or a refusal the server says is passing: worth retrying.
        e if pool::is_connection_error(&e)
            || matches!(
                e,
                IggyError::TransientNotCommitted
                    | IggyError::TransientNotAccepted
                    | IggyError::TaskTimeout
            ) =>
        {
            StoreError::unavailable_from("Iggy", e)
        }
        other => StoreError::fatal_from("Iggy", other),
    }
}

pub fn partition_id(tp: &TopicPartition) -> StoreResult<u32> {
    u32::try_from(tp.partition).map_err(|_| StoreError::UnknownPartition {
        topic: tp.topic.to_string(),
        partition: tp.partition,
    })
}
