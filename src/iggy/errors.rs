//! Iggy's answers as the storage ports' errors: what was not found, what is worth
//! retrying, what is not.

use iggy::prelude::{Identifier, IggyError};
use iggy_kafka_actors::backend::{BackendError, BackendResult, TopicPartition};

use super::pool;

pub fn named(name: &str) -> BackendResult<Identifier> {
    Identifier::named(name).map_err(|e| BackendError::Fatal(format!("name '{name}': {e}")))
}

/// Iggy's answer as a backend error; `topic` names what was asked for.
pub fn backend_error(e: IggyError, tp: Option<&TopicPartition>, topic: &str) -> BackendError {
    match e {
        IggyError::StreamIdNotFound(..)
        | IggyError::StreamNameNotFound(..)
        | IggyError::TopicIdNotFound(..)
        | IggyError::TopicNameNotFound(..) => BackendError::UnknownTopic(topic.to_string()),
        IggyError::PartitionNotFound(..) => BackendError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        // What this server answers for a partition it does not have.
        IggyError::ResourceNotFound(_) if tp.is_some() => BackendError::UnknownPartition {
            topic: topic.to_string(),
            partition: tp.map_or(-1, |tp| tp.partition),
        },
        IggyError::TopicNameAlreadyExists(..) => BackendError::TopicExists(topic.to_string()),
        // A lost connection or a refusal the server says is passing: worth retrying.
        e if pool::is_connection_error(&e)
            || matches!(
                e,
                IggyError::TransientNotCommitted
                    | IggyError::TransientNotAccepted
                    | IggyError::TaskTimeout
            ) =>
        {
            BackendError::Unavailable(e.to_string())
        }
        other => BackendError::Fatal(format!("Iggy: {other}")),
    }
}

pub fn partition_id(tp: &TopicPartition) -> BackendResult<u32> {
    u32::try_from(tp.partition).map_err(|_| BackendError::UnknownPartition {
        topic: tp.topic.to_string(),
        partition: tp.partition,
    })
}
