//! A classic group as the store keeps it, so a gateway that restarts or takes a group
//! over carries on with its members (Kafka keeps the same in `__consumer_offsets`).
//!
//! Table `groups`, one entry per group: the key its id, the value the group as JSON
//! (member metadata and assignments as base64). Written when a rebalance completes
//! (before the members get their assignments), when a static member comes back under
//! a new id, and when the group empties; removed when the group is deleted or dropped
//! empty. A group is stored Stable or Empty only: a rebalance under way is not kept,
//! the members rejoin the generation they last completed. KIP-848 groups share the
//! table, their values marked (`consumer/stored.rs`); a value without a mark is a
//! classic group's.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use indexmap::IndexMap;
use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};

use super::consumer::StoredConsumerGroup;
use super::group::{Group, Member};
use super::messages::GroupState;
use crate::session::{Caller, Principal};
use crate::store::StoreError;

pub const TABLE: &str = "groups";

/// What table `groups` holds for a group id: a classic group or a KIP-848 one.
#[derive(Debug)]
pub enum Stored {
    Classic(StoredGroup),
    Consumer(StoredConsumerGroup),
}

impl Stored {
    pub fn decode(name: &str, value: &[u8]) -> Result<Stored, StoreError> {
        #[derive(Deserialize)]
        struct Mark {
            kind: Option<String>,
        }
        let garbage =
            |e| StoreError::fatal_from(format!("stored state of group '{name}' is unreadable"), e);
        let mark: Mark = serde_json::from_slice(value).map_err(garbage)?;
        match mark.kind.as_deref() {
            None => serde_json::from_slice(value).map(Stored::Classic),
            Some(_) => serde_json::from_slice(value).map(Stored::Consumer),
        }
        .map_err(garbage)
    }
}

/// Who a member is, as both kinds of group keep it (inline in the member's JSON).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredCaller {
    client_id: String,
    host: String,
    /// `kind:name`.
    principal: String,
    listener: String,
}

impl StoredCaller {
    pub(super) fn of(caller: &Caller) -> StoredCaller {
        StoredCaller {
            client_id: caller.client_id.clone(),
            host: caller.host.clone(),
            principal: caller.principal.to_string(),
            listener: caller.listener.to_string(),
        }
    }

    pub(super) fn into_caller(self, group: &str) -> Result<Caller, StoreError> {
        let (kind, name) = (self.principal.split_once(':'))
            .ok_or_else(|| unreadable("principal", group, &self.principal))?;
        Ok(Caller {
            principal: Principal {
                kind: kind.into(),
                name: name.into(),
            },
            client_id: self.client_id,
            host: self.host,
            listener: self.listener.into(),
        })
    }
}

