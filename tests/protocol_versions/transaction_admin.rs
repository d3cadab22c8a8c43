//! The transaction admin APIs at each version, on a topic of their own (markers and
//! transactional records would shift the test topic's offsets): WriteTxnMarkers v1
//! aborting an open transaction, DescribeProducers showing where one began,
//! DescribeTransactions of an open and an ended one, ListTransactions with each
//! filter its version has.

use crate::support;

use kafka_protocol::messages::*;
use support::configs::s;
use support::transactions::{self as txn, add, end, init, latest, produce};
use support::RawClient;

use super::create;

const TOPIC: &str = "versions-txn-admin";
const READ_COMMITTED: i8 = 1;

/// The admin APIs' topic, made by whichever of them runs first.
fn topic(c: &mut RawClient) -> &'static str {
    let code = create(c, 7, TOPIC, 1).error_code;
    assert!(code == 0 || code == 36, "CreateTopics {TOPIC}: {code}");
    TOPIC
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub(super) fn write_txn_markers(c: &mut RawClient, v: i16) {
    let topic = topic(c);
    // A second incarnation (epoch 1) opens a transaction, left hanging.
    init(c, "versions-markers");
    let p = init(c, "versions-markers");
    assert_eq!(add(c, &p, topic, 0), 0);
    let first = produce(c, &p, (topic, 0), 0, 3, now_ms());
    assert_eq!(latest(c, topic, 0, READ_COMMITTED), first, "held open");
    let stale = [(topic, &[0, 5][..])];
    let current = [(topic, &[0][..])];
    let answers = txn::write_markers_at(
        c,
        (v, 0),
        &[
            (p.pid, p.epoch - 1, false, &stale),
            (p.pid, p.epoch, false, &current),
        ],
    );
    // The older epoch: INVALID_PRODUCER_EPOCH (47), written nowhere; a partition past
    // the end: UNKNOWN_TOPIC_OR_PARTITION (3); the current epoch's abort is written.
    let named = |partition, code| (TOPIC.to_string(), partition, code);
    assert_eq!(
        answers,
        [vec![named(0, 47), named(5, 3)], vec![named(0, 0)]],
        "v{v}"
    );
    let high = latest(c, topic, 0, 0);
    assert_eq!(high, first + 4, "three records and one marker");
    assert_eq!(
        latest(c, topic, 0, READ_COMMITTED),
        high,
        "aborted, no longer open"
    );
    if v >= 2 {
        // KIP-1228: a transactions v2 marker carries the epoch its coordinator bumped
        // to end the transaction, so one at the producer's epoch is stale (47); one
        // above it is written. Transaction version 1 at the same epoch is written.
        let at = |epoch| [(p.pid, epoch, false, &current[..])];
        let written = |c: &mut RawClient, tv, epoch| txn::write_markers_at(c, (v, tv), &at(epoch));
        assert_eq!(
            written(c, 2, p.epoch),
            [vec![named(0, 47)]],
            "TV2, same epoch"
        );
        assert_eq!(latest(c, topic, 0, 0), high, "nothing written");
        assert_eq!(
            written(c, 1, p.epoch),
            [vec![named(0, 0)]],
            "TV1, same epoch"
        );
        assert_eq!(
            written(c, 2, p.epoch + 1),
            [vec![named(0, 0)]],
            "TV2, bumped"
        );
        assert_eq!(latest(c, topic, 0, 0), high + 2, "two more markers");
    }
}

pub(super) fn describe_producers(c: &mut RawClient, v: i16) {
    let topic = topic(c);
    let p = init(c, "versions-producers");
    assert_eq!(add(c, &p, topic, 0), 0);
    let at = now_ms();
    let first = produce(c, &p, (topic, 0), 0, 2, at);
    let answers = txn::describe_producers(c, &[(topic, &[0, 1]), ("missing", &[0]), ("a/b", &[0])]);
    let codes: Vec<_> = answers.iter().map(|a| a.error_code).collect();
    // A partition past the end and a missing topic: 3; a name Kafka forbids: 17.
    assert_eq!(codes, [0, 3, 3, 17], "v{v}: {answers:?}");
    let mine = |answers: &[describe_producers_response::PartitionResponse]| {
        let all = &answers[0].active_producers;
        let found = all.iter().find(|s| s.producer_id.0 == p.pid).cloned();
        found.unwrap_or_else(|| panic!("producer {} not among {all:?}", p.pid))
    };
    let state = mine(&answers);
    let shown = (
        state.producer_epoch,
        state.last_sequence,
        state.last_timestamp,
        state.current_txn_start_offset,
    );
    assert_eq!(shown, (p.epoch.into(), 1, at, first), "{state:?}");
    // Committed: no transaction open there any more.
    assert_eq!(end(c, &p, true), 0);
    let after = txn::describe_producers(c, &[(topic, &[0])]);
    assert_eq!(mine(&after).current_txn_start_offset, -1, "{after:?}");
}

