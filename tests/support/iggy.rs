//! A real `iggy-server` for the tests that run the gateway on the Iggy backend.
//!
//! The binary comes from `IGGY_SERVER_BIN` or `iggy-server` on PATH; each test starts
//! its own on a free loopback port with a temporary directory. Without one, callers
//! get `None` and one SKIPPED line is printed per test binary; an `IGGY_SERVER_BIN`
//! naming no file panics.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use iggy::prelude::{Client, TcpClient, TcpClientConfig, UserClient};

use super::Gateway;

pub const SKIPPED: &str =
    "SKIPPED iggy backend tests: set IGGY_SERVER_BIN to an iggy-server binary";

/// The server binary, or `None` after printing the SKIPPED line (once per run) when
/// `IGGY_SERVER_BIN` is unset and no `iggy-server` is on PATH. A set `IGGY_SERVER_BIN`
/// that names no file is a mistake, not an absence: it panics, naming the path, so the
/// Iggy tests cannot pass by not running.
pub fn server_bin() -> Option<PathBuf> {
    static SKIP_NOTICE: Once = Once::new();
    if let Some(bin) = std::env::var_os("IGGY_SERVER_BIN").map(PathBuf::from) {
        assert!(
            bin.is_file(),
            "IGGY_SERVER_BIN={} names no file: set it to an iggy-server binary, or unset it to skip \
             the Iggy backend tests",
            bin.display()
        );
        return Some(bin);
    }
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("iggy-server"))
        .find(|p| p.is_file());
    if found.is_none() {
        // Written to the stream directly: the test harness captures `println!`.
        SKIP_NOTICE.call_once(|| {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{SKIPPED}");
        });
    }
    found
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// An `iggy-server` process on its own port and data directory; killed when dropped.
pub struct IggyServer {
    bin: PathBuf,
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
    /// Extra `IGGY_*` environment it runs with (TLS), kept for restarts.
    env: Vec<(String, String)>,
}

impl IggyServer {
    pub fn start() -> Option<IggyServer> {
        Self::start_with_env(&[])
    }

    /// A server with extra environment (`IGGY_TCP_TLS_ENABLED`, ...).
    pub fn start_with_env(env: &[(&str, &str)]) -> Option<IggyServer> {
        let bin = server_bin()?;
        let mut dir = tempfile::tempdir().expect("temp dir");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // A free port may be taken by another test before the server binds it: the
        // server then exits at once, and another port is tried.
        for _ in 0..4 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let child = Self::spawn(&bin, &dir, addr, &env);
            let mut server = IggyServer {
                bin: bin.clone(),
                child,
                addr,
                dir,
                env: env.clone(),
            };
            if server.bound() {
                server.wait_ready();
                return Some(server);
            }
            let _ = std::fs::remove_file(server.dir.path().join("server.log"));
            dir = std::mem::replace(&mut server.dir, tempfile::tempdir().expect("temp dir"));
        }
        panic!("iggy-server could not bind a free port in four tries");
    }

    /// False when the server exited without listening (its port was taken).
    fn bound(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return !self.log().contains("Cannot bind to socket");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }

    fn spawn(
        bin: &PathBuf,
        dir: &tempfile::TempDir,
        addr: SocketAddr,
        env: &[(String, String)],
    ) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("server.log"))
            .expect("server log");
        // Run in the temp dir: the server reads `core/server/config.toml` and `.env`
        // from its working directory when present, its embedded defaults otherwise.
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
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start iggy-server")
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "iggy-server did not listen on {}: {}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        let mut s = String::new();
        let _ = std::fs::File::open(self.dir.path().join("server.log"))
            .and_then(|mut f| f.read_to_string(&mut s));
        s
    }

    /// Settings that point a gateway at this server.
    pub fn gateway_settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("backend", "iggy".into()),
            ("iggy_address", self.addr.to_string()),
            ("iggy_connect_timeout_ms", "10000".into()),
        ]
    }

    /// An in-process gateway on this server.
    pub fn gateway(&self) -> Gateway {
        self.gateway_with(&[])
    }

    /// An in-process gateway on this server with `extra` settings too.
    pub fn gateway_with(&self, extra: &[(&str, &str)]) -> Gateway {
        self.with_settings(extra, Gateway::start_with)
    }

    /// The gateway binary on this server, for a SIGKILL or a refused start.
    pub fn process_gateway(&self) -> Gateway {
        self.process_gateway_with(&[])
    }

    /// The gateway binary on this server with `extra` settings too.
    pub fn process_gateway_with(&self, extra: &[(&str, &str)]) -> Gateway {
        self.with_settings(extra, Gateway::process_with)
    }

    fn with_settings(&self, extra: &[(&str, &str)], start: super::Start) -> Gateway {
        let settings = self.gateway_settings();
        let mut refs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        refs.extend_from_slice(extra);
        start(&refs)
    }

    /// A signed-in native SDK client.
    pub async fn sdk(&self) -> TcpClient {
        let client = TcpClient::create(Arc::new(TcpClientConfig {
            server_address: self.addr.to_string(),
            ..TcpClientConfig::default()
        }))
        .expect("client");
        client.connect().await.expect("connect");
        client.login_user("iggy", "iggy").await.expect("login");
        client
    }

    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// SIGKILL; `start_again` brings it back on the same port and data.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, waited for: a server that shuts down cleanly. For tests about the
    /// gateway while Iggy is away, not about Iggy's crash recovery (which, in the
    /// server tested with, sometimes fails to reopen a partition's sparse index).
    pub fn shut_down(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }

    pub fn start_again(&mut self) {
        self.child = Self::spawn(&self.bin, &self.dir, self.addr, &self.env);
        self.wait_ready();
    }
}

