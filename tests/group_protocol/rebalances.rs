//! Rebalances when members come, join again, restart with an instance id (KIP-345) or go silent.

use crate::support;

use std::time::{Duration, Instant};

use support::{Gateway, RawClient, Store};

use super::{
    assignment_of, create_topic, describe, eventually, sync_both, Member, MIN_SESSION_MS, NO_DELAY,
};

fn a_second_member_rebalances_the_group_into_the_next_generation(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    create_topic(&mut c, "u", 1);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    assert_eq!(a.generation, 1);
    // Different subscriptions, so the leader's roster shows whose metadata is whose.
    let mut b = Member::new(gw.addr, "g", &["t", "u"]);
    rebalance(&mut a, &mut b);
    assert_eq!((a.generation, b.generation), (2, 2));
    // One leader, the same for both; only it gets the members, with their metadata.
    assert_eq!(a.leader, b.leader);
    let (leader, follower) = if a.leader == a.id { (&a, &b) } else { (&b, &a) };
    assert_eq!(leader.leader, leader.id, "the leader is one of the members");
    assert_eq!(follower.roster, []);
    let mut roster = leader.roster.clone();
    roster.sort();
    let mut want = vec![
        (a.id.clone(), None, a.metadata()),
        (b.id.clone(), None, b.metadata()),
    ];
    want.sort();
    assert_eq!(roster, want);
    // Each member gets the assignment the leader made for it.
    sync_both(&mut a, &mut b);
    assert_eq!(a.assignment, assignment_of(&a.id, 2));
    assert_eq!(b.assignment, assignment_of(&b.id, 2));
    assert_eq!((a.heartbeat(), b.heartbeat()), (0, 0));
    let described = describe(&mut c, "g");
    assert_eq!(
        (described.group_state.as_str(), described.members.len()),
        ("Stable", 2)
    );
}

