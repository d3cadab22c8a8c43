//! Kafka's own load tools, run as `kafka-producer-perf-test.sh` and
//! `kafka-consumer-perf-test.sh` run them (`java -cp <jars> <class>`, the scripts' heap
//! and G1 flags), with their defaults but for `acks=all` and the compression type; their
//! own figures are read from what they print. Also `kafka-features.sh describe`, for the
//! feature levels a broker has finalized. Shared by `kafka_compare`, `scale` and
//! `transactions`.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

fn java(classpath: &str, main: &str) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx512M", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"])
        .args([
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            classpath,
            main,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for `child` up to `limit` (killing it then) and returns its stdout, or why not.
fn finish(mut child: Child, limit: Duration) -> Result<String, String> {
    // Both pipes drained on threads of their own, so a chatty tool never blocks on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no exit after {limit:?}"));
        }
        thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    if status.success() {
        Ok(out)
    } else {
        let tail: String = err.lines().rev().take(5).collect::<Vec<_>>().join(" / ");
        Err(format!("{status}: {tail}"))
    }
}

/// Records per second summed over `producers` concurrent `ProducerPerformance` runs of
/// n / producers records each (each a JVM, as several shells would run them), and the
/// latency percentiles (ms) the first one printed: p50, p99, p99.9.
pub fn produce(
    classpath: &str,
    addr: &str,
    topic: &str,
    shape: (usize, &str),
    load: (u64, u64),
    limit: Duration,
) -> Result<(f64, [f64; 3]), String> {
    produce_with(classpath, addr, topic, shape, load, &[], limit)
}

/// As `produce`, with more of the tool's own options (`--transactional-id …`) given
/// to every run before its producer properties (so one run, with a transactional id).
pub fn produce_with(
    classpath: &str,
    addr: &str,
    topic: &str,
    (size, compression): (usize, &str),
    (n, producers): (u64, u64),
    options: &[&str],
    limit: Duration,
) -> Result<(f64, [f64; 3]), String> {
    let children: Vec<Child> = (0..producers)
        .map(|_| {
            java(classpath, "org.apache.kafka.tools.ProducerPerformance")
                .args([
                    "--topic",
                    topic,
                    "--num-records",
                    &(n / producers).to_string(),
                ])
                .args(["--record-size", &size.to_string(), "--throughput", "-1"])
                .args(options)
                // Takes every argument after it as a property.
                .args(["--producer-props", "acks=all"])
                .arg(format!("bootstrap.servers={addr}"))
                .arg(format!("compression.type={compression}"))
                .spawn()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let outs: Vec<Result<String, String>> =
        children.into_iter().map(|c| finish(c, limit)).collect();
    let (mut rps, mut lat) = (0.0, None);
    for out in outs {
        // "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
        //  P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
        let out = out?;
        let line = out
            .lines()
            .rfind(|l| l.contains("records sent") && l.contains("50th"))
            .ok_or_else(|| format!("no summary line in: {out}"))?;
        let nums: Vec<f64> = line
            .split([',', ' ', '('])
            .filter_map(|w| w.parse::<f64>().ok())
            .collect();
        let [_, r, _, _, _, p50, _, p99, p999] = nums[..] else {
            return Err(format!("unexpected summary: {line}"));
        };
        rps += r;
        lat.get_or_insert([p50, p99, p999]);
    }
    Ok((rps, lat.unwrap_or([f64::NAN; 3])))
}

/// Records per second of one `ConsumerPerformance` reading `n` records from the start of
/// `topic` in a group of its own: its `fetch.nMsg.sec`, which leaves the group join out.
pub fn consume(
    classpath: &str,
    addr: &str,
    topic: &str,
    n: u64,
    limit: Duration,
) -> Result<f64, String> {
    let child = java(classpath, "org.apache.kafka.tools.ConsumerPerformance")
        .args(["--bootstrap-server", addr, "--topic", topic])
        .args(["--num-records", &n.to_string(), "--timeout", "30000"])
        .args(["--group", &format!("perf-{topic}")])
        .spawn()
        .map_err(|e| e.to_string())?;
    let out = finish(child, limit)?;
    // "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    //  rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec": the last line.
    let line = out.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    let cols: Vec<&str> = line.split(',').map(str::trim).collect();
    let got = cols.get(4).and_then(|c| c.parse::<f64>().ok());
    let rps = cols.get(9).and_then(|c| c.parse::<f64>().ok());
    match (got, rps) {
        (Some(got), Some(rps)) if got as u64 >= n => Ok(rps),
        _ => Err(format!("unexpected output: {out}")),
    }
}

/// The level `addr` has finalized for `feature` (`transaction.version`, ...), as
/// `kafka-features.sh describe` prints it (`FeatureCommand`, an Admin client's
/// ApiVersions); None when the feature is not listed or has no finalized level.
pub fn finalized_level(
    classpath: &str,
    addr: &str,
    feature: &str,
    limit: Duration,
) -> Result<Option<i16>, String> {
    let child = java(classpath, "org.apache.kafka.tools.FeatureCommand")
        .args(["--bootstrap-server", addr, "describe"])
        .spawn()
        .map_err(|e| e.to_string())?;
    let out = finish(child, limit)?;
    // "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\t
    //  FinalizedVersionLevel: 2\tEpoch: 0"
    let level = out
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(feature))
        .and_then(|l| l.split("FinalizedVersionLevel:").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok());
    Ok(level)
}
