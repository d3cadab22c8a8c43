//! Consumer-group membership: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, DescribeGroups, ListGroups, DeleteGroups. The group coordinator actor
//! owns the state; these functions translate between it and the wire, version by version.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_protocol::messages::delete_groups_response::{
    DeletableGroupResult, DeleteGroupsResponse,
};
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::describe_groups_response::{
    DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::heartbeat_response::HeartbeatResponse;
use kafka_protocol::messages::join_group_request::JoinGroupRequest;
use kafka_protocol::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_protocol::messages::leave_group_request::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_response::{LeaveGroupResponse, MemberResponse};
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::list_groups_response::{ListGroupsResponse, ListedGroup};
use kafka_protocol::messages::sync_group_request::SyncGroupRequest;
use kafka_protocol::messages::sync_group_response::SyncGroupResponse;
use kafka_protocol::messages::{BrokerId, GroupId};
use kafka_protocol::protocol::StrBytes;

use super::group_access::{group_denied, not_coordinator};
use super::offsets;
use crate::authorizer::{Access, Operation, ResourceType, CLUSTER_NAME};
use crate::gateway::Gateway;
use crate::group_coordinator::{
    Describe, Forget, GroupState, Heartbeat, Join, Leave, MemberRef, Sync,
};
use crate::protocol::versions::since;
use crate::session::Caller;

/// FindCoordinator key types.
const GROUP_KEY: i8 = 0;
const TRANSACTION_KEY: i8 = 1;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

fn code(e: Option<ResponseError>) -> i16 {
    e.map_or(0, |e| e.code())
}

/// Each group and each transactional id has one coordinating gateway among the live
/// ones (`membership.rs`), named by its address on the caller's listener. A group key
/// needs DESCRIBE on the group, a transaction key DESCRIBE on the transactional id.
pub fn find_coordinator(
    gw: &Gateway,
    version: i16,
    req: FindCoordinatorRequest,
    caller: &Caller,
    access: &Access,
) -> FindCoordinatorResponse {
    let cluster = gw.groups.cluster();
    let locate = |key: &str| {
        match req.key_type {
            GROUP_KEY => {
                if let Some(e) = group_denied(access, Operation::Describe, key) {
                    return Err((e, "DESCRIBE on the group is not allowed"));
                }
            }
            TRANSACTION_KEY => {
                if !access.allows(Operation::Describe, ResourceType::TransactionalId, key) {
                    let e = ResponseError::TransactionalIdAuthorizationFailed;
                    return Err((e, "DESCRIBE on the transactional id is not allowed"));
                }
            }
            other => {
                tracing::info!(key_type = other, "FindCoordinator for an unknown key type");
                return Err((
                    ResponseError::InvalidRequest,
                    "unknown coordinator key type",
                ));
            }
        }
        let node = cluster.coordinator_of(key);
        match node.endpoint(&caller.listener) {
            Some(at) => Ok((node.id, at)),
            None => Err((
                ResponseError::CoordinatorNotAvailable,
                "the coordinator has no listener of this name",
            )),
        }
    };
    if version >= since::FIND_COORDINATOR_BATCHED {
        let coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let c = Coordinator::default();
                let c = match locate(&key) {
                    Err((e, message)) => c
                        .with_error_code(e.code())
                        .with_error_message(Some(s(message)))
                        .with_node_id(BrokerId(-1))
                        .with_port(-1),
                    Ok((id, at)) => c
                        .with_node_id(BrokerId(id))
                        .with_host(s(at.host.clone()))
                        .with_port(at.port as i32),
                };
                c.with_key(key)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let response = FindCoordinatorResponse::default();
    match locate(&req.key) {
        Err((e, message)) => response
            .with_error_code(e.code())
            .with_error_message(
                (version >= since::FIND_COORDINATOR_ERROR_MESSAGE).then(|| s(message)),
            )
            .with_node_id(BrokerId(-1))
            .with_port(-1),
        Ok((id, at)) => response
            .with_node_id(BrokerId(id))
            .with_host(s(at.host.clone()))
            .with_port(at.port as i32),
    }
}

pub async fn join(
    gw: Gateway,
    version: i16,
    req: JoinGroupRequest,
    caller: Caller,
    access: Access,
) -> JoinGroupResponse {
    let refused = |error| crate::group_coordinator::Joined {
        error: Some(error),
        generation: -1,
        ..Default::default()
    };
    let checked = group_denied(&access, Operation::Read, &req.group_id)
        .or_else(|| not_coordinator(&gw, &req.group_id));
    let joined = match checked {
        Some(e) => refused(e),
        None => gw
            .groups
            .ask(Join {
                group: req.group_id.to_string(),
                member_id: req.member_id.to_string(),
                instance_id: req.group_instance_id.map(|i| i.to_string()),
                caller,
                session_timeout_ms: req.session_timeout_ms,
                // v0 has no rebalance timeout: the session timeout serves for both.
                rebalance_timeout_ms: if version >= since::JOIN_GROUP_REBALANCE_TIMEOUT {
                    req.rebalance_timeout_ms
                } else {
                    req.session_timeout_ms
                },
                protocol_type: req.protocol_type.to_string(),
                protocols: req
                    .protocols
                    .into_iter()
                    .map(|p| (p.name.to_string(), p.metadata))
                    .collect(),
                require_member_id: version >= since::JOIN_GROUP_MEMBER_ID_REQUIRED,
                supports_skip_assignment: version >= since::JOIN_GROUP_SKIP_ASSIGNMENT,
            })
            .await
            .unwrap_or_else(|_| refused(ResponseError::CoordinatorNotAvailable)),
    };
    let members = joined
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            JoinGroupResponseMember::default()
                .with_member_id(s(id))
                .with_group_instance_id(if version >= since::JOIN_GROUP_INSTANCE_ID {
                    instance.map(s)
                } else {
                    None
                })
                .with_metadata(metadata)
        })
        .collect();
    JoinGroupResponse::default()
        .with_error_code(code(joined.error))
        .with_generation_id(joined.generation)
        .with_protocol_type(if version >= since::JOIN_GROUP_PROTOCOL_TYPE {
            joined.protocol_type.map(s)
        } else {
            None
        })
        // Nullable from v7; earlier versions send an empty name instead.
        .with_protocol_name(match version {
            7.. => joined.protocol.map(s),
            _ => Some(s(joined.protocol.unwrap_or_default())),
        })
        .with_leader(s(joined.leader))
        .with_skip_assignment(joined.skip_assignment)
        .with_member_id(s(joined.member_id))
        .with_members(members)
}

