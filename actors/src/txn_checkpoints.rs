//! Transaction indexes saved, so that a gateway without a partition's index (restarted,
//! or not the one that wrote the partition) reads the log on from a checkpoint rather
//! than from the log start to answer a read-committed ListOffsets: on Iggy that read is
//! of every record, and librdkafka's consumers make it at startup.
//!
//! Table `txn_index` of the metadata store, one entry per partition, keyed
//! `<topic id>/<partition>`: a topic deleted and made again has another id, so its
//! checkpoints never answer for the new one. The value is a [`Checkpoint`], big-endian:
//! `at`, the open transactions (count, then producer id, first offset, epoch each) and
//! the marker epochs (count, then producer id, epoch each).
//!
//! The [`TxnCheckpointer`] owns the table: every `interval` it saves, in one write, the
//! checkpoint of each index that read further since it last saved it; at shutdown it
//! saves once more. A checkpoint stays true of the log up to its offset whatever is
//! appended after it, and DeleteRecords only moves the log start (the index reads on
//! from there). Compaction can remove a marker after it, so a compacted partition's
//! checkpoint is deleted with its index (`Partitions::compacted`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::store::meta::{Change, Meta};
use crate::store::{StoreResult, TopicPartition};
use crate::txn_index::{Checkpoint, TxnIndexes};

const TABLE: &str = "txn_index";

/// Most entries one write carries: a write is one Iggy message on Iggy.
const WRITE_ENTRIES: usize = 1_000;

fn key(id: &Uuid, partition: i32) -> String {
    format!("{id}/{partition}")
}

/// The key prefix of every partition of topic `id`: a UUID's text has one length.
fn topic_prefix(id: &Uuid) -> String {
    format!("{id}/")
}

fn encode(cp: &Checkpoint) -> Bytes {
    let mut out = BytesMut::with_capacity(16 + 18 * cp.open.len() + 10 * cp.marked.len());
    out.put_i64(cp.at);
    out.put_u32(cp.open.len() as u32);
    for &(producer_id, first, epoch) in &cp.open {
        out.put_i64(producer_id);
        out.put_i64(first);
        out.put_i16(epoch);
    }
    out.put_u32(cp.marked.len() as u32);
    for &(producer_id, epoch) in &cp.marked {
        out.put_i64(producer_id);
        out.put_i16(epoch);
    }
    out.freeze()
}

fn decode(mut v: &[u8]) -> Option<Checkpoint> {
    let at = v.try_get_i64().ok()?;
    let n = v.try_get_u32().ok()? as usize;
    let open = (0..n)
        .map(|_| {
            Some((
                v.try_get_i64().ok()?,
                v.try_get_i64().ok()?,
                v.try_get_i16().ok()?,
            ))
        })
        .collect::<Option<_>>()?;
    let n = v.try_get_u32().ok()? as usize;
    let marked = (0..n)
        .map(|_| Some((v.try_get_i64().ok()?, v.try_get_i16().ok()?)))
        .collect::<Option<_>>()?;
    v.is_empty().then_some(Checkpoint { at, open, marked })
}

/// The owner of table `txn_index`.
pub struct TxnCheckpointer {
    /// A connection of its own: its writes queue behind no one's.
    meta: Meta,
    txns: TxnIndexes,
    /// Topic ids by name, as of the last topic table whose changes the indexes were
    /// told of (`Partitions::follow_topics`): an index here is of the topic so named.
    ids: HashMap<Arc<str>, Uuid>,
    /// Where each entry's saved checkpoint is, by key.
    saved: HashMap<String, i64>,
    /// `None`: checkpoints are read, never saved.
    interval: Option<Duration>,
}

impl TxnCheckpointer {
    pub fn new(meta: Meta, txns: TxnIndexes, interval: Option<Duration>) -> Self {
        TxnCheckpointer {
            meta,
            txns,
            ids: HashMap::new(),
            saved: HashMap::new(),
            interval,
        }
    }

    /// Writes the checkpoint of every index that moved since it was saved; answers how
    /// many it wrote.
    fn save(&mut self) -> ResponseActFuture<Self, StoreResult<usize>> {
        let (ids, saved) = (&self.ids, &self.saved);
        let due = self.txns.checkpoints(|tp, at| {
            let key = key(ids.get(&tp.topic)?, tp.partition);
            (saved.get(&key) != Some(&at)).then_some(key)
        });
        let meta = self.meta.clone();
        Box::pin(
            async move {
                let mut written = Vec::with_capacity(due.len());
                for chunk in due.chunks(WRITE_ENTRIES) {
                    let puts = (chunk.iter())
                        .map(|(key, cp)| Change::Put {
                            key: key.clone(),
                            value: encode(cp),
                        })
                        .collect();
                    meta.write(TABLE, puts).await?;
                    written.extend(chunk.iter().map(|(key, cp)| (key.clone(), cp.at)));
                }
                Ok(written)
            }
            .into_actor(self)
            .map(|written: StoreResult<Vec<(String, i64)>>, act, _| {
                let written = written?;
                let n = written.len();
                act.saved.extend(written);
                Ok(n)
            }),
        )
    }

