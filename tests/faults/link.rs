//! The link between a gateway and iggy-server cut for 1 s, 10 s and 60 s, and slowed to
//! 200 ms with 5 % of its segments late as if lost and sent again, under the checked
//! workload, through one gateway and through one of three:
//! Produce waits or answers a retriable error, never acknowledges what Iggy did not
//! take, and everything goes on once the link heals, without a restart.
//!
//! The kernel here has no netem qdisc (`tc qdisc ... netem` answers "unknown"), so
//! the link is a TCP relay the test owns between the gateway and the server. A cut
//! holds every byte in both directions until it heals, as TCP retransmission would
//! deliver them after a short outage; latency and loss delay each chunk in order.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::workload::{make_topic, Workload};
use crate::idempotence as idem;
use crate::support::iggy::IggyServer;
use crate::support::{Gateway, RawClient};

#[test]
fn a_link_to_iggy_cut_for_a_second() {
    cut_for("faults-link-1s", Duration::from_secs(1), 1);
}

#[test]
fn a_link_to_iggy_cut_for_ten_seconds() {
    cut_for("faults-link-10s", Duration::from_secs(10), 1);
}

/// Longer than the Iggy SDK's 30 s wait for an answer: the appends sent before the cut
/// are given up on while the link still holds their bytes, and land when it heals. The
/// producers' retries must be neither written before them (`Inner::await_landing`) nor
/// told their later batches are out of order meanwhile (`producer_state.rs`), or the
/// landed records are stored twice.
#[test]
fn a_link_to_iggy_cut_for_a_minute() {
    cut_for("faults-link-60s", Duration::from_secs(60), 1);
}

#[test]
fn a_slow_lossy_link_to_iggy() {
    slowed("faults-link-slow", 1);
}

/// Three gateways on one Iggy, the clients bootstrapped through all of them, the link
/// of one cut for less than the node timeout (2 s here): it keeps its partitions and
/// groups, and its clients wait for it.
#[test]
fn a_link_of_one_of_three_gateways_cut_for_a_second() {
    cut_for("faults-link-1s-of-3", Duration::from_secs(1), 3);
}

/// Past the node timeout (and, for a minute, past the SDK's 30 s wait): the others drop
/// the cut gateway from the cluster, naming new leaders and coordinators for what it
/// had; its appends in flight land when the link heals, and the producers' retries must
/// be found duplicates of them, not told their later batches are out of order
/// (`producer_state.rs`; without it a record was stored twice in 4 runs of 4).
#[test]
fn a_link_of_one_of_three_gateways_cut_for_ten_seconds() {
    cut_for("faults-link-10s-of-3", Duration::from_secs(10), 3);
}

#[test]
fn a_link_of_one_of_three_gateways_cut_for_a_minute() {
    cut_for("faults-link-60s-of-3", Duration::from_secs(60), 3);
}

#[test]
fn a_slow_lossy_link_of_one_of_three_gateways() {
    slowed("faults-link-slow-of-3", 3);
}

/// An append the Iggy SDK gave up on (no answer in 30 s, its connection closed) whose
/// bytes are still on the way: the producer's retry, read against a producer state
/// that does not show it yet, must not be written before it lands, or both are stored.
/// The link holds the bytes of the connections open when the cut began and carries
/// those of new ones, so the retry meets a store that answers and lacks the first copy
/// (`Inner::await_landing`; without it the retry is written, then the late copy).
#[test]
fn an_append_the_sdk_gave_up_on_is_awaited_before_its_retry() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let link = Link::start(server.addr);
    // One connection each way, so a write elsewhere shows both were made again.
    let gw = Gateway::start_with(&[
        ("backend", "iggy"),
        ("iggy_address", &link.addr.to_string()),
        ("iggy_connect_timeout_ms", "10000"),
        ("iggy_request_timeout_ms", "3000"),
        ("iggy_produce_clients", "1"),
        ("iggy_read_clients", "1"),
    ]);
    let mut c = RawClient::connect(gw.addr);
    idem::create_topic(&mut c, idem::TOPIC, 2);
    let (pid, other) = (idem::new_producer(&mut c), idem::new_producer(&mut c));
    let a = idem::idempotent_batch(pid, 0, 0, 2, "a");
    assert_eq!(idem::produce(&mut c, a, None), (0, 0));

    link.cut_open_connections();
    let b = idem::idempotent_batch(pid, 0, 2, 2, "b");
    assert_eq!(
        idem::produce(&mut c, b.clone(), None).0,
        idem::REQUEST_TIMED_OUT
    );
    // Another producer's first batch to partition 1 needs its history read and an
    // append: written, it shows the SDK gave up on B and the gateway talks to Iggy
    // over new connections, while B's bytes are still held.
    let probe = idem::idempotent_batch(other, 0, 0, 1, "p");
    let deadline = Instant::now() + Duration::from_secs(120);
    while idem::produce_to(&mut c, 1, probe.clone(), None).0 != 0 {
        assert!(
            Instant::now() < deadline,
            "the gateway never wrote to Iggy again"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (code, _) = idem::produce(&mut c, b.clone(), None);
    assert_eq!(
        code,
        idem::REQUEST_TIMED_OUT,
        "B's retry taken before B settled"
    );

    link.cut(false);
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        match idem::produce(&mut c, b.clone(), None) {
            (0, offset) => break offset,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            (code, _) => panic!("B's retry still refused ({code}) after the heal"),
        }
    };
    assert_eq!(answer, 2, "B's retry answered where B landed");
    let stored = idem::stored_values(&mut c);
    assert_eq!(stored, idem::values(&[("a", 2), ("b", 2)]));
    drop(gw);
}