impl Drop for IggyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The offset the latest snapshot of gateway log `log` covers up to, if it has one
/// (`src/iggy/gateway_log.rs`: a marker is `M`, then that offset as u64).
pub async fn snapshot_upto(sdk: &TcpClient, log: &str) -> Option<u64> {
    use iggy::prelude::{Consumer, Identifier, MessageClient, PollingStrategy};
    let id = |name: &str| Identifier::named(name).unwrap();
    let polled = sdk
        .poll_messages(
            &id("kafka-gateway"),
            &id(&format!("{log}.snapshots")),
            Some(0),
            &Consumer::default(),
            &PollingStrategy::last(),
            1,
            false,
        )
        .await
        .ok()?;
    let last = polled.messages.last()?;
    (last.payload.first() == Some(&b'M'))
        .then(|| u64::from_be_bytes(last.payload[1..9].try_into().unwrap()))
}

/// Options of a one-partition gateway log with Iggy's smallest segments (1 MiB), never
/// expiring, every write saved: made before a gateway makes it, so a test can drop its
/// old records segment by segment.
pub fn small_segment_log() -> iggy::prelude::TopicCreateOptions {
    use iggy::prelude::{IggyByteSize, IggyExpiry, MaxTopicSize, TopicCreateOptions};
    TopicCreateOptions {
        partitions_count: Some(1),
        message_expiry: Some(IggyExpiry::NeverExpire),
        max_topic_size: Some(MaxTopicSize::Unlimited),
        segment_size: Some(IggyByteSize::from(1 << 20)),
        messages_required_to_save: Some(1),
        ..TopicCreateOptions::default()
    }
}

/// The first offset gateway log `log` still holds.
pub async fn first_offset(sdk: &TcpClient, log: &str) -> u64 {
    use iggy::prelude::{Consumer, Identifier, MessageClient, PollingStrategy};
    let id = |name: &str| Identifier::named(name).unwrap();
    let polled = sdk
        .poll_messages(
            &id("kafka-gateway"),
            &id(log),
            Some(0),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            1,
            false,
        )
        .await
        .expect("poll gateway log");
    polled.messages[0].header.offset
}
