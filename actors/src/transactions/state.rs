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

use crate::log_slot::AppendError;
use crate::offsets::OffsetError;
use crate::protocol::markers::Marker;
use crate::store::StoreError;

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
    /// The producer id before the last one the coordinator gave out when epochs ran
    /// out at an end (transactions v2): its EndTxn retried is answered again.
    #[serde(default = "no_producer")]
    pub previous_producer_id: i64,
    /// The producer id an end that exhausted the epochs moves to once complete.
    #[serde(default = "no_producer")]
    pub next_producer_id: i64,
    /// The partitions written in the open (or deciding) transaction.
    pub partitions: BTreeSet<(String, i32)>,
    /// The groups whose offsets the transaction commits (AddOffsetsToTxn).
    pub groups: BTreeSet<String>,
    /// When the open transaction began (ms since the epoch); 0 when none is open.
    pub started_ms: i64,
    /// When the state last changed.
    pub updated_ms: i64,
}

fn no_producer() -> i64 {
    -1
}

/// What an EndTxn asks: the decision, the producer, and whether the producer speaks
/// transactions v2 (EndTxn v5, KIP-890), whose every end bumps the epoch.
#[derive(Clone, Copy, Debug)]
pub struct EndAsk {
    pub commit: bool,
    pub producer_id: i64,
    pub epoch: i16,
    pub bump: bool,
}

/// What an EndTxn leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Already decided and completed: a retry, answered as the first time was.
    Again,
    /// The decision to store, then complete.
    Decided(TxnState),
}