/// The transaction coordinator of a gateway whose link is cut adds a partition to a
/// transaction and stores that, the link holding the write's bytes; the other gateway
/// takes the id over and aborts the transaction, and the producer, initialized again,
/// opens its next one there. When the link heals, the late write lands after all
/// that: it must change nothing (`transactions/slot.rs`: its writes expect the state
/// they read). Stored, it brought the ended transaction back at the producer's old
/// epoch, and the producer's commit of its open one was refused as fenced.
#[test]
fn a_coordinators_write_landing_after_it_lost_the_id_changes_nothing() {
    use crate::support::groups::TRANSACTION_KEY;
    use crate::support::transactions::{add, end, init_with_timeout, latest, produce, Producer};
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (link, cut, other) = two_gateways_one_linked(&server);
    let id = coordinated_by(&cut, &other, TRANSACTION_KEY, "late-write");
    let topic = "late-write";
    let mut at_cut = RawClient::connect(cut.addr);
    idem::create_topic(&mut at_cut, topic, 2);
    let mut producer = None;
    let mut init = |gws: &[&Gateway]| {
        until_answered("InitProducerId", gws, &mut |c| {
            let r = init_with_timeout(c, &id, 60_000);
            producer = Some(Producer {
                id: id.clone(),
                pid: r.producer_id.0,
                epoch: r.producer_epoch,
            });
            r.error_code
        });
        producer.clone().expect("initialized")
    };
    let p = init(&[&cut]);
    until_answered("AddPartitionsToTxn", &[&cut], &mut |c| add(c, &p, topic, 0));
    produce(&mut at_cut, &p, (topic, 0), 0, 1, 0);
    link.cut(true);
    // Asked at once, within the coordinator's lease (two seconds from its last
    // heartbeat): stored, but not answered within the 3 s store timeout.
    assert_ne!(
        add(&mut at_cut, &p, topic, 1),
        0,
        "answered through a cut link"
    );

    // The other gateway takes the id over and aborts the transaction; the producer,
    // fenced, starts again and opens a transaction there. (Asked meanwhile, the cut
    // gateway would hold its transaction slot for its 3 s store timeout.)
    let p = init(&[&other]);
    until_answered("AddPartitionsToTxn", &[&other], &mut |c| {
        add(c, &p, topic, 0)
    });
    let mut at_other = RawClient::connect(other.addr);
    let open = produce(&mut at_other, &p, (topic, 0), 0, 1, 0);
    link.cut(false);

    // The healed gateway coordinates the id again, from the stored state.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(latest(&mut at_other, topic, 0, 1), open, "still open");
    until_answered("the commit", &[&cut, &other], &mut |c| end(c, &p, true));
    assert_eq!(
        latest(&mut at_other, topic, 0, 1),
        open + 2,
        "record and marker"
    );
    drop((cut, other));
}

