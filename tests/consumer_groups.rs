//! Consumer groups through librdkafka (the `rdkafka` crate): members share a topic's
//! partitions, commit, and resume from their commits after a rebalance and after a
//! gateway restart; admin paths list, describe and delete groups.

use crate::support;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance, RebalanceProtocol};
use rdkafka::{ClientContext, TopicPartitionList};

use support::groups::{commit, consume, create_topic, member, member_with, produce};
use support::{Gateway, Store};

/// Settings that keep group tests quick: a short first-rebalance delay.
const FAST_GROUPS: &[(&str, &str)] = &[("group_initial_rebalance_delay_ms", "200")];

fn members_share_partitions_and_resume_from_commits(store: Store) {
    let Some(gw) = Gateway::start_on(store, FAST_GROUPS) else {
        return;
    };
    let b = gw.bootstrap();
    create_topic(&b, "shared", 6);
    produce(&b, "shared", 0, 600);

    let members: Vec<BaseConsumer> = (0..3)
        .map(|_| member(&b, "g1", "shared", "range"))
        .collect();
    let refs: Vec<&BaseConsumer> = members.iter().collect();
    let got = consume(&refs, 600, Duration::from_secs(60));
    let all: Vec<&String> = got.iter().flatten().map(|(_, v)| v).collect();
    assert_eq!(all.len(), 600, "records read: {}", all.len());
    assert_eq!(
        all.iter().collect::<HashSet<_>>().len(),
        600,
        "a record was read twice"
    );
    // Each partition was read by exactly one member, and every member had some.
    let mut owner: HashMap<i32, usize> = HashMap::new();
    for (i, records) in got.iter().enumerate() {
        for (p, _) in records {
            assert_eq!(
                *owner.entry(*p).or_insert(i),
                i,
                "partition {p} read by two members"
            );
        }
    }
    assert!(
        got.iter().all(|r| !r.is_empty()),
        "a member got nothing: {:?}",
        got.iter().map(Vec::len).collect::<Vec<_>>()
    );
    for m in &members {
        commit(m);
    }
    drop(members);

    // A new member of the same group resumes after the commits: only new records.
    produce(&b, "shared", 600, 60);
    let late = member(&b, "g1", "shared", "range");
    let got = consume(&[&late], 60, Duration::from_secs(30));
    let mut values: Vec<usize> = got[0].iter().map(|(_, v)| v.parse().unwrap()).collect();
    values.sort_unstable();
    assert_eq!(values, (600..660).collect::<Vec<_>>());
}

/// The rebalances one member went through, as librdkafka hands them to the client.
#[derive(Clone, Default)]
struct Rebalances(Arc<Mutex<Vec<RebalanceEvent>>>);

/// `("assign" | "revoke", partitions)`.
type RebalanceEvent = (&'static str, BTreeSet<i32>);

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let partitions =
            |tpl: &TopicPartitionList| tpl.elements().iter().map(|e| e.partition()).collect();
        let event = match rebalance {
            Rebalance::Assign(tpl) => ("assign", partitions(tpl)),
            Rebalance::Revoke(tpl) => ("revoke", partitions(tpl)),
            Rebalance::Error(e) => panic!("rebalance failed: {e}"),
        };
        self.0.lock().unwrap().push(event);
    }
}

