//! The systems under test, each one or two child processes on free loopback ports with
//! temp dirs of their own: the gateway on its embedded store, the gateway on an
//! iggy-server, Apache Kafka (KRaft, one combined broker and controller) and Tansu
//! (memory). Also what /proc says about a process: CPU seconds used and peak resident
//! memory.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::{fs, net, thread};

/// A child process killed on drop (also when a panic unwinds); its temp dir goes with it.
pub struct Proc {
    pub name: &'static str,
    child: Child,
    dir: tempfile::TempDir,
    pub addr: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds used so far (`cpu_secs`).
    pub fn cpu_secs(&self) -> f64 {
        cpu_secs(self.pid())
    }

    /// Peak resident memory so far in MiB (VmHWM of /proc/<pid>/status).
    pub fn peak_rss_mib(&self) -> f64 {
        status_mib(self.pid(), "VmHWM")
    }

    /// Disk bytes of every file under its temp dir, its data and logs: blocks in use,
    /// so preallocated sparse files count what they hold.
    pub fn stored_bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            use std::os::unix::fs::MetadataExt;
            let entries = fs::read_dir(dir).into_iter().flatten().flatten();
            entries
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.blocks() * 512),
                })
                .sum()
        }
        walk(self.dir.path())
    }

    /// Resident memory now in MiB (VmRSS of /proc/<pid>/status).
    pub fn rss_mib(&self) -> f64 {
        status_mib(self.pid(), "VmRSS")
    }
}

/// A memory field of /proc/<pid>/status ("VmRSS", "VmHWM", ...) in MiB; NaN if absent.
pub fn status_mib(pid: u32, field: &str) -> f64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// TCP connections established to local port `port` (/proc/net/tcp and tcp6): how many
/// connections a listener on it holds, whoever opened them.
pub fn established_to(port: u16) -> usize {
    let local = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|f| {
            fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|l| {
            // "sl local_address rem_address st ...": state 01 is ESTABLISHED.
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[3] == "01"
        })
        .count()
}

/// CPU seconds process `pid` used so far (all threads, user and system): utime and stime
/// from /proc/<pid>/stat, in clock ticks of 10 ms, so phases should last seconds.
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    ticks(11)
        .zip(ticks(12))
        .map_or(0.0, |(u, s)| (u + s) / 100.0)
}

/// One system under test: where clients connect and the processes that serve them.
pub struct System {
    pub name: &'static str,
    pub addr: String,
    pub procs: Vec<Proc>,
    /// Configurations every topic of the bench is made with on this system.
    pub topic_configs: &'static [(&'static str, &'static str)],
}

impl System {
    /// A system served at its first process's address.
    pub fn of(name: &'static str, procs: Vec<Proc>) -> System {
        let addr = procs[0].addr.clone();
        System {
            name,
            addr,
            procs,
            topic_configs: &[],
        }
    }

    /// CPU seconds used so far by all of the system's processes.
    pub fn cpu_secs(&self) -> f64 {
        self.procs.iter().map(Proc::cpu_secs).sum()
    }
}

