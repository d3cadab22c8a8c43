//! Committed offsets mirrored into Iggy's own consumer offsets, so Iggy tools see a
//! group's progress and retention accounts for it. Kafka commits live in the
//! metadata table `offsets` (`store::meta`); the offset slots tell the log port of each
//! once it stands (`LogStore::committed`), and it is queued here and copied, behind the
//! commit and in commit order, without adding to its latency. On
//! the mapped topic, consumer group [`iggy_group_name`] (made on the first commit)
//! stores Kafka offset `K` as Iggy offset `K - 1` (Iggy stores the last consumed
//! offset, Kafka the next one to read). Commits Iggy cannot store (`K = 0`, past the
//! end) delete the mirror entry or leave it as it was; the mirror never affects what
//! Kafka clients read.

use iggy::prelude::{Consumer, ConsumerGroupClient, ConsumerOffsetClient, Identifier, IggyError};
use iggy_kafka_actors::store::{GroupCommit, TopicPartition};

use super::Inner;

/// A commit to copy into Iggy's consumer offsets: group, partition, offset (or delete).
pub type MirrorUpdate = (String, TopicPartition, Option<i64>);
pub type MirrorReceiver = tokio::sync::mpsc::Receiver<MirrorUpdate>;
/// Mirror updates waiting at most; more are dropped (the next commit catches up).
pub const MIRROR_QUEUE: usize = 10_000;

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

impl Inner {
    /// Queues the mirror updates of offsets that now stand (`LogStore::committed`).
    pub(super) fn mirror_commits(&self, commits: &[GroupCommit]) {
        for (group, tp, offset) in commits {
            let update = (group.to_string(), tp.clone(), *offset);
            if self.mirror_queue.try_send(update).is_err() {
                tracing::debug!("Iggy consumer-offset mirror queue full; skipping an update");
            }
        }
    }

    /// Applies queued commits to the Iggy mirror, one at a time, until the backend goes.
    pub(super) async fn run_mirror(inner: std::sync::Weak<Inner>, mut queue: MirrorReceiver) {
        while let Some((group, tp, offset)) = queue.recv().await {
            let Some(inner) = inner.upgrade() else { return };
            if let Err(e) = inner.mirror(&group, &tp, offset).await {
                tracing::debug!(%group, partition = %tp, error = %e, "Iggy consumer-offset mirror not updated");
            }
        }
    }

    /// Keeps the Iggy consumer offset of the group's mirror in step (the module's rules).
    pub(super) async fn mirror(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<i64>,
    ) -> Result<(), IggyError> {
        match self.mirror_once(group, tp, offset).await {
            Err(IggyError::InvalidOffset(_)) => Ok(()), // past the end: Iggy cannot hold it
            Err(_) => {
                // The session may have been evicted while idle: start afresh, once.
                let key = (group.to_string(), tp.topic.to_string());
                self.mirror_groups.lock().remove(&key);
                self.pools.mirror.reset().await;
                self.mirror_once(group, tp, offset).await
            }
            ok => ok,
        }
    }

    pub(super) async fn mirror_once(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Option<i64>,
    ) -> Result<(), IggyError> {
        let name = iggy_group_name(group);
        let (stream, topic) = self.names.iggy(&tp.topic);
        let (stream, topic) = (Identifier::named(stream)?, Identifier::named(topic)?);
        let group_id = Identifier::named(&name)?;
        let c = self.pools.mirror.ready().await?;
        let key = (group.to_string(), tp.topic.to_string());
        if !self.mirror_groups.lock().contains(&key) {
            match c.check(c.create_consumer_group(&stream, &topic, &name).await) {
                Ok(_) | Err(IggyError::ConsumerGroupNameAlreadyExists(..)) => {}
                Err(e) => return Err(e),
            }
            // Iggy stores a group's offsets only for one of its members.
            c.check(c.join_consumer_group(&stream, &topic, &group_id).await)?;
            self.mirror_groups.lock().insert(key);
        }
        let consumer = Consumer::group(group_id);
        let partition = Some(tp.partition as u32);
        let done = match offset {
            Some(k) if k > 0 => {
                c.store_consumer_offset(&consumer, &stream, &topic, partition, k as u64 - 1)
                    .await
            }
            _ => {
                c.delete_consumer_offset(&consumer, &stream, &topic, partition)
                    .await
            }
        };
        match c.check(done) {
            Err(IggyError::ConsumerOffsetNotFound(_)) if !matches!(offset, Some(k) if k > 0) => {
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_group_ids_get_bounded_names() {
        assert_eq!(iggy_group_name("app"), "kafka.app");
        let long = "é".repeat(200);
        let name = iggy_group_name(&long);
        assert!(name.len() <= 255);
        assert_ne!(name, iggy_group_name(&"é".repeat(201)));
    }
}
