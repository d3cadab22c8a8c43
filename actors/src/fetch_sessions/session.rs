//! One incremental fetch session (KIP-227): the partitions a client fetches, in the
//! order they are read, with what it asked for each and what it was last told.

use std::collections::HashSet;

use indexmap::IndexMap;
use kafka_protocol::messages::TopicName;
use uuid::Uuid;

/// A partition as a fetch names it: by topic name before v13, by topic id from v13
/// (the other field then empty), so equal keys mean what Kafka's `CachedPartition`
/// equality means.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub topic: TopicName,
    pub topic_id: Uuid,
    pub partition: i32,
}

/// What a fetch asks of one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchParams {
    pub fetch_offset: i64,
    pub max_bytes: i32,
}

/// What one partition's answer says, as far as a session compares answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    /// Bytes of records in the answer.
    pub record_bytes: usize,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub error_code: i16,
}

/// A partition of a session: the client's last parameters and the watermarks it was
/// last answered.
#[derive(Clone, Debug)]
struct Cached {
    params: FetchParams,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

impl Cached {
    fn new(params: FetchParams) -> Cached {
        Cached {
            params,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
        }
    }

    /// Whether the client must hear of this partition (Kafka's
    /// `maybeUpdateResponseData`): records, changed watermarks or an error. The cached
    /// values follow the answer; after an error the high watermark is forgotten, so the
    /// partition is answered again once the error is gone.
    fn must_answer(&mut self, a: &Answered) -> bool {
        let changed = a.record_bytes > 0
            || a.error_code != 0
            || self.high_watermark != a.high_watermark
            || self.last_stable_offset != a.last_stable_offset
            || self.log_start_offset != a.log_start_offset;
        self.high_watermark = if a.error_code != 0 {
            -1
        } else {
            a.high_watermark
        };
        self.last_stable_offset = a.last_stable_offset;
        self.log_start_offset = a.log_start_offset;
        changed
    }
}

/// One session. Its epoch is the one the next incremental fetch must carry.
#[derive(Debug)]
pub struct Session {
    pub epoch: i32,
    /// Created by a fetch at v13+: partitions are keyed by topic id.
    pub uses_topic_ids: bool,
    pub created_ms: u64,
    pub last_used_ms: u64,
    /// The partition count when the cache last looked (its eviction key).
    pub cached_size: usize,
    partitions: IndexMap<PartitionKey, Cached>,
}

impl Session {
    /// A session holding the partitions of a full fetch and what it was answered.
    pub fn new(
        uses_topic_ids: bool,
        now: u64,
        answered: impl IntoIterator<Item = (PartitionKey, FetchParams, Answered)>,
    ) -> Session {
        let partitions = answered
            .into_iter()
            .map(|(key, params, answer)| {
                let mut cached = Cached::new(params);
                cached.must_answer(&answer);
                (key, cached)
            })
            .collect();
        Session {
            epoch: next_epoch(0),
            uses_topic_ids,
            created_ms: now,
            last_used_ms: now,
            cached_size: 0,
            partitions,
        }
    }

    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// An incremental fetch's changes: partitions it lists are added at the end or
    /// take its new parameters in place; forgotten ones leave.
    pub fn update(
        &mut self,
        listed: impl IntoIterator<Item = (PartitionKey, FetchParams)>,
        forgotten: &[PartitionKey],
    ) {
        for (key, params) in listed {
            self.partitions
                .entry(key)
                .and_modify(|c| c.params = params)
                .or_insert_with(|| Cached::new(params));
        }
        for key in forgotten {
            self.partitions.shift_remove(key);
        }
    }

    /// Every partition with its parameters, in the order they are to be read.
    pub fn wanted(&self) -> Vec<(PartitionKey, FetchParams)> {
        let all = self.partitions.iter();
        all.map(|(k, c)| (k.clone(), c.params)).collect()
    }

    /// Which of the answers (one per partition, in [`Self::wanted`] order) the client
    /// must hear. Partitions that returned records move to the end, so under
    /// `max_bytes` the others are read first next time (Kafka's rotation).
    pub fn answer(&mut self, answered: &[(PartitionKey, Answered)]) -> Vec<bool> {
        let mut moved = HashSet::new();
        let keep = answered
            .iter()
            .map(|(key, a)| match self.partitions.get_mut(key) {
                Some(cached) => {
                    if a.record_bytes > 0 {
                        moved.insert(key);
                    }
                    cached.must_answer(a)
                }
                None => true,
            })
            .collect();
        if !moved.is_empty() {
            let all = std::mem::take(&mut self.partitions).into_iter();
            let (stay, go): (Vec<_>, Vec<_>) = all.partition(|(k, _)| !moved.contains(k));
            self.partitions = stay.into_iter().chain(go).collect();
        }
        keep
    }
}

/// The epoch after `epoch` (`FetchMetadata.nextEpoch`): wraps to 1, never to 0.
pub fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        e if e < 0 => -1,
        i32::MAX => 1,
        e => e + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(partition: i32) -> PartitionKey {
        PartitionKey {
            topic: TopicName::default(),
            topic_id: Uuid::nil(),
            partition,
        }
    }

    fn answered(record_bytes: usize, high_watermark: i64, error_code: i16) -> Answered {
        Answered {
            record_bytes,
            high_watermark,
            last_stable_offset: high_watermark,
            log_start_offset: 0,
            error_code,
        }
    }

    const PARAMS: FetchParams = FetchParams {
        fetch_offset: 0,
        max_bytes: 1,
    };

    fn order(s: &Session) -> Vec<i32> {
        s.wanted().iter().map(|(k, _)| k.partition).collect()
    }

    #[test]
    fn partitions_that_returned_records_go_to_the_end() {
        let first = (0..3).map(|p| (key(p), PARAMS, answered(0, 5, 0)));
        let mut s = Session::new(false, 0, first);
        let now = [(key(0), answered(10, 6, 0)), (key(1), answered(0, 5, 0))];
        let now = [&now[..], &[(key(2), answered(7, 9, 0))]].concat();
        assert_eq!(s.answer(&now), [true, false, true]);
        assert_eq!(order(&s), [1, 0, 2]);
    }

    #[test]
    fn an_error_is_answered_and_so_is_the_partition_once_it_is_gone() {
        let mut s = Session::new(false, 0, [(key(0), PARAMS, answered(0, 5, 0))]);
        assert_eq!(s.answer(&[(key(0), answered(0, -1, 6))]), [true]);
        // The same watermark as before the error: still news to the client.
        assert_eq!(s.answer(&[(key(0), answered(0, 5, 0))]), [true]);
        assert_eq!(s.answer(&[(key(0), answered(0, 5, 0))]), [false]);
    }

    #[test]
    fn listed_partitions_keep_their_place_and_new_ones_go_last() {
        let first = (0..3).map(|p| (key(p), PARAMS, answered(0, 5, 0)));
        let mut s = Session::new(false, 0, first);
        let moved = FetchParams {
            fetch_offset: 4,
            max_bytes: 1,
        };
        s.update([(key(1), moved), (key(7), PARAMS)], &[key(0)]);
        assert_eq!(order(&s), [1, 2, 7]);
        assert_eq!(s.wanted()[0].1, moved);
    }

    #[test]
    fn epochs_wrap_to_one_and_final_stays_final() {
        assert_eq!(next_epoch(0), 1);
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(-1), -1);
    }
}
