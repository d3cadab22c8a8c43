//! The gateway's own state in Iggy: one-partition topics in a gateway-owned stream
//! (setting `iggy_gateway_stream`), used as append-only logs of small records.
//! Appending gives each record a unique, ordered Iggy offset, which is what makes
//! producer-id blocks unique across restarts and across gateways sharing a server.

use bytes::Bytes;
use iggy::prelude::{
    Consumer, Identifier, IggyError, IggyMessage, MessageClient, Partitioning, PollingStrategy,
    StreamClient, TopicClient, TopicCreateOptions,
};
use iggy_common::{IggyExpiry, MaxTopicSize};

use super::pool::Conn;

/// Kafka topic definitions the gateway made (id, configs, replication factor).
pub const TOPICS: &str = "topics";
/// Producer-id blocks: record `n` owns ids `n * BLOCK ..`.
pub const PRODUCER_IDS: &str = "producer-ids";
/// Committed consumer-group offsets, as Kafka sent them.
pub const COMMITTED_OFFSETS: &str = "committed-offsets";
/// Configurations shared by every gateway (dynamic broker configurations, features).
pub const CLUSTER_CONFIGS: &str = "cluster-configs";
/// Node ids: record `n` makes `n` the id of the gateway that appended it.
pub const NODE_IDS: &str = "node-ids";
/// Gateways announcing themselves alive or leaving (`nodes.rs`).
pub const NODES: &str = "nodes";
/// The announcements kept: old ones are only history.
const NODES_MAX_BYTES: u64 = 32 << 20;
const NODES_SEGMENT_BYTES: u64 = 1 << 20;
const PAGE: u32 = 1_000;

fn named(name: &str) -> Result<Identifier, IggyError> {
    Identifier::named(name)
}

