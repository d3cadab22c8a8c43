//! Fetch sessions by hand-built requests, at every Fetch version that has them (v7 up),
//! on both stores: what Kafka's `FetchManager` answers to each session field.

use crate::support;

use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse};
use kafka_protocol::records::RecordBatchDecoder;
use support::admin::Scrape;
use support::configs::{create, versions};
use support::records::produce_n;
use support::{call, topic_name, Gateway, RawClient, Store};
use uuid::Uuid;

const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
const FETCH_SESSION_TOPIC_ID_ERROR: i16 = 106;

/// One topic of 3 partitions fetched at one version.
struct Fetcher {
    c: RawClient,
    v: i16,
    topic: String,
    id: Uuid,
}

/// A partition in an answer: (partition, high watermark, offsets of its records).
type Seen = (i32, i64, Vec<i64>);

/// A fetch's answer: (error code, session id, partitions in order).
type Answer = (i16, i32, Vec<Seen>);

impl Fetcher {
    fn new(gw: &Gateway, v: i16, topic: &str) -> Fetcher {
        let mut c = RawClient::connect(gw.addr);
        let created = create(&mut c, 7, topic, &[], false);
        assert_eq!(created.error_code, 0, "{created:?}");
        Fetcher {
            c,
            v,
            topic: topic.to_string(),
            id: created.topic_id,
        }
    }

    /// The topic as this version names it: by id from v13, by name before.
    fn named(&self, t: FetchTopic) -> FetchTopic {
        match self.v >= 13 {
            true => t.with_topic_id(self.id),
            false => t.with_topic(topic_name(&self.topic)),
        }
    }

    /// Fetch with session fields, listing `(partition, offset)` and forgetting
    /// `forgotten`; answers at once (no wait, no minimum).
    fn fetch(&mut self, session: (i32, i32), listed: &[(i32, i64)], forgotten: &[i32]) -> Answer {
        let partitions = listed.iter().map(|&(p, offset)| {
            FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)
        });
        let topics = match listed.is_empty() {
            true => vec![],
            false => vec![self.named(FetchTopic::default().with_partitions(partitions.collect()))],
        };
        let forgotten = match forgotten.is_empty() {
            true => vec![],
            false => {
                let t = ForgottenTopic::default().with_partitions(forgotten.to_vec());
                vec![match self.v >= 13 {
                    true => t.with_topic_id(self.id),
                    false => t.with_topic(topic_name(&self.topic)),
                }]
            }
        };
        let request = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(1 << 20)
            .with_session_id(session.0)
            .with_session_epoch(session.1)
            .with_topics(topics)
            .with_forgotten_topics_data(forgotten);
        let r = call!(self.c, Fetch, self.v, request);
        seen(self, r)
    }
}

fn seen(f: &Fetcher, r: FetchResponse) -> Answer {
    let mut partitions = Vec::new();
    for t in &r.responses {
        match f.v >= 13 {
            true => assert_eq!(t.topic_id, f.id),
            false => assert_eq!(t.topic, topic_name(&f.topic)),
        }
        for p in &t.partitions {
            assert_eq!(p.error_code, 0, "{p:?}");
            let mut bytes = p.records.clone().unwrap_or_default();
            let sets = RecordBatchDecoder::decode_all(&mut bytes).expect("batches");
            let offsets = sets.iter().flat_map(|s| s.records.iter().map(|r| r.offset));
            partitions.push((p.partition_index, p.high_watermark, offsets.collect()));
        }
    }
    (r.error_code, r.session_id, partitions)
}

fn fetch_versions() -> impl Iterator<Item = i16> {
    versions(ApiKey::Fetch).filter(|&v| v >= 7)
}