    /// Deletes every checkpoint of topic `id`, whoever saved it.
    fn delete_topic(&mut self, id: &Uuid) -> ResponseActFuture<Self, StoreResult<()>> {
        let prefix = topic_prefix(id);
        self.saved.retain(|k, _| !k.starts_with(&prefix));
        let meta = self.meta.clone();
        Box::pin(
            async move {
                let scan = meta.scan(TABLE, &prefix).await?;
                let keys = scan.entries.into_iter().map(|(k, _)| k).collect();
                meta.delete(TABLE, keys).await
            }
            .into_actor(self),
        )
    }
}

impl Actor for TxnCheckpointer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(interval) = self.interval {
            ctx.run_interval(interval, |act, ctx| {
                ctx.wait(act.save().map(|saved, _, _| match saved {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(partitions = n, "transaction indexes saved"),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot save the transaction indexes")
                    }
                }));
            });
        }
    }
}

/// The topics as they are now, their ids by name: sent once the indexes of topics that
/// went or came back with another id are forgotten. The checkpoints of topics gone are
/// deleted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TopicsNow(pub HashMap<Arc<str>, Uuid>);

impl Handler<TopicsNow> for TxnCheckpointer {
    type Result = ();

    fn handle(&mut self, msg: TopicsNow, ctx: &mut Self::Context) {
        let now: Vec<&Uuid> = msg.0.values().collect();
        let gone: Vec<Uuid> = (self.ids.values())
            .filter(|id| !now.contains(id))
            .copied()
            .collect();
        self.ids = msg.0;
        for id in gone {
            ctx.wait(self.delete_topic(&id).map(move |deleted, _, _| {
                if let Err(e) = deleted {
                    tracing::warn!(topic_id = %id, error = %e, "cannot delete a deleted topic's transaction index checkpoints");
                }
            }));
        }
    }
}

/// The partition's saved checkpoint, if it has one.
#[derive(Message)]
#[rtype(result = "StoreResult<Option<Checkpoint>>")]
pub struct Load(pub TopicPartition);

impl Handler<Load> for TxnCheckpointer {
    type Result = ResponseFuture<StoreResult<Option<Checkpoint>>>;

    fn handle(&mut self, Load(tp): Load, _: &mut Self::Context) -> Self::Result {
        let (meta, key) = (
            self.meta.clone(),
            self.ids.get(&tp.topic).map(|id| key(id, tp.partition)),
        );
        Box::pin(async move {
            let Some(key) = key else { return Ok(None) };
            let scan = meta.scan(TABLE, &key).await?;
            let Some((_, value)) = scan.entries.into_iter().find(|(k, _)| *k == key) else {
                return Ok(None);
            };
            let cp = decode(&value);
            if cp.is_none() {
                tracing::warn!(%tp, %key, "unreadable transaction index checkpoint: reading the partition from its log start");
            }
            Ok(cp)
        })
    }
}

/// The partition's checkpoint may no longer hold (its index was dropped): deleted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Forget(pub TopicPartition);

impl Handler<Forget> for TxnCheckpointer {
    type Result = ();

    fn handle(&mut self, Forget(tp): Forget, ctx: &mut Self::Context) {
        let Some(id) = self.ids.get(&tp.topic) else {
            return;
        };
        let key = key(id, tp.partition);
        self.saved.remove(&key);
        let meta = self.meta.clone();
        let deleted = async move { meta.delete(TABLE, vec![key]).await }.into_actor(self);
        ctx.wait(deleted.map(move |deleted, _, _| {
            if let Err(e) = deleted {
                tracing::warn!(%tp, error = %e, "cannot delete a compacted partition's transaction index checkpoint");
            }
        }));
    }
}

/// Saves every index that moved, now (at shutdown).
#[derive(Message)]
#[rtype(result = "StoreResult<usize>")]
pub struct Save;

impl Handler<Save> for TxnCheckpointer {
    type Result = AtomicResponse<Self, StoreResult<usize>>;

    fn handle(&mut self, _: Save, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(self.save())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_round_trip_and_a_cut_one_does_not_decode() {
        let cp = Checkpoint {
            at: 1 << 40,
            open: vec![(5, 17, 3), (9, 1 << 33, -1)],
            marked: vec![(5, 2), (i64::MAX, i16::MAX)],
        };
        let bytes = encode(&cp);
        assert_eq!(decode(&bytes), Some(cp));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode(&[bytes.as_ref(), &[0]].concat()), None);
        assert_eq!(
            decode(&encode(&Checkpoint::default())),
            Some(Checkpoint::default())
        );
    }
}
