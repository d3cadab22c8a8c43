//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete.
//!
//! Commits are checked against the group's generation and member (Kafka's
//! `validateOffsetCommit`), then stored as sent through the offset slots: a negative
//! offset deletes the entry, no range check. A missing entry reads as -1 without
//! error; a read that fails is an error, never -1, so a consumer never resets its
//! position because the store was slow.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_request::OffsetCommitRequest;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_request::OffsetDeleteRequest;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{ConsumerProtocolSubscription, GroupId, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::authorizer::{Access, Operation, ResourceType};
use crate::gateway::Gateway;
use crate::group_coordinator::{CheckCommit, CheckFetch, Describe, MemberRef, Superseded};
use crate::offsets::fence::Fence;
use crate::offsets::OffsetError;
use crate::protocol::versions::since;
use crate::store::{CommittedOffset, TopicPartition};
use uuid::Uuid;

/// Kafka's `offset.metadata.max.bytes` default.
const MAX_METADATA: usize = 4096;

/// Per topic, per partition: the answer known up front, or the index of the entry
/// sent to the slots.
type Planned = Vec<(TopicName, Uuid, Vec<(i32, Result<usize, ResponseError>)>)>;

/// Commits (or deletes) through the slots, under the coordinator's claim of the group
/// when given; results in the order given. Each within the offset slots' timeout
/// (Kafka's `offsets.commit.timeout.ms`).
async fn commit_all(
    gw: &Gateway,
    group: &Arc<str>,
    entries: Vec<(TopicPartition, Option<CommittedOffset>)>,
    fence: Option<Fence>,
) -> Vec<Result<(), ResponseError>> {
    let results = gw.offsets.commit(group, entries, fence.clone()).await;
    let refused = results
        .iter()
        .any(|r| matches!(r, Err(OffsetError::Superseded)));
    if let Some(fence) = fence.filter(|_| refused) {
        let group = group.to_string();
        let _ = gw.groups.ask(Superseded { group, fence }).await;
    }
    results
        .into_iter()
        .map(|r| r.map_err(|e| e.code()))
        .collect()
}

/// Reads committed offsets through the slots' read clients, in the order given.
async fn fetch_all(
    gw: &Gateway,
    group: &Arc<str>,
    partitions: Vec<TopicPartition>,
) -> Result<Vec<Option<CommittedOffset>>, ResponseError> {
    gw.offsets.fetch(group, partitions).await.map_err(|e| {
        tracing::warn!(%group, error = %e, "offset read failed");
        // Java's consumer retries OffsetFetch on COORDINATOR_LOAD_IN_PROGRESS.
        ResponseError::CoordinatorLoadInProgress
    })
}

