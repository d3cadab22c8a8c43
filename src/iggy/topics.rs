//! Kafka topics as Iggy topics (`docs/IGGY_MAPPING.md`, "Topics"): which Iggy topics
//! are Kafka topics, and how a topic's limits become Iggy topic options.

use std::time::{Duration, Instant};

use iggy::prelude::{
    Identifier, IggyByteSize, IggyDuration, IggyError, IggyExpiry, MaxTopicSize, PartitionClient,
    PollingStrategy, TopicClient, TopicCreateOptions, TopicDetails, TopicUpdateOptions,
};
use iggy_kafka_actors::store::log::LogInfo;
use iggy_kafka_actors::store::{StoreError, StoreResult, TopicLimits, TopicPartition};

use super::errors::{backend_error, named};
use super::{gateway_log, pool, Inner};

/// The most partitions Iggy adds in one call (`MAX_PARTITIONS_COUNT` of its SDK).
const PARTITIONS_PER_CALL: u32 = 1000;
/// How long a topic just made may read another's messages before CreateTopics gives up
/// on it (`until_empty`; measured: about 12 ms).
const EMPTY_WITHIN: Duration = Duration::from_secs(5);

/// Kafka topic names Kafka clients accept; native Iggy topics named otherwise are
/// not served.
fn is_kafka_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Iggy's message expiry for a topic's limits.
pub(super) fn message_expiry(limits: &TopicLimits) -> IggyExpiry {
    // Iggy counts in microseconds: longer than that can hold is forever.
    match limits
        .retention_ms
        .filter(|ms| ms.checked_mul(1000).is_some())
    {
        Some(ms) => IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_millis(ms))),
        None => IggyExpiry::NeverExpire,
    }
}

/// Iggy's topic size cap for a topic's limits: Kafka's is per partition. Iggy refuses
/// a cap below one segment (`segment`, when known), so a smaller one is raised to it.
pub(super) fn max_topic_size(
    limits: &TopicLimits,
    partitions: u32,
    segment: Option<u64>,
) -> MaxTopicSize {
    match limits.retention_bytes {
        Some(b) => {
            let cap = b.saturating_mul(u64::from(partitions.max(1)));
            MaxTopicSize::Custom(IggyByteSize::from(cap.max(segment.unwrap_or(0))))
        }
        None => MaxTopicSize::Unlimited,
    }
}

/// The segment size an Iggy topic was made with, as it reports it.
pub(super) fn segment_size(details: &iggy::prelude::TopicDetails) -> Option<u64> {
    details
        .options
        .iter()
        .find(|(key, _)| key.as_bytes() == iggy_common::topic_option_keys::SEGMENT_SIZE.as_bytes())
        .and_then(|(_, option)| option.value.as_uint64().ok())
}

/// Iggy options for a new topic (`docs/IGGY_MAPPING.md`, "Topics"). The size cap is
/// set once the topic exists (`Inner::apply_limits`): it depends on the segment size
/// Iggy chose.
pub(super) fn topic_options(
    partitions: i32,
    limits: &TopicLimits,
    fsync: bool,
) -> TopicCreateOptions {
    let partitions = partitions.max(1) as u32;
    // Iggy's bounds: a multiple of 512 bytes from 1 MiB to 1 GiB; otherwise its default.
    let segment_size = limits
        .segment_bytes
        .filter(|b| (1 << 20..=1 << 30).contains(b) && b % 512 == 0)
        .map(IggyByteSize::from);
    TopicCreateOptions {
        partitions_count: Some(partitions),
        message_expiry: Some(message_expiry(limits)),
        max_topic_size: Some(MaxTopicSize::Unlimited),
        segment_size,
        enforce_fsync: fsync.then_some(true),
        // Iggy acknowledges writes it holds in memory and saves them every 1024
        // messages by default: a crash of the Iggy process would lose acknowledged
        // records. Saving every write keeps them (fsync is `iggy_fsync`).
        messages_required_to_save: Some(1),
        ..TopicCreateOptions::default()
    }
}

