//! Shared by the integration tests: gateways on free loopback ports, in-process unless
//! the process is the point, and a minimal raw Kafka client for hand-built requests.

pub mod acls;
pub mod admin;
pub mod client_checks;
pub mod configs;
pub mod describe;
pub mod groups;
pub mod iggy;
pub mod kafka;
pub mod machine;
pub mod partitions;
pub mod proxy;
mod raw;
pub mod records;
pub mod sasl;
pub mod tls;
pub mod transactions;
pub mod versions;

pub use raw::*;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iggy_kafka_gateway::{Settings, Sighup, Stop};

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
    /// Process environment beside the settings (a process's only), kept for restarts.
    env: Vec<(String, String)>,
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

/// How long a gateway may take to start (an Iggy backend connects and loads its tables
/// first) before the test fails rather than waits on.
const STARTUP_LIMIT: Duration = Duration::from_secs(120);

const IN_PROCESS: &str = "an in-process gateway has no process: start it with Gateway::process*";

/// Starts a gateway with settings: [`Gateway::start_with`] or [`Gateway::process_with`].
pub type Start = fn(&[(&str, &str)]) -> Gateway;

/// Starts a gateway on a store: [`Gateway::start_on`] or [`Gateway::process_on`].
pub type StartOn = fn(Store, &[(&str, &str)]) -> Option<Gateway>;

