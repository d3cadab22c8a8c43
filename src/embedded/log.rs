//! The embedded store as a log store: each call runs on tokio's blocking pool, except
//! what is in memory (the list of logs, watermarks, producer history, sizes) and appends,
//! which run on their log slot's thread.

use iggy_kafka_actors::store::{LogAnswer, LogCall, LogStore};
use iggy_kafka_actors::store::{StoreError, StoreFuture, TopicPartition};

use super::{blocking, EmbeddedStore};

impl LogStore for EmbeddedStore {
    fn call(&self, call: LogCall) -> StoreFuture<'_, LogAnswer> {
        match call {
            LogCall::List => {
                let listed = self.inner.list_logs();
                Box::pin(async move { Ok(LogAnswer::Listed(listed)) })
            }
            LogCall::Create {
                name,
                partitions,
                limits,
            } => blocking(&self.inner, move |s| {
                s.create_log(name, partitions, &limits)
                    .map(LogAnswer::Created)
            }),
            LogCall::Delete(name) => blocking(&self.inner, move |s| {
                s.delete_log(&name).map(|()| LogAnswer::Done)
            }),
            LogCall::AddPartitions {
                name, partitions, ..
            } => blocking(&self.inner, move |s| {
                s.add_partitions(&name, partitions)
                    .map(|()| LogAnswer::Done)
            }),
            LogCall::SetLimits { name, limits } => blocking(&self.inner, move |s| {
                s.set_retention(&name, &limits).map(|()| LogAnswer::Done)
            }),
            // On the calling slot's own thread (`blocks_in_append`): the write is a
            // copy into the page cache (and an fdatasync with `durability=batch`), and
            // a hop to the blocking pool and back cost more than that on a busy machine.
            LogCall::Append { tp, batches } => {
                let inner = self.inner.clone();
                Box::pin(async move { inner.append(&tp, batches).map(LogAnswer::Appended) })
            }
            LogCall::Read {
                tp,
                offset,
                max_bytes,
            } => read(self, tp, (offset, max_bytes), false),
            LogCall::ReadHeaders {
                tp,
                offset,
                max_bytes,
            } => read(self, tp, (offset, max_bytes), true),
            LogCall::Watermarks(tp) => {
                let w = self.inner.log(&tp).map(|log| {
                    log.partitions[tp.partition as usize]
                        .index
                        .lock()
                        .watermarks()
                });
                Box::pin(async move { w.map(LogAnswer::Watermarks) })
            }
            LogCall::OffsetForTimestamp { tp, timestamp } => blocking(&self.inner, move |s| {
                let batch = s.log(&tp)?.partitions[tp.partition as usize]
                    .index
                    .lock()
                    .first_batch_reaching(timestamp);
                s.find_record(&tp, batch, |ts| ts >= timestamp)
                    .map(LogAnswer::Record)
            }),
            LogCall::MaxTimestamp(tp) => blocking(&self.inner, move |s| {
                let max = s.log(&tp)?.partitions[tp.partition as usize]
                    .index
                    .lock()
                    .max_timestamp();
                let found = match max {
                    Some((base_offset, max_ts)) => {
                        s.find_record(&tp, Some(base_offset), |ts| ts == max_ts)?
                    }
                    None => None,
                };
                Ok(LogAnswer::Record(found))
            }),
            LogCall::DeleteRecords { tp, offset } => blocking(&self.inner, move |s| {
                s.delete_records(&tp, offset).map(LogAnswer::Watermarks)
            }),
            LogCall::ProducerHistory(tp) => {
                let batches = self.inner.log(&tp).map(|log| {
                    log.partitions[tp.partition as usize]
                        .index
                        .lock()
                        .producer_batches()
                });
                Box::pin(async move { batches.map(LogAnswer::ProducerHistory) })
            }
            // The index holds every kept batch's size: no disk read.
            LogCall::Sizes(name) => {
                let sizes = match self.inner.topics.read().get(&name) {
                    Some(log) => Ok(log
                        .partitions
                        .iter()
                        .map(|p| p.index.lock().size())
                        .collect()),
                    None => Err(StoreError::UnknownTopic(name.to_string())),
                };
                Box::pin(async move { sizes.map(LogAnswer::Sizes) })
            }
            LogCall::Compact { tp, below, keep } => blocking(&self.inner, move |s| {
                s.compact(&tp, below, &keep).map(LogAnswer::Compacted)
            }),
        }
    }

    fn compacts(&self) -> bool {
        true
    }

    fn log_dir(&self) -> String {
        self.inner.dir.display().to_string()
    }

    fn blocks_in_append(&self) -> bool {
        true
    }
}

/// A read of batches (or of their headers) from `offset`, on the blocking pool.
fn read(
    store: &EmbeddedStore,
    tp: TopicPartition,
    (offset, max_bytes): (i64, usize),
    headers_only: bool,
) -> StoreFuture<'_, LogAnswer> {
    blocking(&store.inner, move |s| {
        s.read(&tp, offset, max_bytes, headers_only)
            .map(LogAnswer::Read)
    })
}
