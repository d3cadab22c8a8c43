//! KIP-848's consumer group protocol through Java kafka-clients 4.x members with
//! group.protocol=consumer (`tests/clients/Kip848MemberJava.java`), each a process of
//! its own so one can leave cleanly and another be SIGKILLed. Their logs say what each
//! owned when (its rebalance listener) and every record it read; from them: no
//! partition is owned by two members at once, every record produced is read, and read
//! twice only where a killed member read past its last commit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support;
use support::admin::eventually;
use support::groups::{create_topic, produce, QUICK_BEATS};
use support::{Gateway, Store};

/// Short sessions, so a killed member's partitions move within the test.
const SETTINGS: &[(&str, &str)] = &[
    ("group_consumer_min_session_timeout_ms", "6000"),
    ("group_consumer_session_timeout_ms", "6000"),
    QUICK_BEATS[0],
    QUICK_BEATS[1],
];

type Tp = (String, i32);

/// The kafka-clients 4.x jars: the consumer protocol needs them.
fn jars() -> PathBuf {
    let jars = support::client_checks::java_jars();
    let four = jars.into_iter().find(|j| j.ends_with("kafka-java-4"));
    four.expect("kafka-clients 4.x in .venv/kafka-java-4: run .ci/client-deps.sh")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A member's JVM, killed if the test ends without stopping it.
struct Member {
    name: String,
    process: Option<Child>,
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(mut p) = self.process.take() {
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

/// The member program compiled against the 4.x jars: the class path to run it with.
fn compiled(dir: &Path) -> String {
    let jars = jars();
    let mut cp: Vec<String> = std::fs::read_dir(&jars)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jar"))
        .map(|p| p.display().to_string())
        .collect();
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/Kip848MemberJava.java"
    );
    let classes = dir.join("classes");
    let status = Command::new("javac")
        .args([
            "-nowarn",
            "-d",
            classes.to_str().unwrap(),
            "-cp",
            &cp.join(":"),
            source,
        ])
        .status()
        .expect("javac");
    assert!(status.success(), "javac failed");
    cp.insert(0, classes.display().to_string());
    cp.join(":")
}

/// Starts member `name` of `group` on `topics` (names, or `regex:RE`): the JVM itself,
/// so a kill kills the member.
fn start(bootstrap: &str, (topics, group): (&str, &str), dir: &Path, name: &str) -> Member {
    let cp = std::fs::read_to_string(dir.join("classpath")).unwrap_or_else(|_| {
        let cp = compiled(dir);
        std::fs::write(dir.join("classpath"), &cp).unwrap();
        cp
    });
    let dir_arg = dir.to_str().unwrap();
    let process = Command::new("java")
        .args([
            "-cp",
            &cp,
            "Kip848MemberJava",
            bootstrap,
            topics,
            group,
            dir_arg,
            name,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a Java member");
    Member {
        name: name.to_string(),
        process: Some(process),
    }
}

/// Asks the member to close (it leaves the group) and checks it did within a minute.
fn stop(dir: &Path, mut m: Member) {
    std::fs::write(dir.join(format!("{}.stop", m.name)), "").unwrap();
    let mut process = m.process.take().expect("running");
    let ended = eventually(Duration::from_secs(60), || {
        process.try_wait().is_ok_and(|s| s.is_some())
    });
    if !ended {
        let _ = process.kill();
    }
    let out = process.wait_with_output().expect("the member's end");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("PASS kip848-member"),
        "{}: {said}",
        m.name
    );
}

/// What one member's log says.
#[derive(Default)]
struct Log {
    /// (partition, from, to): when it owned each partition; `to` None: still owns it.
    owned: Vec<(Tp, u64, Option<u64>)>,
    /// (partition, offset, value) of every record read.
    records: Vec<(Tp, i64, String)>,
    commit_failures: Vec<String>,
}

impl Log {
    fn read(dir: &Path, name: &str) -> Log {
        let text = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        let mut log = Log::default();
        for line in text.lines() {
            if !line.ends_with(|c: char| c.is_ascii_digit()) && !line.starts_with("commitfail") {
                continue;
            }
            let f: Vec<&str> = line.split(' ').collect();
            let tp = || (f[1].to_string(), f[2].parse().unwrap());
            // A line being written or cut short by a SIGKILL has fewer fields.
            match (f[0], f.len()) {
                ("assigned", 4) => log.owned.push((tp(), f[3].parse().unwrap(), None)),
                ("revoked" | "lost", 4) => {
                    let at = f[3].parse().unwrap();
                    let open = log
                        .owned
                        .iter_mut()
                        .rev()
                        .find(|(p, _, to)| *p == tp() && to.is_none());
                    open.expect("revoked what it owned").2 = Some(at);
                }
                ("rec", 5) => log
                    .records
                    .push((tp(), f[3].parse().unwrap(), f[4].to_string())),
                ("commitfail", _) => log.commit_failures.push(line.to_string()),
                _ => {}
            }
        }
        log
    }

    fn owns_now(&self) -> BTreeSet<Tp> {
        let open = self.owned.iter().filter(|(_, _, to)| to.is_none());
        open.map(|(tp, _, _)| tp.clone()).collect()
    }
}

/// Waits until the live members own every partition of `topic` between them, each at
/// least one.
fn settled(dir: &Path, live: &[&str], topic: &str, partitions: i32) {
    let all: BTreeSet<Tp> = (0..partitions).map(|p| (topic.to_string(), p)).collect();
    let ok = eventually(Duration::from_secs(90), || {
        let owned: Vec<BTreeSet<Tp>> = live.iter().map(|m| Log::read(dir, m).owns_now()).collect();
        let union: BTreeSet<Tp> = owned.iter().flatten().cloned().collect();
        union == all && owned.iter().all(|o| !o.is_empty())
    });
    let owned: Vec<_> = live
        .iter()
        .map(|m| (m, Log::read(dir, m).owns_now()))
        .collect();
    assert!(ok, "the group never settled on {live:?}: {owned:?}");
}

/// Three members share a topic; one leaves, one is SIGKILLed, a new one joins, while a
/// producer writes on. No partition is owned by two members at once, every record is
/// read, and only the killed member's partitions are read twice (from its last commit).
fn members_come_and_go_without_sharing_a_partition(store: Store) {
    let Some(gw) = Gateway::start_on(store, SETTINGS) else {
        return;
    };
    let (b, topic, group) = (gw.bootstrap(), "kip848-shared", "kip848");
    create_topic(&b, topic, 6);
    let dir = tempfile::tempdir().unwrap();
    let stop_producing = Arc::new(AtomicBool::new(false));
    let producer = support::groups::producing(b.clone(), topic, stop_producing.clone());
    let mut members: BTreeMap<&str, Member> = ["m1", "m2", "m3"]
        .into_iter()
        .map(|n| (n, start(&b, (topic, group), dir.path(), n)))
        .collect();
    settled(dir.path(), &["m1", "m2", "m3"], topic, 6);
    thread::sleep(Duration::from_secs(2));

    stop(dir.path(), members.remove("m1").unwrap());
    settled(dir.path(), &["m2", "m3"], topic, 6);
    thread::sleep(Duration::from_secs(1));

    let mut killed = members.remove("m2").unwrap();
    let mut process = killed.process.take().unwrap();
    process.kill().unwrap();
    let killed_at = now_ms();
    process.wait().unwrap();
    let killed_owned = Log::read(dir.path(), "m2").owns_now();
    members.insert("m4", start(&b, (topic, group), dir.path(), "m4"));
    settled(dir.path(), &["m3", "m4"], topic, 6);
    thread::sleep(Duration::from_secs(2));

    stop_producing.store(true, Ordering::Relaxed);
    let produced = producer.join().expect("producer");
    let names = ["m1", "m2", "m3", "m4"];
    let read_all = eventually(Duration::from_secs(60), || {
        let values: BTreeSet<String> = (names.iter())
            .flat_map(|m| Log::read(dir.path(), m).records.into_iter().map(|r| r.2))
            .collect();
        values.len() as u64 >= produced
    });
    for (_, m) in members {
        stop(dir.path(), m);
    }
    assert!(read_all, "not every one of {produced} records was read");

    let logs: BTreeMap<&str, Log> = names
        .iter()
        .map(|m| (*m, Log::read(dir.path(), m)))
        .collect();
    for (m, log) in &logs {
        if !log.commit_failures.is_empty() {
            eprintln!("{m}: {:?}", log.commit_failures);
        }
    }
    // Who owned each partition when: the killed member until it died.
    let mut owners: BTreeMap<Tp, Vec<(u64, u64, &str)>> = BTreeMap::new();
    for (m, log) in &logs {
        for (tp, from, to) in &log.owned {
            let to = to.unwrap_or(if *m == "m2" { killed_at } else { u64::MAX });
            owners.entry(tp.clone()).or_default().push((*from, to, m));
        }
    }
    for (tp, mut spans) in owners {
        spans.sort();
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "{tp:?} owned by two members at once: {spans:?}"
            );
        }
    }
    let mut seen: BTreeMap<(Tp, i64), usize> = BTreeMap::new();
    for log in logs.values() {
        for (tp, offset, _) in &log.records {
            *seen.entry((tp.clone(), *offset)).or_default() += 1;
        }
    }
    let twice: Vec<_> = (seen.iter())
        .filter(|((tp, _), n)| **n > 1 && !killed_owned.contains(tp))
        .collect();
    assert!(
        twice.is_empty(),
        "read twice outside the killed member's partitions: {twice:?}"
    );
}

/// A member subscribed by regex (with the `range` assignor) gets a topic created after
/// it joined, without doing anything.
fn a_regex_subscription_picks_up_a_topic_created_later(store: Store) {
    let Some(gw) = Gateway::start_on(store, SETTINGS) else {
        return;
    };
    let b = gw.bootstrap();
    create_topic(&b, "kip848-re-a", 2);
    create_topic(&b, "kip848-other", 1);
    produce(&b, "kip848-re-a", 0, 10);
    produce(&b, "kip848-other", 100, 10);
    let dir = tempfile::tempdir().unwrap();
    let m = start(&b, ("regex:kip848-re-.*", "kip848-re"), dir.path(), "r1");
    let read = |topic: &str| {
        let records = Log::read(dir.path(), "r1").records;
        records.iter().filter(|(tp, _, _)| tp.0 == topic).count()
    };
    assert!(
        eventually(Duration::from_secs(60), || read("kip848-re-a") == 10),
        "the regex's first topic was not read"
    );
    create_topic(&b, "kip848-re-b", 2);
    produce(&b, "kip848-re-b", 200, 10);
    let picked_up = eventually(Duration::from_secs(60), || read("kip848-re-b") == 10);
    stop(dir.path(), m);
    assert!(picked_up, "a topic created later was not picked up");
    assert_eq!(
        read("kip848-other"),
        0,
        "a topic the regex does not match was read"
    );
}

support::on_every_store!(
    members_come_and_go_without_sharing_a_partition,
    a_regex_subscription_picks_up_a_topic_created_later,
);
