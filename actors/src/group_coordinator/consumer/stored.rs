//! A KIP-848 group as the store keeps it, so a gateway that restarts or takes the group
//! over carries on with its members at their epochs (Kafka keeps the same records in
//! `__consumer_offsets`).
//!
//! Table `groups`, beside the classic groups (`../stored.rs`): the key the group id,
//! the value JSON marked `"kind": "consumer"`. Written when the group's epoch or target
//! changes and when a member joins, leaves or moves in its reconciliation, before the
//! heartbeat that depends on it is answered; removed when the group is deleted or
//! dropped empty. What is not kept is rebuilt: the subscriptions are resolved against
//! the topic table again at the first heartbeat, each member is sent its assignment
//! again, and its deadlines start at the load.

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::super::stored::{unreadable, StoredCaller};
use super::assignor::{Assignor, Partitions};
use super::group::{
    regex_source, subscription_regex, ClassicMember, ConsumerGroup, ConsumerMember,
};
use super::reconcile::Reconciled;
use crate::store::StoreError;

/// The mark of a consumer group's value; a classic group's has none.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Consumer,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredConsumerGroup {
    kind: Kind,
    epoch: i32,
    assignment_epoch: i32,
    assignor: Option<String>,
    /// Subscribed topic id → its partition count at `epoch`.
    topics: BTreeMap<Uuid, i32>,
    /// Member id → its partitions in the target assignment.
    target: BTreeMap<String, StoredPartitions>,
    members: Vec<StoredConsumerMember>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct StoredConsumerMember {
    id: String,
    instance_id: Option<String>,
    rack_id: Option<String>,
    #[serde(flatten)]
    caller: StoredCaller,
    rebalance_timeout_ms: i32,
    topic_names: Vec<String>,
    /// As the member sent it.
    regex: Option<String>,
    assignor: Option<String>,
    subscribed: BTreeSet<Uuid>,
    epoch: i32,
    previous_epoch: i32,
    assigned: StoredPartitions,
    revoking: StoredPartitions,
    away: bool,
    /// A classic member's session and protocols (absent for others, and in values
    /// written before classic members joined consumer groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    classic: Option<StoredClassic>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct StoredClassic {
    session_ms: u64,
    /// Protocol name and its metadata (base64), in the member's order of preference.
    protocols: Vec<(String, String)>,
}

/// Partitions by topic id: each topic named once.
type StoredPartitions = BTreeMap<Uuid, Vec<i32>>;

fn stored_partitions(ps: &Partitions) -> StoredPartitions {
    let mut by_topic = StoredPartitions::new();
    for (topic, p) in ps {
        by_topic.entry(*topic).or_default().push(*p);
    }
    by_topic
}

fn partitions(by_topic: StoredPartitions) -> Partitions {
    (by_topic.into_iter())
        .flat_map(|(topic, ps)| ps.into_iter().map(move |p| (topic, p)))
        .collect()
}

impl StoredConsumerGroup {
    /// `group` as it stands.
    pub fn of(group: &ConsumerGroup) -> StoredConsumerGroup {
        StoredConsumerGroup {
            kind: Kind::Consumer,
            epoch: group.epoch,
            assignment_epoch: group.assignment_epoch,
            assignor: group.assignor.map(|a| a.name().to_string()),
            topics: group.topics.clone(),
            target: (group.target.iter())
                .map(|(id, ps)| (id.clone(), stored_partitions(ps)))
                .collect(),
            members: (group.members.iter())
                .map(|(id, m)| StoredConsumerMember {
                    id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    caller: StoredCaller::of(&m.caller),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    topic_names: m.topic_names.clone(),
                    regex: m.regex.as_ref().map(|r| regex_source(r).to_string()),
                    assignor: m.assignor.map(|a| a.name().to_string()),
                    subscribed: m.subscribed.clone(),
                    epoch: m.state.epoch,
                    previous_epoch: m.state.previous_epoch,
                    assigned: stored_partitions(&m.state.assigned),
                    revoking: stored_partitions(&m.state.revoking),
                    away: m.away,
                    classic: m.classic.as_ref().map(|c| StoredClassic {
                        session_ms: c.session.as_millis() as u64,
                        protocols: (c.protocols.iter())
                            .map(|(name, meta)| (name.clone(), BASE64.encode(meta)))
                            .collect(),
                    }),
                })
                .collect(),
        }
    }

    pub fn encode(&self) -> bytes::Bytes {
        bytes::Bytes::from(serde_json::to_vec(self).expect("a stored group encodes"))
    }

