//! KIP-848's consumer group protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe):
//! the coordinator computes each group's assignment with a server-side assignor
//! (`assignor/`), and members reconcile towards it one heartbeat at a time
//! (`reconcile.rs`), so a rebalance never stops the whole group. The groups live in
//! the group coordinator actor beside the classic ones (`handlers.rs`); a group id is
//! one or the other, and an empty group changes kind when a member of the other
//! protocol arrives; a classic group's members carry on in a consumer group as classic
//! members (`classic.rs`). Each group's state is kept in the store (`stored.rs`), so its
//! members keep their epochs across a restart or a takeover.

use actix::prelude::*;

use crate::session::Caller;

pub mod assignor;
mod classic;
mod error;
mod group;
mod handlers;
mod reconcile;
mod stored;

pub use super::messages::MemberRef;
pub use crate::settings::ConsumerGroupSettings as ConsumerSettings;
pub use assignor::{Partitions, TopicPartition};
pub use error::ConsumerGroupError;
pub use group::{ConsumerGroup, ConsumerGroupState};
pub use stored::StoredConsumerGroup;

/// One ConsumerGroupHeartbeat, as the coordinator needs it.
pub struct BeatRequest {
    pub group: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    /// `None`: unchanged since the last heartbeat.
    pub topic_names: Option<Vec<String>>,
    pub regex: Option<String>,
    pub assignor: Option<String>,
    /// The partitions the member owns; `None`: unchanged.
    pub owned: Option<Partitions>,
    pub caller: Caller,
}

/// What a heartbeat answers: the member's id and epoch, and its partitions when they
/// changed since it was last told (or it said what it owns).
#[derive(Debug)]
pub struct Beat {
    pub member_id: String,
    pub epoch: i32,
    pub assignment: Option<Partitions>,
}

/// A ConsumerGroupHeartbeat. Subscriptions resolve against the topic table as the
/// coordinator sees it then, so new topics and partitions reach the group without
/// client action.
#[derive(Message)]
#[rtype(result = "Result<Beat, ConsumerGroupError>")]
pub struct ConsumerHeartbeat(pub BeatRequest);

/// ConsumerGroupDescribe: each named group, or why it cannot be described.
#[derive(Message)]
#[rtype(result = "Vec<Result<ConsumerGroupView, ConsumerGroupError>>")]
pub struct DescribeConsumerGroups(pub Vec<String>);

#[derive(Clone, Debug)]
pub struct ConsumerGroupView {
    pub state: ConsumerGroupState,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: String,
    pub members: Vec<ConsumerMemberView>,
}

#[derive(Clone, Debug)]
pub struct ConsumerMemberView {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub epoch: i32,
    pub client_id: String,
    pub host: String,
    pub topic_names: Vec<String>,
    pub regex: Option<String>,
    pub assigned: Partitions,
    pub target: Partitions,
}
