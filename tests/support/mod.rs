//! Shared by the integration tests: gateways on free loopback ports, in-process unless
//! the process is the point, and a minimal raw Kafka client for hand-built requests.

pub mod acls;
pub mod admin;
pub mod configs;
pub mod groups;
pub mod iggy;
pub mod kafka;
pub mod proxy;
pub mod sasl;
pub mod tls;
pub mod versions;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Once};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use iggy_kafka_gateway::{Settings, Sighup, Stop};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// A gateway with its own data directory, stopped when dropped. [`Gateway::start`] and
/// its kin run it in-process; [`Gateway::process`] and its kin run the built binary,
/// for what only a process has: signals, a SIGKILL (and what survives it on the same
/// data), exit codes and stderr, its own memory.
pub struct Gateway {
    run: Run,
    /// The first listener's address.
    pub addr: SocketAddr,
    /// Every listener's name and bound address, in configured order.
    pub listeners: Vec<(String, SocketAddr)>,
    /// The admin listener (`/healthz`, `/readyz`, `/metrics`).
    pub admin: SocketAddr,
    data: PathBuf,
    /// `IGGY_KAFKA_*` settings it was started with, kept for restarts.
    settings: Vec<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    /// The server it keeps its data in, on the Iggy store; stopped after the gateway.
    iggy: Option<iggy::IggyServer>,
}

/// How a [`Gateway`] runs.
enum Run {
    /// A thread of the test binary running the gateway on an actix System of its own;
    /// stopped as SIGTERM stops the program (and waited for) when dropped.
    InProcess {
        stop: Stop,
        thread: Option<JoinHandle<()>>,
    },
    /// The built binary, logging at `log` (`RUST_LOG`) to the tests' stderr; killed
    /// when dropped.
    Process { child: Child, log: String },
}

const IN_PROCESS: &str = "an in-process gateway has no process: start it with Gateway::process*";

/// Starts a gateway with settings: [`Gateway::start_with`] or [`Gateway::process_with`].
pub type Start = fn(&[(&str, &str)]) -> Gateway;

/// Starts a gateway on a store: [`Gateway::start_on`] or [`Gateway::process_on`].
pub type StartOn = fn(Store, &[(&str, &str)]) -> Option<Gateway>;

/// Which of the two a gateway starts as.
enum Kind<'a> {
    InProcess,
    /// The binary, logging at this `RUST_LOG` filter.
    Process(&'a str),
}

impl Gateway {
    /// Starts a gateway in-process on a fresh data directory.
    pub fn start() -> Gateway {
        Self::start_with(&[])
    }

    /// Starts a gateway in-process with extra `IGGY_KAFKA_*` settings (name without the
    /// prefix).
    pub fn start_with(settings: &[(&str, &str)]) -> Gateway {
        Self::fresh(Kind::InProcess, settings)
    }

    /// Starts a gateway in-process on `store` with extra settings; `None` (after the
    /// SKIPPED line) for the Iggy store when there is no `iggy-server` to run.
    pub fn start_on(store: Store, settings: &[(&str, &str)]) -> Option<Gateway> {
        Self::fresh_on(Kind::InProcess, store, settings)
    }

    /// Starts the gateway binary on a fresh data directory.
    pub fn process() -> Gateway {
        Self::process_with(&[])
    }

    /// Starts the gateway binary with extra settings, as [`Self::start_with`].
    pub fn process_with(settings: &[(&str, &str)]) -> Gateway {
        Self::fresh(Kind::Process(&log_filter()), settings)
    }

    /// Starts the gateway binary on `store`, as [`Self::start_on`].
    pub fn process_on(store: Store, settings: &[(&str, &str)]) -> Option<Gateway> {
        Self::fresh_on(Kind::Process(&log_filter()), store, settings)
    }

    /// Starts the gateway binary logging at `log` (a `RUST_LOG` filter) rather than at
    /// `GATEWAY_LOG` or warn.
    pub fn process_with_log(log: &str, settings: &[(&str, &str)]) -> Gateway {
        Self::fresh(Kind::Process(log), settings)
    }

    fn fresh_on(kind: Kind, store: Store, settings: &[(&str, &str)]) -> Option<Gateway> {
        if store == Store::Embedded {
            return Some(Self::fresh(kind, settings));
        }
        let server = iggy::IggyServer::start()?;
        let mut all = server.gateway_settings();
        all.extend(settings.iter().map(|(k, v)| (*k, v.to_string())));
        let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut gw = Self::fresh(kind, &all);
        gw.iggy = Some(server);
        Some(gw)
    }