fn a_leader_joining_again_before_it_syncs_gets_its_answer_again(store: Store) {
    // Kafka's GroupCoordinator (CompletingRebalance, metadata unchanged): a member that
    // joins again while the leader owes the assignment only missed its answer. The
    // leader gets the same generation and the members again, and nobody rebalances.
    let Some((_gw, mut c, mut a, mut b)) = one_member_and_a_newcomer(store) else {
        return;
    };
    rebalance(&mut a, &mut b);
    let generation = a.generation;
    let (leader, follower) = if a.leader == a.id {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let roster = leader.roster.clone();
    let r = leader.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(leader.generation, generation, "a new rebalance");
    assert_eq!(leader.leader, leader.id);
    assert_eq!(leader.roster, roster, "the members again");
    assert_eq!(
        follower.heartbeat(),
        0,
        "the follower was sent into a rebalance"
    );
    let state = describe(&mut c, "g").group_state.to_string();
    assert_eq!(state, "CompletingRebalance");
    // The generation completes as if the first answer had arrived.
    sync_both(leader, follower);
    assert_eq!(a.assignment, assignment_of(&a.id, generation));
    assert_eq!(b.assignment, assignment_of(&b.id, generation));
}

fn a_static_member_rejoining_keeps_the_generation_and_fences_its_old_id(store: Store) {
    // KIP-345: a consumer restarted with the same group.instance.id joins with no member
    // id; while the group is Stable it gets a new id in the same generation, with no
    // rebalance, and the id it had before is fenced (FENCED_INSTANCE_ID, 82).
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let mut a = Member::new(gw.addr, "g", &["t"]).instance("a");
    a.join_alone(); // static members join in one step: no MEMBER_ID_REQUIRED
    let mut b = Member::new(gw.addr, "g", &["t"]).instance("b");
    rebalance(&mut a, &mut b);
    sync_both(&mut a, &mut b);
    let generation = a.generation;
    let (leader, follower) = if a.leader == a.id { (a, b) } else { (b, a) };

    // The follower restarts.
    let mut follower2 = follower.restarted(gw.addr);
    let r = follower2.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_ne!(follower2.id, follower.id, "a new member id");
    assert_eq!(follower2.generation, generation, "no rebalance");
    assert_eq!(r.leader.as_str(), leader.id);
    let mut leader = leader;
    assert_eq!(
        leader.heartbeat(),
        0,
        "the leader was sent into a rebalance"
    );
    // It syncs into its old assignment, and no one else was asked to move.
    follower2.sync();
    assert_eq!(follower2.assignment, follower.assignment);
    assert_eq!(follower2.heartbeat(), 0);
    // Its old id is fenced wherever it shows up with the instance id.
    let mut follower = follower;
    assert_eq!(follower.heartbeat(), 82, "heartbeat from the old id");
    assert_eq!(
        follower.commit(&[("t", 0, 1)]),
        [82],
        "commit from the old id"
    );
    assert_eq!(follower.join().error_code, 82, "join from the old id");

    // The leader restarts: the same, and at JoinGroup v9 it is told to skip the
    // assignment (KIP-814) but still gets the members.
    let mut leader2 = leader.restarted(gw.addr);
    let r = leader2.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_ne!(leader2.id, leader.id, "a new member id");
    assert_eq!(leader2.generation, generation, "no rebalance");
    assert_eq!(
        (r.leader.as_str(), r.skip_assignment),
        (leader2.id.as_str(), true)
    );
    let mut roster: Vec<_> = leader2.roster.iter().map(|m| m.0.clone()).collect();
    roster.sort();
    let mut want = vec![leader2.id.clone(), follower2.id.clone()];
    want.sort();
    assert_eq!(roster, want);
    assert_eq!(
        follower2.heartbeat(),
        0,
        "the follower was sent into a rebalance"
    );
    leader2.sync();
    assert_eq!(leader2.assignment, leader.assignment);
    assert_eq!(leader.heartbeat(), 82, "heartbeat from the old leader id");
}

fn a_silent_member_is_removed_after_its_session_timeout(store: Store) {
    let Some((_gw, mut c, mut a, mut b)) = one_member_and_a_newcomer(store) else {
        return;
    };
    rebalance(&mut a, &mut b);
    sync_both(&mut a, &mut b);
    // From here `a` says nothing; `b` heartbeats as a consumer does. Going silent does
    // not remove `a` at once: its session has to run out first.
    let members = describe(&mut c, "g").members.len();
    assert_eq!(members, 2, "a member removed as soon as it went silent");
    // Bounded only so that a member never removed fails instead of hanging.
    let limit = Instant::now() + Duration::from_millis(MIN_SESSION_MS as u64 * 5);
    loop {
        let error = b.heartbeat();
        if error == 27 {
            break;
        }
        assert_eq!(error, 0, "heartbeat of the live member");
        assert!(
            Instant::now() < limit,
            "the silent member was never removed"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(a.heartbeat(), 25, "the silent member is still known");
    // The live member rejoins alone into the next generation.
    assert_eq!(b.join().error_code, 0);
    assert_eq!((b.generation, &b.leader), (3, &b.id));
    assert_eq!(b.roster.len(), 1);
}

fn phases_left_unfinished_end_at_the_rebalance_timeout(store: Store) {
    let Some((_gw, _c, mut a, mut b)) = one_member_and_a_newcomer(store) else {
        return;
    };
    b.start_join();
    // `a` heartbeats on (its session never runs out) but never rejoins: the join phase
    // ends at its deadline without it. Bounded only so that a phase never ended fails.
    let limit = || Instant::now() + Duration::from_millis(MIN_SESSION_MS as u64 * 5);
    let until_not = |m: &mut Member, code: i16, what: &str| {
        let limit = limit();
        loop {
            let error = m.heartbeat();
            if error != code {
                return error;
            }
            assert!(Instant::now() < limit, "{what} never ended");
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    eventually("the first member hears of the rebalance", || {
        a.heartbeat() == 27
    });
    assert_eq!(until_not(&mut a, 27, "the join phase"), 25, "a left out");
    let r = b.receive_join();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!((b.generation, &b.leader, b.roster.len()), (2, &b.id, 1));
    // The leader heartbeats but never sends its assignments: the sync phase ends at
    // its deadline and the group rebalances.
    assert_eq!(until_not(&mut b, 0, "the sync phase"), 27);
    assert_eq!(b.join().error_code, 0);
    assert_eq!(b.generation, 3);
}

/// A gateway on `store` with topic `t`; `a` alone and Stable in group `g`, `b` not
/// joined yet.
fn one_member_and_a_newcomer(store: Store) -> Option<(Gateway, RawClient, Member, Member)> {
    let gw = Gateway::start_on(store, NO_DELAY)?;
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 2);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    let b = Member::new(gw.addr, "g", &["t"]);
    Some((gw, c, a, b))
}

/// `a` alone and Stable, then `b` joins: `a` learns of the rebalance from its
/// heartbeat and rejoins, and both are answered with the next generation.
fn rebalance(a: &mut Member, b: &mut Member) {
    b.start_join();
    // b's join is held until a rejoins; a hears of it once the gateway has b's join.
    eventually("the first member hears of the rebalance", || {
        a.heartbeat() == 27
    });
    let r = a.join();
    assert_eq!(r.error_code, 0, "{r:?}");
    let r = b.receive_join();
    assert_eq!(r.error_code, 0, "{r:?}");
}

support::on_every_store!(
    a_second_member_rebalances_the_group_into_the_next_generation,
    a_leader_joining_again_before_it_syncs_gets_its_answer_again,
    a_static_member_rejoining_keeps_the_generation_and_fences_its_old_id,
    a_silent_member_is_removed_after_its_session_timeout,
    phases_left_unfinished_end_at_the_rebalance_timeout,
);
