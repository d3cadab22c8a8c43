//! One transactional id's state, as Kafka's `TransactionMetadata` keeps it, and the
//! rules that move it: pure functions over the stored value, so every transition is
//! checked here once and the coordinator only stores what they return.
//!
//! Empty → Ongoing (partitions or a group added) → PrepareCommit / PrepareAbort (the
//! decision stored; markers then go to every partition) → CompleteCommit /
//! CompleteAbort → Ongoing again with the next transaction.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};

use crate::protocol::markers::Marker;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

/// Every state name Kafka's `TransactionState.fromName` knows: ListTransactions
/// answers any other filter as unknown. PrepareEpochFence and Dead are Kafka's
/// passing states, never listed here.
pub const KAFKA_STATE_NAMES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "PrepareEpochFence",
    "Dead",
];

impl Phase {
    /// Kafka's state names, as DescribeTransactions and ListTransactions give them.
    pub fn kafka_name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::Ongoing => "Ongoing",
            Phase::PrepareCommit => "PrepareCommit",
            Phase::PrepareAbort => "PrepareAbort",
            Phase::CompleteCommit => "CompleteCommit",
            Phase::CompleteAbort => "CompleteAbort",
        }
    }

    /// The marker a decided transaction writes.
    pub fn marker(self) -> Option<Marker> {
        match self {
            Phase::PrepareCommit => Some(Marker::Commit),
            Phase::PrepareAbort => Some(Marker::Abort),
            _ => None,
        }
    }
}