/// Create, incremental answers of changed partitions only, add, forget, 70, 71, a
/// topic-naming change (106), close with -1: at each version.
fn a_session_sends_only_what_changed(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    for v in fetch_versions() {
        let mut f = Fetcher::new(&gw, v, &format!("sessions-v{v}"));
        for p in 0..3 {
            produce_n(&mut f.c, &f.topic, p, 1);
        }
        // Epoch 0, no id: a full fetch that opens a session.
        let (code, id, all) = f.fetch((0, 0), &[(0, 0), (1, 0)], &[]);
        assert_eq!(code, 0, "v{v}");
        assert_ne!(id, 0, "v{v}: a session");
        assert_eq!(all, [(0, 1, vec![0]), (1, 1, vec![0])], "v{v}");

        // Both read to the end: nothing changed, nothing answered.
        let answer = f.fetch((id, 1), &[(0, 1), (1, 1)], &[]);
        assert_eq!(answer, (0, id, vec![]), "v{v}");
        // A record on partition 1: only it comes back, the request listing nothing.
        produce_n(&mut f.c, &f.topic, 1, 1);
        let answer = f.fetch((id, 2), &[], &[]);
        assert_eq!(answer, (0, id, vec![(1, 2, vec![1])]), "v{v}");
        // Partition 2 added (and 1 moved on): only the new one has anything to say.
        let answer = f.fetch((id, 3), &[(1, 2), (2, 0)], &[]);
        assert_eq!(answer, (0, id, vec![(2, 1, vec![0])]), "v{v}");
        // Partition 0 forgotten: a record on it is not answered, one on 2 is.
        produce_n(&mut f.c, &f.topic, 0, 1);
        produce_n(&mut f.c, &f.topic, 2, 1);
        let answer = f.fetch((id, 4), &[], &[0]);
        assert_eq!(answer, (0, id, vec![(2, 2, vec![0, 1])]), "v{v}");

        // A wrong epoch (71) or an unknown id (70): an empty answer, session id 0,
        // and the session goes on.
        assert_eq!(
            f.fetch((id, 9), &[], &[]),
            (INVALID_FETCH_SESSION_EPOCH, 0, vec![])
        );
        let unknown = if id == 1 { 2 } else { 1 };
        assert_eq!(
            f.fetch((unknown, 5), &[], &[]),
            (FETCH_SESSION_ID_NOT_FOUND, 0, vec![])
        );
        // The request again (a duplicate): its epoch is used up.
        let answer = f.fetch((id, 5), &[(2, 2)], &[]);
        assert_eq!(answer, (0, id, vec![]), "v{v}");
        assert_eq!(
            f.fetch((id, 5), &[], &[]),
            (INVALID_FETCH_SESSION_EPOCH, 0, vec![])
        );
        // Topics named the other way than when it was opened (v12 against v13).
        if v == 13 || v == 12 {
            let other = Fetcher {
                c: RawClient::connect(gw.addr),
                v: if v == 13 { 12 } else { 13 },
                topic: f.topic.clone(),
                id: f.id,
            };
            let mut other = other;
            let answer = other.fetch((id, 6), &[], &[]);
            assert_eq!(answer, (FETCH_SESSION_TOPIC_ID_ERROR, 0, vec![]), "v{v}");
        }
        // From another connection, the session is the same.
        let mut elsewhere = Fetcher {
            c: RawClient::connect(gw.addr),
            ..f
        };
        let answer = elsewhere.fetch((id, 6), &[], &[]);
        assert_eq!(answer, (0, id, vec![]), "v{v}");

        // Epoch -1 closes it: a full answer of what is listed, session id 0.
        let answer = elsewhere.fetch((id, -1), &[(2, 2)], &[]);
        assert_eq!(answer, (0, 0, vec![(2, 2, vec![])]), "v{v}");
        let answer = elsewhere.fetch((id, 7), &[], &[]);
        assert_eq!(answer, (FETCH_SESSION_ID_NOT_FOUND, 0, vec![]), "v{v}");

        // Forgetting every partition closes a session too.
        let (_, id, _) = elsewhere.fetch((0, 0), &[(0, 0)], &[]);
        assert_ne!(id, 0);
        let answer = elsewhere.fetch((id, 1), &[], &[0]);
        assert_eq!(answer, (0, 0, vec![]), "v{v}");
        let answer = elsewhere.fetch((id, 2), &[], &[]);
        assert_eq!(answer, (FETCH_SESSION_ID_NOT_FOUND, 0, vec![]), "v{v}");
    }
    let scrape = Scrape::take(gw.admin);
    assert_eq!(scrape.sum("iggy_kafka_gateway_fetch_sessions", &[]), 0.0);
    let served = scrape.sum("iggy_kafka_gateway_incremental_fetches_total", &[]);
    assert_eq!(served, 6.0 * fetch_versions().count() as f64);
}