fn a_leaving_member_hands_its_partitions_over_cooperatively(store: Store) {
    let Some(gw) = Gateway::start_on(store, FAST_GROUPS) else {
        return;
    };
    let b = gw.bootstrap();
    create_topic(&b, "handover", 4);
    let first = member_with(
        &b,
        "g2",
        "handover",
        "cooperative-sticky",
        Rebalances::default(),
    );
    let seen = Rebalances::default();
    let second = member_with(&b, "g2", "handover", "cooperative-sticky", seen.clone());
    // Both members hold partitions before any record exists.
    let deadline = Instant::now() + Duration::from_secs(60);
    while assigned(&first).is_empty() || assigned(&second).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the two members never shared the topic"
        );
        assert!(consume(&[&first, &second], 0, Duration::from_secs(5))
            .iter()
            .all(Vec::is_empty));
    }
    produce(&b, "handover", 0, 200);
    let got = consume(&[&first, &second], 200, Duration::from_secs(60));
    let mut values: Vec<usize> = got
        .iter()
        .flatten()
        .map(|(_, v)| v.parse().unwrap())
        .collect();
    values.sort_unstable();
    assert_eq!(values, (0..200).collect::<Vec<_>>());
    assert!(matches!(
        second.rebalance_protocol(),
        RebalanceProtocol::Cooperative
    ));
    assert_eq!(assigned(&second).len(), 2, "the partitions were shared");
    commit(&first);
    commit(&second);
    drop(first); // leaves the group: its partitions move to the other member

    produce(&b, "handover", 200, 100);
    let got = consume(&[&second], 100, Duration::from_secs(60));
    let mut values: Vec<usize> = got[0].iter().map(|(_, v)| v.parse().unwrap()).collect();
    values.sort_unstable();
    assert_eq!(
        values,
        (200..300).collect::<Vec<_>>(),
        "the remaining member did not take over from the commits"
    );
    // Cooperatively: the remaining member kept what it had and was given the rest,
    // never asked to give its own partitions up.
    assert_eq!(assigned(&second), (0..4).collect());
    let events = seen.0.lock().unwrap().clone();
    assert!(
        events.iter().all(|(kind, _)| *kind == "assign"),
        "the remaining member had partitions revoked: {events:?}"
    );
    let given: BTreeSet<i32> = events.iter().flat_map(|(_, p)| p.clone()).collect();
    assert_eq!(given, (0..4).collect(), "{events:?}");
}

fn assigned<C: ConsumerContext>(c: &BaseConsumer<C>) -> BTreeSet<i32> {
    let tpl = c.assignment().expect("assignment");
    tpl.elements().iter().map(|e| e.partition()).collect()
}

fn commits_survive_a_gateway_kill(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, FAST_GROUPS) else {
        return;
    };
    let b = gw.bootstrap();
    create_topic(&b, "durable", 2);
    produce(&b, "durable", 0, 100);
    let c = member(&b, "g3", "durable", "range");
    assert_eq!(consume(&[&c], 100, Duration::from_secs(30))[0].len(), 100);
    commit(&c);
    drop(c);

    gw.restart_after_kill();
    produce(&b, "durable", 100, 20);
    let c = member(&b, "g3", "durable", "range");
    let got = consume(&[&c], 20, Duration::from_secs(30));
    let mut values: Vec<usize> = got[0].iter().map(|(_, v)| v.parse().unwrap()).collect();
    values.sort_unstable();
    assert_eq!(
        values,
        (100..120).collect::<Vec<_>>(),
        "did not resume from the commit"
    );

    // The committed offsets read back as committed.
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition("durable", 0);
    tpl.add_partition("durable", 1);
    let committed = c.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    let total: i64 = committed
        .elements()
        .iter()
        .map(|e| e.offset().to_raw().unwrap_or(-1))
        .sum();
    assert_eq!(total, 100, "committed offsets: {committed:?}");
}

fn groups_are_listed_described_and_deleted(store: Store) {
    let Some(gw) = Gateway::start_on(store, FAST_GROUPS) else {
        return;
    };
    let b = gw.bootstrap();
    create_topic(&b, "admin", 1);
    produce(&b, "admin", 0, 10);
    let c = member(&b, "g4", "admin", "range");
    assert_eq!(consume(&[&c], 10, Duration::from_secs(30))[0].len(), 10);
    commit(&c);

    let groups = c
        .fetch_group_list(Some("g4"), Duration::from_secs(10))
        .unwrap();
    let g = &groups.groups()[0];
    assert_eq!(
        (g.name(), g.state(), g.protocol_type()),
        ("g4", "Stable", "consumer")
    );
    assert_eq!(g.members().len(), 1);
    drop(c);

    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &b)
        .create()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The member is gone, so the group is empty and may be deleted, offsets with it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let deleted = rt
            .block_on(admin.delete_groups(&["g4"], &AdminOptions::new()))
            .unwrap();
        match &deleted[0] {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("delete not yet possible: {e:?}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("group not deleted: {e:?}"),
        }
    }
    let again = rt
        .block_on(admin.delete_groups(&["g4"], &AdminOptions::new()))
        .unwrap();
    assert!(again[0].is_err(), "deleting a deleted group succeeded");
    // A new member starts from the beginning again: the offsets went with the group.
    let c = member(&b, "g4", "admin", "range");
    assert_eq!(consume(&[&c], 10, Duration::from_secs(30))[0].len(), 10);
}

support::on_every_store!(
    members_share_partitions_and_resume_from_commits,
    a_leaving_member_hands_its_partitions_over_cooperatively,
    commits_survive_a_gateway_kill,
    groups_are_listed_described_and_deleted,
);