pub async fn sync(
    gw: Gateway,
    version: i16,
    req: SyncGroupRequest,
    access: Access,
) -> SyncGroupResponse {
    let refused = |error| crate::group_coordinator::Synced {
        error: Some(error),
        ..Default::default()
    };
    let checked = group_denied(&access, Operation::Read, &req.group_id)
        .or_else(|| not_coordinator(&gw, &req.group_id));
    let synced = match checked {
        Some(e) => refused(e),
        None => gw
            .groups
            .ask(Sync {
                group: req.group_id.to_string(),
                generation: req.generation_id,
                member_id: req.member_id.to_string(),
                instance_id: req.group_instance_id.map(|i| i.to_string()),
                protocol_type: req.protocol_type.map(|p| p.to_string()),
                protocol: req.protocol_name.map(|p| p.to_string()),
                assignments: req
                    .assignments
                    .into_iter()
                    .map(|a| (a.member_id.to_string(), a.assignment))
                    .collect(),
            })
            .await
            .unwrap_or_else(|_| refused(ResponseError::CoordinatorNotAvailable)),
    };
    let response = SyncGroupResponse::default()
        .with_error_code(code(synced.error))
        .with_assignment(synced.assignment);
    if version >= since::SYNC_GROUP_PROTOCOL {
        response
            .with_protocol_type(synced.protocol_type.map(s))
            .with_protocol_name(synced.protocol.map(s))
    } else {
        response
    }
}

