//! Idempotent-producer checks for one partition, after Kafka's `ProducerStateManager`.
//!
//! Each producer id keeps its epoch and its last five batches. A retried batch that
//! matches one of them is answered with the offset it already got and not written
//! again; a gap in the sequence or an old epoch is refused.
//!
//! A gap is refused for good (OUT_OF_ORDER_SEQUENCE_NUMBER) only when the producer was
//! answered for its last batch here. A state read back from the log may end in a batch
//! the producer never heard of: an append that timed out and landed after all. A
//! producer told its later batch is out of order starts a new epoch and sends its
//! unacknowledged records again under new sequence numbers (librdkafka does), which
//! stores that batch twice; told to retry instead, it sends the batch again first and
//! learns it was written.

use std::collections::{HashMap, VecDeque};

use kafka_protocol::error::ResponseError;

use crate::protocol::records::BatchHeader;
// Kafka keeps this many batches per producer for duplicate detection, and clients
// keep at most this many in flight per partition when idempotent.
use crate::store::{ProducerBatch, PRODUCER_HISTORY_BATCHES as KEPT_BATCHES};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SequenceError {
    #[error("producer {producer_id}: epoch {epoch} is older than the current epoch {current}")]
    FencedEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    #[error("producer {producer_id}: sequence {got} does not follow {last} (epoch {epoch})")]
    OutOfOrder {
        producer_id: i64,
        epoch: i16,
        last: i32,
        got: i32,
    },
    #[error(
        "producer {producer_id}: sequence {got} does not follow {last} (epoch {epoch}), \
         which it may not know was written: retry from its first unacknowledged batch"
    )]
    Unconfirmed {
        producer_id: i64,
        epoch: i16,
        last: i32,
        got: i32,
    },
}

impl SequenceError {
    pub fn code(&self) -> ResponseError {
        match self {
            SequenceError::FencedEpoch { .. } => ResponseError::InvalidProducerEpoch,
            SequenceError::OutOfOrder { .. } => ResponseError::OutOfOrderSequenceNumber,
            SequenceError::Unconfirmed { .. } => ResponseError::RequestTimedOut,
        }
    }
}

struct Producer {
    epoch: i16,
    batches: VecDeque<ProducerBatch>,
    /// The newest record time of its last batch, when this gateway wrote it (the
    /// stored history keeps none).
    last_timestamp: Option<i64>,
    /// Whether the producer was answered for its last batch here (written, or its
    /// retry found a duplicate); not so for a batch read back from the log.
    answered: bool,
}

/// A producer as DescribeProducers lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp: Option<i64>,
}

/// Producer state of one partition.
#[derive(Default)]
pub struct ProducerStates {
    producers: HashMap<i64, Producer>,
}

impl ProducerStates {
    /// Rebuilds the state from the batches and markers a backend kept (oldest first),
    /// as Kafka replays its log: a marker of a newer epoch moves its producer there,
    /// and a batch of an epoch a marker already ended (a straggler another gateway
    /// appended) moves nothing back.
    pub fn from_history(history: impl IntoIterator<Item = ProducerBatch>) -> Self {
        let mut states = ProducerStates::default();
        for batch in history {
            let known = states.producers.get(&batch.producer_id).map(|p| p.epoch);
            match batch.is_marker() {
                true => states.advance(batch.producer_id, batch.producer_epoch),
                false if known.is_some_and(|epoch| batch.producer_epoch < epoch) => {}
                false => states.record(batch, None),
            }
        }
        // Read back from the log: whether each producer heard of its last batch is not known.
        for p in states.producers.values_mut() {
            p.answered = false;
        }
        states
    }

    /// Every producer known here, by producer id.
    pub fn active(&self) -> Vec<ActiveProducer> {
        let mut all: Vec<_> = (self.producers.iter())
            .map(|(&producer_id, p)| ActiveProducer {
                producer_id,
                epoch: p.epoch,
                last_sequence: p.batches.back().map_or(-1, |b| b.last_sequence),
                last_timestamp: p.last_timestamp,
            })
            .collect();
        all.sort_by_key(|p| p.producer_id);
        all
    }

    /// A transaction marker: refused when older than its producer's epoch here, as
    /// Kafka's `ProducerAppendInfo` refuses it (a stale abort must not end a newer
    /// incarnation's transaction).
    pub fn check_marker(&self, h: &BatchHeader, strict: bool) -> Result<(), SequenceError> {
        match self.producers.get(&h.producer_id) {
            Some(p) if h.producer_epoch < p.epoch || (strict && h.producer_epoch == p.epoch) => {
                Err(SequenceError::FencedEpoch {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                    current: p.epoch,
                })
            }
            _ => Ok(()),
        }
    }