    /// The group again, its members where they stood in their reconciliation; the
    /// caller starts their deadlines.
    pub fn into_group(self, name: &str) -> Result<ConsumerGroup, StoreError> {
        let assignor = |a: Option<String>| match a {
            None => Ok(None),
            Some(a) => {
                (Assignor::from_name(&a).map(Some)).ok_or_else(|| unreadable("assignor", name, &a))
            }
        };
        let mut group = ConsumerGroup {
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: assignor(self.assignor)?,
            topics: self.topics,
            target: (self.target.into_iter())
                .map(|(id, ps)| (id, partitions(ps)))
                .collect(),
            ..Default::default()
        };
        for m in self.members {
            let regex = (m.regex.as_deref())
                .map(subscription_regex)
                .transpose()
                .map_err(|e| unreadable("regex", name, &e))?;
            if let Some(instance) = &m.instance_id {
                group.instances.insert(instance.clone(), m.id.clone());
            }
            let classic = match m.classic {
                None => None,
                Some(c) => {
                    let protocols = (c.protocols.into_iter())
                        .map(|(n, meta)| {
                            let meta = BASE64
                                .decode(meta)
                                .map_err(|e| unreadable("member data", name, &e))?;
                            Ok((n, Bytes::from(meta)))
                        })
                        .collect::<Result<_, StoreError>>()?;
                    Some(ClassicMember {
                        session: Duration::from_millis(c.session_ms),
                        protocols,
                    })
                }
            };
            let member = ConsumerMember {
                instance_id: m.instance_id,
                rack_id: m.rack_id,
                caller: m.caller.into_caller(name)?,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                topic_names: m.topic_names,
                regex,
                assignor: assignor(m.assignor)?,
                subscribed: m.subscribed,
                state: Reconciled {
                    epoch: m.epoch,
                    previous_epoch: m.previous_epoch,
                    assigned: partitions(m.assigned),
                    revoking: partitions(m.revoking),
                },
                sent: None,
                away: m.away,
                session: None,
                revocation: None,
                classic,
            };
            group.members.insert(m.id, member);
        }
        Ok(group)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::super::stored::Stored;
    use super::*;
    use crate::session::{Caller, Principal};

    fn member(instance: Option<&str>, state: Reconciled) -> ConsumerMember {
        ConsumerMember {
            instance_id: instance.map(Into::into),
            rack_id: Some("rack-1".into()),
            caller: Caller {
                client_id: "rdkafka".into(),
                host: "/127.0.0.1".into(),
                principal: Principal::user("alice:ops"),
                listener: Arc::from("PLAINTEXT"),
            },
            rebalance_timeout_ms: 45_000,
            topic_names: vec!["orders".into()],
            regex: Some(subscription_regex("pay.*").unwrap()),
            assignor: Some(Assignor::Range),
            subscribed: [Uuid::from_u128(1), Uuid::from_u128(2)].into(),
            state,
            sent: None,
            away: false,
            session: None,
            revocation: None,
            classic: None,
        }
    }

    #[test]
    fn a_group_comes_back_with_its_epochs_target_and_members_mid_reconciliation() {
        let (t1, t2) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut group = ConsumerGroup::default();
        (group.epoch, group.assignment_epoch) = (9, 9);
        group.assignor = Some(Assignor::Range);
        group.topics = [(t1, 3), (t2, 1)].into();
        group.target.insert("a".into(), [(t1, 0), (t1, 1)].into());
        group.target.insert("b".into(), [(t1, 2), (t2, 0)].into());
        let revoking = Reconciled {
            epoch: 8,
            previous_epoch: 7,
            assigned: [(t1, 0)].into(),
            revoking: [(t1, 2)].into(),
        };
        let stable = Reconciled {
            epoch: 9,
            previous_epoch: 8,
            assigned: [(t2, 0)].into(),
            revoking: Partitions::new(),
        };
        let mut a = member(None, revoking.clone());
        a.classic = Some(ClassicMember {
            session: std::time::Duration::from_secs(10),
            protocols: vec![("range".into(), Bytes::from_static(b"\0\x01sub"))],
        });
        group.members.insert("a".into(), a);
        let mut b = member(Some("static-b"), stable.clone());
        b.away = true;
        group.members.insert("b".into(), b);
        group.instances.insert("static-b".into(), "b".into());

        let stored = StoredConsumerGroup::of(&group);
        let Stored::Consumer(decoded) = Stored::decode("g", &stored.encode()).unwrap() else {
            panic!("a consumer group decodes as one");
        };
        assert_eq!(decoded, stored);
        let back = decoded.into_group("g").unwrap();
        assert_eq!(
            (back.epoch, back.assignment_epoch, back.assignor),
            (9, 9, Some(Assignor::Range))
        );
        assert_eq!((&back.topics, &back.target), (&group.topics, &group.target));
        assert_eq!(back.instances, group.instances);
        assert_eq!(
            (
                back.members["a"].state.clone(),
                back.members["b"].state.clone()
            ),
            (revoking, stable)
        );
        for (id, m) in &back.members {
            let was = &group.members[id];
            assert_eq!(m.caller.principal.to_string(), "User:alice:ops");
            assert_eq!(
                (&m.caller.client_id, &m.caller.host),
                (&was.caller.client_id, &was.caller.host)
            );
            assert_eq!(
                (&m.instance_id, &m.rack_id),
                (&was.instance_id, &was.rack_id)
            );
            assert_eq!(
                (&m.topic_names, &m.subscribed),
                (&was.topic_names, &was.subscribed)
            );
            assert_eq!(m.regex.as_ref().map(regex_source), Some("pay.*"));
            assert_eq!(
                (m.assignor, m.rebalance_timeout_ms, m.away),
                (was.assignor, was.rebalance_timeout_ms, was.away)
            );
            assert_eq!(m.classic, was.classic);
            assert!(
                m.sent.is_none() && m.session.is_none(),
                "sent again, timed again"
            );
        }
        assert!(!back.unstored);
    }
}
