//! A real `iggy-server` for the tests that run the gateway on the Iggy backend.
//!
//! The binary comes from `IGGY_SERVER_BIN`, else the project's shared server
//! (`../shared/iggy/iggy-server` beside the checkout), else `iggy-server` on PATH; each
//! test starts its own on a free loopback port with a temporary directory. Without one,
//! callers get `None` and one SKIPPED line is printed per test binary; an
//! `IGGY_SERVER_BIN` naming no file panics. With `IGGY_TESTS_RECORD` set to a file, each
//! test that starts a server appends its name there, so CI counts the tests that ran on
//! Iggy rather than trusting that they did.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use iggy::prelude::{Client, TcpClient, TcpClientConfig, UserClient};

use super::Gateway;

pub const SKIPPED: &str = "iggy backend tests: set IGGY_SERVER_BIN to an iggy-server binary";

/// What iggy-server 0.9.0-edge.5 logs when it cannot reopen a partition after a SIGKILL
/// ("failed to open sparse index during recovery", or its kin for the index's first or
/// last entry or the segment's file): its crash recovery, not the gateway's
/// (`../shared/iggy/README.md`).
const RECOVERY_FAILURE: &str = "during recovery";

/// The server binary, or `None` after printing the SKIPPED line (once per run) when
/// `IGGY_SERVER_BIN` is unset and neither the shared server nor an `iggy-server` on
/// PATH exists. A set `IGGY_SERVER_BIN` that names no file is a mistake, not an absence:
/// it panics, naming the path, so the Iggy tests cannot pass by not running.
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
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/iggy/iggy-server");
    let found = std::iter::once(shared)
        .chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("iggy-server")),
        )
        .find(|p| p.is_file());
    if found.is_none() {
        SKIP_NOTICE.call_once(|| super::skipped(SKIPPED));
    }
    found
}

/// `line` without the terminal colours iggy-server writes even into a file.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // An escape sequence runs to its final letter (`ESC [ 3 1 m`).
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
}

/// The panic a restart of a SIGKILLed server raises when the server fails its own crash
/// recovery; [`rerun_after_recovery_failure`] catches it.
#[derive(Debug)]
pub struct RecoveryFailure(String);

/// Runs `test`, a test that SIGKILLs and restarts an iggy-server, once more from the
/// start (on fresh servers and data) if a restart failed Iggy's own crash recovery,
/// saying so in one line that CI counts; a second such failure fails the test. Any
/// other failure fails it at once.
pub fn rerun_after_recovery_failure<F, Fut>(test: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let run = || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(test())))
    };
    let Err(first) = run() else {
        return;
    };
    let Some(failure) = first.downcast_ref::<RecoveryFailure>() else {
        panic::resume_unwind(first);
    };
    let name = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string();
    let _ = writeln!(
        std::io::stderr(),
        "IGGY RECOVERY FAILURE in {name}: iggy-server did not restart after a SIGKILL; \
         rerunning the test once on fresh data. It logged: {}",
        failure.0
    );
    if let Err(second) = run() {
        match second.downcast::<RecoveryFailure>() {
            Ok(again) => panic!("iggy-server failed its crash recovery twice: {}", again.0),
            Err(other) => panic::resume_unwind(other),
        }
    }
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
            if server.wait_listening() {
                super::record_test("IGGY_TESTS_RECORD");
                return Some(server);
            }
            let _ = std::fs::remove_file(server.dir.path().join("server.log"));
            dir = std::mem::replace(&mut server.dir, tempfile::tempdir().expect("temp dir"));
        }
        panic!("iggy-server could not bind a free port in four tries");
    }

    /// Whether this server's own process listens on its address: a listening socket on
    /// its port (`/proc/net/tcp`) that is one of the process's descriptors.
    fn listening(&self) -> bool {
        let port = format!(":{:04X}", self.addr.port());
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let inodes: Vec<String> = (tcp.lines().skip(1))
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() > 9 && f[1].ends_with(&port) && f[3] == "0A")
            .map(|f| format!("socket:[{}]", f[9]))
            .collect();
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.child.id()));
        (fds.into_iter().flatten().flatten())
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|link| inodes.iter().any(|i| link.as_os_str() == i.as_str()))
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
        // A process group of its own, as the gateways' (`support::Gateway::spawn`): a
        // paused server must not be sent SIGHUP with an orphaned group.
        Command::new(bin)
            .process_group(0)
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

    /// Until the server's own process listens on its port; false when it exited because
    /// the port was taken. Any other exit fails the test at once, with
    /// [`RecoveryFailure`] when its log says its crash recovery failed. A connect is no
    /// proof of listening: the port may be another process's, such as another test's
    /// server listening on it for its replicas, and a gateway would be served by that one.
    fn wait_listening(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.listening() {
            if matches!(self.child.try_wait(), Ok(Some(_))) && self.log().contains("Cannot bind") {
                return false;
            }
            self.assert_running();
            assert!(
                Instant::now() < deadline,
                "iggy-server did not listen on {}: {}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        true
    }

    /// Panics if the server has exited: with [`RecoveryFailure`] when it failed its
    /// crash recovery (which it may do after it began to listen), else with its log.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            let log = self.log();
            if log.contains(RECOVERY_FAILURE) {
                let last = log.lines().rev().find(|l| l.contains(RECOVERY_FAILURE));
                panic::panic_any(RecoveryFailure(plain(last.unwrap_or_default())));
            }
            panic!("iggy-server on {} exited ({status}): {log}", self.addr);
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

    /// SIGSTOP: the server keeps its connections but answers nothing until [`Self::resume`].
    pub fn pause(&self) {
        super::signal(self.child.id(), "STOP");
    }

    /// SIGCONT after [`Self::pause`].
    pub fn resume(&self) {
        super::signal(self.child.id(), "CONT");
    }

    /// SIGTERM, waited for: a server that shuts down cleanly. For tests about the
    /// gateway while Iggy is away, not about Iggy's crash recovery (which, in the
    /// server tested with, sometimes fails to reopen a partition's sparse index).
    pub fn shut_down(&mut self) {
        super::signal(self.child.id(), "TERM");
        let _ = self.child.wait();
    }

    /// Makes every sparse index of a stopped server's partitions unreadable (a
    /// directory in its place): its next start fails its crash recovery for certain,
    /// as a SIGKILL sometimes makes it fail.
    pub fn break_sparse_indexes(&self) {
        fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "index") {
                    found.push(path);
                }
            }
        }
        let mut indexes = Vec::new();
        walk(&self.dir.path().join("data"), &mut indexes);
        assert!(
            !indexes.is_empty(),
            "no sparse index under {:?}",
            self.dir.path()
        );
        for index in indexes {
            std::fs::remove_file(&index).expect("remove a sparse index");
            std::fs::create_dir(&index).expect("a directory in its place");
        }
    }

    pub fn start_again(&mut self) {
        self.child = Self::spawn(&self.bin, &self.dir, self.addr, &self.env);
        let listens = self.wait_listening();
        assert!(
            listens,
            "iggy-server could not bind {} again: {}",
            self.addr,
            self.log()
        );
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