    /// A gateway of `kind` on a fresh data directory, on port 0 unless `listeners` is
    /// among the settings.
    fn fresh(kind: Kind, settings: &[(&str, &str)]) -> Gateway {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let settings = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut gw = match kind {
            Kind::InProcess => Self::in_process(&data, settings),
            Kind::Process(log) => Self::spawn(&data, "127.0.0.1:0", settings, log),
        };
        gw._dir = Some(dir);
        gw
    }

    /// Starts a gateway on `data` on a thread of its own, as the binary would with the
    /// same settings, but without its signal handlers; its log goes to the test's
    /// captured output (`GATEWAY_LOG`, warn by default).
    fn in_process(data: &Path, settings: Vec<(String, String)>) -> Gateway {
        log_in_process();
        let vars = variables(data, "127.0.0.1:0", &settings);
        let config = Settings::from_vars(vars).unwrap_or_else(|e| panic!("settings: {e}"));
        let (started, wait) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("gateway".into())
            .spawn(move || {
                actix_rt::System::new().block_on(async move {
                    match iggy_kafka_gateway::start(config, Sighup::Untouched).await {
                        Ok(running) => {
                            let addresses = (running.listeners.clone(), running.admin);
                            let _ = started.send(Ok((addresses, running.stop_handle())));
                            running.stopped().await;
                        }
                        Err(e) => {
                            let _ = started.send(Err(e.to_string()));
                        }
                    }
                })
            })
            .expect("start a gateway thread");
        let ((listeners, admin), stop) = match wait.recv() {
            Ok(Ok(up)) => up,
            Ok(Err(e)) => panic!("the gateway did not start: {e}"),
            Err(_) => {
                let _ = thread.join();
                panic!("the gateway thread ended while starting")
            }
        };
        Gateway {
            run: Run::InProcess {
                stop,
                thread: Some(thread),
            },
            addr: listeners[0].1,
            listeners,
            admin,
            data: data.to_path_buf(),
            settings,
            _dir: None,
            iggy: None,
        }
    }