impl Inner {
    /// Every Kafka topic's Iggy topic: those of the default stream whose names Kafka
    /// accepts, and the ones `iggy_topics` places elsewhere.
    pub(super) async fn list_logs(&self) -> StoreResult<Vec<LogInfo>> {
        let err = |e| backend_error(e, None, "");
        let default = self.names.default_stream();
        let c = self.admin().await?;
        let mut found: Vec<LogInfo> = c
            .check(c.get_topics(&named(default)?).await)
            .map_err(err)?
            .into_iter()
            .filter_map(|t| {
                let kafka = self.names.kafka(default, &t.name)?;
                Some(log_info(
                    kafka,
                    t.created_at.as_micros(),
                    t.partitions_count,
                ))
            })
            .collect();
        for (kafka, stream, topic) in self.names.elsewhere() {
            let details = c.check(c.get_topic(&named(stream)?, &named(topic)?).await);
            match details {
                Ok(Some(t)) => found.push(log_info(
                    kafka,
                    t.created_at.as_micros(),
                    t.partitions_count,
                )),
                Ok(None)
                | Err(IggyError::StreamIdNotFound(..) | IggyError::StreamNameNotFound(..)) => {}
                Err(e) => return Err(err(e)),
            }
        }
        found.retain(|l| is_kafka_name(&l.name));
        for log in &found {
            self.seen_incarnation(log);
        }
        Ok(found)
    }

    /// Notes the incarnation a topic's logs are in. Found in another than last seen
    /// (deleted and made again by another gateway or a native client), what was kept
    /// of the old one's partitions goes: its reads ahead would serve its records.
    fn seen_incarnation(&self, log: &LogInfo) {
        let before = self
            .incarnations
            .lock()
            .insert(log.name.clone(), log.incarnation);
        if before != Some(log.incarnation) {
            self.forget_topic(&log.name);
        }
    }

    /// Forgets what is kept of a topic's partitions and its mirror groups.
    fn forget_topic(&self, name: &str) {
        self.log_starts.lock().retain(|tp, _| &*tp.topic != name);
        self.known_ends.lock().retain(|tp, _| &*tp.topic != name);
        self.record_sizes.lock().retain(|tp, _| &*tp.topic != name);
        self.read_ahead.forget_topic(name);
        self.mirror_groups.lock().retain(|(_, t)| t != name);
    }

    /// Makes the Iggy topic of a Kafka topic, with `limits` applied; its incarnation is
    /// Iggy's creation time of it.
    pub(super) async fn create_log(
        &self,
        name: &str,
        partitions: i32,
        limits: TopicLimits,
    ) -> StoreResult<LogInfo> {
        let err = |e| backend_error(e, None, name);
        let (stream, topic) = self.names.iggy(name);
        gateway_log::ensure_stream(&self.pools.admin, stream)
            .await
            .map_err(err)?;
        let (stream_id, topic_name) = (named(stream)?, topic.to_string());
        // Iggy makes at most PARTITIONS_PER_CALL partitions a call: the rest are added.
        let first = partitions.clamp(1, PARTITIONS_PER_CALL as i32);
        let options = topic_options(first, &limits, self.config.fsync);
        let c = self.admin().await?;
        let mut details = c
            .check(c.create_topic(&stream_id, &topic_name, &options).await)
            .map_err(err)?;
        let topic_id = named(&topic_name)?;
        if partitions > first {
            let ids = (&stream_id, &topic_id);
            match self.grow(&c, name, ids, partitions as u32).await {
                Ok(d) => details = d,
                Err(e) => {
                    // Half made, it would serve fewer partitions than asked: undo it.
                    tracing::warn!(topic = %name, error = %e, "cannot add the topic's partitions; deleting it again");
                    let _ = c.check(c.delete_topic(&stream_id, &topic_id).await);
                    return Err(e);
                }
            }
        }
        drop(c);
        self.until_empty(name, details.partitions_count).await?;
        // The size cap needs the segment size the topic got (see `max_topic_size`).
        if limits.retention_bytes.is_some() {
            let capped = self
                .apply_limits((&stream_id, &topic_id, &topic_name), &details, &limits)
                .await;
            if let Err(e) = capped {
                // Without its cap it would keep too much: undo it rather than leave it
                // half made.
                tracing::warn!(topic = %name, error = %e, "cannot cap the topic; deleting it again");
                if let Ok(c) = self.admin().await {
                    let _ = c.check(c.delete_topic(&stream_id, &topic_id).await);
                }
                return Err(e);
            }
        }
        let made = log_info(
            name,
            details.created_at.as_micros(),
            details.partitions_count,
        );
        self.seen_incarnation(&made);
        Ok(made)
    }