pub async fn heartbeat(gw: Gateway, req: HeartbeatRequest, access: Access) -> HeartbeatResponse {
    let checked = group_denied(&access, Operation::Read, &req.group_id)
        .or_else(|| not_coordinator(&gw, &req.group_id));
    if let Some(e) = checked {
        return HeartbeatResponse::default().with_error_code(e.code());
    }
    let error = gw
        .groups
        .ask(Heartbeat(MemberRef {
            group: req.group_id.to_string(),
            generation: req.generation_id,
            member_id: req.member_id.to_string(),
            instance_id: req.group_instance_id.map(|i| i.to_string()),
        }))
        .await
        .unwrap_or(Some(ResponseError::CoordinatorNotAvailable));
    HeartbeatResponse::default().with_error_code(code(error))
}

pub async fn leave(
    gw: Gateway,
    version: i16,
    req: LeaveGroupRequest,
    access: Access,
) -> LeaveGroupResponse {
    // v3 batches members (KIP-345); earlier versions name one.
    let batched = version >= since::LEAVE_GROUP_BATCHED;
    let members: Vec<(String, Option<String>)> = if batched {
        req.members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|i| i.to_string()),
                )
            })
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    };
    let checked = group_denied(&access, Operation::Read, &req.group_id)
        .or_else(|| not_coordinator(&gw, &req.group_id));
    if let Some(e) = checked {
        return LeaveGroupResponse::default().with_error_code(e.code());
    }
    let errors = gw
        .groups
        .ask(Leave {
            group: req.group_id.to_string(),
            members: members.clone(),
        })
        .await
        .unwrap_or_else(|_| vec![Some(ResponseError::CoordinatorNotAvailable); members.len()]);
    if !batched {
        return LeaveGroupResponse::default()
            .with_error_code(code(errors.first().copied().flatten()));
    }
    let responses = members
        .into_iter()
        .zip(errors)
        .map(|((id, instance), e)| {
            MemberResponse::default()
                .with_member_id(s(id))
                .with_group_instance_id(instance.map(s))
                .with_error_code(code(e))
        })
        .collect();
    LeaveGroupResponse::default().with_members(responses)
}

