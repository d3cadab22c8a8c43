//! Compressed records sections kept from Produce, for Fetch to serve again.
//!
//! On Iggy a compressed Kafka batch is stored one record per message, so serving it
//! compressed (as its producer sent it) means compressing its records again on every
//! read: the Fetch path's main CPU cost for compressed topics. Yet the records a read
//! puts back together are, byte for byte, the section the producer compressed. So the
//! producer's compressed section is kept by what it holds uncompressed (codec, length
//! and a 128-bit hash), and a read whose rebuilt section matches serves the kept one.
//! A match is decided by content alone, never by offset, so nothing stale can be
//! served: not across DeleteRecords, compaction, a topic re-made, another gateway's
//! appends or a restart of Iggy, which at worst leave entries no read matches.
//!
//! Bounded: at most `budget` bytes of compressed sections (the oldest go first; 0
//! keeps none). Consumers that keep up read what was produced last, so they are the
//! ones served from here; a consumer far behind gets sections compressed for it.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_128;

/// What an uncompressed records section holds, as far as a kept one is matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Content {
    codec: i16,
    len: usize,
    hash: u128,
}

impl Content {
    pub fn of(codec: i16, records: &[u8]) -> Content {
        Content {
            codec,
            len: records.len(),
            hash: xxh3_128(records),
        }
    }
}

pub struct KeptSections {
    budget: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    sections: HashMap<Content, Bytes>,
    /// In the order they were kept: the first goes first.
    order: VecDeque<Content>,
    bytes: usize,
}

impl KeptSections {
    pub fn new(budget: usize) -> KeptSections {
        KeptSections {
            budget,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// Whether any section is kept at all.
    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Keeps `compressed`, a copy of it (not a view that would hold a whole request's
    /// buffer), as what `records` compress to by `codec`.
    pub fn keep(&self, codec: i16, records: &[u8], compressed: &[u8]) {
        if compressed.len() > self.budget {
            return;
        }
        let content = Content::of(codec, records);
        let mut kept = self.kept.lock();
        if kept.sections.contains_key(&content) {
            return;
        }
        while kept.bytes + compressed.len() > self.budget {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            kept.bytes -= kept.sections.remove(&oldest).map_or(0, |s| s.len());
        }
        kept.bytes += compressed.len();
        kept.order.push_back(content);
        (kept.sections).insert(content, Bytes::copy_from_slice(compressed));
    }

    /// The compressed section kept for `content`.
    pub fn get(&self, content: &Content) -> Option<Bytes> {
        self.kept.lock().sections.get(content).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_by_content_and_codec_and_drops_the_oldest_past_its_budget() {
        let kept = KeptSections::new(10);
        kept.keep(3, b"aaaa", b"A4");
        kept.keep(3, b"bbbb", b"B4xxxx");
        assert_eq!(
            kept.get(&Content::of(3, b"aaaa")).as_deref(),
            Some(&b"A4"[..])
        );
        assert_eq!(kept.get(&Content::of(4, b"aaaa")), None, "another codec");
        assert_eq!(kept.get(&Content::of(3, b"aaab")), None, "other records");
        kept.keep(3, b"cccc", b"C4xx");
        assert_eq!(kept.get(&Content::of(3, b"aaaa")), None, "the oldest went");
        assert!(kept.get(&Content::of(3, b"bbbb")).is_some());
        assert!(kept.get(&Content::of(3, b"cccc")).is_some());
        kept.keep(3, b"dddd", &[0; 11]);
        assert_eq!(kept.get(&Content::of(3, b"dddd")), None, "over the budget");
        let none = KeptSections::new(0);
        none.keep(3, b"aaaa", b"A4");
        assert!(!none.enabled() && none.get(&Content::of(3, b"aaaa")).is_none());
    }
}
