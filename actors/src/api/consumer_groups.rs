//! KIP-848's consumer group protocol: ConsumerGroupHeartbeat (68) and
//! ConsumerGroupDescribe (69). The group coordinator actor owns the groups
//! (`group_coordinator/consumer/`); these functions check access, resolve topic ids
//! and names with the topic table, and translate to and from the wire.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::consumer_group_describe_response::{
    self as described, ConsumerGroupDescribeResponse, DescribedGroup,
};
use kafka_protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kafka_protocol::messages::consumer_group_heartbeat_response::{
    self as beat, ConsumerGroupHeartbeatResponse,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::group_access::{group_denied, not_coordinator};
use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::group_coordinator::consumer::{
    BeatRequest, ConsumerGroupError, ConsumerGroupView, ConsumerHeartbeat, DescribeConsumerGroups,
    Partitions,
};
use crate::session::Caller;
use crate::topic_admin::TopicTable;

/// ConsumerGroupDescribe's member type of a member on the consumer protocol.
const CONSUMER_MEMBER: i8 = 1;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// Partitions grouped by topic id, as the wire carries them.
fn by_topic(parts: &Partitions) -> BTreeMap<Uuid, Vec<i32>> {
    let mut out: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
    for (topic, p) in parts {
        out.entry(*topic).or_default().push(*p);
    }
    out
}

/// A member's heartbeat: needs READ on the group.
pub async fn heartbeat(
    gw: Gateway,
    req: ConsumerGroupHeartbeatRequest,
    caller: Caller,
    access: Access,
) -> ConsumerGroupHeartbeatResponse {
    let interval = gw.settings.consumer_groups.heartbeat_interval.as_millis() as i32;
    let refused = |e: ConsumerGroupError| {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(e.code().code())
            .with_error_message(Some(s(e.to_string())))
            .with_member_epoch(-1)
            .with_heartbeat_interval_ms(interval)
    };
    let checked = group_denied(&access, Operation::Read, &req.group_id)
        .or_else(|| not_coordinator(&gw, &req.group_id));
    if let Some(e) = checked {
        return ConsumerGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_member_epoch(-1);
    }
    if req.group_id.is_empty() {
        return refused(ConsumerGroupError::InvalidRequest(
            "group_id must be set".into(),
        ));
    }
    let owned = req.topic_partitions.map(|topics| {
        (topics.into_iter())
            .flat_map(|t| t.partitions.into_iter().map(move |p| (t.topic_id, p)))
            .collect()
    });
    let message = ConsumerHeartbeat(BeatRequest {
        group: req.group_id.to_string(),
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.map(|i| i.to_string()),
        rack_id: req.rack_id.map(|r| r.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        topic_names: (req.subscribed_topic_names)
            .map(|names| names.into_iter().map(|n| n.to_string()).collect()),
        regex: req.subscribed_topic_regex.map(|r| r.to_string()),
        assignor: req.server_assignor.map(|a| a.to_string()),
        owned,
        caller,
    });
    let answer = match gw.groups.ask(message).await {
        Ok(answer) => answer,
        Err(_) => Err(ConsumerGroupError::Coordinator(
            ResponseError::CoordinatorNotAvailable,
        )),
    };
    let beat = match answer {
        Ok(beat) => beat,
        Err(e) => return refused(e),
    };
    let assignment = beat.assignment.map(|parts| {
        let topics = by_topic(&parts).into_iter().map(|(topic, partitions)| {
            beat::TopicPartitions::default()
                .with_topic_id(topic)
                .with_partitions(partitions)
        });
        beat::Assignment::default().with_topic_partitions(topics.collect())
    });
    ConsumerGroupHeartbeatResponse::default()
        .with_member_id(Some(s(beat.member_id)))
        .with_member_epoch(beat.epoch)
        .with_heartbeat_interval_ms(interval)
        .with_assignment(assignment)
}

/// Describes each group the caller may DESCRIBE.
pub async fn describe(
    gw: Gateway,
    req: ConsumerGroupDescribeRequest,
    access: Access,
) -> ConsumerGroupDescribeResponse {
    let names: Vec<String> = req.group_ids.iter().map(|g| g.to_string()).collect();
    let views = gw
        .groups
        .ask(DescribeConsumerGroups(names.clone()))
        .await
        .unwrap_or_default();
    let table = gw.topics.table();
    let groups = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let group = DescribedGroup::default().with_group_id(s(name.clone()).into());
            let refused = |e: ResponseError, message: Option<String>| {
                group
                    .clone()
                    .with_error_code(e.code())
                    .with_error_message(message.map(s))
            };
            if let Some(e) = group_denied(&access, Operation::Describe, &name) {
                return refused(e, None);
            }
            match views.get(i) {
                Some(Ok(view)) => described_group(group, view, &table).with_authorized_operations(
                    if req.include_authorized_operations {
                        access.operations(ResourceType::Group, &name)
                    } else {
                        i32::MIN
                    },
                ),
                Some(Err(e)) => refused(e.code(), Some(e.to_string())),
                None => refused(ResponseError::CoordinatorNotAvailable, None),
            }
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

fn described_group(
    group: DescribedGroup,
    view: &ConsumerGroupView,
    table: &TopicTable,
) -> DescribedGroup {
    let assignment = |parts: &Partitions| {
        let topics = by_topic(parts).into_iter().map(|(topic, partitions)| {
            let name = table
                .by_id(&topic)
                .map_or_else(String::new, |t| t.name.to_string());
            described::TopicPartitions::default()
                .with_topic_id(topic)
                .with_topic_name(TopicName(s(name)))
                .with_partitions(partitions)
        });
        described::Assignment::default().with_topic_partitions(topics.collect())
    };
    let members = view.members.iter().map(|m| {
        described::Member::default()
            .with_member_id(s(m.member_id.clone()))
            .with_instance_id(m.instance_id.clone().map(s))
            .with_rack_id(m.rack_id.clone().map(s))
            .with_member_epoch(m.epoch)
            .with_client_id(s(m.client_id.clone()))
            .with_client_host(s(m.host.clone()))
            .with_subscribed_topic_names(
                m.topic_names
                    .iter()
                    .map(|t| TopicName(s(t.clone())))
                    .collect(),
            )
            .with_subscribed_topic_regex(m.regex.clone().map(s))
            .with_assignment(assignment(&m.assigned))
            .with_target_assignment(assignment(&m.target))
            .with_member_type(CONSUMER_MEMBER)
    });
    group
        .with_group_state(s(view.state.name()))
        .with_group_epoch(view.epoch)
        .with_assignment_epoch(view.assignment_epoch)
        .with_assignor_name(s(view.assignor.clone()))
        .with_members(members.collect())
}