    /// Runs the binary on `data`, listening on `bind` unless `listeners` is among the
    /// settings.
    fn spawn(data: &Path, bind: &str, settings: Vec<(String, String)>, log: &str) -> Gateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"))
            .envs(variables(data, bind, &settings))
            .env("RUST_LOG", log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start gateway");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        // "... listener NAME on HOST:PORT" for each listener, "... listening on
        // HOST:PORT" (the first), then "... admin on http://HOST:PORT".
        let mut line = || {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("read gateway stdout");
            let address = line
                .trim()
                .rsplit([' ', '/'])
                .next()
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("gateway did not report its address: {line:?}"));
            let name = line
                .strip_prefix("iggy-kafka-gateway listener ")
                .and_then(|rest| rest.split(' ').next())
                .map(str::to_string);
            (name, address)
        };
        let mut listeners = Vec::new();
        let addr = loop {
            match line() {
                (Some(name), address) => listeners.push((name, address)),
                (None, address) => break address,
            }
        };
        let admin = line().1;
        Gateway {
            run: Run::Process {
                child,
                log: log.to_string(),
            },
            addr,
            listeners,
            admin,
            data: data.to_path_buf(),
            settings,
            _dir: None,
            iggy: None,
        }
    }

    /// The child process of a gateway started with [`Self::process`] or its kin.
    fn child(&mut self) -> &mut Child {
        match &mut self.run {
            Run::Process { child, .. } => child,
            Run::InProcess { .. } => panic!("{IN_PROCESS}"),
        }
    }

    /// The gateway's process id (for `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        match &self.run {
            Run::Process { child, .. } => child.id(),
            Run::InProcess { .. } => panic!("{IN_PROCESS}"),
        }
    }

    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// The bound address of listener `name`.
    pub fn listener(&self, name: &str) -> SocketAddr {
        self.listeners
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no listener {name} among {:?}", self.listeners))
            .1
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill(&mut self) {
        let child = self.child();
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Sends signal `name` (`HUP`, ...) to the process.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// SIGTERM, then waits for the process to exit; returns its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let child = self.child();
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        child.wait().expect("wait for gateway")
    }

    /// Kills the gateway, then runs another on its data and settings plus `extra`, which
    /// must refuse to start: its exit code and stderr. [`Self::restart_after_kill`]
    /// brings the gateway back afterwards.
    pub fn refused_restart_with(&mut self, extra: &[(&str, &str)]) -> (Option<i32>, String) {
        self.kill();
        let mut cmd = Command::new("timeout");
        cmd.arg("20")
            .arg(env!("CARGO_BIN_EXE_iggy-kafka-gateway"))
            .env("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0")
            .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
            .env("IGGY_KAFKA_DATA_DIR", &self.data);
        let extra = extra.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        for (k, v) in self.settings.iter().cloned().chain(extra) {
            cmd.env(format!("IGGY_KAFKA_{}", k.to_uppercase()), v);
        }
        let out = cmd.output().expect("run gateway");
        assert_ne!(out.status.code(), Some(124), "the gateway started");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Kills the process and starts a new one on the same data and port, with setting
    /// `name` set to `value` (`None`: its default) and the others as they were.
    pub fn restart_with(&mut self, name: &str, value: Option<&str>) {
        self.settings.retain(|(k, _)| k != name);
        self.settings
            .extend(value.map(|v| (name.to_string(), v.to_string())));
        self.restart_after_kill();
    }

    /// Kills the process and starts a new one on the same data, port and settings.
    pub fn restart_after_kill(&mut self) {
        self.kill();
        let Run::Process { log, .. } = &self.run else {
            unreachable!("kill needs a process")
        };
        let next = Self::spawn(
            &self.data,
            &self.addr.to_string(),
            self.settings.clone(),
            log,
        );
        let mut old = std::mem::replace(self, next);
        self._dir = old._dir.take();
        self.iggy = old.iggy.take();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        match &mut self.run {
            Run::Process { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Run::InProcess { stop, thread } => {
                stop.stop();
                let ended = thread.take().map(JoinHandle::join);
                if matches!(ended, Some(Err(_))) && !std::thread::panicking() {
                    panic!("the in-process gateway panicked");
                }
            }
        }
    }
}

/// The environment a gateway runs with, in-process or not: the admin listener on a free
/// loopback port, `data`, the PLAINTEXT listener on `bind` unless `listeners` is among
/// the settings, then each setting as `IGGY_KAFKA_<NAME>`.
fn variables(data: &Path, bind: &str, settings: &[(String, String)]) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    if !settings.iter().any(|(k, _)| k == "listeners") {
        vars.push(("IGGY_KAFKA_BIND_ADDRESS".to_string(), bind.to_string()));
    }
    vars.push((
        "IGGY_KAFKA_ADMIN_BIND_ADDRESS".to_string(),
        "127.0.0.1:0".to_string(),
    ));
    let data = data.to_str().expect("a UTF-8 data directory");
    vars.push(("IGGY_KAFKA_DATA_DIR".to_string(), data.to_string()));
    for (k, v) in settings {
        vars.push((format!("IGGY_KAFKA_{}", k.to_uppercase()), v.clone()));
    }
    vars
}

/// What gateways log: `GATEWAY_LOG` (a `RUST_LOG` filter), warnings by default.
fn log_filter() -> String {
    std::env::var("GATEWAY_LOG").unwrap_or_else(|_| "warn".into())
}

/// In-process gateways log through this binary's one subscriber, into the output of the
/// test that started them (shown when it fails).
fn log_in_process() {
    static LOG: Once = Once::new();
    LOG.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(log_filter()))
            .with_test_writer()
            .try_init();
    });
}

/// Where a gateway under test keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Embedded,
    Iggy,
}

/// Defines each listed test, a `fn name(store: Store)` of the calling file, once per
/// store: `embedded::name` and `iggy::name`. The same code runs on both backends; the
/// Iggy copies skip (one SKIPPED line) without an `iggy-server`. `async:` runs each
/// `async fn name(store: Store)` on a runtime of its own; `run: RUNNER;` hands each
/// test to `RUNNER(store, name)` (`ports::run`, which gives it the store's ports).
macro_rules! on_every_store {
    (run: $runner:path; $($test:ident),+ $(,)?) => {
        $crate::support::on_every_store!(@stores $($test => |store| {
            $runner(store, super::$test)
        }),+);
    };
    (async: $($test:ident),+ $(,)?) => {
        $crate::support::on_every_store!(@stores $($test => |store| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(super::$test(store))
        }),+);
    };
    (@stores $($test:ident => $run:expr),+) => {
        mod embedded {
            $(#[test]
            fn $test() {
                ($run)($crate::support::Store::Embedded)
            })+
        }
        mod iggy {
            $(#[test]
            fn $test() {
                ($run)($crate::support::Store::Iggy)
            })+
        }
    };
    ($($test:ident),+ $(,)?) => {
        $crate::support::on_every_store!(@stores $($test => super::$test),+);
    };
}
pub(crate) use on_every_store;