/// Which of the two a gateway starts as.
enum Kind<'a> {
    InProcess,
    /// The binary, logging at this `RUST_LOG` filter to the tests' stderr, or into a file.
    Process(&'a str, Option<&'a Path>),
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
        Self::fresh(Kind::Process(&log_filter(), None), settings)
    }

    /// Starts the gateway binary on `store`, as [`Self::start_on`].
    pub fn process_on(store: Store, settings: &[(&str, &str)]) -> Option<Gateway> {
        Self::fresh_on(Kind::Process(&log_filter(), None), store, settings)
    }

    /// Starts the gateway binary logging at `log` (a `RUST_LOG` filter) rather than at
    /// `GATEWAY_LOG` or warn.
    pub fn process_with_log(log: &str, settings: &[(&str, &str)]) -> Gateway {
        Self::fresh(Kind::Process(log, None), settings)
    }

    /// Starts the gateway binary logging at `log` into `file`, for a test that reads
    /// what it logged.
    pub fn process_logging_into(file: &Path, log: &str, settings: &[(&str, &str)]) -> Gateway {
        Self::fresh(Kind::Process(log, Some(file)), settings)
    }

    /// Starts the gateway binary on `data`, a directory the caller keeps, with `env` in
    /// its environment beside the settings (both kept for restarts): for a test that
    /// changes the data between runs, or runs the binary over a preloaded library.
    pub fn process_on_data(
        data: &Path,
        env: &[(&str, &str)],
        settings: &[(&str, &str)],
    ) -> Gateway {
        record_embedded(settings);
        let log = log_filter();
        Self::spawn(
            data,
            "127.0.0.1:0",
            owned(settings),
            owned(env),
            (&log, None),
        )
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
        record_embedded(settings);
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let settings = owned(settings);
        let mut gw = match kind {
            Kind::InProcess => Self::in_process(&data, settings),
            Kind::Process(log, into) => {
                Self::spawn(&data, "127.0.0.1:0", settings, Vec::new(), (log, into))
            }
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
        let ((listeners, admin), stop) = match wait.recv_timeout(STARTUP_LIMIT) {
            Ok(Ok(up)) => up,
            Ok(Err(e)) => panic!("the gateway did not start: {e}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the gateway did not start within {STARTUP_LIMIT:?}")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
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
            env: Vec::new(),
            _dir: None,
            iggy: None,
        }
    }

    /// Runs the binary on `data`, listening on `bind` unless `listeners` is among the
    /// settings.
    fn spawn(
        data: &Path,
        bind: &str,
        settings: Vec<(String, String)>,
        env: Vec<(String, String)>,
        (log, into): (&str, Option<&Path>),
    ) -> Gateway {
        let stderr = match into {
            Some(file) => Stdio::from(std::fs::File::create(file).expect("log file")),
            None => Stdio::inherit(),
        };
        // A process group of its own: a SIGSTOPped gateway in the tests' group would let
        // the kernel send the whole group SIGHUP (then SIGCONT) when it finds the group
        // orphaned with a stopped member, which ended paused gateways mid-test.
        let mut child = Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"))
            .process_group(0)
            .envs(variables(data, bind, &settings))
            .envs(env.iter().cloned())
            .env("RUST_LOG", log)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start gateway");
        // Read on a thread of its own, so a gateway that hangs before it reports its
        // addresses fails the test after STARTUP_LIMIT instead of hanging it.
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (lines, reported) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        // "... listener NAME on HOST:PORT" for each listener, "... listening on
        // HOST:PORT" (the first), then "... admin on http://HOST:PORT".
        let line = || {
            let line = reported.recv_timeout(STARTUP_LIMIT).unwrap_or_else(|e| {
                panic!("the gateway reported no address within {STARTUP_LIMIT:?}: {e}")
            });
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
            env,
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

    /// The data directory it was started on.
    /// The iggy-server this gateway keeps its data in, when on Iggy.
    pub fn iggy_server(&self) -> Option<&iggy::IggyServer> {
        self.iggy.as_ref()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Bootstrap servers naming every gateway of a cluster.
    pub fn bootstrap_all(gws: &[Gateway]) -> String {
        gws.iter()
            .map(Gateway::bootstrap)
            .collect::<Vec<_>>()
            .join(",")
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

    /// How the process ended, if it has (a signal's number says who ended it).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child().try_wait().expect("the gateway's status")
    }

    /// Sends signal `name` (`HUP`, ...) to the process; `STOP` returns once it stopped.
    pub fn signal(&self, name: &str) {
        signal(self.pid(), name);
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
            self.env.clone(),
            (log, None),
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
/// A memory figure of process `pid` from `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in
/// KiB.
pub fn memory_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// Name-value pairs as the owned ones a [`Gateway`] keeps for its restarts.
fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Counts the running test as one on the embedded store unless `settings` say Iggy.
fn record_embedded(settings: &[(&str, &str)]) {
    if !settings.contains(&("backend", "iggy")) {
        record_test("EMBEDDED_TESTS_RECORD");
    }
}

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

/// Says a test skipped itself: one `SKIPPED` line written to stderr directly, as the
/// harness captures `eprintln!` of a passing test and CI fails a run on that line.
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {why}");
}

/// Appends the running test's name to the file the variable `record` names, when set,
/// so CI counts the tests that ran on each store: the harness names each test's thread
/// after the test.
pub fn record_test(record: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os(record) else {
        return;
    };
    let name = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{record}={}: {e}", Path::new(&path).display()));
    // One write of one line: appends from parallel tests do not interleave.
    file.write_all(format!("{name}\n").as_bytes())
        .unwrap_or_else(|e| panic!("record a test in {record}: {e}"));
}

/// Sends signal `name` (`STOP`, `CONT`, ...) to process `pid`. `STOP` returns only once
/// every thread of the process has stopped: `kill` returns when the signal is sent, and
/// on a loaded machine the process's threads may run (and answer) for milliseconds
/// before the thread that takes the signal is scheduled to stop the others.
pub fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{name} {pid} failed");
    if name != "STOP" {
        return;
    }
    let some_running = || {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's threads");
        (tasks.flatten())
            .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
            // The state follows the parenthesised command name, which may hold spaces.
            .any(|stat| {
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| !rest.starts_with('T'))
            })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while some_running() {
        assert!(Instant::now() < deadline, "process {pid} did not stop");
        std::thread::sleep(Duration::from_millis(1));
    }
}
