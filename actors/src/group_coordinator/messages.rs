//! What the group coordinator is asked and answers.

use std::collections::HashMap;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use crate::offsets::fence::Fence;
use crate::session::Caller;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl GroupState {
    pub const ALL: [GroupState; 4] = [
        GroupState::Empty,
        GroupState::PreparingRebalance,
        GroupState::CompletingRebalance,
        GroupState::Stable,
    ];

    /// The name Kafka's DescribeGroups and ListGroups use.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
        }
    }
}

/// What a JoinGroup gets back.
#[derive(Clone, Debug, Default)]
pub struct Joined {
    pub error: Option<ResponseError>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// For the leader only: every member with its metadata for the chosen protocol.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// The leader keeps the current assignment instead of computing one (KIP-814).
    pub skip_assignment: bool,
}

/// What a SyncGroup gets back.
#[derive(Clone, Debug, Default)]
pub struct Synced {
    pub error: Option<ResponseError>,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub assignment: Bytes,
}

#[derive(Message)]
#[rtype(result = "Joined")]
pub struct Join {
    pub group: String,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub caller: Caller,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: a member without an id is first given one (KIP-394).
    pub require_member_id: bool,
    /// v9+: a static leader coming back without a rebalance may be told to skip the
    /// assignment (KIP-814).
    pub supports_skip_assignment: bool,
}

#[derive(Message)]
#[rtype(result = "Synced")]
pub struct Sync {
    pub group: String,
    pub generation: i32,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

/// A member's generation and identity, as Heartbeat and OffsetCommit carry them.
#[derive(Clone, Debug)]
pub struct MemberRef {
    pub group: String,
    pub generation: i32,
    pub member_id: String,
    pub instance_id: Option<String>,
}

#[derive(Message)]
#[rtype(result = "Option<ResponseError>")]
pub struct Heartbeat(pub MemberRef);

/// May this member commit offsets now? If so, the claim its commit is to be written
/// under (`offsets/fence.rs`).
#[derive(Message)]
#[rtype(result = "Result<Fence, ResponseError>")]
pub struct CheckCommit(pub MemberRef);

/// May this member read the group's committed offsets now (OffsetFetch v9+, KIP-848)?
/// A fetch naming no member, at epoch -1, always may.
#[derive(Message)]
#[rtype(result = "Result<(), ResponseError>")]
pub struct CheckFetch {
    pub group: String,
    pub member_id: Option<String>,
    pub member_epoch: i32,
}

/// Members leaving: `(member id, instance id)`; one answer each.
#[derive(Message)]
#[rtype(result = "Vec<Option<ResponseError>>")]
pub struct Leave {
    pub group: String,
    pub members: Vec<(String, Option<String>)>,
}

/// A snapshot of one group for DescribeGroups, ListGroups and OffsetDelete.
#[derive(Clone, Debug)]
pub struct GroupView {
    /// The state's name (a classic `GroupState`'s, or a consumer group's).
    pub state: &'static str,
    /// `classic`, or `consumer` for a KIP-848 group (ListGroups v5).
    pub group_type: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    /// member id, instance id, client id, host, metadata, assignment.
    pub members: Vec<(String, Option<String>, String, String, Bytes, Bytes)>,
}

#[derive(Message)]
#[rtype(result = "HashMap<String, GroupView>")]
pub struct Describe(pub Option<Vec<String>>);

/// A commit made under `fence` was refused: another coordinator claimed the group
/// since. Unless it was claimed here again meanwhile, the group is dropped from memory,
/// so its next request loads and claims it afresh should this gateway still coordinate
/// it (views that disagreed a moment may have let another claim it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Superseded {
    pub group: String,
    pub fence: Fence,
}

/// Forget an empty group (DeleteGroups); `NonEmptyGroup` if it has members.
#[derive(Message)]
#[rtype(result = "Result<(), ResponseError>")]
pub struct Forget(pub String);

impl Joined {
    pub(super) fn failed(error: ResponseError, member_id: &str) -> Self {
        Joined {
            error: Some(error),
            generation: -1,
            member_id: member_id.to_string(),
            ..Default::default()
        }
    }
}

impl Synced {
    pub(super) fn failed(error: ResponseError) -> Self {
        Synced {
            error: Some(error),
            ..Default::default()
        }
    }
}
