//! Consumer groups outlive their coordinator: a group's state is stored when it
//! settles, so after the coordinating gateway restarts, or when another gateway takes
//! the group over (a rolling restart, a gateway killed), its members carry on in their
//! generation, as on a Kafka cluster: no UNKNOWN_MEMBER_ID, no rebalance at all once the
//! group settled, and with a commit after each poll, nothing lost and nothing read twice.
//! KIP-848 groups too: their members keep their epochs and partitions.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::ClientContext;

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    GroupId,
};
use support::configs::s;
use support::groups::{create_topic, Read, QUICK_BEATS};
use support::iggy::IggyServer;
use support::{call, RawClient};
use support::{on_every_store, Gateway, Store};
use uuid::Uuid;

on_every_store!(
    a_restarted_gateway_keeps_its_groups,
    a_restarted_gateway_keeps_its_consumer_protocol_groups,
    a_restarted_gateway_keeps_its_consumer_protocol_members_reading
);

const TOPIC: &str = "kept";
const GROUP: &str = "keepers";

/// Counts a member's rebalances (each assignment or revocation it is told of).
#[derive(Clone, Default)]
struct Rebalances(Arc<AtomicUsize>);

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Error(e) = rebalance {
            panic!("rebalance failed: {e}");
        }
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

type Member = BaseConsumer<Rebalances>;

/// A member committing by hand (`read`), quick to notice a coordinator gone.
fn member(bootstrap: &str) -> (Member, Rebalances) {
    let mut config = ClientConfig::new();
    config
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", "500");
    subscribed(bootstrap, config)
}

/// A member of the consumer protocol (KIP-848), its session and heartbeat the
/// gateway's.
fn kip848_member(bootstrap: &str) -> (Member, Rebalances) {
    let mut config = ClientConfig::new();
    config.set("group.protocol", "consumer");
    subscribed(bootstrap, config)
}

fn subscribed(bootstrap: &str, mut config: ClientConfig) -> (Member, Rebalances) {
    let rebalances = Rebalances::default();
    let m: Member = config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .set("reconnect.backoff.max.ms", "500")
        .create_with_context(rebalances.clone())
        .expect("consumer");
    m.subscribe(&[TOPIC]).unwrap();
    (m, rebalances)
}

/// Until every member has partitions and no rebalance came for 2 s; then the
/// rebalances so far. What was read twice while the group formed is forgotten: a
/// member joining revokes partitions whose last reads were not committed yet, Kafka's
/// at-least-once, not what these tests are about.
fn settled(members: &[&Member], counts: &[&Rebalances], read: &mut Read) -> Vec<usize> {
    let assigned = |m: &&Member| m.assignment().is_ok_and(|a| a.count() > 0);
    read.until(members, Duration::from_secs(60), |_| {
        members.iter().all(assigned)
    });
    let rebalances =
        || -> Vec<usize> { counts.iter().map(|c| c.0.load(Ordering::SeqCst)).collect() };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = rebalances();
    loop {
        read_for(members, read, Duration::from_secs(2));
        let now = rebalances();
        if now == seen {
            break;
        }
        assert!(Instant::now() < deadline, "the group never settled");
        seen = now;
    }
    read.0.values_mut().for_each(|n| *n = 1);
    seen
}

/// One gateway SIGKILLed and started again on its data and port under a settled group
/// of two: both members carry on, no rebalance, every record read once.
fn a_restarted_gateway_keeps_its_groups(store: Store) {
    restarted_under_a_group(store, member);
}

/// The same with librdkafka members of the consumer protocol (KIP-848).
fn a_restarted_gateway_keeps_its_consumer_protocol_members_reading(store: Store) {
    restarted_under_a_group(store, kip848_member);
}

