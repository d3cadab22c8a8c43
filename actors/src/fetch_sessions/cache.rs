//! The sessions of one gateway, bounded as Kafka's `FetchSessionCacheShard` bounds
//! them: at most `slots`, and a new session takes the place of an old one only if
//! that one is stale (unused for longer than `eviction_ms`), or else if it was older
//! than `eviction_ms` when last used and has fewer partitions than the new one.
//! Every session here is a consumer's (no followers fetch from a gateway), so
//! Kafka's privileged sessions do not arise. Times are milliseconds of a clock the
//! caller keeps.

use std::collections::{BTreeSet, HashMap};

use super::session::Session;

pub struct SessionCache {
    slots: usize,
    eviction_ms: u64,
    sessions: HashMap<i32, Session>,
    /// (last used, id), least recently used first.
    last_used: BTreeSet<(u64, i32)>,
    /// (partitions, id) of the sessions older than `eviction_ms` when last used,
    /// fewest partitions first: the ones a larger new session may take the place of.
    evictable: BTreeSet<(usize, i32)>,
    /// Partitions over every session, as last counted.
    partitions: usize,
}

/// Whether a full fetch got a session.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    /// A new session; `evicted` if another left to make room.
    Session { id: i32, evicted: bool },
    /// No slot could be had: the client gets session id 0.
    NoRoom,
}

