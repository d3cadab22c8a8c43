//! Committed offsets as a table of the metadata store: table `offsets`, one entry per
//! group and partition. The key is `<len>:<group><len>:<topic>:<partition>` (lengths
//! in bytes, so one group's entries are one prefix and no name can run into the
//! next); the value `offset ‖ leader epoch ‖ metadata` (big-endian, then UTF-8).

use bytes::{BufMut, Bytes, BytesMut};

use crate::store::{CommittedOffset, TopicPartition};

pub const TABLE: &str = "offsets";

/// The key prefix of every entry of `group`.
pub fn group_prefix(group: &str) -> String {
    format!("{}:{group}", group.len())
}

pub fn key(group: &str, tp: &TopicPartition) -> String {
    format!(
        "{}{}:{}:{}",
        group_prefix(group),
        tp.topic.len(),
        tp.topic,
        tp.partition
    )
}

/// The length-prefixed name at the start of `s`, and what follows it.
pub fn name(s: &str) -> Option<(&str, &str)> {
    let (len, rest) = s.split_once(':')?;
    let len: usize = len.parse().ok()?;
    Some((rest.get(..len)?, rest.get(len..)?))
}

/// `(group, partition)` of a key.
pub fn parse_key(key: &str) -> Option<(String, TopicPartition)> {
    let (group, rest) = name(key)?;
    let (topic, rest) = name(rest)?;
    let partition = rest.strip_prefix(':')?.parse().ok()?;
    let topic = topic.into();
    Some((group.to_string(), TopicPartition { topic, partition }))
}

pub fn encode(c: &CommittedOffset) -> Bytes {
    let mut out = BytesMut::with_capacity(12 + c.metadata.len());
    out.put_i64(c.offset);
    out.put_i32(c.leader_epoch);
    out.put_slice(c.metadata.as_bytes());
    out.freeze()
}

pub fn decode(v: &[u8]) -> Option<CommittedOffset> {
    Some(CommittedOffset {
        offset: i64::from_be_bytes(v.get(..8)?.try_into().ok()?),
        leader_epoch: i32::from_be_bytes(v.get(8..12)?.try_into().ok()?),
        metadata: String::from_utf8(v.get(12..)?.to_vec()).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_round_trip_whatever_the_names_hold() {
        for (group, topic) in [("g", "orders"), ("1:x", "2:y:3"), ("", "t"), ("é", "ü")] {
            let tp = TopicPartition {
                topic: topic.into(),
                partition: 7,
            };
            let k = key(group, &tp);
            assert!(k.starts_with(&group_prefix(group)));
            assert_eq!(parse_key(&k), Some((group.to_string(), tp)));
        }
        // A group whose name starts like another's is not under its prefix.
        let tp = TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        assert!(!key("ab", &tp).starts_with(&group_prefix("a")));
        let c = CommittedOffset {
            offset: 42,
            leader_epoch: 3,
            metadata: "meta".into(),
        };
        assert_eq!(decode(&encode(&c)), Some(c));
    }
}
