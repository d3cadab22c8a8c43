//! DescribeLogDirs: one log directory per gateway, where its store keeps the logs (the
//! embedded store's data directory, or `iggy://<address>`), with the size of each
//! partition asked for (every partition when `topics` is null), as a Kafka broker
//! answers it (`ReplicaManager.describeLogDirs`): partitions of unknown topics, and
//! unknown partitions, are left out; no replica is ever a future one or behind, so
//! `offset_lag` is 0 and `is_future_key` false. The volume's total and usable bytes
//! (v4) are unknown (-1): neither store measures its disk. The directory is cordoned
//! (v5, KIP-1066) when `cordoned.log.dirs` names it or is `*`, as Kafka reads that
//! configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_util::{stream, StreamExt};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::store::{StoreError, TopicMeta};
use crate::topic_admin::internal::is_internal;

/// Topics whose sizes are asked of the store at once.
const CONCURRENT_TOPICS: usize = 4;

/// Needs DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED otherwise, with no log
/// directory (before v3 the answer has no error code; the empty list says it).
pub async fn handle(
    gw: Gateway,
    req: DescribeLogDirsRequest,
    access: Access,
) -> DescribeLogDirsResponse {
    if !access.cluster(Operation::Describe) {
        let denied = ResponseError::ClusterAuthorizationFailed;
        return DescribeLogDirsResponse::default().with_error_code(denied.code());
    }
    let logs = gw.partitions.logs().clone();
    let wanted = wanted(&gw, req).await;
    let sized: Vec<_> = stream::iter(wanted)
        .map(|(topic, partitions)| {
            let logs = logs.clone();
            async move {
                // `__consumer_offsets` has no logs: committed offsets live in the
                // offset store, so its partitions are listed, and empty, as Fetch reads them.
                let sizes = if is_internal(&topic.name) {
                    Ok(vec![0; topic.partitions.max(0) as usize])
                } else {
                    logs.sizes(topic.name.clone()).await
                };
                (topic, partitions, sizes)
            }
        })
        .buffered(CONCURRENT_TOPICS)
        .collect()
        .await;
    let dir = StrBytes::from_string(logs.log_dir());
    let mut topics = Vec::new();
    for (topic, partitions, sizes) in sized {
        let sizes = match sizes {
            Ok(sizes) => sizes,
            // Deleted since the table was read: it has no logs left to describe.
            Err(StoreError::UnknownTopic(_)) => continue,
            Err(e) => {
                tracing::warn!(topic = %topic.name, error = %e, "partition sizes unreadable");
                let failed = DescribeLogDirsResult::default()
                    .with_error_code(ResponseError::KafkaStorageError.code())
                    .with_log_dir(dir);
                return DescribeLogDirsResponse::default().with_results(vec![failed]);
            }
        };
        // A partition the store does not have yet (added through another gateway
        // and not seen by this one) has no log here either.
        let partitions = partitions
            .into_iter()
            .filter_map(|p| {
                let size = *sizes.get(usize::try_from(p).ok()?)?;
                Some(
                    DescribeLogDirsPartition::default()
                        .with_partition_index(p)
                        .with_partition_size(i64::try_from(size).unwrap_or(i64::MAX)),
                )
            })
            .collect();
        topics.push(
            DescribeLogDirsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.name.to_string())))
                .with_partitions(partitions),
        );
    }
    let cordoned = is_cordoned(
        gw.topics.config().broker_value("cordoned.log.dirs"),
        dir.as_str(),
    );
    let result = DescribeLogDirsResult::default()
        .with_is_cordoned(cordoned)
        .with_log_dir(dir)
        .with_topics(topics)
        .with_total_bytes(-1)
        .with_usable_bytes(-1);
    DescribeLogDirsResponse::default().with_results(vec![result])
}

/// Whether `cordoned.log.dirs` (a comma-separated list, or `*` for every directory)
/// names the log directory `dir`.
fn is_cordoned(configured: Option<&str>, dir: &str) -> bool {
    configured
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .any(|entry| entry == "*" || entry == dir)
}

/// The topics and partitions to describe, by name; the known ones only. A topic
/// whose partitions named are all unknown is left out (Kafka lists such a topic with
/// no partitions).
async fn wanted(gw: &Gateway, req: DescribeLogDirsRequest) -> Vec<(Arc<TopicMeta>, Vec<i32>)> {
    let Some(asked) = req.topics else {
        return (gw.topics.table().all().into_iter())
            .map(|t| (t.clone(), (0..t.partitions).collect()))
            .collect();
    };
    // A topic this gateway has not seen may have just been made through another.
    let table = gw
        .topics
        .table_knowing(asked.iter().map(|t| t.topic.as_str()))
        .await;
    let mut by_topic: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    for t in &asked {
        let partitions = by_topic.entry(t.topic.as_str()).or_default();
        partitions.extend(t.partitions.iter().copied());
    }
    by_topic
        .into_iter()
        .filter_map(|(name, partitions)| {
            let topic = table.get(name)?;
            let known: Vec<i32> = (partitions.into_iter())
                .filter(|p| (0..topic.partitions).contains(p))
                .collect();
            (!known.is_empty()).then(|| (topic.clone(), known))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::is_cordoned;

    #[test]
    fn cordoned_when_listed_or_every_directory() {
        assert!(is_cordoned(Some("/data/a, /data/b"), "/data/b"));
        assert!(is_cordoned(Some("*"), "iggy://127.0.0.1:8090"));
        assert!(!is_cordoned(Some("/data/a"), "/data/b"));
        assert!(!is_cordoned(Some(""), "/data/b"));
        assert!(!is_cordoned(None, "/data/b"));
    }
}
