//! Server-side assignors of KIP-848 groups (`group.consumer.assignors`): the group's
//! target assignment computed from its members' subscriptions and the partitions of
//! the topics they subscribe to.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

mod range;
mod uniform;

/// One partition of a topic, named by topic id as the consumer protocol names it.
pub type TopicPartition = (Uuid, i32);
pub type Partitions = BTreeSet<TopicPartition>;

/// What an assignor knows of a member.
pub struct MemberSpec<'a> {
    pub id: &'a str,
    /// The topics it subscribes to that exist.
    pub topics: &'a BTreeSet<Uuid>,
    /// Its partitions in the target assignment before this one.
    pub current: &'a Partitions,
}

/// Kafka's two server-side assignors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Assignor {
    /// Balances the partitions over the members and moves as few as it can.
    Uniform,
    /// Gives each member a contiguous range of each topic it subscribes to.
    Range,
}

impl Assignor {
    pub fn from_name(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// Every member's partitions; `topics` maps each subscribed topic to its number of
    /// partitions.
    pub fn assign(
        self,
        members: &[MemberSpec],
        topics: &BTreeMap<Uuid, i32>,
    ) -> BTreeMap<String, Partitions> {
        match self {
            Assignor::Uniform => uniform::assign(members, topics),
            Assignor::Range => range::assign(members, topics),
        }
    }
}

#[cfg(test)]
pub(super) mod testing {
    //! Members and topics for the assignors' tests.

    use super::*;

    pub fn topic(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    /// Checks every partition of `topics` goes to exactly one member subscribed to it.
    pub fn each_once(
        out: &BTreeMap<String, Partitions>,
        subs: &BTreeMap<String, BTreeSet<Uuid>>,
        topics: &BTreeMap<Uuid, i32>,
    ) {
        let mut seen = Partitions::new();
        for (member, parts) in out {
            for tp in parts {
                assert!(seen.insert(*tp), "{tp:?} assigned twice");
                assert!(
                    subs[member].contains(&tp.0),
                    "{member} got {tp:?} unsubscribed"
                );
            }
        }
        let all: usize = topics.values().map(|n| *n as usize).sum();
        assert_eq!(seen.len(), all, "every partition assigned");
    }

    /// Runs `assignor` over members subscribed as `subs`, each with its `current`.
    pub fn run(
        assignor: Assignor,
        subs: &BTreeMap<String, BTreeSet<Uuid>>,
        current: &BTreeMap<String, Partitions>,
        topics: &BTreeMap<Uuid, i32>,
    ) -> BTreeMap<String, Partitions> {
        let empty = Partitions::new();
        let members: Vec<MemberSpec> = subs
            .iter()
            .map(|(id, topics)| MemberSpec {
                id,
                topics,
                current: current.get(id).unwrap_or(&empty),
            })
            .collect();
        let out = assignor.assign(&members, topics);
        each_once(&out, subs, topics);
        out
    }
}
