//! DescribeLogDirs and DescribeTopicPartitions by hand-built request.

use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::{
    DescribeLogDirsRequest, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
};

use super::{call, topic_name, RawClient};

/// One partition's log as DescribeLogDirs lists it: (topic, partition, size in bytes,
/// offset lag, is future).
pub type Log = (String, i32, i64, i64, bool);

/// One log directory of a DescribeLogDirs answer.
#[derive(Debug)]
pub struct LogDir {
    pub error_code: i16,
    pub name: String,
    /// Every partition listed, in the order answered.
    pub logs: Vec<Log>,
    pub total_bytes: i64,
    pub usable_bytes: i64,
    /// v5+ (KIP-1066): `cordoned.log.dirs` names the directory.
    pub is_cordoned: bool,
}

/// DescribeLogDirs at `v` of the partitions named (None: every partition): the
/// top-level code (0 before v3) and each log directory.
pub fn log_dirs(c: &mut RawClient, v: i16, asked: Option<&[(&str, &[i32])]>) -> (i16, Vec<LogDir>) {
    let topics = asked.map(|asked| {
        asked
            .iter()
            .map(|(topic, partitions)| {
                DescribableLogDirTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(partitions.to_vec())
            })
            .collect()
    });
    let request = DescribeLogDirsRequest::default().with_topics(topics);
    let r = call!(c, DescribeLogDirs, v, request);
    let dirs = r
        .results
        .iter()
        .map(|d| LogDir {
            error_code: d.error_code,
            name: d.log_dir.to_string(),
            logs: (d.topics.iter())
                .flat_map(|t| {
                    t.partitions.iter().map(|p| {
                        let topic = t.name.to_string();
                        let (size, lag) = (p.partition_size, p.offset_lag);
                        (topic, p.partition_index, size, lag, p.is_future_key)
                    })
                })
                .collect(),
            total_bytes: d.total_bytes,
            usable_bytes: d.usable_bytes,
            is_cordoned: d.is_cordoned,
        })
        .collect();
    (r.error_code, dirs)
}

/// DescribeTopicPartitions v0 of `topics` (none: every topic), at most `limit`
/// partitions, from `cursor` (topic, first partition) when given.
pub fn topic_partitions(
    c: &mut RawClient,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsResponse {
    let topics = topics
        .iter()
        .map(|t| TopicRequest::default().with_name(topic_name(t)))
        .collect();
    let cursor = cursor.map(|(topic, partition)| {
        Cursor::default()
            .with_topic_name(topic_name(topic))
            .with_partition_index(partition)
    });
    let request = DescribeTopicPartitionsRequest::default()
        .with_topics(topics)
        .with_response_partition_limit(limit)
        .with_cursor(cursor);
    call!(c, DescribeTopicPartitions, 0, request)
}

/// Each topic of a DescribeTopicPartitions answer as (name, error code, partitions
/// listed), and the next cursor as (topic, partition).
pub type Page = (Vec<(String, i16, Vec<i32>)>, Option<(String, i32)>);

pub fn page(r: &DescribeTopicPartitionsResponse) -> Page {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
            let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
            (name, t.error_code, partitions)
        })
        .collect();
    let cursor = (r.next_cursor.as_ref()).map(|c| (c.topic_name.to_string(), c.partition_index));
    (topics, cursor)
}

/// Bytes the store keeps for partition 0 of `topic`, as DescribeLogDirs says.
pub fn stored_bytes(gw: &super::Gateway, topic: &str) -> i64 {
    let mut c = super::RawClient::connect(gw.addr);
    let (_, dirs) = log_dirs(&mut c, 4, Some(&[(topic, &[0])]));
    dirs.iter().flat_map(|d| &d.logs).map(|l| l.2).sum()
}
