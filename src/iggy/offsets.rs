//! Committed consumer-group offsets.
//!
//! Kafka commits hold what Iggy consumer offsets cannot: any offset as sent (0 on
//! an empty partition, past the end), a leader epoch and metadata. So the gateway
//! log `committed-offsets` is the record of truth: every commit, delete and topic
//! deletion is appended there, replayed into memory at startup, and reads are
//! answered from memory.
//!
//! Each commit is also mirrored into Iggy's own consumer offsets, so Iggy tools see
//! the group's progress and retention accounts for it: on the mapped topic, consumer
//! group [`iggy_group_name`] (made on the first commit) stores Kafka offset `K` as
//! Iggy offset `K - 1` (Iggy stores the last consumed offset, Kafka the next one to
//! read). Commits Iggy cannot store (`K = 0`, past the end) delete the mirror entry
//! or leave it as it was; the mirror never affects what Kafka clients read.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use iggy_kafka_actors::backend::{CommittedOffset, TopicPartition};
use serde::{Deserialize, Serialize};

use super::gateway_log::{Compact, Replay};

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OffsetRecord {
    Commit {
        group: String,
        topic: String,
        partition: i32,
        offset: i64,
        leader_epoch: i32,
        metadata: String,
    },
    Delete {
        group: String,
        topic: String,
        partition: i32,
    },
    /// The topic was deleted: every group's offsets on it go.
    ForgetTopic { topic: String },
}

impl OffsetRecord {
    pub fn encode(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).expect("offset records serialize"))
    }

    pub fn commit(group: &str, tp: &TopicPartition, offset: Option<&CommittedOffset>) -> Self {
        let (group, topic, partition) = (group.to_string(), tp.topic.to_string(), tp.partition);
        match offset {
            Some(c) => OffsetRecord::Commit {
                group,
                topic,
                partition,
                offset: c.offset,
                leader_epoch: c.leader_epoch,
                metadata: c.metadata.clone(),
            },
            None => OffsetRecord::Delete {
                group,
                topic,
                partition,
            },
        }
    }
}

type Key = (String, String, i32);

/// Every group's committed offsets, as replayed from the log.
#[derive(Default)]
pub struct Offsets {
    committed: BTreeMap<Key, CommittedOffset>,
}

impl Replay for Offsets {
    /// Unreadable records are skipped with a warning.
    fn apply(&mut self, offset: u64, record: &Bytes) {
        match serde_json::from_slice::<OffsetRecord>(record) {
            Ok(r) => self.record(r),
            Err(e) => tracing::warn!(offset, error = %e, "skipping unreadable offset record"),
        }
    }
}

impl Compact for Offsets {
    fn compacted(&self) -> Vec<Bytes> {
        self.committed
            .iter()
            .map(|((group, topic, partition), c)| {
                OffsetRecord::Commit {
                    group: group.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                    offset: c.offset,
                    leader_epoch: c.leader_epoch,
                    metadata: c.metadata.clone(),
                }
                .encode()
            })
            .collect()
    }
}

impl Offsets {
    fn record(&mut self, r: OffsetRecord) {
        match r {
            OffsetRecord::Commit {
                group,
                topic,
                partition,
                offset,
                leader_epoch,
                metadata,
            } => {
                self.committed.insert(
                    (group, topic, partition),
                    CommittedOffset {
                        offset,
                        leader_epoch,
                        metadata,
                    },
                );
            }
            OffsetRecord::Delete {
                group,
                topic,
                partition,
            } => {
                self.committed.remove(&(group, topic, partition));
            }
            OffsetRecord::ForgetTopic { topic } => {
                self.committed.retain(|(_, t, _), _| *t != topic)
            }
        }
    }

    pub fn get(&self, group: &str, tp: &TopicPartition) -> Option<CommittedOffset> {
        self.committed
            .get(&(group.to_string(), tp.topic.to_string(), tp.partition))
            .cloned()
    }

    pub fn partitions(&self, group: &str) -> Vec<TopicPartition> {
        self.committed
            .range((group.to_string(), String::new(), i32::MIN)..)
            .take_while(|((g, _, _), _)| g == group)
            .map(|((_, t, p), _)| TopicPartition {
                topic: t.as_str().into(),
                partition: *p,
            })
            .collect()
    }

    pub fn groups(&self) -> Vec<String> {
        let groups: BTreeSet<&String> = self.committed.keys().map(|(g, _, _)| g).collect();
        groups.into_iter().cloned().collect()
    }

    /// Groups with offsets on a topic (their Iggy mirrors go with the topic).
    pub fn has_topic(&self, topic: &str) -> bool {
        self.committed.keys().any(|(_, t, _)| t == topic)
    }
}

/// The Iggy consumer group mirroring a Kafka group: `kafka.<group>`, or for group
/// ids too long for an Iggy name (255 bytes), a prefix of it and a hash.
pub fn iggy_group_name(group: &str) -> String {
    const PREFIX: &str = "kafka.";
    if PREFIX.len() + group.len() <= 255 {
        return format!("{PREFIX}{group}");
    }
    let mut cut = 200;
    while !group.is_char_boundary(cut) {
        cut -= 1;
    }
    // FNV-1a: stable across builds, unlike `DefaultHasher`.
    let hash = group.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("{PREFIX}{}~{hash:016x}", &group[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition {
            topic: t.into(),
            partition: p,
        }
    }

    #[test]
    fn replay_keeps_commits_as_sent_and_applies_deletes() {
        let c = |o| CommittedOffset {
            offset: o,
            leader_epoch: 4,
            metadata: "m".into(),
        };
        let log: Vec<(u64, Bytes)> = [
            OffsetRecord::commit("g", &tp("a", 0), Some(&c(0))),
            OffsetRecord::commit("g", &tp("a", 1), Some(&c(99))),
            OffsetRecord::commit("g", &tp("b", 0), Some(&c(5))),
            OffsetRecord::commit("h", &tp("a", 0), Some(&c(7))),
            OffsetRecord::commit("g", &tp("a", 1), None),
            OffsetRecord::ForgetTopic { topic: "b".into() },
        ]
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r.encode()))
        .collect();
        let mut offsets = Offsets::default();
        log.iter().for_each(|(o, r)| offsets.apply(*o, r));
        // The compacted records rebuild the same state.
        let mut rebuilt = Offsets::default();
        offsets.compacted().iter().for_each(|r| rebuilt.apply(0, r));
        assert_eq!(rebuilt.compacted(), offsets.compacted());
        assert_eq!(offsets.compacted().len(), 2);
        for offsets in [&offsets, &rebuilt] {
            assert_eq!(offsets.get("g", &tp("a", 0)), Some(c(0)));
            assert_eq!(offsets.get("h", &tp("a", 0)), Some(c(7)));
            assert_eq!(offsets.get("g", &tp("a", 1)), None);
            assert_eq!(offsets.partitions("g"), vec![tp("a", 0)]);
            assert_eq!(offsets.groups(), vec!["g".to_string(), "h".to_string()]);
            assert!(!offsets.has_topic("b"));
        }
    }

    #[test]
    fn long_group_ids_get_bounded_names() {
        assert_eq!(iggy_group_name("app"), "kafka.app");
        let long = "é".repeat(200);
        let name = iggy_group_name(&long);
        assert!(name.len() <= 255);
        assert_ne!(name, iggy_group_name(&"é".repeat(201)));
    }
}