/// A part of `group`'s stored state that does not read back.
pub(super) fn unreadable(what: &str, group: &str, e: &dyn std::fmt::Display) -> StoreError {
    StoreError::fatal(format!(
        "stored {what} of group '{group}' is unreadable: {e}"
    ))
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredGroup {
    protocol_type: Option<String>,
    protocol: Option<String>,
    generation: i32,
    leader: Option<String>,
    members: Vec<StoredMember>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct StoredMember {
    id: String,
    instance_id: Option<String>,
    #[serde(flatten)]
    caller: StoredCaller,
    session_ms: u64,
    rebalance_ms: u64,
    protocol_type: String,
    /// Protocol name and its metadata (base64), in the member's order of preference.
    protocols: Vec<(String, String)>,
    /// Base64.
    assignment: String,
}

impl StoredGroup {
    /// `group` as it stands: its members with their assignments.
    pub fn of(group: &Group) -> StoredGroup {
        StoredGroup {
            protocol_type: group.protocol_type.clone(),
            protocol: group.protocol.clone(),
            generation: group.generation,
            leader: group.leader.clone(),
            members: group
                .members
                .iter()
                .map(|(id, m)| StoredMember {
                    id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    caller: StoredCaller::of(&m.caller),
                    session_ms: m.session.as_millis() as u64,
                    rebalance_ms: m.rebalance.as_millis() as u64,
                    protocol_type: m.protocol_type.clone(),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(name, meta)| (name.clone(), BASE64.encode(meta)))
                        .collect(),
                    assignment: BASE64.encode(&m.assignment),
                })
                .collect(),
        }
    }

    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("a stored group encodes"))
    }

    /// The group again, Stable with its members or Empty, every member's session
    /// starting `now` (as Kafka schedules a loaded group's heartbeats).
    pub fn into_group(
        self,
        name: &str,
        rebalances: Counter,
        now: Instant,
    ) -> Result<Group, StoreError> {
        let bytes = |s: &str| {
            BASE64
                .decode(s)
                .map(Bytes::from)
                .map_err(|e| unreadable("member data", name, &e))
        };
        let mut group = Group::new(rebalances);
        group.generation = self.generation;
        group.protocol_type = self.protocol_type;
        group.protocol = self.protocol;
        group.leader = self.leader;
        let mut members = IndexMap::with_capacity(self.members.len());
        for m in self.members {
            if let Some(instance) = &m.instance_id {
                group.instances.insert(instance.clone(), m.id.clone());
            }
            let protocols = m
                .protocols
                .iter()
                .map(|(name, meta)| Ok((name.clone(), bytes(meta)?)))
                .collect::<Result<_, StoreError>>()?;
            members.insert(
                m.id,
                Member {
                    instance_id: m.instance_id,
                    caller: m.caller.into_caller(name)?,
                    session: Duration::from_millis(m.session_ms),
                    rebalance: Duration::from_millis(m.rebalance_ms),
                    protocol_type: m.protocol_type,
                    protocols,
                    assignment: bytes(&m.assignment)?,
                    last_seen: now,
                    watch: 0,
                    awaiting_join: None,
                    awaiting_sync: None,
                },
            );
        }
        group.state = match members.is_empty() {
            true => GroupState::Empty,
            false => GroupState::Stable,
        };
        group.members = members;
        group.stored = Some((group.generation, group.state));
        Ok(group)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn member(id: &str, instance: Option<&str>) -> Member {
        Member {
            instance_id: instance.map(Into::into),
            caller: Caller {
                client_id: format!("client-{id}"),
                host: "/127.0.0.1".into(),
                principal: Principal {
                    kind: "User".into(),
                    name: "alice:ops".into(),
                },
                listener: Arc::from("PLAINTEXT"),
            },
            session: Duration::from_secs(10),
            rebalance: Duration::from_secs(30),
            protocol_type: "consumer".into(),
            protocols: vec![
                (
                    "cooperative-sticky".into(),
                    Bytes::from_static(b"\x00\x01sub"),
                ),
                ("range".into(), Bytes::from_static(b"\x00\x01")),
            ],
            assignment: Bytes::from_static(b"\x00\x03assigned\xff"),
            last_seen: Instant::now(),
            watch: 0,
            awaiting_join: None,
            awaiting_sync: None,
        }
    }

    #[test]
    fn a_stable_group_comes_back_with_its_members_their_assignments_and_instances() {
        let mut group = Group::new(Counter::default());
        group.state = GroupState::Stable;
        group.generation = 7;
        group.protocol_type = Some("consumer".into());
        group.protocol = Some("cooperative-sticky".into());
        group.leader = Some("a".into());
        group.members.insert("a".into(), member("a", None));
        group
            .members
            .insert("b".into(), member("b", Some("static-b")));
        group.instances.insert("static-b".into(), "b".into());
        let stored = StoredGroup::of(&group);
        let value = stored.encode();
        let Stored::Classic(decoded) = Stored::decode("g", &value).unwrap() else {
            panic!("a classic group decodes as one");
        };
        assert_eq!(decoded, stored);
        let now = Instant::now();
        let back = decoded.into_group("g", Counter::default(), now).unwrap();
        assert_eq!(back.state, GroupState::Stable);
        assert_eq!(back.generation, 7);
        assert_eq!(back.leader.as_deref(), Some("a"));
        assert_eq!(back.protocol.as_deref(), Some("cooperative-sticky"));
        assert_eq!(
            back.instances.get("static-b").map(String::as_str),
            Some("b")
        );
        let ids: Vec<&String> = back.members.keys().collect();
        assert_eq!(
            ids,
            ["a", "b"],
            "members keep their order (the leader's roster)"
        );
        for (id, m) in &back.members {
            let was = &group.members[id];
            assert_eq!(m.protocols, was.protocols);
            assert_eq!(m.assignment, was.assignment);
            assert_eq!(m.caller.principal.to_string(), "User:alice:ops");
            assert_eq!((m.session, m.rebalance), (was.session, was.rebalance));
            assert_eq!(m.last_seen, now, "sessions start again at the load");
        }
        assert_eq!(back.stored, Some((7, GroupState::Stable)));
    }

    #[test]
    fn a_group_without_members_comes_back_empty_and_garbage_is_an_error_naming_it() {
        let mut group = Group::new(Counter::default());
        group.generation = 3;
        let back = StoredGroup::of(&group)
            .into_group("g", Counter::default(), Instant::now())
            .unwrap();
        assert_eq!((back.state, back.generation), (GroupState::Empty, 3));
        let e = Stored::decode("broken", b"{").unwrap_err();
        assert!(e.to_string().contains("group 'broken'"), "{e}");
    }

    #[test]
    fn a_value_stored_before_consumer_groups_were_kept_reads_as_a_classic_group() {
        let value = br#"{"protocol_type":"consumer","protocol":"range","generation":4,
            "leader":"m","members":[{"id":"m","instance_id":null,"client_id":"c",
            "host":"/10.0.0.1","principal":"User:ANONYMOUS","listener":"PLAINTEXT",
            "session_ms":10000,"rebalance_ms":30000,"protocol_type":"consumer",
            "protocols":[["range","AAE="]],"assignment":"cDA="}]}"#;
        let Stored::Classic(stored) = Stored::decode("old", value).unwrap() else {
            panic!("an unmarked value is a classic group");
        };
        let g = stored
            .into_group("old", Counter::default(), Instant::now())
            .unwrap();
        assert_eq!((g.generation, g.state), (4, GroupState::Stable));
        let m = &g.members["m"];
        assert_eq!(
            (m.caller.host.as_str(), &m.assignment[..]),
            ("/10.0.0.1", &b"p0"[..])
        );
        assert_eq!(m.caller.principal.to_string(), "User:ANONYMOUS");
    }
}