/// Creates `stream` when missing (a concurrent creator winning is fine).
pub async fn ensure_stream(conn: &Conn, stream: &str) -> Result<(), IggyError> {
    let c = conn.ready().await?;
    if c.check(c.get_stream(&named(stream)?).await)?.is_some() {
        return Ok(());
    }
    match c.check(c.create_stream(stream).await) {
        Ok(_) | Err(IggyError::StreamNameAlreadyExists(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the gateway stream and its logs; they never expire and save every write
/// (fsync too with `fsync`).
pub async fn ensure_logs(conn: &Conn, stream: &str, fsync: bool) -> Result<(), IggyError> {
    ensure_stream(conn, stream).await?;
    for topic in [
        TOPICS,
        PRODUCER_IDS,
        COMMITTED_OFFSETS,
        CLUSTER_CONFIGS,
        NODE_IDS,
        NODES,
    ] {
        let c = conn.ready().await?;
        let (stream_id, topic_id) = (named(stream)?, named(topic)?);
        if c.check(c.get_topic(&stream_id, &topic_id).await)?.is_some() {
            continue;
        }
        let options = if topic == NODES {
            // Liveness, not state: bounded, and nothing to save on every write.
            TopicCreateOptions {
                partitions_count: Some(1),
                message_expiry: Some(IggyExpiry::NeverExpire),
                max_topic_size: Some(MaxTopicSize::Custom(NODES_MAX_BYTES.into())),
                segment_size: Some(NODES_SEGMENT_BYTES.into()),
                ..TopicCreateOptions::default()
            }
        } else {
            TopicCreateOptions {
                partitions_count: Some(1),
                message_expiry: Some(IggyExpiry::NeverExpire),
                max_topic_size: Some(MaxTopicSize::Unlimited),
                messages_required_to_save: Some(1),
                enforce_fsync: fsync.then_some(true),
                ..TopicCreateOptions::default()
            }
        };
        match c.check(c.create_topic(&stream_id, topic, &options).await) {
            Ok(_) | Err(IggyError::TopicNameAlreadyExists(..)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Appends one record; returns its offset in the log.
pub async fn append(conn: &Conn, stream: &str, log: &str, record: Bytes) -> Result<u64, IggyError> {
    let mut message = [IggyMessage::builder().payload(record).build()?];
    let (stream_id, log_id) = (named(stream)?, named(log)?);
    let c = conn.ready().await?;
    let partitioning = Partitioning::partition_id(0);
    let sent = c.check(
        c.send_messages(&stream_id, &log_id, &partitioning, &mut message)
            .await,
    )?;
    match sent.confirmations.first() {
        Some(confirmation) => Ok(confirmation.base_offset),
        // Servers that do not confirm offsets: the record is the last one now only
        // if nobody else appended meanwhile, which the callers cannot rely on.
        None => Err(IggyError::InvalidOffset(0)),
    }
}

/// Every record of a log, oldest first, with its offset.
pub async fn read_all(
    conn: &Conn,
    stream: &str,
    log: &str,
) -> Result<Vec<(u64, Bytes)>, IggyError> {
    read_from(conn, stream, log, 0).await
}

/// The records of a log from offset `next` on, oldest first, with their offsets.
pub async fn read_from(
    conn: &Conn,
    stream: &str,
    log: &str,
    next: u64,
) -> Result<Vec<(u64, Bytes)>, IggyError> {
    let timed = read_timed(conn, stream, log, next).await?;
    Ok(timed.into_iter().map(|(o, _, r)| (o, r)).collect())
}

/// As [`read_from`], with each record's append time by the Iggy server's clock (µs),
/// the one clock every gateway reading the log shares.
pub async fn read_timed(
    conn: &Conn,
    stream: &str,
    log: &str,
    mut next: u64,
) -> Result<Vec<(u64, u64, Bytes)>, IggyError> {
    let mut out = Vec::new();
    loop {
        let c = conn.ready().await?;
        let strategy = PollingStrategy::offset(next);
        let polled = c.check(
            c.poll_messages(
                &named(stream)?,
                &named(log)?,
                Some(0),
                &Consumer::default(),
                &strategy,
                PAGE,
                false,
            )
            .await,
        )?;
        let Some(last) = polled.messages.last() else {
            return Ok(out);
        };
        next = last.header.offset + 1;
        out.extend(
            polled
                .messages
                .into_iter()
                .map(|m| (m.header.offset, m.header.timestamp, m.payload)),
        );
    }
}

/// State rebuilt from a log's records, one at a time, in log order.
pub trait Replay: Default {
    fn apply(&mut self, offset: u64, record: &Bytes);
}

/// State replayed from a log that other gateways append to as well: it takes new
/// records in log order only, so every gateway ends in the same state.
#[derive(Default)]
pub struct Replayed<S> {
    next: u64,
    state: S,
}

impl<S: Replay> Replayed<S> {
    pub fn new(log: &[(u64, Bytes)]) -> Self {
        let mut replayed = Replayed::default();
        replayed.extend(log);
        replayed
    }

    /// Applies the records not seen yet; any already applied are skipped.
    pub fn extend(&mut self, log: &[(u64, Bytes)]) {
        for (offset, record) in log {
            if *offset >= self.next {
                self.state.apply(*offset, record);
                self.next = offset + 1;
            }
        }
    }

    /// The offset of the first record not applied yet.
    pub fn next(&self) -> u64 {
        self.next
    }

    pub fn state(&self) -> &S {
        &self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen(Vec<u64>);

    impl Replay for Seen {
        fn apply(&mut self, offset: u64, _: &Bytes) {
            self.0.push(offset);
        }
    }

    #[test]
    fn records_apply_once_in_log_order() {
        let log = |offsets: &[u64]| -> Vec<(u64, Bytes)> {
            offsets.iter().map(|&o| (o, Bytes::new())).collect()
        };
        let mut r: Replayed<Seen> = Replayed::new(&log(&[0, 1]));
        // Two overlapping reads of the tail, the later one finishing first.
        r.extend(&log(&[2, 3, 4]));
        r.extend(&log(&[2, 3]));
        assert_eq!(r.state().0, vec![0, 1, 2, 3, 4]);
        assert_eq!(r.next(), 5);
    }
}