    /// Waits until every partition of a topic just made reads empty. For a few
    /// milliseconds after a topic is deleted, iggy-server (0.9.0-edge.5) serves that
    /// topic's messages through a topic made right after it, partition by partition
    /// (`iggy_backend::topics::a_topic_made_right_after_a_deletion_reads_only_its_own_records`):
    /// a consumer told of the new topic at once would read them as its own.
    async fn until_empty(&self, name: &str, partitions: u32) -> StoreResult<()> {
        let started = Instant::now();
        let mut waiting: Vec<u32> = (0..partitions).collect();
        loop {
            let mut still = Vec::new();
            for p in waiting {
                let tp = TopicPartition {
                    topic: name.into(),
                    partition: p as i32,
                };
                let polled =
                    (self.poll(self.pools.reader(), &tp, PollingStrategy::offset(0), 1)).await?;
                if !polled.messages.is_empty() {
                    still.push(p);
                }
            }
            if still.is_empty() {
                return Ok(());
            }
            if started.elapsed() > EMPTY_WITHIN {
                return Err(StoreError::unavailable(format!(
                    "topic {name} still reads a deleted topic's messages in {} partitions after {EMPTY_WITHIN:?}",
                    still.len()
                )));
            }
            tracing::debug!(topic = %name, partitions = still.len(), "a topic just made reads a deleted topic's messages; waiting");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waiting = still;
        }
    }

    /// Deletes a Kafka topic's Iggy topic and forgets what was kept of its partitions.
    pub(super) async fn delete_log(&self, name: &str) -> StoreResult<()> {
        let (stream_id, topic_id) = self.ids(name)?;
        let c = self.admin().await?;
        c.check(c.delete_topic(&stream_id, &topic_id).await)
            .map_err(|e| backend_error(e, None, name))?;
        drop(c);
        self.incarnations.lock().remove(name);
        self.forget_topic(name);
        Ok(())
    }

    /// Grows a Kafka topic's Iggy topic to `partitions` (Iggy's `create_partitions`
    /// adds them after the last, so partition numbers stay Kafka's), counting from what
    /// Iggy holds now, which another gateway may have grown already; then applies
    /// `limits` again, as the size cap counts the partitions. Its incarnation stays.
    pub(super) async fn add_partitions(
        &self,
        name: &str,
        partitions: i32,
        limits: TopicLimits,
    ) -> StoreResult<()> {
        let err = |e| backend_error(e, None, name);
        let (stream, topic) = self.names.iggy(name);
        let (stream_id, topic_id) = (named(stream)?, named(topic)?);
        let c = self.admin().await?;
        let has = c
            .check(c.get_topic(&stream_id, &topic_id).await)
            .map_err(err)?
            .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?
            .partitions_count;
        let wanted = u32::try_from(partitions).unwrap_or(0);
        if wanted <= has {
            return Err(StoreError::HasPartitions {
                topic: name.to_string(),
                partitions: has as i32,
            });
        }
        let details = self.grow(&c, name, (&stream_id, &topic_id), wanted).await?;
        drop(c);
        tracing::info!(topic = %name, from = has, to = details.partitions_count, "partitions added to the Iggy topic");
        if limits.retention_bytes.is_some() {
            self.apply_limits((&stream_id, &topic_id, topic), &details, &limits)
                .await?;
        }
        Ok(())
    }

    /// Adds partitions to the Iggy topic of Kafka topic `name` until it has `wanted`, at
    /// most PARTITIONS_PER_CALL a call (Iggy's limit); its details afterwards.
    async fn grow(
        &self,
        c: &pool::Lease<'_>,
        name: &str,
        (stream_id, topic_id): (&Identifier, &Identifier),
        wanted: u32,
    ) -> StoreResult<TopicDetails> {
        let err = |e| backend_error(e, None, name);
        loop {
            let details = c
                .check(c.get_topic(stream_id, topic_id).await)
                .map_err(err)?
                .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?;
            if details.partitions_count >= wanted {
                return Ok(details);
            }
            let adding = (wanted - details.partitions_count).min(PARTITIONS_PER_CALL);
            c.check(c.create_partitions(stream_id, topic_id, adding).await)
                .map_err(err)?;
        }
    }

