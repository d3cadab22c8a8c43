//! Committed consumer-group offsets in the embedded store: keyspace `offsets`, key
//! `group ‖ topic ‖ partition` (each name length-prefixed, so one group's entries
//! are one prefix), value `offset ‖ leader epoch ‖ metadata`.

use std::collections::BTreeSet;

use fjall::Keyspace;
use iggy_kafka_actors::backend::{CommittedOffset, TopicPartition};

use super::StoreError;

pub struct Offsets {
    keyspace: Keyspace,
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn group_prefix(group: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + group.len());
    push_name(&mut key, group);
    key
}

fn key(group: &str, tp: &TopicPartition) -> Vec<u8> {
    let mut key = group_prefix(group);
    push_name(&mut key, &tp.topic);
    key.extend_from_slice(&tp.partition.to_be_bytes());
    key
}

/// Splits a key back into `(group, topic, partition)`.
fn parse_key(key: &[u8]) -> Option<(String, TopicPartition)> {
    let take_name = |at: usize| -> Option<(String, usize)> {
        let len = u16::from_be_bytes(key.get(at..at + 2)?.try_into().ok()?) as usize;
        let name = std::str::from_utf8(key.get(at + 2..at + 2 + len)?).ok()?;
        Some((name.to_string(), at + 2 + len))
    };
    let (group, at) = take_name(0)?;
    let (topic, at) = take_name(at)?;
    let partition = i32::from_be_bytes(key.get(at..at + 4)?.try_into().ok()?);
    Some((
        group,
        TopicPartition {
            topic: topic.into(),
            partition,
        },
    ))
}

fn encode(c: &CommittedOffset) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + c.metadata.len());
    out.extend_from_slice(&c.offset.to_be_bytes());
    out.extend_from_slice(&c.leader_epoch.to_be_bytes());
    out.extend_from_slice(c.metadata.as_bytes());
    out
}

fn decode(v: &[u8]) -> Option<CommittedOffset> {
    Some(CommittedOffset {
        offset: i64::from_be_bytes(v.get(..8)?.try_into().ok()?),
        leader_epoch: i32::from_be_bytes(v.get(8..12)?.try_into().ok()?),
        metadata: String::from_utf8(v.get(12..)?.to_vec()).ok()?,
    })
}

impl Offsets {
    pub fn new(keyspace: Keyspace) -> Self {
        Offsets { keyspace }
    }

    pub fn commit(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<CommittedOffset>,
    ) -> Result<(), StoreError> {
        match offset {
            Some(c) => self.keyspace.insert(key(group, tp), encode(&c))?,
            None => self.keyspace.remove(key(group, tp))?,
        }
        Ok(())
    }

    pub fn get(
        &self,
        group: &str,
        tp: &TopicPartition,
    ) -> Result<Option<CommittedOffset>, StoreError> {
        match self.keyspace.get(key(group, tp))? {
            None => Ok(None),
            Some(v) => decode(&v)
                .map(Some)
                .ok_or_else(|| StoreError::BadOffset(group.to_string())),
        }
    }

    pub fn partitions(&self, group: &str) -> Result<Vec<TopicPartition>, StoreError> {
        let mut out = Vec::new();
        for kv in self.keyspace.prefix(group_prefix(group)) {
            let k = kv.key()?;
            let (_, tp) = parse_key(&k).ok_or_else(|| StoreError::BadOffset(group.to_string()))?;
            out.push(tp);
        }
        Ok(out)
    }

    pub fn groups(&self) -> Result<Vec<String>, StoreError> {
        let mut groups = BTreeSet::new();
        for kv in self.keyspace.iter() {
            let k = kv.key()?;
            if let Some((group, _)) = parse_key(&k) {
                groups.insert(group);
            }
        }
        Ok(groups.into_iter().collect())
    }

    /// Removes every group's offsets on a topic (the topic is being deleted).
    pub fn forget_topic(&self, topic: &str) -> Result<(), StoreError> {
        let mut doomed = Vec::new();
        for kv in self.keyspace.iter() {
            let k = kv.key()?;
            if parse_key(&k).is_some_and(|(_, tp)| &*tp.topic == topic) {
                doomed.push(k);
            }
        }
        for k in doomed {
            self.keyspace.remove(k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_round_trip() {
        let tp = TopicPartition {
            topic: "orders".into(),
            partition: 7,
        };
        assert_eq!(parse_key(&key("g", &tp)), Some(("g".to_string(), tp)));
        let c = CommittedOffset {
            offset: 42,
            leader_epoch: 3,
            metadata: "meta".into(),
        };
        assert_eq!(decode(&encode(&c)), Some(c));
    }
}
