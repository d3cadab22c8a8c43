//! The small cluster APIs a Kafka broker answers from its metadata (issue 17), by
//! hand-built requests at every served version on both stores: DescribeCluster,
//! OffsetForLeaderEpoch, ElectLeaders and the partition reassignment APIs.

mod describe_cluster;
mod elections;
mod leader_epochs;
mod reassignments;
