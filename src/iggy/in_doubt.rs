//! Appends that outlived their caller. An Iggy call not answered within
//! `iggy_request_timeout_ms` is answered Unavailable, but its task goes on and may still
//! land. The producer's retry must not be written before it is settled: the log slot
//! reads the partition's producer state again for the retry, and a state read before the
//! first append landed would let the retry be written a second time. So every append to
//! a partition, and every read of its producer state or watermarks, first waits for the
//! partition's previous append (within its own deadline: one still unsettled leaves the
//! caller Unavailable again).

use std::collections::HashMap;

use futures_util::future::{BoxFuture, FutureExt, Shared};
use iggy_kafka_actors::store::TopicPartition;
use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Done when the append it stands for has ended, whichever way.
pub type Settled = Shared<BoxFuture<'static, ()>>;

#[derive(Default)]
pub struct InDoubt {
    /// Each partition's latest append; appends to a partition come one at a time (its
    /// log slot), so one is enough.
    last: Mutex<HashMap<TopicPartition, Settled>>,
}

impl InDoubt {
    /// The partition's last append, while it has not ended.
    pub fn unsettled(&self, tp: &TopicPartition) -> Option<Settled> {
        let last = self.last.lock();
        last.get(tp).filter(|s| s.peek().is_none()).cloned()
    }

    /// Notes an append to `tp` beginning; it has ended when the sender is dropped.
    pub fn begin(&self, tp: &TopicPartition) -> oneshot::Sender<()> {
        let (ended, settled) = oneshot::channel::<()>();
        let settled = settled.map(drop).boxed().shared();
        let mut last = self.last.lock();
        last.retain(|_, s| s.peek().is_none());
        last.insert(tp.clone(), settled);
        ended
    }
}
