//! The small cluster APIs a Kafka broker answers from its metadata (issue 17), by
//! hand-built requests at every served version on both stores: DescribeCluster,
//! OffsetForLeaderEpoch, ElectLeaders, the partition reassignment APIs,
//! DescribeLogDirs and DescribeTopicPartitions.

mod describe_cluster;
mod elections;
mod leader_epochs;
mod log_dirs;
mod reassignments;
mod topic_partitions;
