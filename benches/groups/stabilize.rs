//! Part 2: how long a stable group takes to settle again after one more member joins.

use super::*;

pub(crate) enum Event {
    /// The member is about to send its first JoinGroup.
    FirstJoin(Instant),
    /// The member got a JoinGroup answer (no error) of this generation.
    Joined {
        member: usize,
        generation: i32,
        at: Instant,
    },
    /// The member got a SyncGroup answer (no error) in this generation.
    Synced {
        member: usize,
        generation: i32,
        at: Instant,
    },
    Failed {
        member: usize,
        error: String,
    },
}

pub(crate) fn subscription() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    ConsumerProtocolSubscription::default()
        .with_topics(vec![s(GROUP_TOPIC)])
        .encode(&mut b, 0)
        .unwrap();
    b.freeze()
}

/// The leader's work: partitions dealt round robin over the members, in the order given.
pub(crate) fn assign(joined: &JoinGroupResponse) -> Vec<SyncGroupRequestAssignment> {
    let n = joined.members.len().max(1);
    joined
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let partitions = (0..GROUP_TOPIC_PARTITIONS)
                .filter(|p| *p as usize % n == i)
                .collect();
            let mut b = BytesMut::new();
            b.put_i16(0);
            ConsumerProtocolAssignment::default()
                .with_assigned_partitions(vec![
                    consumer_protocol_assignment::TopicPartition::default()
                        .with_topic(TopicName(s(GROUP_TOPIC)))
                        .with_partitions(partitions),
                ])
                .encode(&mut b, 0)
                .unwrap();
            SyncGroupRequestAssignment::default()
                .with_member_id(m.member_id.clone())
                .with_assignment(b.freeze())
        })
        .collect()
}

/// A group member as a consumer runs one: join (KIP-394: MEMBER_ID_REQUIRED, then join with
/// the id), sync (the leader with assignments), then heartbeat every 100 ms until told of a
/// rebalance, when it rejoins and syncs again. Leaves the group when `stop` turns true.
pub(crate) async fn member(
    addr: String,
    group: String,
    index: usize,
    mut stop: watch::Receiver<bool>,
    events: mpsc::UnboundedSender<Event>,
) {
    let result = member_loop(&addr, &group, index, &mut stop, &events).await;
    if let Err(error) = result {
        let _ = events.send(Event::Failed {
            member: index,
            error,
        });
    }
}

pub(crate) async fn member_loop(
    addr: &str,
    group: &str,
    index: usize,
    stop: &mut watch::Receiver<bool>,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), String> {
    let mut conn = Conn::connect(addr, &format!("bench-member-{index}")).await?;
    let group_id = GroupId(s(group));
    let protocols = vec![JoinGroupRequestProtocol::default()
        .with_name(s("range"))
        .with_metadata(subscription())];
    let mut member_id = StrBytes::default();
    let _ = events.send(Event::FirstJoin(Instant::now()));
    loop {
        let join = JoinGroupRequest::default()
            .with_group_id(group_id.clone())
            .with_session_timeout_ms(SESSION_MS)
            .with_rebalance_timeout_ms(REBALANCE_MS)
            .with_member_id(member_id.clone())
            .with_protocol_type(s("consumer"))
            .with_protocols(protocols.clone());
        let joined = call!(conn, JoinGroup, JOIN_V, join);
        match joined.error_code {
            0 => {}
            MEMBER_ID_REQUIRED if member_id.is_empty() => {
                member_id = joined.member_id;
                continue;
            }
            e => return Err(format!("JoinGroup: error {e}")),
        }
        member_id = joined.member_id.clone();
        let generation = joined.generation_id;
        let _ = events.send(Event::Joined {
            member: index,
            generation,
            at: Instant::now(),
        });
        let assignments = if joined.leader == member_id {
            assign(&joined)
        } else {
            Vec::new()
        };
        let sync = SyncGroupRequest::default()
            .with_group_id(group_id.clone())
            .with_generation_id(generation)
            .with_member_id(member_id.clone())
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(joined.protocol_name.clone())
            .with_assignments(assignments);
        let synced = call!(conn, SyncGroup, SYNC_V, sync);
        match synced.error_code {
            0 => {
                let _ = events.send(Event::Synced {
                    member: index,
                    generation,
                    at: Instant::now(),
                });
            }
            REBALANCE_IN_PROGRESS => continue,
            e => return Err(format!("SyncGroup gen {generation}: error {e}")),
        }
        loop {
            tokio::select! {
                _ = stop.changed() => {
                    let leave = LeaveGroupRequest::default()
                        .with_group_id(group_id.clone())
                        .with_members(vec![MemberIdentity::default().with_member_id(member_id.clone())]);
                    let _ = call!(conn, LeaveGroup, LEAVE_V, leave);
                    return Ok(());
                }
                _ = tokio::time::sleep(HEARTBEAT) => {}
            }
            let hb = HeartbeatRequest::default()
                .with_group_id(group_id.clone())
                .with_generation_id(generation)
                .with_member_id(member_id.clone());
            match call!(conn, Heartbeat, HEARTBEAT_V, hb).error_code {
                0 => {}
                REBALANCE_IN_PROGRESS => break,
                e => return Err(format!("Heartbeat gen {generation}: error {e}")),
            }
        }
    }
}

/// Answers seen so far: generation → member → when.
#[derive(Default)]
pub(crate) struct Gens(BTreeMap<i32, HashMap<usize, Instant>>);