pub async fn describe(
    gw: Gateway,
    version: i16,
    req: DescribeGroupsRequest,
    access: Access,
) -> DescribeGroupsResponse {
    let names: Vec<String> = req.groups.iter().map(|g| g.to_string()).collect();
    let views = gw
        .groups
        .ask(Describe(Some(names.clone())))
        .await
        .unwrap_or_default();
    let with_offsets = gw.offsets.groups().await.unwrap_or_default();
    let groups = names
        .into_iter()
        .map(|name| {
            let described = DescribedGroup::default().with_group_id(GroupId(s(name.clone())));
            let checked = group_denied(&access, Operation::Describe, &name)
                .or_else(|| not_coordinator(&gw, &name));
            if let Some(e) = checked {
                return described.with_error_code(e.code());
            }
            let described =
                described.with_authorized_operations(if req.include_authorized_operations {
                    access.operations(ResourceType::Group, &name)
                } else {
                    i32::MIN
                });
            match views.get(&name) {
                Some(view) => described
                    .with_group_state(s(view.state))
                    .with_protocol_type(s(view.protocol_type.clone()))
                    .with_protocol_data(s(view.protocol.clone()))
                    .with_members(
                        view.members
                            .iter()
                            .map(|(id, instance, client, host, metadata, assignment)| {
                                DescribedGroupMember::default()
                                    .with_member_id(s(id.clone()))
                                    .with_group_instance_id(
                                        if version >= since::DESCRIBE_GROUPS_INSTANCE_ID {
                                            instance.clone().map(s)
                                        } else {
                                            None
                                        },
                                    )
                                    .with_client_id(s(client.clone()))
                                    .with_client_host(s(host.clone()))
                                    .with_member_metadata(metadata.clone())
                                    .with_member_assignment(assignment.clone())
                            })
                            .collect(),
                    ),
                // A group known only by its committed offsets is Empty, as in Kafka.
                None if with_offsets.contains(&name) => {
                    described.with_group_state(s(GroupState::Empty.name()))
                }
                // Unknown groups: Dead before v6, GROUP_ID_NOT_FOUND from v6 (KIP-1043).
                None if version >= since::DESCRIBE_GROUPS_NOT_FOUND => described
                    .with_error_code(ResponseError::GroupIdNotFound.code())
                    .with_error_message(Some(s(format!("group '{name}' not found"))))
                    .with_group_state(s("Dead")),
                None => described.with_group_state(s("Dead")),
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// Every group with DESCRIBE on the cluster; else those the caller may DESCRIBE.
pub async fn list(
    gw: Gateway,
    version: i16,
    req: ListGroupsRequest,
    access: Access,
) -> ListGroupsResponse {
    let every = access.permits(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    let views = gw.groups.ask(Describe(None)).await.unwrap_or_default();
    let mut all: BTreeMap<String, (String, &'static str, &'static str)> = views
        .into_iter()
        .map(|(name, v)| (name, (v.protocol_type, v.state, v.group_type)))
        .collect();
    let with_offsets = match gw.offsets.groups().await {
        Ok(g) => g,
        Err(e) => {
            tracing::warn!(error = %e, "listing groups with offsets failed");
            return ListGroupsResponse::default()
                .with_error_code(ResponseError::CoordinatorLoadInProgress.code());
        }
    };
    for name in with_offsets {
        all.entry(name)
            .or_insert_with(|| (String::new(), GroupState::Empty.name(), "classic"));
    }
    let states: Vec<String> = req
        .states_filter
        .iter()
        .map(|f| f.to_ascii_lowercase())
        .collect();
    let types: Vec<String> = req
        .types_filter
        .iter()
        .map(|f| f.to_ascii_lowercase())
        .collect();
    // Each gateway lists the groups it coordinates; admin clients ask every broker.
    let cluster = gw.groups.cluster();
    let groups = all
        .into_iter()
        .filter(|(name, _)| cluster.coordinates(name))
        .filter(|(name, _)| every || access.permits(Operation::Describe, ResourceType::Group, name))
        .filter(|(_, (_, state, _))| {
            states.is_empty() || states.contains(&state.to_ascii_lowercase())
        })
        .filter(|(_, (_, _, kind))| types.is_empty() || types.iter().any(|t| t == kind))
        .map(|(name, (protocol_type, state, kind))| {
            let listed = ListedGroup::default()
                .with_group_id(GroupId(s(name)))
                .with_protocol_type(s(protocol_type));
            let listed = if version >= since::LIST_GROUPS_STATE {
                listed.with_group_state(s(state))
            } else {
                listed
            };
            if version >= since::LIST_GROUPS_TYPE {
                listed.with_group_type(s(kind))
            } else {
                listed
            }
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}

pub async fn delete(gw: Gateway, req: DeleteGroupsRequest, access: Access) -> DeleteGroupsResponse {
    let with_offsets = gw.offsets.groups().await.unwrap_or_default();
    let mut results = Vec::with_capacity(req.groups_names.len());
    for name in req.groups_names {
        let group = name.to_string();
        let checked = group_denied(&access, Operation::Delete, &group)
            .or_else(|| not_coordinator(&gw, &group));
        if let Some(e) = checked {
            results.push(deleted(name, Some(e)));
            continue;
        }
        let known = gw
            .groups
            .ask(Describe(Some(vec![group.clone()])))
            .await
            .unwrap_or_default();
        let outcome = if known.is_empty() && !with_offsets.contains(&group) {
            Err(ResponseError::GroupIdNotFound)
        } else {
            match gw.groups.ask(Forget(group.clone())).await {
                Ok(Ok(())) => offsets::delete_group_offsets(&gw, &group).await,
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ResponseError::CoordinatorNotAvailable),
            }
        };
        if let Err(e) = outcome {
            tracing::info!(%group, error = ?e, "group not deleted");
        }
        results.push(deleted(name, outcome.err()));
    }
    DeleteGroupsResponse::default().with_results(results)
}

/// A group's result: its error code and, from v3, a message saying why it is
/// not deleted (null when it is); older versions carry the code only.
fn deleted(name: GroupId, error: Option<ResponseError>) -> DeletableGroupResult {
    DeletableGroupResult::default()
        .with_group_id(name)
        .with_error_code(error.map_or(0, |e| e.code()))
        .with_error_message(error.map(|e| StrBytes::from_string(e.to_string())))
}