/// A raw Kafka connection for requests no client library sends on purpose.
pub struct RawClient {
    stream: Box<dyn Stream>,
    /// The TCP socket under `stream` (the same socket, cloned) on plain connections,
    /// for looking without waiting and for changing the read timeout.
    tcp: Option<TcpStream>,
    correlation: i32,
}

/// What a [`RawClient`] speaks over: a TCP socket, or a TLS session on one.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

impl RawClient {
    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient::over_tcp(stream)
    }

    /// Speaks over `stream`, already connected (with its read timeout set).
    pub fn over(stream: impl Stream + 'static) -> RawClient {
        RawClient {
            stream: Box::new(stream),
            tcp: None,
            correlation: 0,
        }
    }

    fn over_tcp(stream: TcpStream) -> RawClient {
        let tcp = stream.try_clone().expect("clone a socket");
        RawClient {
            tcp: Some(tcp),
            ..RawClient::over(stream)
        }
    }

    /// Connects from the loopback address `source` (any of 127.0.0.0/8 on Linux), so
    /// one test can be several clients to per-address limits.
    pub fn connect_from(source: std::net::IpAddr, addr: SocketAddr) -> RawClient {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let stream = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.bind(SocketAddr::new(source, 0)).expect("bind");
            let stream = socket.connect(addr).await.expect("connect");
            stream.into_std().expect("a std socket")
        });
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        RawClient::over_tcp(stream)
    }

    /// How long a read waits for the gateway (10 s unless changed): only so that a hang
    /// fails instead of hanging. Plain TCP connections only.
    pub fn set_read_timeout(&self, timeout: Duration) {
        let tcp = self.tcp.as_ref().expect("a plain TCP connection");
        tcp.set_read_timeout(Some(timeout)).unwrap();
    }

    /// Whether the gateway has sent anything not read yet, or closed the connection,
    /// looking without waiting. Plain TCP connections only.
    pub fn has_arrived(&self) -> bool {
        let tcp = self.tcp.as_ref().expect("a plain TCP connection");
        tcp.set_nonblocking(true).unwrap();
        let peeked = tcp.peek(&mut [0; 1]);
        tcp.set_nonblocking(false).unwrap();
        match peeked {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(_) => true, // a reset
        }
    }

    /// Sends one request and returns its decoded response.
    pub fn call(&mut self, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        self.send(key, version, &body);
        self.receive(key, version)
    }

    pub fn send(&mut self, key: ApiKey, version: i16, body: &RequestKind) {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("raw-test")));
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        self.send_frame(&buf);
    }

    /// Writes bytes with a correct length prefix.
    pub fn send_frame(&mut self, body: &[u8]) {
        let mut out = Vec::with_capacity(body.len() + 4);
        out.extend_from_slice(&(body.len() as i32).to_be_bytes());
        out.extend_from_slice(body);
        self.stream.write_all(&out).expect("write");
    }

    /// Writes bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads one response to a request of `key` at `version`, decoded to the last byte.
    pub fn receive(&mut self, key: ApiKey, version: i16) -> ResponseKind {
        let mut frame = self.read_frame().expect("response frame");
        let header_version = if key == ApiKey::ApiVersions {
            0
        } else {
            key.response_header_version(version)
        };
        ResponseHeader::decode(&mut frame, header_version).expect("response header decodes");
        let answer = ResponseKind::decode(key, &mut frame, version).expect("response decodes");
        // Every byte belongs to the answer at this version.
        assert!(frame.is_empty(), "{} bytes left over", frame.len());
        answer
    }

    /// What the gateway does next on this connection: a frame, a close, or nothing
    /// within the read timeout ([`next`]).
    pub fn next(&mut self) -> Next {
        next(&mut self.stream)
    }

    /// One frame, or `None` if the gateway closed the connection (end of stream or a
    /// reset); panics if it did neither within the read timeout.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        match self.next() {
            Next::Frame(frame) => Some(frame),
            Next::Closed => None,
            Next::Silent => panic!("neither an answer nor a close within the read timeout"),
        }
    }

    /// True once the gateway has closed this connection (end of stream or a reset);
    /// false if it sends a frame or is still open after the read timeout. Prefer
    /// [`Self::assert_closed`], which says which of the two it was.
    pub fn is_closed(&mut self) -> bool {
        matches!(self.next(), Next::Closed)
    }

    /// Asserts that the gateway closes this connection with nothing more sent: end of
    /// stream or a reset, not an answer, and not a connection left open until the read
    /// timeout (a gateway that merely stops answering fails this).
    pub fn assert_closed(&mut self, what: &str) {
        assert_closed(&mut self.stream, what)
    }
}