impl Gens {
    /// The newest generation above `after` in which all `n` members hold an answer, with
    /// the time of the last of those answers.
    pub(crate) fn complete(&self, n: usize, after: i32) -> Option<(i32, Instant)> {
        self.0
            .range(after + 1..)
            .rev()
            .find(|(_, members)| members.len() == n)
            .map(|(g, members)| (*g, *members.values().max().unwrap()))
    }

    pub(crate) fn newest(&self) -> i32 {
        self.0.keys().next_back().copied().unwrap_or(0)
    }
}

/// What the members of one run reported.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) joins: Gens,
    pub(crate) syncs: Gens,
    pub(crate) first_join: Option<Instant>,
}

impl Seen {
    pub(crate) fn apply(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::FirstJoin(at) => self.first_join = Some(at),
            Event::Joined {
                member,
                generation,
                at,
            } => {
                self.joins
                    .0
                    .entry(generation)
                    .or_default()
                    .insert(member, at);
            }
            Event::Synced {
                member,
                generation,
                at,
            } => {
                self.syncs
                    .0
                    .entry(generation)
                    .or_default()
                    .insert(member, at);
            }
            Event::Failed { member, error } => return Err(format!("member {member}: {error}")),
        }
        Ok(())
    }
}

/// Takes events until `done` says the wait is over or the phase times out.
pub(crate) async fn wait_for(
    rx: &mut mpsc::UnboundedReceiver<Event>,
    seen: &mut Seen,
    mut done: impl FnMut(&Seen) -> bool,
    what: &str,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + PHASE_TIMEOUT;
    while !done(seen) {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .map_err(|_| format!("{what}: not done after {PHASE_TIMEOUT:?}"))?
            .ok_or_else(|| format!("{what}: every member stopped"))?;
        seen.apply(event)?;
    }
    Ok(())
}

pub(crate) struct Stabilization {
    /// How far into the quiet period's last 100 ms the 11th member was started.
    pub(crate) offset: Duration,
    /// From the 11th member's first JoinGroup to all 11 synced in the new generation.
    pub(crate) stabilized: Duration,
    /// Part of it until the JoinGroup answers of the new generation (the other members
    /// learn of the rebalance from a heartbeat, then rejoin).
    pub(crate) join_phase: Duration,
    /// Generations the join took (1 when the rebalance went through in one round).
    pub(crate) generations: i32,
    /// From the 10 members' start to all 10 synced in one generation (the initial churn).
    pub(crate) formed: Duration,
}

/// One run in a fresh group: 10 members form it; once it is quiet, the 11th member starts
/// `offset` later (runs spread the offsets over one heartbeat interval, so the join meets
/// the others' heartbeat cycle at different points, as it would in the wild).
pub(crate) async fn stabilization_once(
    addr: &str,
    rep: usize,
    offset: Duration,
) -> Result<Stabilization, String> {
    let group = format!("bench-stabilize-{rep}");
    let (stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut seen = Seen::default();
    let mut tasks = Vec::new();
    let start = Instant::now();
    for i in 0..MEMBERS {
        let (addr, group, stop, tx) =
            (addr.to_string(), group.clone(), stop_rx.clone(), tx.clone());
        tasks.push(tokio::spawn(member(addr, group, i, stop, tx)));
    }
    let outcome = async {
        // Formed: all 10 synced in the newest generation, and still so after a quiet second
        // (a late rejoin would have started another generation).
        let mut formed;
        let mut stable_gen = 0;
        loop {
            let newest_complete = |s: &Seen| {
                s.syncs
                    .complete(MEMBERS, 0)
                    .is_some_and(|(g, _)| g == s.syncs.newest())
            };
            wait_for(
                &mut rx,
                &mut seen,
                newest_complete,
                "forming the 10-member group",
            )
            .await?;
            let (g, at) = seen.syncs.complete(MEMBERS, 0).unwrap();
            formed = at - start;
            if g == stable_gen {
                break;
            }
            stable_gen = g;
            tokio::time::sleep(Duration::from_secs(1) + offset).await;
            while let Ok(event) = rx.try_recv() {
                seen.apply(event)?;
            }
            if seen.syncs.newest() == stable_gen {
                break;
            }
        }
        seen.first_join = None;
        let (addr, group, stop, tx) =
            (addr.to_string(), group.clone(), stop_rx.clone(), tx.clone());
        tasks.push(tokio::spawn(member(addr, group, MEMBERS, stop, tx)));
        wait_for(
            &mut rx,
            &mut seen,
            |s| s.syncs.complete(MEMBERS + 1, stable_gen).is_some(),
            "stabilizing after the 11th member joined",
        )
        .await?;
        let (g, synced_at) = seen.syncs.complete(MEMBERS + 1, stable_gen).unwrap();
        let joined_at = seen.joins.0.get(&g).and_then(|m| m.values().max().copied());
        let t0 = seen
            .first_join
            .ok_or("the 11th member never reported its first join")?;
        Ok(Stabilization {
            offset,
            stabilized: synced_at - t0,
            join_phase: joined_at.map_or(Duration::ZERO, |j| j - t0),
            generations: g - stable_gen,
            formed,
        })
    }
    .await;
    // Members leave (the group is not reused), then the tasks go.
    let _ = stop_tx.send(true);
    for t in tasks {
        let abort = t.abort_handle();
        if tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
    outcome
}