/// One slot: a second full fetch gets no session (id 0, a plain full answer) until
/// the first closes; with eviction after 0 ms an idle session makes way.
fn a_full_cache_answers_session_id_zero_and_evicts_stale_sessions(store: Store) {
    for (eviction_ms, evicts) in [("120000", false), ("0", true)] {
        let settings = [
            ("max_incremental_fetch_session_cache_slots", "1"),
            ("min_incremental_fetch_session_eviction_ms", eviction_ms),
        ];
        let Some(gw) = Gateway::start_on(store, &settings) else {
            return;
        };
        for v in fetch_versions() {
            let mut f = Fetcher::new(&gw, v, &format!("cache-v{v}"));
            produce_n(&mut f.c, &f.topic, 0, 1);
            let (_, first, _) = f.fetch((0, 0), &[(0, 0)], &[]);
            assert_ne!(first, 0, "v{v}");
            // Unused for longer than the eviction time (over 0 ms), whatever else runs.
            std::thread::sleep(Duration::from_millis(5));
            let second = f.fetch((0, 0), &[(0, 0), (1, 0)], &[]);
            assert_eq!(second.2, [(0, 1, vec![0]), (1, 0, vec![])], "v{v}");
            let next = match evicts {
                false => {
                    assert_eq!(second.1, 0, "v{v}: the cache is full");
                    // The first still answers; closed, its slot is free again.
                    assert_eq!(f.fetch((first, 1), &[(0, 1)], &[]), (0, first, vec![]));
                    f.fetch((first, -1), &[(0, 1)], &[]);
                    f.fetch((0, 0), &[(0, 0)], &[]).1
                }
                true => {
                    let answer = f.fetch((first, 1), &[], &[]);
                    assert_eq!(answer, (FETCH_SESSION_ID_NOT_FOUND, 0, vec![]), "v{v}");
                    second.1
                }
            };
            assert_ne!(next, 0, "v{v}");
            f.fetch((next, -1), &[], &[]);
        }
        let evictions =
            Scrape::take(gw.admin).sum("iggy_kafka_gateway_fetch_session_evictions_total", &[]);
        let expected = if evicts { fetch_versions().count() } else { 0 };
        assert_eq!(evictions, expected as f64);
    }
}

support::on_every_store!(
    a_session_sends_only_what_changed,
    a_full_cache_answers_session_id_zero_and_evicts_stale_sessions
);

/// Two gateways on one Iggy: a session lives on the gateway that opened it. The other
/// does not know its id (70, as a Kafka broker that never held it), and the session
/// carries on where it was opened.
#[test]
fn a_session_lives_on_the_gateway_that_holds_it() {
    let Some(server) = support::iggy::IggyServer::start() else {
        return;
    };
    let (a, b) = (server.gateway(), server.gateway());
    let v = fetch_versions()
        .last()
        .expect("a Fetch version with sessions");
    let mut f = Fetcher::new(&a, v, "session-home");
    produce_n(&mut f.c, &f.topic, 0, 2);
    let (code, id, opened) = f.fetch((0, 0), &[(0, 0)], &[]);
    assert_eq!((code, opened), (0, vec![(0, 2, vec![0, 1])]));
    assert_ne!(id, 0, "a session is opened");
    let home = std::mem::replace(&mut f.c, RawClient::connect(b.addr));
    assert_eq!(
        f.fetch((id, 1), &[], &[]),
        (FETCH_SESSION_ID_NOT_FOUND, 0, vec![])
    );
    f.c = home;
    // The client's position moved past both records: nothing new to answer.
    assert_eq!(
        f.fetch((id, 1), &[(0, 2)], &[]),
        (0, id, vec![]),
        "unchanged at home"
    );
}
