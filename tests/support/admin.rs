//! The admin listener seen from outside: plain HTTP/1.1 requests on a socket, and the
//! `/metrics` text read back into values.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// An HTTP answer: status, `content-type` and body.
#[derive(Debug)]
pub struct HttpAnswer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

/// Sends one request with `method` and reads the whole answer (the server closes after it).
pub fn http(addr: SocketAddr, method: &str, path: &str) -> HttpAnswer {
    let mut s = TcpStream::connect(addr).expect("connect to the admin listener");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head}"));
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    HttpAnswer {
        status,
        content_type,
        body: body.to_string(),
    }
}

pub fn get(addr: SocketAddr, path: &str) -> HttpAnswer {
    http(addr, "GET", path)
}

/// Checks `done` every 50 ms until it holds or `within` has passed; says which.
pub fn eventually(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `/metrics` scrape.
pub struct Scrape(pub String);

impl Scrape {
    pub fn take(admin: SocketAddr) -> Scrape {
        let answer = get(admin, "/metrics");
        assert_eq!(answer.status, 200, "{answer:?}");
        Scrape(answer.body)
    }

    /// The sum of every sample of `name` whose labels include `labels` (0 when none).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
                let matches = metric == name
                    && labels.iter().all(|(k, v)| {
                        rest.trim_end_matches('}')
                            .split(',')
                            .any(|pair| pair == format!("{k}=\"{v}\""))
                    });
                matches.then(|| value.parse::<f64>().ok()).flatten()
            })
            .sum()
    }
}
