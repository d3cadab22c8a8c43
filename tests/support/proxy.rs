//! A loopback TCP proxy in front of a gateway that can hold back the gateway's answers:
//! requests still reach the gateway and are acted on, but the client never hears of
//! it. A gateway advertising the proxy's address gets all of a client's traffic
//! through it, so a test can kill the gateway with requests in flight that it has
//! already carried out, which is when a producer's retries must be deduplicated.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

pub struct Proxy {
    pub addr: SocketAddr,
    holding: Arc<AtomicBool>,
}

impl Proxy {
    /// Forwards every connection made to [`Proxy::addr`] to `upstream`, for as long as
    /// the test runs.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let addr = listener.local_addr().unwrap();
        let holding = Arc::new(AtomicBool::new(false));
        let hold = holding.clone();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                // A gateway being restarted refuses; the client reconnects on its own.
                if let Ok(server) = TcpStream::connect(upstream) {
                    Self::pipe(client, server, hold.clone());
                }
            }
        });
        Proxy { addr, holding }
    }

    /// From now on, answers are dropped (`true`) or passed on again (`false`).
    pub fn hold_answers(&self, hold: bool) {
        self.holding.store(hold, Ordering::SeqCst);
    }

    fn pipe(client: TcpStream, server: TcpStream, holding: Arc<AtomicBool>) {
        let never_hold = Arc::new(AtomicBool::new(false));
        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        thread::spawn(move || copy(client, server, &never_hold));
        thread::spawn(move || copy(s2, c2, &holding));
    }
}

/// Copies `from` to `to` until either side closes, dropping what arrives while `hold`
/// is set; then closes both, so the other direction ends too.
fn copy(mut from: TcpStream, mut to: TcpStream, hold: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !hold.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
