//! The cluster APIs answered from the gateways' own view: DescribeCluster,
//! OffsetForLeaderEpoch, ElectLeaders, the partition reassignment APIs,
//! DescribeLogDirs and DescribeTopicPartitions.

use crate::support;

use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::*;
use support::describe::{log_dirs, topic_partitions};
use support::partitions::{elect, reassign, reassignments};
use support::{call, RawClient};

use super::Topic;

pub(super) fn describe_cluster(c: &mut RawClient, v: i16) {
    let request = DescribeClusterRequest::default().with_endpoint_type(1);
    let r = call!(c, DescribeCluster, v, request);
    assert_eq!((r.error_code, r.brokers.len()), (0, 1), "{r:?}");
    assert_eq!(r.controller_id, r.brokers[0].broker_id);
}

/// Epoch 0 of the test topic's partition ends at its high watermark.
pub(super) fn offset_for_leader_epoch(c: &mut RawClient, v: i16, t: &Topic) {
    let p = OffsetForLeaderPartition::default()
        .with_partition(0)
        .with_current_leader_epoch(0)
        .with_leader_epoch(0);
    let topic = OffsetForLeaderTopic::default()
        .with_topic(t.name.clone())
        .with_partitions(vec![p]);
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![topic]);
    let r = call!(c, OffsetForLeaderEpoch, v, request);
    let p = &r.topics[0].partitions[0];
    let expected = (0, 0, t.values.len() as i64);
    assert_eq!(
        (p.error_code, p.leader_epoch, p.end_offset),
        expected,
        "{r:?}"
    );
}

/// Partition 0 of the test topic needs no election (ELECTION_NOT_NEEDED, 84).
pub(super) fn elect_leaders(c: &mut RawClient, v: i16, t: &Topic) {
    let (code, answers) = elect(c, v, 0, Some(&[(t.name.as_str(), &[0])]));
    assert_eq!(
        (code, answers.len(), answers[0].2),
        (0, 1, 84),
        "{answers:?}"
    );
}

/// Nothing is being reassigned (46); a target is refused (45: 39, INVALID_REPLICA_ASSIGNMENT).
pub(super) fn list_partition_reassignments(c: &mut RawClient, v: i16) {
    assert_eq!(v, 0);
    assert_eq!(reassignments(c, None), (0, vec![]));
}

pub(super) fn alter_partition_reassignments(c: &mut RawClient, v: i16, t: &Topic) {
    let (code, answers) = reassign(c, v, &[(t.name.as_str(), 0, Some(&[0]))]);
    assert_eq!(
        (code, answers.len(), answers[0].2),
        (0, 1, 39),
        "{answers:?}"
    );
}

/// One log directory, where the test topic's partition holds what was produced.
pub(super) fn describe_log_dirs(c: &mut RawClient, v: i16, t: &Topic) {
    let (code, dirs) = log_dirs(c, v, Some(&[(t.name.as_str(), &[0])]));
    assert_eq!((code, dirs.len()), (0, 1), "{dirs:?}");
    let logs = &dirs[0].logs;
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!((logs[0].1, logs[0].2 > 0), (0, true), "{logs:?}");
    assert!(!dirs[0].is_cordoned, "{dirs:?}");
    if v >= 5 {
        // KIP-1066: cordoned once `cordoned.log.dirs` names every directory (`*`),
        // and no longer when the configuration is deleted (SET 0, DELETE 1).
        // A per-broker configuration: set on this gateway's node id, not cluster-wide.
        let metadata = MetadataRequest::default().with_topics(Some(Vec::new()));
        let node = call!(c, Metadata, 12, metadata).brokers[0]
            .node_id
            .0
            .to_string();
        for (op, value, cordoned) in [(0, Some("*"), true), (1, None, false)] {
            let ops: &[_] = &[("cordoned.log.dirs", op, value)];
            let set = support::configs::incremental(c, 1, &[((4, node.as_str()), ops)], false);
            assert_eq!(set, [(0, None)]);
            let (_, dirs) = log_dirs(c, v, Some(&[(t.name.as_str(), &[0])]));
            assert_eq!(dirs[0].is_cordoned, cordoned, "{dirs:?}");
        }
    }
}

/// The test topic's one partition, with the topic's id.
pub(super) fn describe_topic_partitions(c: &mut RawClient, v: i16, t: &Topic) {
    assert_eq!(v, 0);
    let r = topic_partitions(c, &[t.name.as_str()], 10, None);
    assert_eq!(r.topics.len(), 1, "{r:?}");
    let topic = &r.topics[0];
    assert_eq!(
        (topic.error_code, topic.topic_id, topic.partitions.len()),
        (0, t.id, 1)
    );
    assert_eq!(r.next_cursor, None);
}