/// A group's coordinator, its link cut, forwards a commit the link holds; the other
/// gateway takes the group over and a later offset is committed there. When the link
/// heals, the late commit lands after it: it must not move the committed offset back
/// (`offsets/fence.rs`: a commit expects its coordinator's claim of the group, and the
/// takeover claimed it anew). Written as sent, it left the group at the older offset.
#[test]
fn a_group_coordinators_commit_landing_after_it_lost_the_group_moves_nothing_back() {
    use crate::support::groups::{commit_as_admin, GROUP_KEY};
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (link, cut, other) = two_gateways_one_linked(&server);
    let group = coordinated_by(&cut, &other, GROUP_KEY, "late-commit");
    let topic = "late-commit";
    idem::create_topic(&mut RawClient::connect(cut.addr), topic, 1);
    let commit = |offset: i64| {
        let group = &group;
        move |c: &mut RawClient| commit_as_admin(c, group, (topic, 0), offset)
    };
    until_answered("the first commit", &[&cut], &mut commit(10));
    link.cut(true);
    // Within the coordinator's lease: forwarded, but not answered through the cut.
    let late = commit(20)(&mut RawClient::connect(cut.addr));
    assert_ne!(late, 0, "answered through a cut link");

    until_answered("the commit after the takeover", &[&other], &mut commit(30));
    link.cut(false);
    // The late commit lands at once; the healed gateway takes its groups back.
    std::thread::sleep(Duration::from_secs(6));
    let bootstrap = format!("{},{}", cut.bootstrap(), other.bootstrap());
    let committed = crate::support::kafka::committed(&bootstrap, &group, topic, 1);
    assert_eq!(committed, [30], "the committed offset moved back");
    drop((cut, other));
}

/// Two gateway processes on `server`, the first over a link the test cuts, the second
/// straight to it, both quick to drop a gateway they no longer hear from.
fn two_gateways_one_linked(server: &IggyServer) -> (Link, Gateway, Gateway) {
    let link = Link::start(server.addr);
    let (linked, direct) = (link.addr.to_string(), server.addr.to_string());
    let gw =
        |address: &str| Gateway::process_with(&[&on(address)[..], &QUICK_CLUSTER[..]].concat());
    let (cut, other) = (gw(&linked), gw(&direct));
    (link, cut, other)
}

/// The first `<prefix>-<n>` that both gateways name `cut` the coordinator of.
fn coordinated_by(cut: &Gateway, other: &Gateway, key_type: i8, prefix: &str) -> String {
    use crate::support::groups::coordinator_port;
    let port = i32::from(cut.addr.port());
    (0..)
        .map(|n| format!("{prefix}-{n}"))
        .find(|key| {
            coordinator_port(cut, key_type, key) == port
                && coordinator_port(other, key_type, key) == port
        })
        .expect("some key is coordinated by the gateway to cut")
}

