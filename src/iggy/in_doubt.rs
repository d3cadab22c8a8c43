//! Appends that outlived their caller. An Iggy call not answered within
//! `iggy_request_timeout_ms` is answered Unavailable, but its task goes on and may still
//! land. The producer's retry must not be written before it is settled: the log slot
//! reads the partition's producer state again for the retry, and a state read before the
//! first append landed would let the retry be written a second time. So a read of a
//! partition's producer state or watermarks first waits for its last append (within the
//! read's own deadline), and another append to it is refused (Unavailable, which the
//! producer retries) while that one is unsettled: the log slot checked it against a
//! state that may not show the first. A log slot writes one append at a time, so an
//! append still running when the next to its partition comes is one that outlived its
//! caller. One whose connection failed before an answer came (the SDK's own timeout)
//! settles only once it is seen landing, or after 120 s (`Inner::await_landing`): its
//! bytes may still be on the way.

use std::collections::HashMap;

use iggy_kafka_actors::store::TopicPartition;
use parking_lot::Mutex;
use tokio::sync::watch;

/// Says `true` once the append it stands for has ended, whichever way.
pub type Settled = watch::Receiver<bool>;

/// Held by an append's task: dropped when it ends, which settles it.
pub struct Appending(watch::Sender<bool>);

impl Drop for Appending {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

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
        last.get(tp).filter(|s| !*s.borrow()).cloned()
    }

    /// Notes an append to `tp` beginning; it has ended when the guard is dropped.
    pub fn begin(&self, tp: &TopicPartition) -> Appending {
        let (ended, settled) = watch::channel(false);
        // One entry per partition ever appended to, replaced by each append: no sweep
        // over the others on this per-append path.
        self.last.lock().insert(tp.clone(), settled);
        Appending(ended)
    }
}
