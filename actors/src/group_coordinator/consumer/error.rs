//! Why a consumer-protocol request is refused, each with its Kafka error code; the
//! text goes out as the answer's error message.

use kafka_protocol::error::ResponseError;

#[derive(Debug, thiserror::Error)]
pub enum ConsumerGroupError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("the member epoch {received} does not match the member's epoch {current}")]
    FencedMemberEpoch { received: i32, current: i32 },
    #[error("the member epoch {received} is older than the member's epoch {current}")]
    StaleMemberEpoch { received: i32, current: i32 },
    #[error("member {0} is not in the group")]
    UnknownMember(String),
    #[error("instance {0} is still used by another member of the group")]
    UnreleasedInstance(String),
    #[error("instance {0} is used by another member id")]
    FencedInstance(String),
    #[error("the group has reached its maximum size of {0} members")]
    GroupFull(usize),
    #[error("assignor {0} is not one of group.consumer.assignors")]
    UnsupportedAssignor(String),
    #[error("subscribed_topic_regex {0}: {1}")]
    InvalidRegex(String, #[source] regex::Error),
    #[error("group {0} does not exist")]
    UnknownGroup(String),
    #[error("group {0} is not a consumer group")]
    NotConsumerGroup(String),
    #[error("the group's coordinator cannot serve it")]
    Coordinator(ResponseError),
}

impl ConsumerGroupError {
    pub fn code(&self) -> ResponseError {
        match self {
            ConsumerGroupError::InvalidRequest(_) => ResponseError::InvalidRequest,
            ConsumerGroupError::FencedMemberEpoch { .. } => ResponseError::FencedMemberEpoch,
            ConsumerGroupError::StaleMemberEpoch { .. } => ResponseError::StaleMemberEpoch,
            ConsumerGroupError::UnknownMember(_) => ResponseError::UnknownMemberId,
            ConsumerGroupError::UnreleasedInstance(_) => ResponseError::UnreleasedInstanceId,
            ConsumerGroupError::FencedInstance(_) => ResponseError::FencedInstanceId,
            ConsumerGroupError::GroupFull(_) => ResponseError::GroupMaxSizeReached,
            ConsumerGroupError::UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
            ConsumerGroupError::InvalidRegex(..) => ResponseError::InvalidRegularExpression,
            ConsumerGroupError::UnknownGroup(_) | ConsumerGroupError::NotConsumerGroup(_) => {
                ResponseError::GroupIdNotFound
            }
            ConsumerGroupError::Coordinator(e) => *e,
        }
    }
}