/// Kafka (named `kafka_name`), the gateway on its embedded store and, with an
/// iggy-server binary, the gateway on it: what every comparison runs, Kafka first
/// since every ratio is to it.
pub fn kafka_and_gateways(
    (kafka_name, classpath): (&'static str, &str),
    gateway_bin: &Path,
    iggy_bin: Option<&Path>,
) -> Vec<System> {
    let mut systems = vec![
        System::of(kafka_name, vec![kafka(classpath)]),
        System::of("gateway (embedded)", vec![gateway(gateway_bin, None)]),
    ];
    if let Some(bin) = iggy_bin {
        let server = iggy(bin);
        let gw = gateway(gateway_bin, Some(&server.addr));
        systems.push(System::of("gateway (Iggy)", vec![gw, server]));
    }
    systems
}

fn free_addr() -> String {
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn spawn(name: &'static str, mut cmd: Command, dir: tempfile::TempDir, addr: String) -> Proc {
    let log = fs::File::create(dir.path().join("log")).unwrap();
    cmd.current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
    let mut p = Proc {
        name,
        child,
        dir,
        addr,
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while net::TcpStream::connect(&p.addr).is_err() {
        if let Ok(Some(status)) = p.child.try_wait() {
            let log = fs::read_to_string(p.dir.path().join("log")).unwrap_or_default();
            panic!("{} exited ({status}) before listening:\n{log}", p.name);
        }
        assert!(
            Instant::now() < deadline,
            "{name}: not listening after 90 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
    p
}

/// The gateway with its defaults (embedded store, `durability=interval`) unless `iggy`
/// names an iggy-server to use as the backend. The initial rebalance delay is 0 on every
/// system, as Kafka's shipped `config/server.properties` sets it.
pub fn gateway(bin: &Path, iggy: Option<&str>) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut cmd = Command::new(bin);
    cmd.env("IGGY_KAFKA_BIND_ADDRESS", &addr)
        .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_DATA_DIR", dir.path().join("data"))
        .env("IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0");
    // Warnings only, unless the caller asks for more (RUST_LOG is inherited then).
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    if let Some(iggy) = iggy {
        cmd.env("IGGY_KAFKA_BACKEND", "iggy")
            .env("IGGY_KAFKA_IGGY_ADDRESS", iggy)
            .env("IGGY_KAFKA_IGGY_CONNECT_TIMEOUT_MS", "10000");
    }
    spawn("gateway", cmd, dir, addr)
}

/// An iggy-server with its defaults, one shard (as `benches/iggy.rs`).
pub fn iggy(bin: &Path) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut cmd = Command::new(bin);
    cmd.env("IGGY_TCP_ADDRESS", &addr)
        .env("IGGY_SYSTEM_PATH", dir.path().join("data"))
        .env("IGGY_HTTP_ENABLED", "false")
        .env("IGGY_QUIC_ENABLED", "false")
        .env("IGGY_WEBSOCKET_ENABLED", "false")
        .env("IGGY_ROOT_USERNAME", "iggy")
        .env("IGGY_ROOT_PASSWORD", "iggy")
        .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "1")
        .env("IGGY_SYSTEM_SHARDING_PIN_CORES", "false");
    spawn("iggy-server", cmd, dir, addr)
}

/// Tansu 0.6 with its in-memory storage engine.
pub fn tansu(bin: &Path) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let url = format!("tcp://{addr}");
    let mut cmd = Command::new(bin);
    cmd.arg("broker")
        .args(["--listener-url", &url, "--advertised-listener-url", &url])
        .args(["--storage-engine", "memory://tansu/"]);
    spawn("tansu", cmd, dir, addr)
}

/// Apache Kafka from the jars on `classpath`: KRaft, node 1 both broker and controller,
/// the log dir in its temp dir (the same disk as the others), formatted with a fresh
/// cluster id as `kafka-storage format` does. Broker settings are Kafka's defaults but
/// for what one node needs (internal topics' replication factor 1) and the rebalance
/// delay of the shipped `server.properties`; the JVM flags are those of
/// `kafka-server-start.sh` (1 GiB heap, G1).
pub fn kafka(classpath: &str) -> Proc {
    kafka_with(classpath, "")
}

/// [`kafka`] with `extra` broker settings (`server.properties` lines).
pub fn kafka_with(classpath: &str, extra: &str) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let (addr, controller) = (free_addr(), free_addr());
    let props = dir.path().join("server.properties");
    let logs = dir.path().join("kafka-logs");
    fs::write(
        &props,
        format!(
            "process.roles=broker,controller\n\
             node.id=1\n\
             controller.quorum.voters=1@{controller}\n\
             listeners=PLAINTEXT://{addr},CONTROLLER://{controller}\n\
             advertised.listeners=PLAINTEXT://{addr}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
             log.dirs={}\n\
             offsets.topic.replication.factor=1\n\
             transaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\n\
             share.coordinator.state.topic.replication.factor=1\n\
             share.coordinator.state.topic.min.isr=1\n\
             group.initial.rebalance.delay.ms=0\n{extra}",
            logs.display()
        ),
    )
    .unwrap();
    let tool = |args: &[&str]| {
        let out = Command::new("java")
            .args(["-cp", classpath, "kafka.tools.StorageTool"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run kafka.tools.StorageTool");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kafka-storage {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let id = tool(&["random-uuid"]);
    let props_path = props.to_str().unwrap();
    tool(&["format", "-t", id.trim(), "-c", props_path]);
    let mut cmd = Command::new("java");
    cmd.args([
        "-Xmx1G",
        "-Xms1G",
        "-server",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
    ])
    .args([
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-Djava.awt.headless=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    ])
    .args(["-cp", classpath, "kafka.Kafka", props_path]);
    spawn("kafka", cmd, dir, addr)
}
