//! The gateway's own logs in Iggy: one-partition topics in a gateway-owned stream
//! (setting `iggy_gateway_stream`), used as append-only logs of small records, each
//! with a unique, ordered Iggy offset. The metadata tables (`meta/`) are such logs.
//!
//! A state log is snapshotted: every `iggy_snapshot_records` records or so, a gateway
//! writes the records that rebuild the whole state to the log's companion
//! `<log>.snapshots`, ending with a marker naming the offset it covers.
//! Startup loads the latest snapshot and replays only what follows it, and the logs
//! are capped in size ([`STATE_LOG_MAX_BYTES`]): Iggy drops their oldest segments,
//! long covered by a snapshot. Should records a snapshot does not cover ever be gone,
//! loading fails naming the log instead of serving a state with a hole in it.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use iggy::prelude::{
    Consumer, Identifier, IggyError, IggyMessage, MessageClient, Partitioning, PollingStrategy,
    StreamClient, TopicClient, TopicCreateOptions,
};
use iggy_common::{IggyExpiry, MaxTopicSize};
use parking_lot::Mutex;

use super::pool::Conn;

const PAGE: u32 = 1_000;
/// Size cap of a snapshotted log and of its snapshots: thousands of snapshots' worth of
/// records, so what Iggy drops is long covered. A snapshot must stay well under it.
const STATE_LOG_MAX_BYTES: u64 = 1 << 30;
const STATE_SEGMENT_BYTES: u64 = 64 << 20;
/// Largest snapshot message; a bigger snapshot is split over several.
const SNAPSHOT_CHUNK_BYTES: usize = 512 << 10;
const CHUNK: u8 = b'C';
const MARKER: u8 = b'M';

/// The companion log holding a state log's snapshots.
pub fn snapshots_of(log: &str) -> String {
    format!("{log}.snapshots")
}

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

/// Options of a state log and of its snapshot log: one partition, never expiring,
/// every write saved (fsync too with `fsync`), capped at [`STATE_LOG_MAX_BYTES`].
fn state_log_options(fsync: bool) -> TopicCreateOptions {
    TopicCreateOptions {
        partitions_count: Some(1),
        message_expiry: Some(IggyExpiry::NeverExpire),
        max_topic_size: Some(MaxTopicSize::Custom(STATE_LOG_MAX_BYTES.into())),
        segment_size: Some(STATE_SEGMENT_BYTES.into()),
        messages_required_to_save: Some(1),
        enforce_fsync: fsync.then_some(true),
        ..TopicCreateOptions::default()
    }
}