/// `call` on a new connection to each of `gws` in turn until one answers 0, for up to
/// 30 s.
fn until_answered(what: &str, gws: &[&Gateway], call: &mut dyn FnMut(&mut RawClient) -> i16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for g in gws {
            if call(&mut RawClient::connect(g.addr)) == 0 {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{what} never answered");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn slowed(topic: &'static str, gateways: usize) {
    let Some((_server, link, gws, workload, _dir)) = started(topic, gateways) else {
        return;
    };
    link.set(Duration::from_millis(200), 0.05);
    let slow = workload.wait_for_acks(500, Duration::from_secs(60));
    println!("500 records acknowledged in {slow:?} over the slow link");
    link.set(Duration::ZERO, 0.0);
    let healed = workload.wait_for_acks(500, Duration::from_secs(60));
    println!("500 more in {healed:?} once it healed");
    workload.finish().assert_valid();
    drop(gws);
}

fn cut_for(topic: &'static str, outage: Duration, gateways: usize) {
    let Some((_server, link, gws, workload, _dir)) = started(topic, gateways) else {
        return;
    };
    link.cut(true);
    std::thread::sleep(outage);
    link.cut(false);
    let healed = workload.wait_for_acks(500, Duration::from_secs(120));
    println!("after a {outage:?} cut, 500 records acknowledged {healed:?} after it healed");
    std::thread::sleep(Duration::from_secs(2));
    workload.finish().assert_valid();
    drop(gws);
}

/// A server, the link to it, `gateways` gateways on the server (the first over the
/// link, the others straight to it; processes when more than one), and the workload on
/// `topic` through all of them, with its first 1,000 records acknowledged.
fn started(
    topic: &'static str,
    gateways: usize,
) -> Option<(IggyServer, Link, Vec<Gateway>, Workload, tempfile::TempDir)> {
    let server = IggyServer::start()?;
    let link = Link::start(server.addr);
    let (linked, direct) = (link.addr.to_string(), server.addr.to_string());
    let gws: Vec<Gateway> = (0..gateways)
        .map(|i| {
            let settings = on(if i == 0 { &linked } else { &direct });
            match gateways {
                1 => Gateway::start_with(&settings),
                _ => Gateway::process_with(&[&settings[..], &QUICK_CLUSTER[..]].concat()),
            }
        })
        .collect();
    let bootstrap = Gateway::bootstrap_all(&gws);
    make_topic(&bootstrap, topic);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&bootstrap, topic, dir.path());
    workload.wait_for_acks(1_000, Duration::from_secs(60));
    Some((server, link, gws, workload, dir))
}

/// A gateway's settings on the Iggy server at `address`, quick to give up on a request.
fn on(address: &str) -> [(&'static str, &str); 4] {
    [
        ("backend", "iggy"),
        ("iggy_address", address),
        ("iggy_connect_timeout_ms", "10000"),
        ("iggy_request_timeout_ms", "3000"),
    ]
}

/// A cluster quick to drop a gateway it no longer hears from.
const QUICK_CLUSTER: [(&str, &str); 2] =
    [("node_heartbeat_ms", "200"), ("node_timeout_ms", "2000")];

/// What the link does to what crosses it now.
#[derive(Clone, Copy, Default)]
struct Conditions {
    /// Connections numbered below this (in the order they were made) are cut.
    cut_below: u64,
    delay: Duration,
    /// The share of chunks held an extra retransmission timeout.
    loss: f64,
}

/// A TCP relay to `upstream` whose conditions the test sets; it runs for as long as
/// the test does.
struct Link {
    addr: SocketAddr,
    now: Arc<Mutex<Conditions>>,
    /// How many connections it has made.
    made: Arc<AtomicU64>,
}

/// How much later than the rest a "lost" chunk arrives: Linux's least RTO.
const RETRANSMIT: Duration = Duration::from_millis(200);

impl Link {
    fn start(upstream: SocketAddr) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").expect("link port");
        let addr = listener.local_addr().unwrap();
        let now = Arc::new(Mutex::new(Conditions::default()));
        let made = Arc::new(AtomicU64::new(0));
        let (conditions, counted) = (now.clone(), made.clone());
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if let Ok(server) = TcpStream::connect(upstream) {
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    relay(n, client, server, conditions.clone());
                    relay(n, s2, c2, conditions.clone());
                }
            }
        });
        Link { addr, now, made }
    }

    fn cut(&self, cut: bool) {
        self.now.lock().unwrap().cut_below = if cut { u64::MAX } else { 0 };
    }

    /// Cuts the connections open now only: those made later carry bytes as usual.
    fn cut_open_connections(&self) {
        self.now.lock().unwrap().cut_below = self.made.load(Ordering::SeqCst);
    }

    fn set(&self, delay: Duration, loss: f64) {
        let mut now = self.now.lock().unwrap();
        (now.delay, now.loss) = (delay, loss);
    }
}

/// Carries `from` to `to` under the link's conditions: a reader queues each chunk
/// with the time it may leave (never before the one ahead of it), a writer sends it
/// then, or once the cut heals.
fn relay(n: u64, mut from: TcpStream, mut to: TcpStream, conditions: Arc<Mutex<Conditions>>) {
    let (queue, queued) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reading = conditions.clone();
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last = Instant::now();
        let mut chunks = 0u64;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let now = *reading.lock().unwrap();
            chunks += 1;
            // Every chunk in 1/loss is late: loss without a random number generator.
            let lost = now.loss > 0.0 && chunks.is_multiple_of((1.0 / now.loss).round() as u64);
            let mut leave =
                Instant::now() + now.delay + if lost { RETRANSMIT } else { Duration::ZERO };
            leave = leave.max(last);
            last = leave;
            if queue.send((leave, buf[..n].to_vec())).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
    });
    thread::spawn(move || {
        for (leave, chunk) in queued {
            while conditions.lock().unwrap().cut_below > n {
                thread::sleep(Duration::from_millis(10));
            }
            if let Some(wait) = leave.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}