/// A transactional id's state, stored as JSON in table `transactions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnState {
    pub producer_id: i64,
    pub epoch: i16,
    /// The epoch before the coordinator last bumped it by itself (aborting a timed-out
    /// transaction): a producer still on it may recover by InitProducerId (KIP-360).
    pub last_epoch: i16,
    pub phase: Phase,
    pub timeout_ms: i32,
    /// The partitions written in the open (or deciding) transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// The groups whose offsets the transaction commits (AddOffsetsToTxn).
    pub groups: BTreeSet<String>,
    /// When the open transaction began (ms since the epoch); 0 when none is open.
    pub started_ms: i64,
    /// When the state last changed.
    pub updated_ms: i64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TxnError {
    #[error("producer id {got} is not the one of this transactional id ({current})")]
    ProducerIdMismatch { got: i64, current: i64 },
    #[error("producer epoch {got} is fenced: the current epoch is {current}")]
    Fenced { got: i16, current: i16 },
    #[error("the transaction is {0:?}: a previous end is still being completed")]
    Concurrent(Phase),
    #[error("cannot {action} a transaction in state {phase:?}")]
    InvalidState { action: &'static str, phase: Phase },
    #[error("transaction timeout {asked} ms is not within 1..={max} ms")]
    InvalidTimeout { asked: i32, max: i32 },
    #[error("the transaction coordinator is another gateway")]
    NotCoordinator,
    #[error("no transactional id {0} is known")]
    UnknownId(String),
    #[error("transaction state: {0}")]
    Store(String),
}

impl TxnError {
    pub fn code(&self) -> ResponseError {
        match self {
            TxnError::ProducerIdMismatch { .. } => ResponseError::InvalidProducerIdMapping,
            TxnError::Fenced { .. } => ResponseError::ProducerFenced,
            TxnError::Concurrent(_) => ResponseError::ConcurrentTransactions,
            TxnError::InvalidState { .. } => ResponseError::InvalidTxnState,
            TxnError::InvalidTimeout { .. } => ResponseError::InvalidTransactionTimeout,
            TxnError::NotCoordinator => ResponseError::NotCoordinator,
            TxnError::UnknownId(_) => ResponseError::TransactionalIdNotFound,
            TxnError::Store(_) => ResponseError::CoordinatorNotAvailable,
        }
    }
}

impl TxnState {
    pub fn new(producer_id: i64, timeout_ms: i32, now: i64) -> TxnState {
        TxnState {
            producer_id,
            epoch: -1,
            last_epoch: -1,
            phase: Phase::Empty,
            timeout_ms,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            started_ms: 0,
            updated_ms: now,
        }
    }

    pub fn encode(&self) -> bytes::Bytes {
        serde_json::to_vec(self).expect("a state encodes").into()
    }

    pub fn decode(b: &[u8]) -> Result<TxnState, TxnError> {
        serde_json::from_slice(b).map_err(|e| TxnError::Store(format!("a stored state: {e}")))
    }

    /// A transaction open or being decided: a new producer incarnation must see it
    /// ended before it starts.
    pub fn is_open(&self) -> bool {
        matches!(
            self.phase,
            Phase::Ongoing | Phase::PrepareCommit | Phase::PrepareAbort
        )
    }

    /// When the open (or deciding) transaction began, Kafka's `txnStartTimestamp`;
    /// -1 with none.
    pub fn start_ms(&self) -> i64 {
        match self.started_ms {
            0 => -1,
            started => started,
        }
    }

    /// The request's producer is this id's current one.
    pub fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::ProducerIdMismatch {
                got: producer_id,
                current: self.producer_id,
            });
        }
        if epoch != self.epoch {
            return Err(TxnError::Fenced {
                got: epoch,
                current: self.epoch,
            });
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction opens, or grows.
    pub fn add(
        &self,
        partitions: impl IntoIterator<Item = (String, i32)>,
        group: Option<String>,
        now: i64,
    ) -> Result<TxnState, TxnError> {
        match self.phase {
            Phase::PrepareCommit | Phase::PrepareAbort => {
                return Err(TxnError::Concurrent(self.phase))
            }
            Phase::Empty | Phase::Ongoing | Phase::CompleteCommit | Phase::CompleteAbort => {}
        }
        let mut next = self.clone();
        if next.phase != Phase::Ongoing {
            next.phase = Phase::Ongoing;
            next.partitions.clear();
            next.groups.clear();
            next.started_ms = now;
        }
        next.partitions.extend(partitions);
        next.groups.extend(group);
        next.updated_ms = now;
        Ok(next)
    }

    /// EndTxn: the decision, or `None` when it was already taken and completed (a
    /// retried EndTxn, answered as it was the first time).
    pub fn end(&self, commit: bool, now: i64) -> Result<Option<TxnState>, TxnError> {
        let decided = if commit {
            Phase::PrepareCommit
        } else {
            Phase::PrepareAbort
        };
        let action = if commit { "commit" } else { "abort" };
        match (self.phase, commit) {
            (Phase::Ongoing, _) => {}
            (Phase::CompleteCommit, true) | (Phase::CompleteAbort, false) => return Ok(None),
            (Phase::PrepareCommit, true) | (Phase::PrepareAbort, false) => {
                return Err(TxnError::Concurrent(self.phase))
            }
            (phase, _) => return Err(TxnError::InvalidState { action, phase }),
        }
        let mut next = self.clone();
        next.phase = decided;
        next.updated_ms = now;
        Ok(Some(next))
    }

    /// After the markers are written: the transaction is over.
    pub fn complete(&self, now: i64) -> TxnState {
        let mut next = self.clone();
        next.phase = match self.phase {
            Phase::PrepareCommit => Phase::CompleteCommit,
            _ => Phase::CompleteAbort,
        };
        next.partitions.clear();
        next.groups.clear();
        next.started_ms = 0;
        next.updated_ms = now;
        next
    }

    /// The open transaction has outlived its timeout.
    pub fn timed_out(&self, now: i64) -> bool {
        self.phase == Phase::Ongoing && now - self.started_ms > self.timeout_ms as i64
    }

    /// Unused long enough, with nothing open, to be forgotten.
    pub fn expired(&self, now: i64, expiration_ms: i64) -> bool {
        !self.is_open() && now - self.updated_ms > expiration_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ongoing() -> TxnState {
        let mut s = TxnState::new(7, 60_000, 0);
        s.epoch = 2;
        s.add([("t".to_string(), 0)], None, 10).unwrap()
    }

    #[test]
    fn a_transaction_opens_grows_and_ends() {
        let s = ongoing();
        assert_eq!((s.phase, s.started_ms), (Phase::Ongoing, 10));
        let s = s.add([("t".into(), 1)], Some("g".into()), 20).unwrap();
        assert_eq!(
            (s.partitions.len(), s.groups.len(), s.started_ms),
            (2, 1, 10)
        );
        let decided = s.end(true, 30).unwrap().unwrap();
        assert_eq!(decided.phase.marker(), Some(Marker::Commit));
        assert_eq!(
            decided.add([("t".into(), 2)], None, 31),
            Err(TxnError::Concurrent(Phase::PrepareCommit))
        );
        assert_eq!(decided.start_ms(), 10);
        let done = decided.complete(40);
        assert_eq!(
            (done.phase, done.partitions.len(), done.start_ms()),
            (Phase::CompleteCommit, 0, -1)
        );
        // A retried commit is answered again; an abort after it is refused.
        assert_eq!(done.end(true, 41), Ok(None));
        assert_eq!(
            done.end(false, 41).unwrap_err().code(),
            ResponseError::InvalidTxnState
        );
        // The next transaction starts afresh.
        let next = done.add([("u".into(), 0)], None, 50).unwrap();
        assert_eq!((next.partitions.len(), next.started_ms), (1, 50));
    }

    #[test]
    fn an_old_epoch_or_another_producer_is_refused() {
        let s = ongoing();
        assert_eq!(
            s.check_producer(7, 1).unwrap_err().code(),
            ResponseError::ProducerFenced
        );
        assert_eq!(
            s.check_producer(8, 2).unwrap_err().code(),
            ResponseError::InvalidProducerIdMapping
        );
        assert!(s.check_producer(7, 2).is_ok());
    }

    #[test]
    fn ending_nothing_is_refused_and_timeouts_count_from_the_start() {
        let mut empty = TxnState::new(7, 100, 0);
        empty.epoch = 0;
        assert_eq!(
            empty.end(true, 1).unwrap_err().code(),
            ResponseError::InvalidTxnState
        );
        let s = ongoing();
        assert!(!s.timed_out(60_010));
        assert!(s.timed_out(60_011));
        assert!(!s.expired(i64::MAX, 1), "an open transaction never expires");
        assert!(s.end(false, 1).unwrap().unwrap().complete(5).expired(11, 5));
    }

    #[test]
    fn a_state_survives_encoding() {
        let s = ongoing().add([], Some("g".into()), 11).unwrap();
        assert_eq!(TxnState::decode(&s.encode()).unwrap(), s);
    }
}
