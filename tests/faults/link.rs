//! The link between a gateway and iggy-server cut for 1 s, 10 s and 60 s, and slowed to
//! 200 ms with 5 % of its segments late as if lost and sent again, under the checked
//! workload: Produce waits or answers a retriable error, never acknowledges what Iggy
//! did not take, and everything goes on once the link heals, without a restart.
//!
//! The kernel here has no netem qdisc (`tc qdisc ... netem` answers "unknown"), so
//! the link is a TCP relay the test owns between the gateway and the server. A cut
//! holds every byte in both directions until it heals, as TCP retransmission would
//! deliver them after a short outage; latency and loss delay each chunk in order.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::workload::{make_topic, Workload};
use crate::support::iggy::IggyServer;
use crate::support::Gateway;

#[test]
fn a_link_to_iggy_cut_for_a_second() {
    cut_for("faults-link-1s", Duration::from_secs(1));
}

#[test]
fn a_link_to_iggy_cut_for_ten_seconds() {
    cut_for("faults-link-10s", Duration::from_secs(10));
}

/// Longer than the Iggy SDK's 30 s wait for an answer: the appends sent before the cut
/// are given up on while the link still holds their bytes, and land when it heals. The
/// producers' retries must be neither written before them (`Inner::await_landing`) nor
/// told their later batches are out of order meanwhile (`producer_state.rs`), or the
/// landed records are stored twice.
#[test]
fn a_link_to_iggy_cut_for_a_minute() {
    cut_for("faults-link-60s", Duration::from_secs(60));
}

#[test]
fn a_slow_lossy_link_to_iggy() {
    let Some((_server, link, gw, workload, _dir)) = started("faults-link-slow") else {
        return;
    };
    link.set(Duration::from_millis(200), 0.05);
    let slow = workload.wait_for_acks(500, Duration::from_secs(60));
    println!("500 records acknowledged in {slow:?} over the slow link");
    link.set(Duration::ZERO, 0.0);
    let healed = workload.wait_for_acks(500, Duration::from_secs(60));
    println!("500 more in {healed:?} once it healed");
    workload.finish().assert_valid();
    drop(gw);
}

fn cut_for(topic: &'static str, outage: Duration) {
    let Some((_server, link, gw, workload, _dir)) = started(topic) else {
        return;
    };
    link.cut(true);
    std::thread::sleep(outage);
    link.cut(false);
    let healed = workload.wait_for_acks(500, Duration::from_secs(120));
    println!("after a {outage:?} cut, 500 records acknowledged {healed:?} after it healed");
    std::thread::sleep(Duration::from_secs(2));
    workload.finish().assert_valid();
    drop(gw);
}

/// A server, the link to it, a gateway over the link, and the workload on `topic`
/// with its first 1,000 records acknowledged.
fn started(
    topic: &'static str,
) -> Option<(IggyServer, Link, Gateway, Workload, tempfile::TempDir)> {
    let server = IggyServer::start()?;
    let link = Link::start(server.addr);
    let address = link.addr.to_string();
    let gw = Gateway::start_with(&[
        ("backend", "iggy"),
        ("iggy_address", &address),
        ("iggy_connect_timeout_ms", "10000"),
        ("iggy_request_timeout_ms", "3000"),
    ]);
    make_topic(&gw.bootstrap(), topic);
    let dir = tempfile::tempdir().expect("temp dir");
    let workload = Workload::start(&gw.bootstrap(), topic, dir.path());
    workload.wait_for_acks(1_000, Duration::from_secs(60));
    Some((server, link, gw, workload, dir))
}

/// What the link does to what crosses it now.
#[derive(Clone, Copy, Default)]
struct Conditions {
    cut: bool,
    delay: Duration,
    /// The share of chunks held an extra retransmission timeout.
    loss: f64,
}

/// A TCP relay to `upstream` whose conditions the test sets; it runs for as long as
/// the test does.
struct Link {
    addr: SocketAddr,
    now: Arc<Mutex<Conditions>>,
}

/// How much later than the rest a "lost" chunk arrives: Linux's least RTO.
const RETRANSMIT: Duration = Duration::from_millis(200);

impl Link {
    fn start(upstream: SocketAddr) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").expect("link port");
        let addr = listener.local_addr().unwrap();
        let now = Arc::new(Mutex::new(Conditions::default()));
        let conditions = now.clone();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if let Ok(server) = TcpStream::connect(upstream) {
                    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    relay(client, server, conditions.clone());
                    relay(s2, c2, conditions.clone());
                }
            }
        });
        Link { addr, now }
    }

    fn cut(&self, cut: bool) {
        self.now.lock().unwrap().cut = cut;
    }

    fn set(&self, delay: Duration, loss: f64) {
        let mut now = self.now.lock().unwrap();
        (now.delay, now.loss) = (delay, loss);
    }
}

/// Carries `from` to `to` under the link's conditions: a reader queues each chunk
/// with the time it may leave (never before the one ahead of it), a writer sends it
/// then, or once the cut heals.
fn relay(mut from: TcpStream, mut to: TcpStream, conditions: Arc<Mutex<Conditions>>) {
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
            while conditions.lock().unwrap().cut {
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