/// What came next on a connection, read by [`next`].
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A whole frame (without its size prefix).
    Frame(Bytes),
    /// The peer closed the connection at a frame boundary: end of stream, or a reset.
    Closed,
    /// Nothing at all, and the connection still open, when the read timeout passed.
    Silent,
}

/// Reads what comes next on `stream` (with its read timeout set): one whole frame, the
/// end of the connection, or silence until the timeout. The one place the tests tell a
/// closed connection from one that merely stopped answering. A close or a stall in
/// the middle of a frame panics: neither is an answer nor a clean close.
pub fn next(stream: &mut (impl Read + ?Sized)) -> Next {
    let mut len = [0; 4];
    match fill(stream, &mut len) {
        (_, Fill::Done) => {}
        (0, Fill::Closed) => return Next::Closed,
        (0, Fill::Silent) => return Next::Silent,
        (n, how) => panic!("{how:?} after {n} bytes of a frame's size"),
    }
    let size = i32::from_be_bytes(len);
    let size = usize::try_from(size).unwrap_or_else(|_| panic!("a frame of size {size}"));
    let mut body = vec![0; size];
    match fill(stream, &mut body) {
        (_, Fill::Done) => Next::Frame(Bytes::from(body)),
        (n, how) => panic!("{how:?} after {n} of a frame's {size} bytes"),
    }
}

/// Asserts that the peer closes `stream` (end of stream or a reset) with nothing sent
/// first, panicking with `what` and what came instead: a frame, or silence until the
/// read timeout.
pub fn assert_closed(stream: &mut (impl Read + ?Sized), what: &str) {
    match next(stream) {
        Next::Closed => {}
        Next::Frame(frame) => panic!(
            "{what}: expected the connection closed, got a {}-byte frame",
            frame.len()
        ),
        Next::Silent => panic!("{what}: the connection is still open after the read timeout"),
    }
}

#[derive(Debug)]
enum Fill {
    Done,
    Closed,
    Silent,
}

/// Reads until `buf` is full, the peer closes, or the read timeout passes: the bytes
/// read and which of the three.
fn fill(stream: &mut (impl Read + ?Sized), buf: &mut [u8]) -> (usize, Fill) {
    use std::io::ErrorKind::*;
    let mut at = 0;
    while at < buf.len() {
        match stream.read(&mut buf[at..]) {
            Ok(0) => return (at, Fill::Closed),
            Ok(n) => at += n,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) if matches!(e.kind(), WouldBlock | TimedOut) => return (at, Fill::Silent),
            // A reset, or (over TLS) a TCP close without close_notify.
            Err(e)
                if matches!(
                    e.kind(),
                    ConnectionReset | ConnectionAborted | UnexpectedEof
                ) =>
            {
                return (at, Fill::Closed)
            }
            Err(e) => panic!("reading from the gateway: {e}"),
        }
    }
    (at, Fill::Done)
}

/// Sends a typed request of API `$api` at version `$v` on a [`RawClient`] and returns
/// the typed answer.
macro_rules! call {
    ($c:expr, $api:ident, $v:expr, $request:expr) => {
        match $c.call(
            kafka_protocol::messages::ApiKey::$api,
            $v,
            kafka_protocol::messages::RequestKind::$api($request),
        ) {
            kafka_protocol::messages::ResponseKind::$api(answer) => answer,
            other => panic!("expected a {} answer, got {other:?}", stringify!($api)),
        }
    };
}
pub(crate) use call;

/// A topic name as requests carry it.
pub fn topic_name(topic: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(StrBytes::from_string(topic.to_string()))
}

/// A record from no particular producer, for hand-built batches; set producer fields
/// with struct update syntax.
pub fn record(key: Option<&[u8]>, value: &[u8], timestamp: i64) -> kafka_protocol::records::Record {
    kafka_protocol::records::Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key: key.map(Bytes::copy_from_slice),
        value: Some(Bytes::copy_from_slice(value)),
        headers: Default::default(),
    }
}

/// A record batch (magic v2) as a producer would send it.
pub fn batch(
    records: &[kafka_protocol::records::Record],
    compression: kafka_protocol::records::Compression,
) -> Bytes {
    let mut buf = BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(
        &mut buf,
        records,
        &kafka_protocol::records::RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .unwrap();
    buf.freeze()
}

/// Reads a big-endian i32 at `at`.
pub fn i32_at(b: &[u8], at: usize) -> i32 {
    (&b[at..]).get_i32()
}

/// Writes a length-prefixed frame into a buffer (for concatenating frames).
pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    out.to_vec()
}