    /// `Ok(Some(offset))` for a duplicate of a kept batch, `Ok(None)` for a batch to write.
    pub fn check(&mut self, h: &BatchHeader) -> Result<Option<i64>, SequenceError> {
        let Some(p) = self.producers.get_mut(&h.producer_id) else {
            // Unknown producer (new, or its state is gone): any sequence starts it, as in Kafka.
            return Ok(None);
        };
        if h.producer_epoch < p.epoch {
            return Err(SequenceError::FencedEpoch {
                producer_id: h.producer_id,
                epoch: h.producer_epoch,
                current: p.epoch,
            });
        }
        let last = p.batches.back().map_or(-1, |b| b.last_sequence);
        if h.producer_epoch > p.epoch {
            // A bumped epoch restarts the sequence.
            return if h.base_sequence == 0 {
                Ok(None)
            } else {
                Err(out_of_order(h, last))
            };
        }
        let same = |b: &&ProducerBatch| {
            b.first_sequence == h.base_sequence && b.last_sequence == h.last_sequence()
        };
        if let Some(dup) = p.batches.iter().find(same) {
            // Told of its last batch, the producer knows where it stands.
            p.answered |= p.batches.back().is_some_and(|b| same(&b));
            return Ok(Some(dup.base_offset));
        }
        match (follows(last, h.base_sequence), p.answered) {
            (true, _) => Ok(None),
            (false, true) => Err(out_of_order(h, last)),
            (false, false) => Err(SequenceError::Unconfirmed {
                producer_id: h.producer_id,
                epoch: h.producer_epoch,
                last,
                got: h.base_sequence,
            }),
        }
    }

    /// Notes a written marker: one with a newer epoch (a transactions v2 end) moves
    /// the producer to it, so a straggler of the old epoch is fenced, as Kafka's
    /// `appendEndTxnMarker` does.
    pub fn record_marker(&mut self, h: &BatchHeader) {
        self.advance(h.producer_id, h.producer_epoch);
    }

    /// Moves a known producer to a newer `epoch`, where its sequence starts again.
    fn advance(&mut self, producer_id: i64, epoch: i16) {
        if let Some(p) = self.producers.get_mut(&producer_id) {
            if epoch > p.epoch {
                p.epoch = epoch;
                p.batches.clear();
            }
        }
    }

    /// Notes a written batch, with its newest record time when known.
    pub fn record(&mut self, batch: ProducerBatch, timestamp: Option<i64>) {
        let p = self.producers.entry(batch.producer_id).or_insert(Producer {
            epoch: batch.producer_epoch,
            batches: VecDeque::with_capacity(KEPT_BATCHES),
            last_timestamp: None,
            answered: true,
        });
        p.last_timestamp = timestamp;
        p.answered = true;
        if batch.producer_epoch != p.epoch {
            p.epoch = batch.producer_epoch;
            p.batches.clear();
        }
        if p.batches.len() == KEPT_BATCHES {
            p.batches.pop_front();
        }
        p.batches.push_back(batch);
    }
}

fn out_of_order(h: &BatchHeader, last: i32) -> SequenceError {
    SequenceError::OutOfOrder {
        producer_id: h.producer_id,
        epoch: h.producer_epoch,
        last,
        got: h.base_sequence,
    }
}