/// Creates state log `log` and its snapshot log in `stream` when missing (a concurrent
/// creator winning is fine), with the options of the state logs above. A log that
/// exists keeps the options it was made with.
pub async fn ensure_state_log(
    conn: &Conn,
    stream: &str,
    log: &str,
    fsync: bool,
) -> Result<(), IggyError> {
    let stream_id = named(stream)?;
    for topic in [log.to_string(), snapshots_of(log)] {
        let c = conn.ready().await?;
        if c.check(c.get_topic(&stream_id, &named(&topic)?).await)?
            .is_some()
        {
            continue;
        }
        let options = state_log_options(fsync);
        match c.check(c.create_topic(&stream_id, &topic, &options).await) {
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
        let page = poll(conn, stream, log, PollingStrategy::offset(next), PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(out);
        };
        next = last.0 + 1;
        out.extend(page);
    }
}

/// One poll of a log: (offset, append time, record) of each message.
async fn poll(
    conn: &Conn,
    stream: &str,
    log: &str,
    strategy: PollingStrategy,
    count: u32,
) -> Result<Vec<(u64, u64, Bytes)>, IggyError> {
    let c = conn.ready().await?;
    let polled = c.check(
        c.poll_messages(
            &named(stream)?,
            &named(log)?,
            Some(0),
            &Consumer::default(),
            &strategy,
            count,
            false,
        )
        .await,
    )?;
    Ok(polled
        .messages
        .into_iter()
        .map(|m| (m.header.offset, m.header.timestamp, m.payload))
        .collect())
}

/// The state of a snapshotted log: its latest snapshot, then the records after it.
pub async fn load<S: Compact>(
    conn: &Conn,
    stream: &str,
    log: &str,
) -> Result<Replayed<S>, LoadError> {
    let mut state = match latest_snapshot(conn, stream, log).await? {
        Some((upto, records)) => Replayed::from_snapshot(upto, &records),
        None => Replayed::default(),
    };
    let tail = read_from(conn, stream, log, state.next()).await?;
    state.check_continues(log, &tail)?;
    state.extend(&tail);
    Ok(state)
}

/// Applies the records appended to `log` since `state` last read it, by this or
/// another gateway, in log order. A log trimmed past what `state` had read (it lagged
/// behind a snapshot) is loaded again from its latest snapshot.
pub async fn catch_up<S: Compact>(
    conn: &Conn,
    stream: &str,
    log: &str,
    state: &Mutex<Replayed<S>>,
) -> Result<(), LoadError> {
    let next = state.lock().next();
    let records = read_from(conn, stream, log, next).await?;
    let gap = {
        let mut s = state.lock();
        let gap = s.check_continues(log, &records);
        if gap.is_ok() {
            s.extend(&records);
        }
        gap
    };
    if let Err(e) = gap {
        tracing::warn!(error = %e, "reloading a gateway log from its snapshot");
        let reloaded = load(conn, stream, log).await?;
        let mut s = state.lock();
        // Unless a concurrent catch-up got further meanwhile.
        if reloaded.next() >= s.next() {
            *s = reloaded;
        }
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Iggy(#[from] IggyError),
    /// Records no snapshot covers are gone (the log was trimmed by hand, or snapshots
    /// failed for a long time): the state would have a hole.
    #[error("gateway log '{log}' lost records {from}..{to}, which no snapshot covers")]
    Gap { log: String, from: u64, to: u64 },
    #[error("snapshot of gateway log '{0}' is malformed")]
    Snapshot(String),
}

/// The latest complete snapshot of `log`: the offset it covers up to (exclusive) and the
/// records that rebuild the state. Found by reading the snapshot log backwards from its
/// end to the last marker; chunks of interleaved writers are told apart by the
/// marker, which lists its own.
async fn latest_snapshot(
    conn: &Conn,
    stream: &str,
    log: &str,
) -> Result<Option<(u64, Vec<Bytes>)>, LoadError> {
    let snapshots = snapshots_of(log);
    let end = poll(conn, stream, &snapshots, PollingStrategy::last(), 1).await?;
    let Some(&(last, _, _)) = end.first() else {
        return Ok(None);
    };
    let mut to = last + 1;
    while to > 0 {
        let from = to.saturating_sub(u64::from(PAGE));
        let page = poll(
            conn,
            stream,
            &snapshots,
            PollingStrategy::offset(from),
            PAGE,
        )
        .await?;
        let marker = page
            .iter()
            .rev()
            .filter(|(offset, _, _)| *offset < to)
            .find(|(_, _, m)| m.first() == Some(&MARKER));
        if let Some((_, _, marker)) = marker {
            let malformed = || LoadError::Snapshot(log.to_string());
            let (upto, chunks) = decode_marker(marker).ok_or_else(malformed)?;
            let mut records = Vec::new();
            for chunk in chunks {
                let polled = poll(conn, stream, &snapshots, PollingStrategy::offset(chunk), 1);
                let polled = polled.await?;
                let (_, _, body) = polled
                    .into_iter()
                    .find(|(o, _, _)| *o == chunk)
                    .ok_or_else(malformed)?;
                records.extend(decode_chunk(&body).ok_or_else(malformed)?);
            }
            return Ok(Some((upto, records)));
        }
        // Nothing older left (Iggy dropped the oldest segments): stop there.
        if page.first().is_none_or(|(first, _, _)| *first >= to) {
            return Ok(None);
        }
        to = from;
    }
    Ok(None)
}

/// The offset the last snapshot written to `log`'s snapshot log covers up to, when the
/// last message there is a marker (a snapshot being written shows as a chunk: `None`).
pub async fn latest_marker(conn: &Conn, stream: &str, log: &str) -> Result<Option<u64>, IggyError> {
    let end = poll(conn, stream, &snapshots_of(log), PollingStrategy::last(), 1).await?;
    Ok(end
        .first()
        .filter(|(_, _, m)| m.first() == Some(&MARKER))
        .and_then(|(_, _, m)| decode_marker(m))
        .map(|(upto, _)| upto))
}

/// Writes a snapshot of `log` covering offsets below `upto`: `records` in chunks, then
/// the marker listing them.
pub async fn write_snapshot(
    conn: &Conn,
    stream: &str,
    log: &str,
    upto: u64,
    records: &[Bytes],
) -> Result<(), IggyError> {
    let snapshots = snapshots_of(log);
    let mut chunks = Vec::new();
    let mut chunk = BytesMut::new();
    for (i, record) in records.iter().enumerate() {
        if chunk.is_empty() {
            chunk.put_u8(CHUNK);
        }
        chunk.put_u32(record.len() as u32);
        chunk.put_slice(record);
        if chunk.len() >= SNAPSHOT_CHUNK_BYTES || i + 1 == records.len() {
            chunks.push(append(conn, stream, &snapshots, chunk.split().freeze()).await?);
        }
    }
    let mut marker = BytesMut::with_capacity(13 + 8 * chunks.len());
    marker.put_u8(MARKER);
    marker.put_u64(upto);
    marker.put_u32(chunks.len() as u32);
    chunks.iter().for_each(|c| marker.put_u64(*c));
    append(conn, stream, &snapshots, marker.freeze()).await?;
    Ok(())
}

fn decode_marker(mut b: &[u8]) -> Option<(u64, Vec<u64>)> {
    if b.len() < 13 {
        return None;
    }
    b.advance(1);
    let upto = b.get_u64();
    let count = b.get_u32() as usize;
    (b.len() == count * 8).then(|| (upto, (0..count).map(|_| b.get_u64()).collect()))
}

fn decode_chunk(body: &Bytes) -> Option<Vec<Bytes>> {
    let mut b = body.slice(1..);
    let mut out = Vec::new();
    while !b.is_empty() {
        if b.len() < 4 {
            return None;
        }
        let len = b.get_u32() as usize;
        if b.len() < len {
            return None;
        }
        out.push(b.split_to(len));
    }
    Some(out)
}

/// State rebuilt from a log's records, one at a time, in log order.
pub trait Replay: Default {
    fn apply(&mut self, offset: u64, record: &Bytes);
}

/// State a snapshot can hold: the fewest records that rebuild it when replayed.
pub trait Compact: Replay {
    fn compacted(&self) -> Vec<Bytes>;
}

/// State replayed from a log that other gateways append to as well: it takes new
/// records in log order only, so every gateway ends in the same state.
#[derive(Default)]
pub struct Replayed<S> {
    next: u64,
    /// The offset the latest snapshot known here covers up to.
    snapshot: u64,
    state: S,
}

impl<S: Replay> Replayed<S> {
    /// The state a snapshot covering offsets below `upto` holds.
    fn from_snapshot(upto: u64, records: &[Bytes]) -> Self {
        let mut state = S::default();
        records.iter().for_each(|r| state.apply(upto, r));
        Replayed {
            next: upto,
            snapshot: upto,
            state,
        }
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

    /// Fails if `log`, read from [`Self::next`], starts past it: records were lost.
    pub fn check_continues(&self, log: &str, records: &[(u64, Bytes)]) -> Result<(), LoadError> {
        match records.first() {
            Some((first, _)) if *first > self.next => Err(LoadError::Gap {
                log: log.to_string(),
                from: self.next,
                to: *first,
            }),
            _ => Ok(()),
        }
    }

    /// The offset of the first record not applied yet.
    pub fn next(&self) -> u64 {
        self.next
    }

    pub fn state(&self) -> &S {
        &self.state
    }

    /// Records applied since the latest snapshot known here.
    pub fn since_snapshot(&self) -> u64 {
        self.next - self.snapshot
    }

    /// A snapshot covering offsets below `upto` was written.
    pub fn snapshot_written(&mut self, upto: u64) {
        self.snapshot = self.snapshot.max(upto);
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
        let mut r: Replayed<Seen> = Replayed::default();
        r.extend(&log(&[0, 1]));
        // Two overlapping reads of the tail, the later one finishing first.
        r.extend(&log(&[2, 3, 4]));
        r.extend(&log(&[2, 3]));
        assert_eq!(r.state().0, vec![0, 1, 2, 3, 4]);
        assert_eq!(r.next(), 5);
    }

    #[test]
    fn snapshot_messages_decode_to_what_was_written() {
        let records = [
            Bytes::from_static(b"a"),
            Bytes::new(),
            Bytes::from(vec![7; 300]),
        ];
        let mut chunk = BytesMut::new();
        chunk.put_u8(CHUNK);
        for r in &records {
            chunk.put_u32(r.len() as u32);
            chunk.put_slice(r);
        }
        assert_eq!(decode_chunk(&chunk.freeze()).unwrap(), records);
        assert_eq!(decode_chunk(&Bytes::from_static(b"C\0\0\0\x09ab")), None);
        let mut marker = BytesMut::new();
        marker.put_u8(MARKER);
        marker.put_u64(42);
        marker.put_u32(2);
        marker.put_u64(3);
        marker.put_u64(9);
        assert_eq!(decode_marker(&marker), Some((42, vec![3, 9])));
        assert_eq!(decode_marker(&marker[..20]), None);
    }

    #[test]
    fn a_gap_after_what_was_applied_is_reported() {
        let mut r: Replayed<Seen> = Replayed::from_snapshot(10, &[Bytes::new()]);
        assert_eq!((r.next(), r.since_snapshot()), (10, 0));
        let at = |o: u64| vec![(o, Bytes::new())];
        assert!(r.check_continues("log", &at(10)).is_ok());
        assert!(r.check_continues("log", &[]).is_ok());
        let gap = r.check_continues("log", &at(12)).unwrap_err();
        assert_eq!(
            gap.to_string(),
            "gateway log 'log' lost records 10..12, which no snapshot covers"
        );
        r.extend(&at(10));
        assert_eq!(r.since_snapshot(), 1);
        r.snapshot_written(11);
        assert_eq!(r.since_snapshot(), 0);
    }
}