fn restarted_under_a_group(store: Store, member: fn(&str) -> (Member, Rebalances)) {
    // KIP-848 members beat every 500 ms, as the classic ones here.
    let settings = [
        ("group_initial_rebalance_delay_ms", "0"),
        QUICK_BEATS[0],
        QUICK_BEATS[1],
    ];
    let Some(mut gw) = Gateway::process_on(store, &settings) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    create_topic(&bootstrap, TOPIC, 4);
    let ((a, count_a), (b, count_b)) = (member(&bootstrap), member(&bootstrap));
    let mut read = Read::default();
    let before = settled(&[&a, &b], &[&count_a, &count_b], &mut read);
    support::groups::produce(&bootstrap, TOPIC, 0, 200);
    read.until(&[&a, &b], Duration::from_secs(60), |r| r.0.len() == 200);

    gw.restart_after_kill();
    support::groups::produce(&bootstrap, TOPIC, 200, 200);
    read.until(&[&a, &b], Duration::from_secs(60), |r| r.0.len() == 400);
    // Heartbeats after the restart: a member the gateway no longer knew would be told
    // now, and rejoin.
    read_for(&[&a, &b], &mut read, Duration::from_secs(3));
    let after = [&count_a, &count_b].map(|c| c.0.load(Ordering::SeqCst));
    assert_eq!(
        after[..],
        before[..],
        "the members rebalanced after the restart"
    );
    assert_eq!(read.read_twice(), [], "values read more than once");
    assert_eq!(
        read.0.keys().copied().collect::<Vec<_>>(),
        (0..400).collect::<Vec<_>>()
    );
}

type Owned = BTreeSet<(Uuid, i32)>;

/// A KIP-848 member as its client keeps it: id, epoch and the partitions it owns.
struct Kip848Member {
    id: &'static str,
    epoch: i32,
    owned: Owned,
}

impl Kip848Member {
    /// One ConsumerGroupHeartbeat saying what it owns; the answer.
    fn beat(&self, c: &mut RawClient) -> ConsumerGroupHeartbeatResponse {
        let mut by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for (topic, p) in &self.owned {
            by_topic.entry(*topic).or_default().push(*p);
        }
        let owned = (by_topic.into_iter())
            .map(|(t, ps)| {
                TopicPartitions::default()
                    .with_topic_id(t)
                    .with_partitions(ps)
            })
            .collect();
        let request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_member_id(s(self.id))
            .with_member_epoch(self.epoch)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![support::topic_name(TOPIC)]))
            .with_topic_partitions(Some(owned));
        call!(c, ConsumerGroupHeartbeat, 1, request)
    }

    /// A heartbeat, taking in what it answers as the client does.
    fn beat_and_follow(&mut self, c: &mut RawClient) {
        let r = self.beat(c);
        assert_eq!(r.error_code, 0, "{}: {r:?}", self.id);
        self.epoch = r.member_epoch;
        if let Some(a) = r.assignment {
            self.owned = (a.topic_partitions.iter())
                .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
                .collect();
        }
    }
}

/// ConsumerGroupDescribe of the group: its epoch and each member's id, epoch and
/// partitions.
fn described(c: &mut RawClient) -> (i32, Vec<(String, i32, Owned)>) {
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(GROUP))]);
    let r = call!(c, ConsumerGroupDescribe, 0, request);
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0, "{g:?}");
    let members = (g.members.iter())
        .map(|m| {
            let owned = (m.assignment.topic_partitions.iter())
                .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
                .collect();
            (m.member_id.to_string(), m.member_epoch, owned)
        })
        .collect();
    (g.group_epoch, members)
}

