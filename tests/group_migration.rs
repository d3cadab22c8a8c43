//! Kafka 4's online migration between the group protocols, through librdkafka members:
//! a classic group's members restarted one by one with `group.protocol=consumer` (a
//! rolling upgrade) while a producer runs: the group turns into a consumer group at the
//! first, its classic members carry on in it, and it keeps consuming with nothing
//! lost; and a consumer group left with classic members only goes back to a classic
//! group and rebalances.

use crate::support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use support::configs::s;
use support::groups::{create_topic, member, produce, producing, Read, QUICK_BEATS};
use support::{call, on_every_store, Gateway, RawClient, Store};

on_every_store!(
    a_classic_group_moves_to_the_consumer_protocol_member_by_member,
    a_group_left_with_classic_members_only_goes_back_to_classic
);

const TOPIC: &str = "migrating";
const GROUP: &str = "migrants";
const PARTITIONS: i32 = 6;

const SETTINGS: [(&str, &str); 3] = [
    ("group_initial_rebalance_delay_ms", "0"),
    QUICK_BEATS[0],
    QUICK_BEATS[1],
];

/// A classic member with the eager `range` assignor.
fn classic(bootstrap: &str) -> BaseConsumer {
    member(bootstrap, GROUP, TOPIC, "range")
}

/// A member of the consumer protocol (KIP-848).
fn kip848(bootstrap: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    c.subscribe(&[TOPIC]).unwrap();
    c
}

fn has_partitions(m: &BaseConsumer) -> bool {
    m.assignment().is_ok_and(|a| a.count() > 0)
}

/// ConsumerGroupDescribe of the group: each member's partitions.
fn consumer_group_members(gw: &Gateway) -> Vec<BTreeSet<i32>> {
    let mut c = RawClient::connect(gw.addr);
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(GROUP))]);
    let r = call!(c, ConsumerGroupDescribe, 0, request);
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0, "{g:?}");
    (g.members.iter())
        .map(|m| {
            (m.assignment.topic_partitions.iter())
                .flat_map(|t| t.partitions.iter().copied())
                .collect()
        })
        .collect()
}

/// Three classic members, each in turn closed and started again with the consumer
/// protocol while a producer writes: after each step the group reads on, the newcomer
/// gets partitions, and at the end every record produced was read and the three
/// consumer-protocol members split the partitions between them.
fn a_classic_group_moves_to_the_consumer_protocol_member_by_member(store: Store) {
    let Some(gw) = Gateway::process_on(store, &SETTINGS) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS);
    let stop = Arc::new(AtomicBool::new(false));
    let producer = producing(bootstrap.clone(), TOPIC, stop.clone());
    let mut members: Vec<BaseConsumer> = (0..3).map(|_| classic(&bootstrap)).collect();
    let mut seen = Read::default();
    let all = |ms: &[BaseConsumer]| ms.iter().all(has_partitions);
    seen.until(
        &members.iter().collect::<Vec<_>>(),
        Duration::from_secs(60),
        |_| all(&members),
    );
    for i in 0..members.len() {
        // Closing leaves the group (LeaveGroup); the newcomer joins with the other protocol.
        let upgraded = kip848(&bootstrap);
        drop(std::mem::replace(&mut members[i], upgraded));
        let before = seen.0.len();
        let polled: Vec<&BaseConsumer> = members.iter().collect();
        seen.until(&polled, Duration::from_secs(60), |s| {
            has_partitions(polled[i]) && s.0.len() >= before + 200
        });
    }
    stop.store(true, Ordering::Relaxed);
    let produced = producer.join().unwrap();
    let polled: Vec<&BaseConsumer> = members.iter().collect();
    seen.until(&polled, Duration::from_secs(60), |s| s.all_of(produced));
    assert!(produced > 600, "only {produced} records produced");

    // A consumer group now, its three members sharing the partitions.
    let parts = consumer_group_members(&gw);
    assert_eq!(parts.len(), 3, "{parts:?}");
    let owned: Vec<i32> = parts.iter().flatten().copied().collect();
    let distinct: BTreeSet<i32> = owned.iter().copied().collect();
    assert_eq!(
        (owned.len(), distinct),
        (PARTITIONS as usize, (0..PARTITIONS).collect()),
        "{parts:?}"
    );
}

/// Two classic members; a consumer-protocol member joins (the group becomes a consumer
/// group, the two carry on in it) and leaves again: the group is a classic one again,
/// the two rebalance in it with their own assignor and read on.
fn a_group_left_with_classic_members_only_goes_back_to_classic(store: Store) {
    let Some(gw) = Gateway::process_on(store, &SETTINGS) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, TOPIC, PARTITIONS);
    produce(&bootstrap, TOPIC, 0, 300);
    let (a, b) = (classic(&bootstrap), classic(&bootstrap));
    let mut seen = Read::default();
    seen.until(&[&a, &b], Duration::from_secs(60), |s| {
        s.all_of(300) && has_partitions(&a) && has_partitions(&b)
    });

    let c = kip848(&bootstrap);
    seen.until(&[&a, &b, &c], Duration::from_secs(60), |_| {
        has_partitions(&c)
    });
    assert_eq!(consumer_group_members(&gw).len(), 3);
    drop(c);

    produce(&bootstrap, TOPIC, 300, 300);
    seen.until(&[&a, &b], Duration::from_secs(60), |s| {
        s.all_of(600) && has_partitions(&a) && has_partitions(&b)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let groups = a
            .fetch_group_list(Some(GROUP), Duration::from_secs(5))
            .unwrap();
        let g = &groups.groups()[0];
        // A classic group answers with the protocol its members chose.
        if g.protocol() == "range" && g.state() == "Stable" && g.members().len() == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not a classic group again: {} {} {} members",
            g.protocol(),
            g.state(),
            g.members().len()
        );
        let polled_until = Instant::now() + Duration::from_millis(300);
        seen.until(&[&a, &b], Duration::from_secs(5), |_| {
            Instant::now() >= polled_until
        });
    }
}
