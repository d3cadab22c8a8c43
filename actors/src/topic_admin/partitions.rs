//! CreatePartitions at the topic admin: a topic grows to a larger partition count, its
//! new partitions empty, checked the way Kafka's controller checks it
//! (`ReplicationControlManager.createPartitionsOfTopic`), then published in the table.
//! Replica assignments are only counted: the backend keeps one copy of each partition.

use std::sync::Arc;

use actix::prelude::*;

use super::{TopicAdmin, TopicError};
use crate::config_catalog::definitions::MAX_PARTITIONS;
use crate::store::{StoreError, TopicMeta};

/// Grow one topic to `count` partitions in all (or, with validate_only, check it).
#[derive(Message)]
#[rtype(result = "Result<Arc<TopicMeta>, TopicError>")]
pub struct CreatePartitions {
    pub name: String,
    pub count: i32,
    /// How many replica assignments the request gave, if it gave any.
    pub assignments: Option<usize>,
    pub validate_only: bool,
}

/// Kafka's checks, in its order: an increase, then one assignment per new partition;
/// then the gateway's own cap on partitions.
fn check_growth(topic: &TopicMeta, msg: &CreatePartitions) -> Result<(), TopicError> {
    let has = topic.partitions;
    if msg.count == has {
        return Err(TopicError::AlreadyHas(has));
    }
    if msg.count < has {
        return Err(not_an_increase(&topic.name, has, msg.count));
    }
    let adding = msg.count - has;
    if let Some(given) = msg.assignments.filter(|&n| n != adding as usize) {
        return Err(TopicError::BadAssignment { adding, given });
    }
    if msg.count > MAX_PARTITIONS {
        return Err(TopicError::TooManyPartitions(msg.count));
    }
    Ok(())
}

fn not_an_increase(topic: &str, has: i32, asked: i32) -> TopicError {
    TopicError::NotAnIncrease {
        topic: topic.to_string(),
        has,
        asked,
    }
}

impl Handler<CreatePartitions> for TopicAdmin {
    type Result = AtomicResponse<Self, Result<Arc<TopicMeta>, TopicError>>;

    fn handle(&mut self, msg: CreatePartitions, _: &mut Self::Context) -> Self::Result {
        let name = msg.name.clone();
        self.knowing(&name, move |act| act.grow(msg))
    }
}

impl TopicAdmin {
    fn grow(
        &mut self,
        msg: CreatePartitions,
    ) -> ResponseActFuture<Self, Result<Arc<TopicMeta>, TopicError>> {
        let configs = self.configs.borrow().clone();
        let checked = self.existing(&msg.name).and_then(|t| {
            check_growth(&t, &msg)?;
            let limits = configs.limits(&t.configs);
            Ok((t, limits))
        });
        let logs = self.logs.clone();
        let grow = async move {
            let (topic, limits) = checked?;
            let grown = Arc::new(TopicMeta {
                partitions: msg.count,
                ..(*topic).clone()
            });
            if !msg.validate_only {
                let added = logs.add_partitions(topic.name.clone(), msg.count, limits);
                added.await.map_err(|e| match e {
                    // Grown meanwhile by another gateway: answered as if seen here.
                    StoreError::HasPartitions { partitions, .. } if partitions == msg.count => {
                        TopicError::AlreadyHas(partitions)
                    }
                    StoreError::HasPartitions { partitions, .. } => {
                        not_an_increase(&topic.name, partitions, msg.count)
                    }
                    e => e.into(),
                })?;
            }
            Ok((grown, topic.partitions, msg.validate_only))
        };
        Box::pin(grow.into_actor(self).map(
            |done: Result<_, TopicError>, act, _| {
                let (topic, before, validate_only) = done?;
                if !validate_only {
                    tracing::info!(topic = %topic.name, from = before, to = topic.partitions, "partitions added");
                    act.publish(|t| t.insert(topic.clone()));
                }
                Ok(topic)
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(partitions: i32) -> TopicMeta {
        TopicMeta {
            name: "t".into(),
            id: uuid::Uuid::nil(),
            partitions,
            replication_factor: 1,
            configs: Default::default(),
        }
    }

    fn asking(count: i32, assignments: Option<usize>) -> CreatePartitions {
        CreatePartitions {
            name: "t".into(),
            count,
            assignments,
            validate_only: false,
        }
    }

    #[test]
    fn growth_is_checked_as_kafka_checks_it() {
        let t = topic(3);
        assert!(check_growth(&t, &asking(5, None)).is_ok());
        assert!(check_growth(&t, &asking(5, Some(2))).is_ok());
        let equal = check_growth(&t, &asking(3, None)).unwrap_err();
        assert_eq!(equal.to_string(), "Topic already has 3 partition(s).");
        let shrink = check_growth(&t, &asking(2, Some(9))).unwrap_err();
        assert_eq!(
            shrink.to_string(),
            "The topic t currently has 3 partition(s); 2 would not be an increase."
        );
        let bad = check_growth(&t, &asking(5, Some(1))).unwrap_err();
        assert_eq!(
            (bad.code(), bad.to_string().as_str()),
            (
                kafka_protocol::error::ResponseError::InvalidReplicaAssignment,
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
            )
        );
        let over = check_growth(&t, &asking(MAX_PARTITIONS + 1, None)).unwrap_err();
        assert_eq!(
            over.code(),
            kafka_protocol::error::ResponseError::InvalidPartitions
        );
    }
}