impl SessionCache {
    pub fn new(slots: usize, eviction_ms: u64) -> SessionCache {
        SessionCache {
            slots,
            eviction_ms,
            sessions: HashMap::new(),
            last_used: BTreeSet::new(),
            evictable: BTreeSet::new(),
            partitions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Partitions cached over every session.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    pub fn get_mut(&mut self, id: i32) -> Option<&mut Session> {
        self.sessions.get_mut(&id)
    }

    /// Makes a session of `size` partitions under an unused id if there is room or
    /// room can be made; `make` builds it.
    pub fn create(&mut self, now: u64, size: usize, make: impl FnOnce() -> Session) -> Created {
        let evicted = if self.sessions.len() < self.slots {
            false
        } else if self.evict_for(size, now) {
            true
        } else {
            return Created::NoRoom;
        };
        let id = self.unused_id();
        self.sessions.insert(id, make());
        self.touch(id, now);
        Created::Session { id, evicted }
    }

    /// Removes a session; whether it was there.
    pub fn remove(&mut self, id: i32) -> bool {
        let Some(session) = self.sessions.remove(&id) else {
            return false;
        };
        self.last_used.remove(&(session.last_used_ms, id));
        self.evictable.remove(&(session.cached_size, id));
        self.partitions -= session.cached_size;
        true
    }

    /// Records a use of the session at `now`, with its partition count as it is now.
    pub fn touch(&mut self, id: i32, now: u64) {
        let Some(session) = self.sessions.get_mut(&id) else {
            return;
        };
        self.last_used.remove(&(session.last_used_ms, id));
        self.evictable.remove(&(session.cached_size, id));
        self.partitions -= session.cached_size;
        session.last_used_ms = now;
        session.cached_size = session.len();
        self.last_used.insert((now, id));
        if now.saturating_sub(session.created_ms) > self.eviction_ms {
            self.evictable.insert((session.cached_size, id));
        }
        self.partitions += session.cached_size;
    }

    /// Kafka's `tryEvict` for an unprivileged session of `size` partitions: the least
    /// recently used session if it is stale, or else the evictable one with the fewest
    /// partitions if it has fewer than `size`.
    fn evict_for(&mut self, size: usize, now: u64) -> bool {
        let Some(&(last_used, oldest)) = self.last_used.first() else {
            return false;
        };
        let victim = if now.saturating_sub(last_used) > self.eviction_ms {
            oldest
        } else {
            match self.evictable.first() {
                Some(&(smaller, id)) if smaller < size => id,
                _ => return false,
            }
        };
        tracing::debug!(session = victim, "fetch session evicted");
        self.remove(victim)
    }

    /// A random positive id no session has (`newSessionId`).
    fn unused_id(&self) -> i32 {
        loop {
            let id = (random_u32() & i32::MAX as u32) as i32;
            if id != 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

fn random_u32() -> u32 {
    // The OS source; should it ever fail, ids from the clock still differ enough.
    getrandom::u32().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        nanos.map_or(1, |d| d.subsec_nanos())
    })
}

#[cfg(test)]
mod tests {
    use super::super::session::Session;
    use super::*;

    const EVICTION: u64 = 120_000;

    fn with(cache: &mut SessionCache, now: u64, size: usize) -> Created {
        cache.create(now, size, || {
            let mut s = Session::new(true, now, []);
            let keys = (0..size as i32).map(|p| {
                let key = super::super::session::PartitionKey {
                    topic: Default::default(),
                    topic_id: uuid::Uuid::nil(),
                    partition: p,
                };
                let params = super::super::session::FetchParams {
                    fetch_offset: 0,
                    max_bytes: 1,
                };
                (key, params)
            });
            s.update(keys, &[]);
            s
        })
    }

    fn id(created: Created) -> i32 {
        match created {
            Created::Session { id, .. } => id,
            Created::NoRoom => panic!("no session"),
        }
    }

    #[test]
    fn a_full_cache_gives_no_session_while_its_sessions_are_young_and_used() {
        let mut cache = SessionCache::new(2, EVICTION);
        id(with(&mut cache, 0, 1));
        id(with(&mut cache, 0, 1));
        assert_eq!(with(&mut cache, 10, 50), Created::NoRoom);
        assert_eq!((cache.len(), cache.partitions()), (2, 2));
    }

    #[test]
    fn a_stale_session_leaves_for_a_new_one() {
        let mut cache = SessionCache::new(2, EVICTION);
        let old = id(with(&mut cache, 0, 5));
        let used = id(with(&mut cache, 0, 5));
        cache.touch(used, EVICTION);
        // `old` unused for more than the eviction time; `used` not.
        let created = with(&mut cache, EVICTION + 1, 1);
        assert!(matches!(created, Created::Session { evicted: true, .. }));
        assert!(cache.get_mut(old).is_none() && cache.get_mut(used).is_some());
        assert_eq!(cache.partitions(), 6);
    }

    #[test]
    fn a_larger_session_takes_the_place_of_a_smaller_one_no_longer_new() {
        let mut cache = SessionCache::new(2, EVICTION);
        let small = id(with(&mut cache, 0, 2));
        let big = id(with(&mut cache, 0, 9));
        // Both used after the eviction time since their creation: evictable by size.
        for s in [small, big] {
            cache.touch(s, EVICTION + 10);
        }
        // Not larger than the smallest: refused; larger: the smallest goes.
        assert_eq!(with(&mut cache, EVICTION + 20, 2), Created::NoRoom);
        let created = with(&mut cache, EVICTION + 20, 3);
        assert!(matches!(created, Created::Session { evicted: true, .. }));
        assert!(cache.get_mut(small).is_none() && cache.get_mut(big).is_some());
    }

    #[test]
    fn a_session_not_used_since_it_was_new_is_not_evicted_by_size() {
        let mut cache = SessionCache::new(1, EVICTION);
        let small = id(with(&mut cache, 0, 1));
        cache.touch(small, 10);
        // Last used when it was 10 ms old: not evictable by size, and not stale yet.
        assert_eq!(with(&mut cache, EVICTION, 100), Created::NoRoom);
        assert!(cache.get_mut(small).is_some());
    }

    #[test]
    fn no_slots_means_no_sessions() {
        let mut cache = SessionCache::new(0, EVICTION);
        assert_eq!(with(&mut cache, 0, 1), Created::NoRoom);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn removing_a_session_frees_its_slot_and_partitions() {
        let mut cache = SessionCache::new(1, EVICTION);
        let s = id(with(&mut cache, 0, 4));
        assert!(cache.remove(s) && !cache.remove(s));
        assert_eq!((cache.len(), cache.partitions()), (0, 0));
        id(with(&mut cache, 1, 1));
    }
}