    /// Bytes each partition of a Kafka topic's Iggy topic takes, as Iggy counts them
    /// (its messages as stored, records DeleteRecords hid included), by partition.
    pub(super) async fn sizes(&self, name: &str) -> StoreResult<Vec<u64>> {
        let err = |e| backend_error(e, None, name);
        let (stream_id, topic_id) = self.ids(name)?;
        let c = self.pools.reader().ready().await.map_err(err)?;
        let details = c
            .check(c.get_topic(&stream_id, &topic_id).await)
            .map_err(err)?
            .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?;
        drop(c);
        let mut sizes = vec![0; details.partitions_count as usize];
        for p in &details.partitions {
            if let Some(size) = sizes.get_mut(p.id as usize) {
                *size = p.size.as_bytes_u64();
            }
        }
        Ok(sizes)
    }

    /// Applies new limits to a Kafka topic's Iggy topic.
    pub(super) async fn set_limits(&self, name: &str, limits: TopicLimits) -> StoreResult<()> {
        let (stream, topic) = self.names.iggy(name);
        let (stream_id, topic_id) = (named(stream)?, named(topic)?);
        let c = self.admin().await?;
        let details = c
            .check(c.get_topic(&stream_id, &topic_id).await)
            .map_err(|e| backend_error(e, None, name))?
            .ok_or_else(|| StoreError::UnknownTopic(name.to_string()))?;
        drop(c);
        self.apply_limits((&stream_id, &topic_id, topic), &details, &limits)
            .await
    }

    /// Sets an Iggy topic's message expiry and size cap from `limits`.
    pub(super) async fn apply_limits(
        &self,
        (stream_id, topic_id, topic_name): (&Identifier, &Identifier, &str),
        details: &iggy::prelude::TopicDetails,
        limits: &TopicLimits,
    ) -> StoreResult<()> {
        let partitions = details.partitions_count;
        let options = TopicUpdateOptions {
            message_expiry: Some(message_expiry(limits)),
            max_topic_size: Some(max_topic_size(limits, partitions, segment_size(details))),
            ..TopicUpdateOptions::default()
        };
        let c = self.admin().await?;
        c.check(
            c.update_topic(stream_id, topic_id, topic_name, &options)
                .await,
        )
        .map_err(|e| backend_error(e, None, topic_name))
    }
}

fn log_info(name: &str, created_micros: u64, partitions: u32) -> LogInfo {
    LogInfo {
        name: name.into(),
        partitions: partitions as i32,
        incarnation: created_micros,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_limits_map_onto_iggy_topic_options() {
        let limits = TopicLimits {
            retention_ms: Some(60_000),
            retention_bytes: Some(1000),
            segment_bytes: Some(1 << 20),
        };
        let o = topic_options(3, &limits, false);
        assert_eq!(o.partitions_count, Some(3));
        assert_eq!(
            o.message_expiry,
            Some(IggyExpiry::ExpireDuration(IggyDuration::new(
                Duration::from_secs(60)
            )))
        );
        assert_eq!(o.max_topic_size, Some(MaxTopicSize::Unlimited));
        assert_eq!(
            max_topic_size(&limits, 3, None),
            MaxTopicSize::Custom(IggyByteSize::from(3000))
        );
        assert_eq!(
            max_topic_size(&limits, 3, Some(1 << 20)),
            MaxTopicSize::Custom(IggyByteSize::from(1 << 20)),
            "at least one segment"
        );
        assert_eq!(o.segment_size, Some(IggyByteSize::from(1 << 20)));
        let kept = topic_options(3, &TopicLimits::default(), true);
        assert_eq!(kept.message_expiry, Some(IggyExpiry::NeverExpire));
        assert_eq!(kept.max_topic_size, Some(MaxTopicSize::Unlimited));
        assert_eq!(kept.enforce_fsync, Some(true));
        assert_eq!(kept.messages_required_to_save, Some(1));
        let odd = TopicLimits {
            // Kafka's Long.MAX_VALUE "forever", and a size Iggy cannot take.
            retention_ms: Some(i64::MAX as u64),
            segment_bytes: Some(100),
            ..TopicLimits::default()
        };
        let o = topic_options(3, &odd, false);
        assert_eq!(o.message_expiry, Some(IggyExpiry::NeverExpire));
        assert_eq!(o.segment_size, None);
    }
}
