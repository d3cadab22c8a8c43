//! A real `iggy-server` for the engine's own tests, as `tests/support/iggy.rs` starts
//! one: from `IGGY_SERVER_BIN` (or `iggy-server` on PATH), on a free loopback port
//! with a temporary directory; without one, `None` and the same SKIPPED line.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::iggy::IggyConfig;

const SKIPPED: &str = "SKIPPED iggy backend tests: set IGGY_SERVER_BIN to an iggy-server binary";

/// The server binary; `None` after printing the SKIPPED line once. A set
/// `IGGY_SERVER_BIN` naming no file panics, so the tests cannot pass by not running.
fn server_bin() -> Option<PathBuf> {
    static SKIP_NOTICE: Once = Once::new();
    if let Some(bin) = std::env::var_os("IGGY_SERVER_BIN").map(PathBuf::from) {
        assert!(
            bin.is_file(),
            "IGGY_SERVER_BIN={} names no file: set it to an iggy-server binary, or unset it \
             to skip the Iggy backend tests",
            bin.display()
        );
        return Some(bin);
    }
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("iggy-server"))
        .find(|p| p.is_file());
    if found.is_none() {
        SKIP_NOTICE.call_once(|| {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{SKIPPED}");
        });
    }
    found
}

/// An `iggy-server` process; killed when dropped.
pub struct Server {
    bin: PathBuf,
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Server {
    pub fn start() -> Option<Server> {
        let bin = server_bin()?;
        let dir = tempfile::tempdir().expect("temp dir");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = spawn(&bin, &dir, addr);
        let server = Server {
            bin,
            child,
            addr,
            dir,
        };
        server.wait_ready();
        Some(server)
    }

    /// SIGKILL; [`Server::start_again`] brings it back on the same port and data.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn start_again(&mut self) {
        self.child = spawn(&self.bin, &self.dir, self.addr);
        self.wait_ready();
    }

    /// Backend settings for this server: small pools, and `snapshot_records`.
    pub fn config(&self, snapshot_records: u64) -> IggyConfig {
        IggyConfig {
            address: self.addr.to_string(),
            username: "iggy".into(),
            password: "iggy".into(),
            stream: "kafka".into(),
            gateway_stream: "kafka-gateway".into(),
            produce_clients: 1,
            read_clients: 1,
            read_ahead_bytes: 0,
            snapshot_records,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            fsync: false,
            topics: Vec::new(),
            tls: None,
        }
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "iggy-server did not listen on {}: {}",
                self.addr,
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn spawn(bin: &PathBuf, dir: &tempfile::TempDir, addr: SocketAddr) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("server.log"))
        .expect("server log");
    Command::new(bin)
        .current_dir(dir.path())
        .env("IGGY_TCP_ADDRESS", addr.to_string())
        .env("IGGY_SYSTEM_PATH", dir.path().join("data"))
        .env("IGGY_HTTP_ENABLED", "false")
        .env("IGGY_QUIC_ENABLED", "false")
        .env("IGGY_WEBSOCKET_ENABLED", "false")
        .env("IGGY_ROOT_USERNAME", "iggy")
        .env("IGGY_ROOT_PASSWORD", "iggy")
        .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "1")
        .env("IGGY_SYSTEM_SHARDING_PIN_CORES", "false")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start iggy-server")
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
