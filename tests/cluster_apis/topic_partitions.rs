//! DescribeTopicPartitions (75) v0, as Kafka 4.1's broker answers it: topics sorted by
//! name from the cursor's on, at most `response_partition_limit` partitions (at least 1,
//! at most 2000) and a next cursor where the limit cut the answer; each partition
//! placed, and each topic identified, exactly as Metadata says; no eligible leader
//! replicas; unknown topics UNKNOWN_TOPIC_OR_PARTITION (3), invalid names
//! INVALID_TOPIC_EXCEPTION (17); a cursor outside the topics named INVALID_REQUEST (42).

use crate::support;

use std::collections::BTreeMap;

use kafka_protocol::messages::{BrokerId, MetadataRequest};
use support::acls::UNKNOWN_TOPIC_OR_PARTITION;
use support::configs::{create_with, INVALID_REQUEST, INVALID_TOPIC};
use support::describe::{page, topic_partitions};
use support::{call, Gateway, RawClient, Store};

support::on_every_store!(
    pages_follow_the_cursor_and_match_metadata,
    every_topic_is_described_within_kafkas_limit,
);

/// What Metadata v12 says of every topic: id, internal, and per partition (leader,
/// leader epoch, replicas, in-sync replicas).
type Placed = (
    uuid::Uuid,
    bool,
    Vec<(BrokerId, i32, Vec<BrokerId>, Vec<BrokerId>)>,
);

fn metadata(c: &mut RawClient) -> BTreeMap<String, Placed> {
    let r = call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    r.topics
        .into_iter()
        .map(|t| {
            let partitions = (t.partitions.into_iter())
                .map(|p| (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes))
                .collect();
            let name = t.name.expect("named").to_string();
            (name, (t.topic_id, t.is_internal, partitions))
        })
        .collect()
}

/// Every topic described in `r` says what Metadata says of it, partition by partition.
fn assert_as_metadata(
    r: &kafka_protocol::messages::DescribeTopicPartitionsResponse,
    m: &BTreeMap<String, Placed>,
) {
    for t in r.topics.iter().filter(|t| t.error_code == 0) {
        let name = t.name.as_ref().expect("named").to_string();
        let (id, internal, partitions) = &m[&name];
        assert_eq!((&t.topic_id, &t.is_internal), (id, internal), "{name}");
        assert!(t.topic_authorized_operations > 0, "{name}: {t:?}");
        for p in &t.partitions {
            let (leader, epoch, replicas, isr) = &partitions[p.partition_index as usize];
            let seen = (
                &p.leader_id,
                &p.leader_epoch,
                &p.replica_nodes,
                &p.isr_nodes,
            );
            assert_eq!(
                seen,
                (leader, epoch, replicas, isr),
                "{name}-{}",
                p.partition_index
            );
            assert_eq!(p.error_code, 0);
            assert!(p.offline_replicas.is_empty(), "{p:?}");
            let none = Some(vec![]);
            assert_eq!(
                (&p.eligible_leader_replicas, &p.last_known_elr),
                (&none, &none)
            );
        }
    }
}

fn owned(topics: &[(&str, i16, &[i32])]) -> Vec<(String, i16, Vec<i32>)> {
    (topics.iter())
        .map(|(t, code, ps)| (t.to_string(), *code, ps.to_vec()))
        .collect()
}