/// READ on the group (GROUP_AUTHORIZATION_FAILED for every partition otherwise) and
/// READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
pub async fn commit(
    gw: Gateway,
    version: i16,
    req: OffsetCommitRequest,
    access: Access,
) -> OffsetCommitResponse {
    let group: Arc<str> = req.group_id.as_str().into();
    let checked =
        if let Some(e) = super::group_access::group_denied(&access, Operation::Read, &group) {
            Err(e)
        } else if group.is_empty() {
            Err(ResponseError::InvalidGroupId)
        } else if let Some(e) = super::group_access::not_coordinator(&gw, &group) {
            Err(e)
        } else {
            gw.groups
                .ask(CheckCommit(MemberRef {
                    group: group.to_string(),
                    generation: req.generation_id_or_member_epoch,
                    member_id: req.member_id.to_string(),
                    instance_id: req.group_instance_id.as_ref().map(|i| i.to_string()),
                }))
                .await
                .unwrap_or(Err(ResponseError::CoordinatorNotAvailable))
        };
    let table = gw.topics.table();
    // Per partition: the answer known now, or the entry to store.
    let mut planned: Planned = Vec::new();
    let mut entries = Vec::new();
    // From v10 topics are named by id (KIP-848): an unknown id is UNKNOWN_TOPIC_ID, and
    // READ is checked once the id is known, as Fetch does.
    let by_id = version >= since::OFFSET_COMMIT_TOPIC_IDS;
    for topic in req.topics {
        let meta = match by_id {
            true => table.by_id(&topic.topic_id).cloned(),
            false => table.get(&topic.name).cloned(),
        };
        let name = meta.as_ref().map_or(topic.name.as_str(), |m| &m.name);
        let denied =
            checked.is_ok() && (meta.is_some() || !by_id) && !access.topic(Operation::Read, name);
        let unknown = match meta {
            None if by_id => ResponseError::UnknownTopicId,
            _ => ResponseError::UnknownTopicOrPartition,
        };
        let partitions = topic
            .partitions
            .into_iter()
            .map(|p| {
                let known = meta
                    .as_ref()
                    .filter(|m| (0..m.partitions).contains(&p.partition_index));
                let outcome = match (&checked, known) {
                    (Err(e), _) => Err(*e),
                    _ if denied => Err(ResponseError::TopicAuthorizationFailed),
                    (_, None) => Err(unknown),
                    _ if p
                        .committed_metadata
                        .as_ref()
                        .is_some_and(|m| m.len() > MAX_METADATA) =>
                    {
                        Err(ResponseError::OffsetMetadataTooLarge)
                    }
                    (Ok(_), Some(m)) => {
                        let tp = TopicPartition {
                            topic: m.name.clone(),
                            partition: p.partition_index,
                        };
                        let stored = (p.committed_offset >= 0).then(|| CommittedOffset {
                            offset: p.committed_offset,
                            leader_epoch: if version >= since::OFFSET_COMMIT_LEADER_EPOCH {
                                p.committed_leader_epoch
                            } else {
                                -1
                            },
                            metadata: p
                                .committed_metadata
                                .as_ref()
                                .map(|m| m.to_string())
                                .unwrap_or_default(),
                        });
                        entries.push((tp, stored));
                        Ok(entries.len() - 1)
                    }
                };
                (p.partition_index, outcome)
            })
            .collect();
        planned.push((topic.name, topic.topic_id, partitions));
    }
    if let Err(e) = &checked {
        tracing::info!(%group, error = ?e, "offset commit refused");
    }
    let results = commit_all(&gw, &group, entries, checked.ok()).await;
    let topics = planned
        .into_iter()
        .map(|(name, topic_id, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, outcome)| {
                    let error = outcome.and_then(|at| results[at]).err();
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(error.map_or(0, |e| e.code()))
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(name)
                .with_topic_id(topic_id)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

/// A partition's committed offset, or why it is not answered.
type Read = Result<Option<CommittedOffset>, ResponseError>;

/// One group's answer to OffsetFetch: topics with their partitions' offsets. DESCRIBE
/// on the group is needed, and on each topic: topics named without it answer
/// TOPIC_AUTHORIZATION_FAILED, and a list of every topic leaves them out.
///
/// With `require_stable`, a partition for which an open transaction holds an offset
/// answers UNSTABLE_OFFSET_COMMIT (88), which the client retries (KIP-447).
async fn fetch_group(
    gw: &Gateway,
    access: &Access,
    (group, fetcher): (&str, Fetcher),
    topics: Option<Vec<(TopicName, Vec<i32>)>>,
    require_stable: bool,
) -> Result<Vec<(TopicName, Vec<(i32, Read)>)>, ResponseError> {
    if let Some(e) = super::group_access::group_denied(access, Operation::Describe, group)
        .or_else(|| super::group_access::not_coordinator(gw, group))
    {
        return Err(e);
    }
    if let Some((member_id, member_epoch)) = fetcher {
        let check = CheckFetch {
            group: group.to_string(),
            member_id,
            member_epoch,
        };
        let checked =
            (gw.groups.ask(check).await).unwrap_or(Err(ResponseError::CoordinatorNotAvailable));
        if let Err(e) = checked {
            tracing::info!(%group, error = ?e, "offset fetch refused");
            return Err(e);
        }
    }
    let described = |t: &TopicName| access.topic(Operation::Describe, t);
    let group: Arc<str> = group.into();
    let topics = match topics {
        Some(t) => t,
        // A null topic list (Admin listConsumerGroupOffsets): every partition with an offset.
        None => {
            let stored = gw.offsets.partitions(&group).await.map_err(|e| {
                tracing::warn!(%group, error = %e, "listing committed partitions failed");
                ResponseError::CoordinatorLoadInProgress
            })?;
            let mut by_topic: BTreeMap<Arc<str>, Vec<i32>> = BTreeMap::new();
            for tp in stored {
                by_topic.entry(tp.topic).or_default().push(tp.partition);
            }
            by_topic
                .into_iter()
                .map(|(t, mut ps)| {
                    ps.sort_unstable();
                    (TopicName(StrBytes::from_string(t.to_string())), ps)
                })
                .filter(|(t, _)| access.permits(Operation::Describe, ResourceType::Topic, t))
                .collect()
        }
    };
    let wanted: Vec<TopicPartition> = topics
        .iter()
        .filter(|(t, _)| described(t))
        .flat_map(|(t, ps)| {
            ps.iter().map(move |p| TopicPartition {
                topic: t.as_str().into(),
                partition: *p,
            })
        })
        .collect();
    let unstable = match require_stable {
        true => gw.offsets.pending(&group).await.map_err(|e| {
            tracing::warn!(%group, error = %e, "transactional offsets not read");
            ResponseError::CoordinatorLoadInProgress
        })?,
        false => Default::default(),
    };
    let mut found = fetch_all(gw, &group, wanted).await?.into_iter();
    Ok(topics
        .into_iter()
        .map(|(t, ps)| {
            let allowed = described(&t);
            let offsets = ps
                .into_iter()
                .map(|p| match allowed {
                    true => {
                        let found = found.next().flatten();
                        let tp = TopicPartition {
                            topic: t.as_str().into(),
                            partition: p,
                        };
                        match unstable.contains(&tp) {
                            true => (p, Err(ResponseError::UnstableOffsetCommit)),
                            false => (p, Ok(found)),
                        }
                    }
                    false => (p, Err(ResponseError::TopicAuthorizationFailed)),
                })
                .collect();
            (t, offsets)
        })
        .collect())
}

/// Topics asked for, by name with their partitions; `None` asks for every one.
type Wanted = Option<Vec<(TopicName, Vec<i32>)>>;

/// Topics asked for by id (v10+), with their partitions.
type ById = Vec<(Uuid, Vec<i32>)>;
/// v9+: the member fetching and its epoch (KIP-848), checked by the coordinator.
type Fetcher = Option<(Option<String>, i32)>;

/// Topics asked for by id (v10+, KIP-848), by name: those of known ids, and the ids
/// no topic has, answered UNKNOWN_TOPIC_ID.
fn named(gw: &Gateway, topics: Option<ById>) -> (Wanted, ById) {
    let Some(topics) = topics else {
        return (None, Vec::new());
    };
    let table = gw.topics.table();
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for (id, partitions) in topics {
        match table.by_id(&id) {
            Some(m) => known.push((
                TopicName(StrBytes::from_string(m.name.to_string())),
                partitions,
            )),
            None => unknown.push((id, partitions)),
        }
    }
    (Some(known), unknown)
}

/// OffsetFetch. From v8 a request names several groups, before one at the top level;
/// both are answered by one path, in the v8 shape, then moved to the top level for the
/// older versions.
pub async fn fetch(
    gw: Gateway,
    version: i16,
    req: OffsetFetchRequest,
    access: Access,
) -> OffsetFetchResponse {
    let by_id = version >= since::OFFSET_FETCH_TOPIC_IDS;
    let groups: Vec<(GroupId, Wanted, ById, Fetcher)> = if version >= since::OFFSET_FETCH_GROUPS {
        let each = req.groups.into_iter().map(|g| {
            // A fetch naming no member (admin clients, classic consumers) is not checked.
            let by_member = g.member_id.is_some() || g.member_epoch >= 0;
            let fetcher = (version >= since::OFFSET_FETCH_MEMBER_EPOCH && by_member)
                .then(|| (g.member_id.as_ref().map(|m| m.to_string()), g.member_epoch));
            match by_id {
                true => {
                    let ids = g.topics.map(|ts| {
                        let each = ts.into_iter().map(|t| (t.topic_id, t.partition_indexes));
                        each.collect()
                    });
                    let (topics, unknown) = named(&gw, ids);
                    (g.group_id, topics, unknown, fetcher)
                }
                false => {
                    let topics = g.topics.map(|ts| {
                        let each = ts.into_iter().map(|t| (t.name, t.partition_indexes));
                        each.collect()
                    });
                    (g.group_id, topics, Vec::new(), fetcher)
                }
            }
        });
        each.collect()
    } else {
        let topics = req.topics.map(|ts| {
            let each = ts.into_iter().map(|t| (t.name, t.partition_indexes));
            each.collect()
        });
        vec![(req.group_id, topics, Vec::new(), None)]
    };
    let mut answers = Vec::with_capacity(groups.len());
    for (group, topics, unknown, fetcher) in groups {
        let stable = req.require_stable;
        let asked = (group, topics, fetcher);
        let mut answer = answer_group(&gw, &access, version, asked, stable).await;
        // Ids no topic has: UNKNOWN_TOPIC_ID for each partition, unless the whole
        // group was refused.
        if answer.error_code == 0 {
            let code = ResponseError::UnknownTopicId.code();
            answer.topics.extend(unknown.into_iter().map(|(id, ps)| {
                let partitions = ps.into_iter().map(|p| {
                    OffsetFetchResponsePartitions::default()
                        .with_partition_index(p)
                        .with_committed_offset(-1)
                        .with_error_code(code)
                });
                OffsetFetchResponseTopics::default()
                    .with_topic_id(id)
                    .with_partitions(partitions.collect())
            }));
        }
        answers.push(answer);
    }
    if version >= since::OFFSET_FETCH_GROUPS {
        return OffsetFetchResponse::default().with_groups(answers);
    }
    let group = answers.pop().unwrap_or_default();
    let topics = group.topics.into_iter().map(|t| {
        let partitions = t.partitions.into_iter().map(|p| {
            OffsetFetchResponsePartition::default()
                .with_partition_index(p.partition_index)
                .with_committed_offset(p.committed_offset)
                .with_committed_leader_epoch(p.committed_leader_epoch)
                .with_metadata(p.metadata)
                .with_error_code(p.error_code)
        });
        OffsetFetchResponseTopic::default()
            .with_name(t.name)
            .with_partitions(partitions.collect())
    });
    OffsetFetchResponse::default()
        .with_error_code(group.error_code)
        .with_topics(topics.collect())
}

/// One group's answer to OffsetFetch, in the v8+ shape.
async fn answer_group(
    gw: &Gateway,
    access: &Access,
    version: i16,
    (group, topics, fetcher): (GroupId, Wanted, Fetcher),
    require_stable: bool,
) -> OffsetFetchResponseGroup {
    let read = fetch_group(
        gw,
        access,
        (&group, fetcher),
        topics.clone(),
        require_stable,
    )
    .await;
    let error = read.as_ref().err().copied();
    let read = match read {
        Ok(read) => read,
        // v1 has no group-level error: every partition asked for carries it instead.
        Err(_) if version < since::OFFSET_FETCH_GROUP_ERROR => {
            let unread = topics.unwrap_or_default().into_iter();
            let unread = unread.map(|(t, ps)| (t, ps.into_iter().map(|p| (p, Ok(None))).collect()));
            unread.collect()
        }
        Err(_) => Vec::new(),
    };
    let partition_error = if version < since::OFFSET_FETCH_GROUP_ERROR {
        error
    } else {
        None
    };
    let table = gw.topics.table();
    let topics = read.into_iter().map(|(name, ps)| {
        // v10+ names topics by id: a topic deleted since its offsets were read has none.
        let topic_id = table.get(&name).map_or(Uuid::nil(), |m| m.id);
        let partitions = ps.into_iter().map(|(p, c): (i32, Read)| {
            let (c, error) = match c {
                Ok(c) => (c, partition_error),
                Err(e) => (None, Some(e)),
            };
            // No committed offset reads as -1, without error.
            let (offset, epoch, metadata) = c.map_or((-1, -1, String::new()), |c| {
                (c.offset, c.leader_epoch, c.metadata)
            });
            OffsetFetchResponsePartitions::default()
                .with_partition_index(p)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(if version >= since::OFFSET_FETCH_LEADER_EPOCH {
                    epoch
                } else {
                    -1
                })
                .with_metadata(Some(StrBytes::from_string(metadata)))
                .with_error_code(error.map_or(0, |e| e.code()))
        });
        OffsetFetchResponseTopics::default()
            .with_name(name)
            .with_topic_id(topic_id)
            .with_partitions(partitions.collect())
    });
    OffsetFetchResponseGroup::default()
        .with_group_id(group)
        .with_error_code(error.map_or(0, |e| e.code()))
        .with_topics(topics.collect())
}

/// Topics the group's live members subscribe to (from their consumer-protocol metadata).
async fn subscribed_topics(gw: &Gateway, group: &str) -> Option<HashSet<String>> {
    let views = gw
        .groups
        .ask(Describe(Some(vec![group.to_string()])))
        .await
        .ok()?;
    let view = views.get(group)?;
    if view.members.is_empty() {
        return None;
    }
    let mut topics = HashSet::new();
    for (_, _, _, _, metadata, _) in &view.members {
        let mut b: Bytes = metadata.clone();
        if b.len() < 2 {
            continue;
        }
        let version = (&b[..2]).get_i16();
        b.advance(2);
        if let Ok(sub) = ConsumerProtocolSubscription::decode(&mut b, version) {
            topics.extend(sub.topics.into_iter().map(|t| t.to_string()));
        }
    }
    Some(topics)
}

/// DELETE on the group, READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
pub async fn delete(gw: Gateway, req: OffsetDeleteRequest, access: Access) -> OffsetDeleteResponse {
    let group: Arc<str> = req.group_id.as_str().into();
    if let Some(e) = super::group_access::group_denied(&access, Operation::Delete, &group)
        .or_else(|| super::group_access::not_coordinator(&gw, &group))
    {
        return OffsetDeleteResponse::default().with_error_code(e.code());
    }
    let subscribed = subscribed_topics(&gw, &group).await.unwrap_or_default();
    let known = match gw.offsets.groups().await {
        Ok(groups) => groups.iter().any(|g| **g == *group) || !subscribed.is_empty(),
        Err(_) => {
            return OffsetDeleteResponse::default()
                .with_error_code(ResponseError::CoordinatorLoadInProgress.code())
        }
    };
    if !known {
        return OffsetDeleteResponse::default()
            .with_error_code(ResponseError::GroupIdNotFound.code());
    }
    let table = gw.topics.table();
    let mut planned: Planned = Vec::new();
    let mut entries = Vec::new();
    for t in req.topics {
        let meta = table.get(&t.name).cloned();
        let denied = !access.topic(Operation::Read, &t.name);
        let ps: Vec<(i32, Result<usize, ResponseError>)> = t
            .partitions
            .iter()
            .map(|p| {
                let outcome = match &meta {
                    _ if denied => Err(ResponseError::TopicAuthorizationFailed),
                    _ if subscribed.contains(t.name.as_str()) => {
                        Err(ResponseError::GroupSubscribedToTopic)
                    }
                    Some(m) if (0..m.partitions).contains(&p.partition_index) => {
                        entries.push((
                            TopicPartition {
                                topic: m.name.clone(),
                                partition: p.partition_index,
                            },
                            None,
                        ));
                        Ok(entries.len() - 1)
                    }
                    _ => Err(ResponseError::UnknownTopicOrPartition),
                };
                (p.partition_index, outcome)
            })
            .collect();
        planned.push((t.name, Uuid::nil(), ps));
    }
    let results = commit_all(&gw, &group, entries, None).await;
    let topics = planned
        .into_iter()
        .map(|(name, _, ps)| {
            OffsetDeleteResponseTopic::default()
                .with_name(name)
                .with_partitions(
                    ps.into_iter()
                        .map(|(p, outcome)| {
                            let error = outcome.and_then(|at| results[at]).err();
                            OffsetDeleteResponsePartition::default()
                                .with_partition_index(p)
                                .with_error_code(error.map_or(0, |e| e.code()))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetDeleteResponse::default().with_topics(topics)
}

/// Removes every committed offset of a group (DeleteGroups).
pub async fn delete_group_offsets(gw: &Gateway, group: &str) -> Result<(), ResponseError> {
    let partitions = gw.offsets.partitions(group).await.map_err(|e| e.code())?;
    let entries = partitions.into_iter().map(|tp| (tp, None)).collect();
    let group: Arc<str> = group.into();
    commit_all(gw, &group, entries, None)
        .await
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use actix::Arbiter;
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    };

    use super::*;
    use crate::gateway::Threads;
    use crate::metrics::Metrics;
    use crate::test_store::{settings, TestStore};

    /// OffsetFetch of partition 0 of topic "t" for group "g" at `v`.
    fn request(v: i16) -> OffsetFetchRequest {
        let name = TopicName(StrBytes::from_static_str("t"));
        let group = GroupId(StrBytes::from_static_str("g"));
        if v >= since::OFFSET_FETCH_GROUPS {
            let topic = OffsetFetchRequestTopics::default()
                .with_name(name)
                .with_partition_indexes(vec![0]);
            let g = OffsetFetchRequestGroup::default()
                .with_group_id(group)
                .with_topics(Some(vec![topic]));
            OffsetFetchRequest::default().with_groups(vec![g])
        } else {
            let topic = OffsetFetchRequestTopic::default()
                .with_name(name)
                .with_partition_indexes(vec![0]);
            OffsetFetchRequest::default()
                .with_group_id(group)
                .with_topics(Some(vec![topic]))
        }
    }

    #[actix_rt::test]
    async fn a_failed_read_is_an_error_where_each_version_has_one_never_minus_one_alone() {
        let backend = Arc::new(TestStore::default());
        let gw = Gateway::start(
            settings(),
            backend.clone(),
            Arc::new(backend.clone()),
            backend.clone(),
            Metrics::new(),
            Threads {
                workers: &[Arbiter::current()],
                log_slots: &[Arbiter::current()],
            },
        )
        .await
        .unwrap();
        // The store stops answering offset reads once the gateway runs.
        backend
            .failing_reads
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Java's consumer retries OffsetFetch on COORDINATOR_LOAD_IN_PROGRESS.
        let retriable = ResponseError::CoordinatorLoadInProgress.code();
        for v in 1..=9 {
            let r = fetch(gw.clone(), v, request(v), Access::unrestricted()).await;
            match v {
                // v1 has no top-level error: the partition carries it.
                1 => {
                    let p = &r.topics[0].partitions[0];
                    assert_eq!((p.error_code, p.committed_offset), (retriable, -1));
                }
                2..=7 => assert_eq!((r.error_code, r.topics.len()), (retriable, 0), "v{v}"),
                _ => {
                    let g = &r.groups[0];
                    let answer = (g.group_id.as_str(), g.error_code, g.topics.len());
                    assert_eq!(answer, ("g", retriable, 0), "v{v}");
                }
            }
        }
    }
}