/// A KIP-848 group of two settled on a gateway process, SIGKILLed and started again:
/// each member's next heartbeat, with its id and epoch, is answered in that epoch with
/// its partitions (not UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH), and the group is
/// described as before.
fn a_restarted_gateway_keeps_its_consumer_protocol_groups(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    create_topic(&gw.bootstrap(), TOPIC, 4);
    let mut c = RawClient::connect(gw.addr);
    let mut members = ["m1", "m2"].map(|id| Kip848Member {
        id,
        epoch: 0,
        owned: Owned::new(),
    });
    // Beats until both hold two partitions each at the group's epoch.
    for _ in 0..20 {
        for m in members.iter_mut() {
            m.beat_and_follow(&mut c);
        }
        let [a, b] = &members;
        if a.epoch == b.epoch && a.owned.len() == 2 && b.owned.len() == 2 {
            break;
        }
    }
    let [a, b] = &members;
    assert!(
        a.epoch == b.epoch && a.owned.len() == 2 && a.owned.is_disjoint(&b.owned),
        "the group never settled: {:?} {:?}",
        (a.epoch, &a.owned),
        (b.epoch, &b.owned)
    );
    let before = described(&mut c);

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    for m in &members {
        let r = m.beat(&mut c);
        assert_eq!(
            (r.error_code, r.member_epoch),
            (0, m.epoch),
            "{} after the restart: {r:?}",
            m.id
        );
        let told: Option<Owned> = r.assignment.map(|a| {
            (a.topic_partitions.iter())
                .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
                .collect()
        });
        assert!(told.is_none_or(|t| t == m.owned), "{} moved", m.id);
    }
    assert_eq!(
        described(&mut c),
        before,
        "the group changed in the restart"
    );
}

/// Three gateways on one Iggy, quick to notice each other.
fn gateways(server: &IggyServer) -> Vec<Gateway> {
    let mut settings = server.gateway_settings();
    settings.extend([
        ("node_heartbeat_ms", "200".to_string()),
        ("node_timeout_ms", "2000".to_string()),
        ("group_initial_rebalance_delay_ms", "0".to_string()),
    ]);
    settings.extend(QUICK_BEATS.map(|(k, v)| (k, v.to_string())));
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (0..3).map(|_| Gateway::process_with(&settings)).collect()
}

/// Runs `restart` on a group of four librdkafka members reading a stream through three
/// gateways on one Iggy: afterwards no member has rebalanced since the group settled,
/// and every value produced was read exactly once.
fn group_carries_on_through(restart: impl FnOnce(&mut [Gateway], &[&Member], &mut Read)) {
    group_of_carries_on_through(member, restart);
}

/// The same with members made by `member`.
fn group_of_carries_on_through(
    member: fn(&str) -> (Member, Rebalances),
    restart: impl FnOnce(&mut [Gateway], &[&Member], &mut Read),
) {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let mut gws = gateways(&server);
    let bootstrap = Gateway::bootstrap_all(&gws);
    create_topic(&bootstrap, TOPIC, 8);
    let stop = Arc::new(AtomicBool::new(false));
    let producer = support::groups::producing(bootstrap.clone(), TOPIC, stop.clone());
    let members: Vec<(Member, Rebalances)> = (0..4).map(|_| member(&bootstrap)).collect();
    let refs: Vec<&Member> = members.iter().map(|(m, _)| m).collect();
    let counts: Vec<&Rebalances> = members.iter().map(|(_, c)| c).collect();
    let mut read = Read::default();
    let before = settled(&refs, &counts, &mut read);

    restart(&mut gws, &refs, &mut read);

    stop.store(true, Ordering::Relaxed);
    let produced = producer.join().expect("producer");
    read.until(&refs, Duration::from_secs(90), |r| {
        r.0.len() as u64 >= produced
    });
    let after: Vec<usize> = counts.iter().map(|c| c.0.load(Ordering::SeqCst)).collect();
    assert_eq!(
        after, before,
        "members rebalanced once the group had settled"
    );
    assert_eq!(read.read_twice(), [], "values read more than once");
    assert_eq!(
        read.0.keys().copied().collect::<Vec<_>>(),
        (0..produced).collect::<Vec<_>>(),
        "values lost or never produced"
    );
}

/// Reads for `how_long` while the stream goes on.
fn read_for(members: &[&Member], read: &mut Read, how_long: Duration) {
    let until = Instant::now() + how_long;
    read.until(members, how_long + Duration::from_secs(5), |_| {
        Instant::now() >= until
    });
}