#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("producer id {got} is not the one of this transactional id ({current})")]
    ProducerIdMismatch { got: i64, current: i64 },
    #[error("producer epoch {got} is fenced: the current epoch is {current}")]
    Fenced { got: i16, current: i16 },
    #[error(
        "producer {producer_id} (epoch {epoch}) has no open transaction holding {partition}: \
         add the partition to the transaction first"
    )]
    NotAdded {
        producer_id: i64,
        epoch: i16,
        partition: String,
    },
    #[error("the transaction is {0:?}: a previous end is still being completed")]
    Concurrent(Phase),
    #[error("cannot {action} a transaction in state {phase:?}")]
    InvalidState { action: &'static str, phase: Phase },
    #[error("transaction timeout {asked} ms is not within 1..={max} ms")]
    InvalidTimeout { asked: i32, max: i32 },
    #[error("the transaction coordinator is another gateway")]
    NotCoordinator,
    #[error(
        "the stored transaction state changed under this coordinator: another gateway \
         coordinated the id meanwhile"
    )]
    Superseded,
    #[error("no transactional id {0} is known")]
    UnknownId(String),
    #[error("no producer has initialized transactional id {0}: InitProducerId first")]
    NoProducer(String),
    #[error("transaction state not read or written")]
    Store(#[from] StoreError),
    #[error("a stored transaction state is unreadable")]
    Unreadable(#[source] serde_json::Error),
    #[error("the transaction's marker not written to {partition}")]
    Marker {
        partition: String,
        #[source]
        cause: AppendError,
    },
    #[error("the transaction's offsets of group {group} not settled")]
    Offsets {
        group: String,
        #[source]
        cause: OffsetError,
    },
    #[error("the transaction coordinator's task ended before answering")]
    Gone(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// How an API answers an old epoch (Kafka's `KafkaApis` and `AddPartitionsToTxnManager`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OldEpoch {
    /// PRODUCER_FENCED (90): the coordinator's answer, to clients that know it (KIP-588).
    ProducerFenced,
    /// INVALID_PRODUCER_EPOCH (47): the coordinator's answer to clients from before
    /// KIP-588, and what a partition answers (Produce, and TxnOffsetCommit, which the
    /// group's partition serves), Kafka's brokers turning the coordinator's
    /// PRODUCER_FENCED into it. Clients take either as fatal at the coordinator's APIs,
    /// and librdkafka a transactional Produce's 47 too.
    InvalidProducerEpoch,
}

impl OldEpoch {
    /// An API whose versions from `first` know PRODUCER_FENCED, at `version`.
    pub fn at(version: i16, first: i16) -> OldEpoch {
        match version >= first {
            true => OldEpoch::ProducerFenced,
            false => OldEpoch::InvalidProducerEpoch,
        }
    }
}

impl TxnError {
    /// The code of this refusal where an old epoch is answered `old`.
    pub fn code_with(&self, old: OldEpoch) -> ResponseError {
        match (self, old) {
            (TxnError::Fenced { .. }, OldEpoch::InvalidProducerEpoch) => {
                ResponseError::InvalidProducerEpoch
            }
            _ => self.code(),
        }
    }

    /// The coordinator's code for this refusal.
    pub fn code(&self) -> ResponseError {
        match self {
            TxnError::ProducerIdMismatch { .. } => ResponseError::InvalidProducerIdMapping,
            TxnError::Fenced { .. } => ResponseError::ProducerFenced,
            TxnError::NotAdded { .. } => ResponseError::InvalidTxnState,
            TxnError::Concurrent(_) => ResponseError::ConcurrentTransactions,
            TxnError::InvalidState { .. } => ResponseError::InvalidTxnState,
            TxnError::InvalidTimeout { .. } => ResponseError::InvalidTransactionTimeout,
            TxnError::NotCoordinator | TxnError::Superseded => ResponseError::NotCoordinator,
            TxnError::UnknownId(_) => ResponseError::TransactionalIdNotFound,
            TxnError::NoProducer(_) => ResponseError::InvalidProducerIdMapping,
            TxnError::Store(_)
            | TxnError::Unreadable(_)
            | TxnError::Marker { .. }
            | TxnError::Offsets { .. }
            | TxnError::Gone(_) => ResponseError::CoordinatorNotAvailable,
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
            previous_producer_id: -1,
            next_producer_id: -1,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            started_ms: 0,
            updated_ms: now,
        }
    }

    /// An end that bumps the epoch from here needs a new producer id (Kafka's
    /// `isProducerEpochExhausted`).
    pub fn epoch_exhausted(&self) -> bool {
        self.epoch >= i16::MAX - 1
    }

    pub fn encode(&self) -> bytes::Bytes {
        serde_json::to_vec(self).expect("a state encodes").into()
    }

    pub fn decode(b: &[u8]) -> Result<TxnState, TxnError> {
        serde_json::from_slice(b).map_err(TxnError::Unreadable)
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

    /// A batch or offset commit of this producer may join the transaction: it is the
    /// current producer (`check_producer`) and no end is being decided
    /// (CONCURRENT_TRANSACTIONS), as Kafka's coordinator verifies one for a partition
    /// (`handleVerifyPartitionsInTransaction`).
    pub fn check_joinable(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        self.check_producer(producer_id, epoch)?;
        match self.phase.marker() {
            Some(_) => Err(TxnError::Concurrent(self.phase)),
            None => Ok(()),
        }
    }

    /// A transactional batch of this producer may be appended to `partition`: the
    /// producer may join (`check_joinable`) and its open transaction holds the
    /// partition (INVALID_TXN_STATE otherwise, what Kafka answers Produce before v11).
    pub fn check_batch(
        &self,
        producer_id: i64,
        epoch: i16,
        partition: &(String, i32),
    ) -> Result<(), TxnError> {
        self.check_joinable(producer_id, epoch)?;
        match self.phase == Phase::Ongoing && self.partitions.contains(partition) {
            true => Ok(()),
            false => Err(TxnError::NotAdded {
                producer_id,
                epoch,
                partition: format!("{}-{}", partition.0, partition.1),
            }),
        }
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

    /// EndTxn: the decision, or [`Ended::Again`] for a retry of an end already
    /// completed. Transactions v2 bump the epoch at every end, so a retry is told
    /// by the request's epoch being one behind, and an abort with nothing open is a
    /// decision too (Kafka's `endTransaction`); `next_producer_id` is where an end
    /// that exhausts the epochs moves the producer.
    pub fn end(&self, ask: EndAsk, next_producer_id: i64, now: i64) -> Result<Ended, TxnError> {
        let EndAsk {
            commit,
            producer_id,
            epoch,
            bump,
        } = ask;
        let action = if commit { "commit" } else { "abort" };
        let invalid = |phase| Err(TxnError::InvalidState { action, phase });
        let retry = if bump {
            let on_bump = self.producer_id == producer_id && self.epoch as i32 == epoch as i32 + 1;
            let on_overflow = self.previous_producer_id == producer_id
                && epoch == i16::MAX - 1
                && self.epoch == 0;
            if self.producer_id != producer_id && !on_overflow {
                return Err(TxnError::ProducerIdMismatch {
                    got: producer_id,
                    current: self.producer_id,
                });
            }
            let valid = match self.phase {
                Phase::Ongoing | Phase::Empty => epoch == self.epoch,
                Phase::PrepareCommit | Phase::PrepareAbort => on_bump,
                Phase::CompleteCommit | Phase::CompleteAbort => {
                    on_bump || on_overflow || epoch == self.epoch
                }
            };
            if !valid {
                return Err(TxnError::Fenced {
                    got: epoch,
                    current: self.epoch,
                });
            }
            on_bump || on_overflow
        } else {
            // v1 keeps the epoch: an end already completed can only be a retry.
            self.check_producer(producer_id, epoch)?;
            true
        };
        let decided = match (self.phase, commit) {
            (Phase::Ongoing, true) => Phase::PrepareCommit,
            (Phase::Ongoing, false) => Phase::PrepareAbort,
            (Phase::CompleteCommit, true) | (Phase::CompleteAbort, false) if retry => {
                return Ok(Ended::Again)
            }
            // v2: an abort with nothing open still ends a transaction, bumping the epoch.
            (Phase::Empty | Phase::CompleteCommit | Phase::CompleteAbort, false)
                if bump && !retry =>
            {
                Phase::PrepareAbort
            }
            (Phase::PrepareCommit, true) | (Phase::PrepareAbort, false) => {
                return Err(TxnError::Concurrent(self.phase))
            }
            (phase, _) => return invalid(phase),
        };
        let mut next = self.clone();
        if next.phase != Phase::Ongoing {
            next.started_ms = now;
            next.partitions.clear();
            next.groups.clear();
        }
        next.phase = decided;
        if bump {
            next.last_epoch = self.epoch;
            next.epoch = self.epoch + 1;
            next.next_producer_id = if self.epoch_exhausted() {
                next_producer_id
            } else {
                -1
            };
        }
        next.updated_ms = now;
        Ok(Ended::Decided(next))
    }

    /// After the markers are written: the transaction is over.
    pub fn complete(&self, now: i64) -> TxnState {
        let mut next = self.clone();
        next.phase = match self.phase {
            Phase::PrepareCommit => Phase::CompleteCommit,
            _ => Phase::CompleteAbort,
        };
        if self.next_producer_id >= 0 {
            // The epochs ran out: the producer carries on as a new id from epoch 0.
            next.previous_producer_id = self.producer_id;
            next.producer_id = self.next_producer_id;
            next.next_producer_id = -1;
            next.epoch = 0;
            next.last_epoch = -1;
        }
        next.partitions.clear();
        next.groups.clear();
        next.started_ms = 0;
        next.updated_ms = now;
        next
    }

    /// The epoch a decided transaction's batches carry: the one before its end's bump
    /// (a transactions v2 end, or an abort that fences), else its own. Only v2 ends
    /// and fencing leave `last_epoch` one below `epoch`; InitProducerId sets it to -1.
    pub fn batch_epoch(&self) -> i16 {
        match self.last_epoch >= 0 && self.epoch == self.last_epoch + 1 {
            true => self.last_epoch,
            false => self.epoch,
        }
    }

    /// The transaction with what other gateways added to it (`remote_adds.rs`), or
    /// unchanged when that adds nothing new; a decided end takes no more (`add`
    /// refuses it).
    pub fn with_adds(&self, adds: &super::remote_adds::Adds, now: i64) -> TxnState {
        let nothing = adds.partitions.is_empty() && adds.groups.is_empty();
        let known = self.phase == Phase::Ongoing
            && adds.partitions.is_subset(&self.partitions)
            && adds.groups.is_subset(&self.groups);
        if nothing || known {
            return self.clone();
        }
        match self.add(adds.partitions.iter().cloned(), None, now) {
            Ok(mut next) => {
                next.groups.extend(adds.groups.iter().cloned());
                next
            }
            Err(_) => self.clone(),
        }
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

    fn ask(s: &TxnState, commit: bool, bump: bool) -> EndAsk {
        EndAsk {
            commit,
            producer_id: s.producer_id,
            epoch: s.epoch,
            bump,
        }
    }

    /// The decision of an end, which must be one.
    fn decided(ended: Result<Ended, TxnError>) -> TxnState {
        match ended {
            Ok(Ended::Decided(s)) => s,
            other => panic!("not a decision: {other:?}"),
        }
    }

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
        let decided = decided(s.end(ask(&s, true, false), -1, 30));
        assert_eq!(decided.phase.marker(), Some(Marker::Commit));
        assert_eq!(decided.epoch, s.epoch, "v1 ends keep the epoch");
        assert!(matches!(
            decided.add([("t".into(), 2)], None, 31),
            Err(TxnError::Concurrent(Phase::PrepareCommit))
        ));
        assert_eq!(decided.start_ms(), 10);
        let done = decided.complete(40);
        assert_eq!(
            (done.phase, done.partitions.len(), done.start_ms()),
            (Phase::CompleteCommit, 0, -1)
        );
        // A retried commit is answered again; an abort after it is refused.
        assert!(matches!(
            done.end(ask(&done, true, false), -1, 41),
            Ok(Ended::Again)
        ));
        assert_eq!(
            done.end(ask(&done, false, false), -1, 41)
                .unwrap_err()
                .code(),
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
    fn a_batch_joins_only_its_producers_open_transaction_at_its_epoch() {
        let s = ongoing();
        let t0 = ("t".to_string(), 0);
        assert!(s.check_batch(7, 2, &t0).is_ok());
        let code = |r: Result<(), TxnError>, old| r.unwrap_err().code_with(old);
        let fenced = || s.check_batch(7, 1, &t0);
        assert_eq!(
            code(fenced(), OldEpoch::InvalidProducerEpoch),
            ResponseError::InvalidProducerEpoch,
            "a partition answers an old epoch 47"
        );
        assert_eq!(
            code(fenced(), OldEpoch::ProducerFenced),
            ResponseError::ProducerFenced
        );
        assert_eq!(
            code(s.check_batch(8, 2, &t0), OldEpoch::InvalidProducerEpoch),
            ResponseError::InvalidProducerIdMapping
        );
        let t1 = ("t".to_string(), 1);
        assert_eq!(
            code(s.check_batch(7, 2, &t1), OldEpoch::InvalidProducerEpoch),
            ResponseError::InvalidTxnState,
            "a partition not added"
        );
        let deciding = decided(s.end(ask(&s, true, false), -1, 30));
        assert!(matches!(
            deciding.check_joinable(7, 2),
            Err(TxnError::Concurrent(Phase::PrepareCommit))
        ));
        let done = deciding.complete(31);
        assert!(
            done.check_joinable(7, 2).is_ok(),
            "the next transaction may begin"
        );
        assert!(
            done.check_batch(7, 2, &t0).is_err(),
            "but holds no partition yet"
        );
    }

    #[test]
    fn clients_from_before_kip_588_hear_an_old_epoch_as_47() {
        assert_eq!(OldEpoch::at(1, 2), OldEpoch::InvalidProducerEpoch);
        assert_eq!(OldEpoch::at(2, 2), OldEpoch::ProducerFenced);
        let other = TxnError::Concurrent(Phase::PrepareAbort);
        assert_eq!(
            other.code_with(OldEpoch::InvalidProducerEpoch),
            ResponseError::ConcurrentTransactions,
            "only an old epoch changes"
        );
    }

    #[test]
    fn adds_of_other_gateways_open_or_grow_a_transaction_until_it_is_decided() {
        let mut adds = crate::transactions::remote_adds::Adds::default();
        adds.partitions.insert(("t".into(), 3));
        adds.groups.insert("g".into());
        let mut empty = TxnState::new(7, 60_000, 0);
        empty.epoch = 2;
        let opened = empty.with_adds(&adds, 5);
        assert_eq!((opened.phase, opened.started_ms), (Phase::Ongoing, 5));
        assert_eq!((opened.partitions.len(), opened.groups.len()), (1, 1));
        let grown = ongoing().with_adds(&adds, 20);
        assert_eq!((grown.partitions.len(), grown.started_ms), (2, 10));
        assert_eq!(grown.with_adds(&adds, 30), grown, "nothing new: unchanged");
        let decided = decided(grown.end(ask(&grown, true, true), -1, 40));
        assert_eq!(decided.with_adds(&Default::default(), 41), decided);
        let mut more = crate::transactions::remote_adds::Adds::default();
        more.partitions.insert(("u".into(), 0));
        assert_eq!(
            decided.with_adds(&more, 41),
            decided,
            "a decision takes no more"
        );
        // The batches of a v2 end carry the epoch before its bump; a v1 end's, its own.
        assert_eq!((decided.epoch, decided.batch_epoch()), (3, 2));
        let v1 = decided_v1();
        assert_eq!(v1.batch_epoch(), v1.epoch);
    }

    fn decided_v1() -> TxnState {
        let s = ongoing();
        decided(s.end(ask(&s, false, false), -1, 1))
    }

    #[test]
    fn ending_nothing_is_refused_and_timeouts_count_from_the_start() {
        let mut empty = TxnState::new(7, 100, 0);
        empty.epoch = 0;
        assert_eq!(
            empty
                .end(ask(&empty, true, false), -1, 1)
                .unwrap_err()
                .code(),
            ResponseError::InvalidTxnState
        );
        let s = ongoing();
        assert!(!s.timed_out(60_010));
        assert!(s.timed_out(60_011));
        assert!(!s.expired(i64::MAX, 1), "an open transaction never expires");
        assert!(decided(s.end(ask(&s, false, false), -1, 1))
            .complete(5)
            .expired(11, 5));
        assert_eq!(
            empty
                .end(ask(&empty, false, false), -1, 1)
                .unwrap_err()
                .code(),
            ResponseError::InvalidTxnState,
            "v1 refuses an abort of nothing"
        );
    }

    #[test]
    fn v2_ends_bump_the_epoch_and_know_their_retries() {
        let s = ongoing();
        let prepared = decided(s.end(ask(&s, true, true), -1, 30));
        assert_eq!((prepared.epoch, prepared.last_epoch), (3, 2));
        // The retry carries the old epoch: while deciding it waits, once done it is
        // answered again; the new epoch is the next transaction's.
        assert!(matches!(
            prepared.end(ask(&s, true, true), -1, 31),
            Err(TxnError::Concurrent(Phase::PrepareCommit))
        ));
        let done = prepared.complete(40);
        assert!(matches!(
            done.end(ask(&s, true, true), -1, 41),
            Ok(Ended::Again)
        ));
        assert_eq!(
            done.end(ask(&done, true, true), -1, 41).unwrap_err().code(),
            ResponseError::InvalidTxnState,
            "a commit of nothing at the new epoch"
        );
        // An abort of nothing is a decision of its own, with its own bump.
        let aborted = decided(done.end(ask(&done, false, true), -1, 42));
        assert_eq!((aborted.phase, aborted.epoch), (Phase::PrepareAbort, 4));
        assert!(aborted.partitions.is_empty());
        assert_eq!(
            s.end(ask(&prepared, true, true), -1, 43)
                .unwrap_err()
                .code(),
            ResponseError::ProducerFenced,
            "an epoch ahead of the coordinator's"
        );
        let mut older = ask(&s, true, true);
        older.epoch = 1;
        assert_eq!(
            done.end(older, -1, 44).unwrap_err().code(),
            ResponseError::ProducerFenced
        );
    }

    #[test]
    fn v2_ends_past_the_last_epoch_move_to_a_new_producer_id() {
        let mut s = ongoing();
        s.epoch = i16::MAX - 1;
        let prepared = decided(s.end(ask(&s, false, true), 99, 30));
        assert_eq!(
            (
                prepared.producer_id,
                prepared.epoch,
                prepared.next_producer_id
            ),
            (7, i16::MAX, 99),
            "the markers still go out as the old producer"
        );
        let done = prepared.complete(40);
        assert_eq!(
            (done.producer_id, done.epoch, done.previous_producer_id),
            (99, 0, 7)
        );
        assert!(matches!(
            done.end(ask(&s, false, true), -1, 41),
            Ok(Ended::Again)
        ));
        assert!(decided(done.end(ask(&done, false, true), -1, 42)).next_producer_id < 0);
    }

    #[test]
    fn a_state_survives_encoding() {
        let s = ongoing().add([], Some("g".into()), 11).unwrap();
        assert_eq!(TxnState::decode(&s.encode()).unwrap(), s);
    }
}