/// Kafka's `inSequence`: the next sequence, wrapping from `i32::MAX` to 0.
fn follows(last: i32, next: i32) -> bool {
    next == last.wrapping_add(1) || (last == i32::MAX && next == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(epoch: i16, seq: i32, count: i32) -> BatchHeader {
        BatchHeader {
            record_count: count,
            base_timestamp: 0,
            max_timestamp: 0,
            log_append_time: false,
            transactional: false,
            control: false,
            producer_id: 9,
            producer_epoch: epoch,
            base_sequence: seq,
        }
    }

    fn written(h: &BatchHeader, base_offset: i64) -> ProducerBatch {
        ProducerBatch {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            first_sequence: h.base_sequence,
            last_sequence: h.last_sequence(),
            base_offset,
            last_offset: base_offset + h.last_offset_delta() as i64,
        }
    }

    #[test]
    fn duplicates_answer_the_first_offset_and_gaps_are_refused() {
        let mut s = ProducerStates::default();
        let first = header(0, 0, 5);
        assert_eq!(s.check(&first), Ok(None));
        s.record(written(&first, 100), Some(7));
        assert_eq!(s.check(&first), Ok(Some(100)));
        assert_eq!(s.check(&header(0, 5, 1)), Ok(None));
        let gap = s.check(&header(0, 7, 1)).unwrap_err();
        assert_eq!(gap.code(), ResponseError::OutOfOrderSequenceNumber);
    }

    #[test]
    fn a_gap_is_retriable_until_the_producer_was_answered_for_its_last_batch() {
        let (a, b) = (header(0, 0, 2), header(0, 2, 2));
        let mut s = ProducerStates::from_history([written(&a, 0), written(&b, 2)]);
        let gap = header(0, 5, 1);
        assert_eq!(
            s.check(&gap).unwrap_err().code(),
            ResponseError::RequestTimedOut
        );
        // A retry of an older batch tells the producer nothing of the last one.
        assert_eq!(s.check(&a), Ok(Some(0)));
        assert_eq!(
            s.check(&gap).unwrap_err().code(),
            ResponseError::RequestTimedOut
        );
        assert_eq!(s.check(&b), Ok(Some(2)));
        let out_of_order = ResponseError::OutOfOrderSequenceNumber;
        assert_eq!(s.check(&gap).unwrap_err().code(), out_of_order);
        // Written here, a batch is answered here.
        let mut s = ProducerStates::from_history([written(&a, 0)]);
        s.record(written(&b, 2), None);
        assert_eq!(s.check(&gap).unwrap_err().code(), out_of_order);
    }

    #[test]
    fn older_epochs_are_fenced_and_new_epochs_restart_at_zero() {
        let mut s = ProducerStates::default();
        s.record(written(&header(3, 0, 2), 0), None);
        assert_eq!(
            s.check(&header(2, 2, 1)).unwrap_err().code(),
            ResponseError::InvalidProducerEpoch
        );
        assert!(s.check(&header(4, 2, 1)).is_err());
        assert_eq!(s.check(&header(4, 0, 1)), Ok(None));
    }

    #[test]
    fn history_restores_state_and_keeps_only_five_batches() {
        let batches: Vec<_> = (0..7)
            .map(|i| written(&header(0, i, 1), i as i64))
            .collect();
        let mut s = ProducerStates::from_history(batches);
        assert_eq!(s.check(&header(0, 6, 1)), Ok(Some(6)));
        assert_eq!(s.check(&header(0, 2, 1)), Ok(Some(2)));
        // Batch 1 fell out of the window: no longer recognised, and not next either.
        assert!(s.check(&header(0, 1, 1)).is_err());
        assert_eq!(s.check(&header(0, 7, 1)), Ok(None));
    }

    #[test]
    fn history_replays_markers_and_skips_batches_they_ended() {
        // Epoch 3 data, a fencing abort at 4, then a straggler of 3 appended elsewhere.
        let mut s = ProducerStates::from_history([
            written(&header(3, 0, 2), 0),
            ProducerBatch::marker(9, 4, 2),
            written(&header(3, 2, 1), 3),
        ]);
        assert_eq!(
            s.check(&header(3, 3, 1)).unwrap_err().code(),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(s.check(&header(4, 0, 1)), Ok(None));
        // A commit marker of the same epoch keeps the sequence going.
        let mut s = ProducerStates::from_history([
            written(&header(3, 0, 2), 0),
            ProducerBatch::marker(9, 3, 2),
        ]);
        assert_eq!(s.check(&header(3, 2, 1)), Ok(None));
        // A marker alone names no sequence to follow: its producer stays unknown.
        let s = ProducerStates::from_history([ProducerBatch::marker(9, 4, 0)]);
        assert_eq!(s.active(), []);
    }

    #[test]
    fn active_producers_show_their_epoch_last_sequence_and_time() {
        let mut s = ProducerStates::from_history([written(&header(1, 0, 3), 0)]);
        let listed = ActiveProducer {
            producer_id: 9,
            epoch: 1,
            last_sequence: 2,
            last_timestamp: None,
        };
        assert_eq!(s.active(), std::slice::from_ref(&listed));
        s.record(written(&header(1, 3, 2), 3), Some(1_700));
        let now = ActiveProducer {
            last_sequence: 4,
            last_timestamp: Some(1_700),
            ..listed
        };
        assert_eq!(s.active(), [now]);
    }

    #[test]
    fn markers_older_than_the_producer_are_refused_and_newer_ones_fence() {
        let mut s = ProducerStates::from_history([written(&header(3, 0, 1), 0)]);
        let marker = |epoch| BatchHeader {
            control: true,
            transactional: true,
            base_sequence: -1,
            ..header(epoch, 0, 1)
        };
        assert_eq!(
            s.check_marker(&marker(2), false).unwrap_err().code(),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(s.check_marker(&marker(3), false), Ok(()));
        assert_eq!(s.check_marker(&marker(4), false), Ok(()));
        let unknown = BatchHeader {
            producer_id: 1,
            ..marker(0)
        };
        assert_eq!(s.check_marker(&unknown, false), Ok(()));
        // A transactions v2 marker (KIP-1228) needs an epoch above the producer's.
        assert_eq!(
            s.check_marker(&marker(3), true).unwrap_err().code(),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(s.check_marker(&marker(4), true), Ok(()));
        assert_eq!(s.check_marker(&unknown, true), Ok(()));
        // A marker of a newer epoch fences the old one and starts the new at zero.
        s.record_marker(&marker(4));
        assert_eq!(
            s.check(&header(3, 9, 1)).unwrap_err().code(),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(s.check(&header(4, 0, 1)), Ok(None));
    }
}