/// Each gateway in turn stopped with SIGTERM and started again, as a Deployment rolls,
/// `wait` running between the steps: the group moves from gateway to gateway and back.
fn roll(gws: &mut [Gateway], mut wait: impl FnMut(Duration)) {
    for gw in gws.iter_mut() {
        wait(Duration::from_secs(2));
        gw.terminate();
        wait(Duration::from_secs(1));
        gw.restart_after_kill();
        wait(Duration::from_secs(3));
    }
}

/// A rolling restart under librdkafka members: they never notice.
#[test]
fn a_rolling_restart_of_three_gateways_keeps_a_group_without_a_rebalance() {
    group_carries_on_through(|gws, members, read| {
        roll(gws, |how_long| read_for(members, read, how_long))
    });
}

/// The same under librdkafka members of the consumer protocol (KIP-848).
#[test]
fn a_rolling_restart_keeps_a_consumer_protocol_group_without_a_rebalance() {
    group_of_carries_on_through(kip848_member, |gws, members, read| {
        roll(gws, |how_long| read_for(members, read, how_long))
    });
}

/// The same under Java consumer groups (`tests/clients/RollingGroupJava.java`): three
/// cooperative-sticky members with kafka-clients 4.x, three static ones (a
/// group.instance.id each) with 3.9. Neither gets a rebalance callback once settled,
/// and each reads every value once.
#[test]
fn a_rolling_restart_keeps_java_groups_dynamic_and_static_without_a_rebalance() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let jars = support::client_checks::java_jars();
    let runs: Vec<(&std::path::Path, &'static str, &'static str)> = jars
        .iter()
        .map(|jars| match jars.ends_with("kafka-java-4") {
            true => (jars.as_path(), "dynamic", "java-rolling-dynamic"),
            false => (jars.as_path(), "static", "java-rolling-static"),
        })
        .collect();
    let mut gws = gateways(&server);
    for (jars, mode, topic) in runs {
        let bootstrap = Gateway::bootstrap_all(&gws);
        create_topic(&bootstrap, topic, 6);
        let dir = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let producer = support::groups::producing(bootstrap.clone(), topic, stop.clone());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/java_check.sh");
        let mut java = std::process::Command::new("bash")
            .args([script, "RollingGroupJava", &bootstrap, topic, topic, mode])
            .arg(dir.path())
            .env("KAFKA_JAVA_LIBS", jars)
            .env("JAVA_CHECK_TIMEOUT", "400")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the Java group");
        let settled = dir.path().join("settled");
        assert!(
            support::admin::eventually(Duration::from_secs(120), || {
                settled.exists() || java.try_wait().is_ok_and(|ended| ended.is_some())
            }) && settled.exists(),
            "the {mode} Java group never settled"
        );
        roll(&mut gws, thread::sleep);
        stop.store(true, Ordering::Relaxed);
        let produced = producer.join().expect("producer");
        let stop_file = dir.path().join("stop");
        std::fs::write(dir.path().join("stop.tmp"), produced.to_string()).unwrap();
        std::fs::rename(dir.path().join("stop.tmp"), stop_file).unwrap();
        let out = java.wait_with_output().expect("the Java group's end");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("PASS java-rolling-group"),
            "{mode}: {said}"
        );
    }
}

/// The gateway coordinating the group SIGKILLed: once the others see it gone, one
/// takes the group over from the store and the members carry on.
#[test]
fn a_group_whose_coordinator_is_killed_carries_on_on_another_gateway() {
    group_carries_on_through(|gws, members, read| {
        read_for(members, read, Duration::from_secs(2));
        let coordinator = support::groups::coordinator_of(&gws[0], GROUP);
        let victim = gws
            .iter_mut()
            .find(|g| support::groups::node_id(g) == coordinator)
            .expect("the coordinator is one of the gateways");
        victim.kill();
        read_for(members, read, Duration::from_secs(8));
    });
}
