//! Commits and heartbeats checked against generation and members, in rebalances, and
//! across a restart, which keeps the group.

use crate::support;

use support::{Gateway, RawClient, Store};

use super::{
    commit, commit_with, committed, create_topic, eventually, fetch, heartbeat, sync_both, Member,
    ADMIN, NO_DELAY,
};

fn commits_and_heartbeats_are_checked_against_generation_and_member(store: Store) {
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    assert_eq!(m.commit(&[("t", 0, 1)]), [0]);
    // Like Kafka's validateOffsetCommit: a stale generation is ILLEGAL_GENERATION (22);
    // an unknown member UNKNOWN_MEMBER_ID (25); and so is no member at all while the
    // group has members (admin tools commit only to empty groups).
    let (generation, id) = (m.generation, m.id.clone());
    let stale = (generation - 1, id.as_str(), None);
    assert_eq!(commit(&mut c, "g", stale, &[("t", 0, 2)]), [22]);
    let stranger = (generation, "stranger", None);
    assert_eq!(commit(&mut c, "g", stranger, &[("t", 0, 2)]), [25]);
    assert_eq!(commit(&mut c, "g", ADMIN, &[("t", 0, 2)]), [25]);
    assert_eq!(
        committed(&mut c, "g", "t", 0),
        1,
        "a refused commit was stored"
    );
    // Heartbeats are checked the same way.
    assert_eq!(heartbeat(&mut c, "g", stale), 22);
    assert_eq!(heartbeat(&mut c, "g", stranger), 25);
    assert_eq!(m.heartbeat(), 0);
}

fn while_members_rejoin_commits_of_the_current_generation_are_accepted(store: Store) {
    // Kafka accepts a commit with the current generation while the group prepares a
    // rebalance (the Java consumer commits in onJoinPrepare, before it rejoins), and
    // refuses one between the join and the sync with REBALANCE_IN_PROGRESS (27).
    let Some(gw) = Gateway::start_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut a = Member::new(gw.addr, "g", &["t"]);
    a.join_alone();
    let mut b = Member::new(gw.addr, "g", &["t"]);
    b.start_join();
    eventually("the first member hears of the rebalance", || {
        a.heartbeat() == 27
    });
    assert_eq!(
        a.commit(&[("t", 0, 7)]),
        [0],
        "commit while PreparingRebalance"
    );
    assert_eq!(committed(&mut c, "g", "t", 0), 7);
    assert_eq!(a.join().error_code, 0);
    assert_eq!(b.receive_join().error_code, 0);
    // Joined, not synced (CompletingRebalance): heartbeats are fine, commits wait.
    assert_eq!((a.heartbeat(), b.heartbeat()), (0, 0));
    assert_eq!(a.commit(&[("t", 0, 8)]), [27]);
    assert_eq!(b.commit(&[("t", 0, 8)]), [27]);
    sync_both(&mut a, &mut b);
    assert_eq!(b.commit(&[("t", 0, 8)]), [0]);
    assert_eq!(committed(&mut c, "g", "t", 0), 8);
}

fn after_a_restart_members_carry_on_in_their_generation(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, NO_DELAY) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, "t", 1);
    let mut m = Member::new(gw.addr, "g", &["t"]);
    m.join_alone();
    let offset = vec![("t", 0, 5, 3, Some("before the crash"))];
    let who = (m.generation, m.id.as_str(), None);
    assert_eq!(commit_with(&mut m.c, "g", who, offset), [0]);

    gw.restart_after_kill();
    // The group was stored when it settled, as Kafka keeps it in __consumer_offsets:
    // the member carries on in its generation, no rejoin.
    m.c = RawClient::connect(gw.addr);
    let mut c = RawClient::connect(gw.addr);
    let read = fetch(&mut c, "g", None);
    let want = [("t".to_string(), 0, 5, 3, "before the crash".to_string())];
    assert_eq!(read, want);
    assert_eq!(m.heartbeat(), 0, "heartbeat from before the restart");
    assert_eq!(
        m.commit(&[("t", 0, 6)]),
        [0],
        "commit from before the restart"
    );
    assert_eq!(committed(&mut c, "g", "t", 0), 6);
    // Checked as before: another generation, another member.
    let (generation, id) = (m.generation, m.id.clone());
    assert_eq!(
        heartbeat(&mut c, "g", (generation - 1, id.as_str(), None)),
        22
    );
    assert_eq!(heartbeat(&mut c, "g", (generation, "stranger", None)), 25);
}

support::on_every_store!(
    commits_and_heartbeats_are_checked_against_generation_and_member,
    while_members_rejoin_commits_of_the_current_generation_are_accepted,
    after_a_restart_members_carry_on_in_their_generation,
);
