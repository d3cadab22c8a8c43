//! A loopback TCP proxy in front of a gateway that can hold back the gateway's answers:
//! requests still reach the gateway and are acted on, but the client never hears of
//! it. A gateway advertising the proxy's address gets all of a client's traffic
//! through it, so a test can kill the gateway with requests in flight that it has
//! already carried out, which is when a producer's retries must be deduplicated.
//! It also notes each request's API key and version, so a test learns which versions a
//! real client negotiated.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// Each request's (API key, version), in the order sent.
type Requests = Arc<Mutex<Vec<(i16, i16)>>>;

pub struct Proxy {
    pub addr: SocketAddr,
    holding: Arc<AtomicBool>,
    requests: Requests,
}

impl Proxy {
    /// Forwards every connection made to [`Proxy::addr`] to `upstream`, for as long as
    /// the test runs.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let addr = listener.local_addr().unwrap();
        let holding = Arc::new(AtomicBool::new(false));
        let requests = Requests::default();
        let (hold, noted) = (holding.clone(), requests.clone());
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                // A gateway being restarted refuses; the client reconnects on its own.
                if let Ok(server) = TcpStream::connect(upstream) {
                    Self::pipe(client, server, hold.clone(), noted.clone());
                }
            }
        });
        Proxy {
            addr,
            holding,
            requests,
        }
    }

    /// Every request passed on so far: (API key, version), in the order sent.
    pub fn requests(&self) -> Vec<(i16, i16)> {
        self.requests.lock().unwrap().clone()
    }

    /// From now on, answers are dropped (`true`) or passed on again (`false`).
    pub fn hold_answers(&self, hold: bool) {
        self.holding.store(hold, Ordering::SeqCst);
    }

    fn pipe(client: TcpStream, server: TcpStream, holding: Arc<AtomicBool>, noted: Requests) {
        let never_hold = Arc::new(AtomicBool::new(false));
        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        thread::spawn(move || copy(client, server, &never_hold, Some(noted)));
        thread::spawn(move || copy(s2, c2, &holding, None));
    }
}

/// Copies `from` to `to` until either side closes, dropping what arrives while `hold`
/// is set; then closes both, so the other direction ends too.
fn copy(mut from: TcpStream, mut to: TcpStream, hold: &AtomicBool, noted: Option<Requests>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Frames::default();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(noted) = &noted {
            frames.push(&buf[..n], &mut noted.lock().unwrap());
        }
        if !hold.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Requests split out of a client's bytes: each frame is a 4-byte size, then the
/// header, which starts with the API key and version.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    /// Bytes of the current frame still to come after its first eight.
    skip: usize,
}

impl Frames {
    fn push(&mut self, mut bytes: &[u8], noted: &mut Vec<(i16, i16)>) {
        loop {
            let skipped = self.skip.min(bytes.len());
            (self.skip, bytes) = (self.skip - skipped, &bytes[skipped..]);
            if self.skip > 0 {
                return;
            }
            self.pending.extend_from_slice(bytes);
            bytes = &[];
            if self.pending.len() < 8 {
                return;
            }
            let p = &self.pending;
            let size = i32::from_be_bytes([p[0], p[1], p[2], p[3]]).max(4) as usize;
            noted.push((
                i16::from_be_bytes([p[4], p[5]]),
                i16::from_be_bytes([p[6], p[7]]),
            ));
            let frame = 4 + size;
            if self.pending.len() >= frame {
                self.pending.drain(..frame);
            } else {
                self.skip = frame - self.pending.len();
                self.pending.clear();
            }
        }
    }
}