fn pages_follow_the_cursor_and_match_metadata(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    for (topic, partitions) in [("paged-a", 5), ("paged-b", 3), ("paged-c", 1)] {
        let made = create_with(&mut c, 7, topic, partitions, 1, &[], false);
        assert_eq!(made.error_code, 0, "{made:?}");
    }
    let m = metadata(&mut c);
    let named = [
        "paged-c",
        "paged-a",
        "nowhere",
        "paged-b",
        "bad name!",
        "paged-a",
    ];
    let unknown = UNKNOWN_TOPIC_OR_PARTITION;

    let r = topic_partitions(&mut c, &named, 4, None);
    assert_as_metadata(&r, &m);
    let expected = owned(&[
        ("bad name!", INVALID_TOPIC, &[]),
        ("nowhere", unknown, &[]),
        ("paged-a", 0, &[0, 1, 2, 3]),
    ]);
    assert_eq!(page(&r), (expected, Some(("paged-a".into(), 4))));
    assert!(r.topics[..2].iter().all(|t| t.topic_id.is_nil()), "{r:?}");

    // From the cursor: the rest of paged-a, all of paged-b, then the limit is reached.
    let r = topic_partitions(&mut c, &named, 4, Some(("paged-a", 4)));
    assert_as_metadata(&r, &m);
    let expected = owned(&[("paged-a", 0, &[4]), ("paged-b", 0, &[0, 1, 2])]);
    assert_eq!(page(&r), (expected, Some(("paged-c".into(), 0))));
    let r = topic_partitions(&mut c, &named, 4, Some(("paged-c", 0)));
    assert_eq!(page(&r), (owned(&[("paged-c", 0, &[0])]), None));

    // One partition at least, whatever the limit asked for.
    for limit in [0, -5] {
        let r = topic_partitions(&mut c, &["paged-b"], limit, None);
        let expected = owned(&[("paged-b", 0, &[0])]);
        assert_eq!(
            page(&r),
            (expected, Some(("paged-b".into(), 1))),
            "limit {limit}"
        );
    }
    // A cursor past the last partition describes none of that topic.
    let r = topic_partitions(&mut c, &["paged-b", "paged-c"], 10, Some(("paged-b", 9)));
    let expected = owned(&[("paged-b", 0, &[]), ("paged-c", 0, &[0])]);
    assert_eq!(page(&r), (expected, None));

    // A cursor on a topic not named, or before partition 0: the request is refused.
    for cursor in [("paged-c", 0), ("paged-a", -1)] {
        let r = topic_partitions(&mut c, &["paged-a", "paged-b"], 10, Some(cursor));
        let expected = owned(&[
            ("paged-a", INVALID_REQUEST, &[]),
            ("paged-b", INVALID_REQUEST, &[]),
        ]);
        assert_eq!(page(&r), (expected, None), "{cursor:?}");
    }
}

fn every_topic_is_described_within_kafkas_limit(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    // More partitions in all than Kafka's cap of 2000 in one answer (Iggy makes at
    // most 1000 in one topic at its creation).
    for (topic, partitions) in [("wide-a", 990), ("wide-b", 990), ("narrow", 2)] {
        let made = create_with(&mut c, 7, topic, partitions, 1, &[], false);
        assert_eq!(made.error_code, 0, "{made:?}");
    }
    let m = metadata(&mut c);
    let r = topic_partitions(&mut c, &[], i32::MAX, None);
    assert_as_metadata(&r, &m);
    let (topics, cursor) = page(&r);
    let listed: Vec<_> = (topics.iter())
        .map(|(t, code, ps)| (t.as_str(), *code, ps.len()))
        .collect();
    // Sorted by name: `__consumer_offsets` (50, internal), `narrow`, `wide-a`, then
    // the first 958 partitions of `wide-b`.
    let expected = [
        ("__consumer_offsets", 0, 50),
        ("narrow", 0, 2),
        ("wide-a", 0, 990),
        ("wide-b", 0, 958),
    ];
    assert_eq!(listed, expected);
    assert_eq!(cursor, Some(("wide-b".into(), 958)));
    assert!(r.topics[0].is_internal && !r.topics[1].is_internal);
    let r = topic_partitions(&mut c, &[], 2000, Some(("wide-b", 958)));
    assert_as_metadata(&r, &m);
    let rest: Vec<i32> = (958..990).collect();
    assert_eq!(page(&r), (owned(&[("wide-b", 0, &rest)]), None));
}