pub(super) fn describe_transactions(c: &mut RawClient, v: i16) {
    let topic = topic(c);
    let p = init(c, "versions-describe");
    assert_eq!(add(c, &p, topic, 0), 0);
    let answers = txn::describe_transactions(c, &["versions-describe", "versions-never-seen"]);
    let open = &answers[0];
    assert_eq!(open.error_code, 0, "v{v}: {open:?}");
    let shown = (
        open.transaction_state.as_str(),
        open.producer_id.0,
        open.producer_epoch,
        open.transaction_timeout_ms,
    );
    assert_eq!(shown, ("Ongoing", p.pid, p.epoch, 60_000), "{open:?}");
    let started = open.transaction_start_time_ms;
    assert!(started > 0 && started <= now_ms(), "{open:?}");
    let topics: Vec<_> = (open.topics.iter())
        .map(|t| (t.topic.to_string(), t.partitions.clone()))
        .collect();
    assert_eq!(topics, [(TOPIC.to_string(), vec![0])]);
    // TRANSACTIONAL_ID_NOT_FOUND (105).
    assert_eq!(answers[1].error_code, 105, "{:?}", answers[1]);

    assert_eq!(end(c, &p, false), 0);
    let ended = &txn::describe_transactions(c, &["versions-describe"])[0];
    let shown = (
        ended.transaction_state.as_str(),
        ended.transaction_start_time_ms,
        ended.topics.len(),
    );
    assert_eq!(shown, ("CompleteAbort", -1, 0), "{ended:?}");
}

pub(super) fn list_transactions(c: &mut RawClient, v: i16) {
    let topic = topic(c);
    let (idle_id, open_id) = (
        format!("versions-list-v{v}"),
        format!("versions-list-open-v{v}"),
    );
    let idle = init(c, &idle_id);
    let open = init(c, &open_id);
    assert_eq!(add(c, &open, topic, 0), 0);
    let entry = |id: &str, pid, state: &str| (id.to_string(), pid, state.to_string());
    let (idle_entry, open_entry) = (
        entry(&idle_id, idle.pid, "Empty"),
        entry(&open_id, open.pid, "Ongoing"),
    );
    let list = |c: &mut RawClient, request| txn::list_transactions(c, v, request);

    let (code, unknown, all) = list(c, ListTransactionsRequest::default());
    assert_eq!((code, unknown.len()), (0, 0));
    assert!(
        all.contains(&idle_entry) && all.contains(&open_entry),
        "{all:?}"
    );
    // A state filter, with a name Kafka does not know answered back.
    let states = vec![s("Ongoing"), s("NoSuchState")];
    let (code, unknown, listed) = list(
        c,
        ListTransactionsRequest::default().with_state_filters(states),
    );
    assert_eq!((code, unknown), (0, vec!["NoSuchState".to_string()]));
    assert!(
        listed.contains(&open_entry) && !listed.contains(&idle_entry),
        "{listed:?}"
    );
    assert!(
        listed.iter().all(|(.., state)| state == "Ongoing"),
        "{listed:?}"
    );
    let by_producer =
        ListTransactionsRequest::default().with_producer_id_filters(vec![ProducerId(idle.pid)]);
    assert_eq!(list(c, by_producer).2, std::slice::from_ref(&idle_entry));
    if v >= 1 {
        // Running over an hour: not the transaction just opened (KIP-994).
        let long = ListTransactionsRequest::default().with_duration_filter(3_600_000);
        let (code, _, listed) = list(c, long);
        assert_eq!(code, 0);
        assert!(!listed.contains(&open_entry), "{listed:?}");
    }
    if v >= 2 {
        // A pattern matches whole ids (KIP-1152); an invalid one is
        // INVALID_REGULAR_EXPRESSION (128).
        let pattern =
            |p: &str| ListTransactionsRequest::default().with_transactional_id_pattern(Some(s(p)));
        let (code, _, listed) = list(c, pattern("versions-list-(open-)?v2"));
        assert_eq!(
            (code, listed),
            (0, vec![open_entry, idle_entry]),
            "sorted by id"
        );
        assert_eq!(list(c, pattern("list-v2")).2, []);
        let (code, _, listed) = list(c, pattern("(ab(cd"));
        assert_eq!((code, listed.len()), (128, 0));
    }
}
