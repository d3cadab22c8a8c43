//! The gateway on the Iggy backend vs the `iggy` SDK straight into the same `iggy-server`, in
//! one run: the cost of the Kafka layer over Iggy.
//!
//!   IGGY_SERVER_BIN=/path/to/iggy-server cargo bench --bench iggy
//!
//! Per record size (100 B, 1 KiB), 8 partitions:
//! 1. SDK: 4 signed-in clients (as the gateway's 4 produce clients) send batches of 1000
//!    messages, partitions round robin, then read everything back by offset (1000 per poll,
//!    4 clients, a partition each at a time). Latency is one send_messages call.
//!    Then the same produce again with the user headers every gateway message carries
//!    (mapping versions 1 and 2), to show what Iggy's own ingestion pays for them.
//! 2. Gateway: librdkafka (linger.ms=5, batch.num.messages=10000, acks=all, no compression, as
//!    `benches/throughput.rs`) into a Kafka topic of the same shape, consumed by manual
//!    assignment. Latency is send() -> delivery callback.
//! 3. Latency at half the peak produce rate (the lower of the two paths' peaks), for a few seconds, both paths paced
//!    the same way: the gateway by librdkafka (linger 5 ms), the SDK in 5 ms ticks (each tick's
//!    messages sent as one batch per partition over the 4 clients). Latency is from a record's
//!    scheduled time to its acknowledgement, so falling behind schedule shows up.
//!
//! 0. Iggy's own `iggy-bench` (pinned producers, then pinned consumers, 4 each, batches of
//!    1000), the direct ceiling the gateway is measured against, when it is beside the server.
//!
//! Env: IGGY_SERVER_BIN (skipped without it), IGGY_BENCH_BIN (default: `iggy-bench` beside
//! the server), GATEWAY_BIN (default: this package's binary),
//! BENCH_RECORDS (scale on the record counts), BENCH_RATE_SECS (length of phase 3, default 4),
//! BENCH_TIMEOUT_SECS (bound on each phase, default 120). MB = 10^6 bytes of payload.

use bytes::Bytes;
use iggy::prelude::{
    Client as _, Consumer as IggyConsumer, Identifier, IggyMessage, MessageClient, Partitioning,
    PollingStrategy, StreamClient, TcpClient, TcpClientConfig, TopicClient, TopicCreateOptions,
    UserClient,
};
mod common;
// The processes are started as `kafka_compare` starts them.
#[allow(dead_code)]
#[path = "kafka_compare/procs.rs"]
mod procs;
mod raw;

use common::{bounded, consume, create_topic, pct, produce, Row, PARTITIONS};
use procs::Proc;
use std::env;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// (record size in bytes, record count before BENCH_RECORDS scaling)
const SIZES: [(usize, f64); 2] = [(100, 300_000.0), (1024, 100_000.0)];
/// Messages per SDK send_messages call and per SDK poll.
const SDK_BATCH: usize = 1000;
/// SDK clients, as the gateway's default `iggy_produce_clients` / `iggy_read_clients`.
const SDK_CLIENTS: usize = 4;
const STREAM: &str = "direct";
/// The pacing tick of the rate-limited SDK producer, the same as the gateway's linger.ms.
const TICK: Duration = Duration::from_millis(5);

/// CPU seconds of (iggy-server, gateway, this process: the clients) over one phase.
struct CpuMeter {
    pids: [u32; 3],
    start: [f64; 3],
}

impl CpuMeter {
    fn start(iggy: &Proc, gateway: &Proc) -> CpuMeter {
        let pids = [iggy.pid(), gateway.pid(), std::process::id()];
        CpuMeter {
            pids,
            start: pids.map(procs::cpu_secs),
        }
    }

    /// µs of CPU per record for each process since `start`.
    fn per_record(&self, records: u64) -> [f64; 3] {
        let mut out = [0.0; 3];
        for (i, pid) in self.pids.iter().enumerate() {
            out[i] = (procs::cpu_secs(*pid) - self.start[i]) * 1e6 / records as f64;
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// The SDK path.

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

async fn sdk_client(addr: &str) -> Arc<TcpClient> {
    let client = TcpClient::create(Arc::new(TcpClientConfig {
        server_address: addr.to_string(),
        // As the gateway's pool: without it, small sends wait out delayed ACKs (~40 ms).
        nodelay: true,
        ..TcpClientConfig::default()
    }))
    .expect("client");
    client.connect().await.expect("connect");
    client.login_user("iggy", "iggy").await.expect("login");
    Arc::new(client)
}

/// `n` messages of `payload`, each with `headers` (Iggy's user-header wire form) if any.
fn messages(payload: &Bytes, n: usize, headers: &Option<Bytes>) -> Vec<IggyMessage> {
    (0..n)
        .map(|_| {
            let mut m = IggyMessage::builder()
                .payload(payload.clone())
                .build()
                .expect("message");
            if let Some(h) = headers {
                m.header.user_headers_length = h.len() as u32;
                m.user_headers = Some(h.clone());
            }
            m
        })
        .collect()
}

/// The user headers every gateway message carries, by mapping version: the marker, and
/// in version 1 the Kafka timestamp too (`docs/IGGY_MAPPING.md`). Written as Iggy's wire
/// list: kind u8, length u32 LE, bytes, for each name then each value.
fn gateway_headers(version: u8) -> Bytes {
    let mut out = Vec::new();
    let mut field = |kind: u8, bytes: &[u8]| {
        out.push(kind);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    const STRING: u8 = 2;
    field(STRING, b"kafka.mapping");
    field(9, &[version]); // uint8
    if version == 1 {
        field(STRING, b"kafka.timestamp");
        field(7, &1_700_000_000_000i64.to_le_bytes()); // int64
    }
    Bytes::from(out)
}

async fn sdk_send(c: &TcpClient, topic: &str, partition: u32, mut batch: Vec<IggyMessage>) {
    c.send_messages(
        &id(STREAM),
        &id(topic),
        &Partitioning::partition_id(partition),
        &mut batch,
    )
    .await
    .expect("send_messages");
}

/// Full-speed produce of `n` messages, each with `headers`: batch j goes to partition
/// j % 8, client j % 4.
async fn sdk_produce(
    clients: &[Arc<TcpClient>],
    topic: &str,
    size: usize,
    n: u64,
    headers: Option<Bytes>,
) -> Row {
    let payload = Bytes::from(vec![b'x'; size]);
    let batches = n.div_ceil(SDK_BATCH as u64);
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let stride = clients.len();
    for (k, c) in clients.iter().enumerate() {
        let (c, topic, payload) = (c.clone(), topic.to_string(), payload.clone());
        let headers = headers.clone();
        tasks.spawn(async move {
            let mut lat = Vec::new();
            for j in (k as u64..batches).step_by(stride) {
                let count = (n - j * SDK_BATCH as u64).min(SDK_BATCH as u64) as usize;
                let batch = messages(&payload, count, &headers);
                let t = Instant::now();
                sdk_send(&c, &topic, (j % PARTITIONS as u64) as u32, batch).await;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            lat
        });
    }
    let mut lat = Vec::new();
    while let Some(l) = tasks.join_next().await {
        lat.extend(l.expect("produce task"));
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    Row::produced(n, size, secs, &lat)
}

/// Reads every partition back from offset 0 until `n` messages came: (records/s, MB/s).
async fn sdk_consume(clients: &[Arc<TcpClient>], topic: &str, size: usize, n: u64) -> (f64, f64) {
    // Round robin by batch put these many messages in each partition.
    let batches = n.div_ceil(SDK_BATCH as u64);
    let per_partition = |p: u64| -> u64 {
        (0..batches)
            .filter(|j| j % PARTITIONS as u64 == p)
            .map(|j| (n - j * SDK_BATCH as u64).min(SDK_BATCH as u64))
            .sum()
    };
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (k, c) in clients.iter().enumerate() {
        let (c, topic) = (c.clone(), topic.to_string());
        let mine: Vec<(u32, u64)> = (k as u64..PARTITIONS as u64)
            .step_by(clients.len())
            .map(|p| (p as u32, per_partition(p)))
            .collect();
        tasks.spawn(async move {
            let (mut got, mut bytes) = (0u64, 0u64);
            for (p, want) in mine {
                let mut offset = 0u64;
                while offset < want {
                    let polled = c
                        .poll_messages(
                            &id(STREAM),
                            &id(&topic),
                            Some(p),
                            &IggyConsumer::default(),
                            &PollingStrategy::offset(offset),
                            SDK_BATCH as u32,
                            false,
                        )
                        .await
                        .expect("poll_messages");
                    assert!(
                        !polled.messages.is_empty(),
                        "partition {p}: ends at {offset}"
                    );
                    offset += polled.messages.len() as u64;
                    bytes += polled
                        .messages
                        .iter()
                        .map(|m| m.payload.len() as u64)
                        .sum::<u64>();
                }
                got += offset;
            }
            (got, bytes)
        });
    }
    let (mut got, mut bytes) = (0, 0);
    while let Some(r) = tasks.join_next().await {
        let (g, b) = r.expect("consume task");
        got += g;
        bytes += b;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!((got, bytes), (n, n * size as u64), "consume: counts differ");
    (got as f64 / secs, bytes as f64 / secs / 1e6)
}

/// Paced produce at `rate` records/s for `secs`: every 5 ms tick, the records scheduled in it go
/// out as one batch per partition (partition p on client p % 4), without waiting for earlier
/// ticks. Returns sorted latencies from each record's scheduled time to its acknowledgement.
async fn sdk_paced(
    clients: &[Arc<TcpClient>],
    topic: &str,
    size: usize,
    rate: f64,
    secs: f64,
) -> Vec<u64> {
    let payload = Bytes::from(vec![b'x'; size]);
    let n = (rate * secs) as u64;
    let start = tokio::time::Instant::now();
    let sched_ns = move |i: u64| (i as f64 / rate * 1e9) as u64;
    // One sender task per client: a TcpClient takes one request at a time (concurrent sends
    // on one client end in `Disconnected`), as the gateway's pool hands out a client per call.
    let mut senders = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    for c in clients {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u32, Vec<u64>)>();
        senders.push(tx);
        let (c, topic, payload) = (c.clone(), topic.to_string(), payload.clone());
        tasks.spawn(async move {
            let mut lat = Vec::new();
            while let Some((p, idx)) = rx.recv().await {
                sdk_send(&c, &topic, p, messages(&payload, idx.len(), &None)).await;
                let done = start.elapsed().as_nanos() as u64;
                lat.extend(idx.into_iter().map(|i| done.saturating_sub(sched_ns(i))));
            }
            lat
        });
    }
    let mut next = 0u64;
    let mut tick = 1u64;
    while next < n {
        tokio::time::sleep_until(start + TICK * tick as u32).await;
        let end_ns = (TICK * tick as u32).as_nanos() as u64;
        let first = next;
        while next < n && sched_ns(next) < end_ns {
            next += 1;
        }
        tick += 1;
        for p in 0..PARTITIONS as u64 {
            // Record i goes to partition i % 8, as the Kafka producer's round robin.
            let idx: Vec<u64> = (first..next)
                .filter(|i| i % PARTITIONS as u64 == p)
                .collect();
            if !idx.is_empty() {
                senders[p as usize % senders.len()]
                    .send((p as u32, idx))
                    .expect("sender task");
            }
        }
    }
    drop(senders);
    let mut lat = Vec::new();
    while let Some(l) = tasks.join_next().await {
        lat.extend(l.expect("paced task"));
    }
    lat.sort_unstable();
    lat
}

async fn sdk_create_topic(c: &TcpClient, topic: &str) {
    c.create_topic(
        &id(STREAM),
        topic,
        &TopicCreateOptions {
            partitions_count: Some(PARTITIONS as u32),
            ..TopicCreateOptions::default()
        },
    )
    .await
    .expect("create topic");
}

// ---------------------------------------------------------------------------------------------
// The gateway path (librdkafka), shaped as `benches/throughput.rs`.

// ---------------------------------------------------------------------------------------------

/// What Iggy's own `iggy-bench` reached on the same server: records/s produced and
/// consumed, and µs of CPU per record of (iggy-server, iggy-bench) in each.
#[derive(Clone, Copy)]
struct IggyBench {
    produce_rps: f64,
    consume_rps: f64,
    cpu: [[f64; 2]; 2],
}

/// CPU seconds of this process's finished children (`cutime` + `cstime`): `iggy-bench`'s,
/// read around its run.
fn children_cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // cutime and cstime are fields 16 and 17 of the line, 14 and 15 after the name.
    ticks(13)
        .zip(ticks(14))
        .map_or(0.0, |(u, s)| (u + s) / 100.0)
}

/// `iggy-bench` (beside `iggy_bin`, or IGGY_BENCH_BIN) on the server at `addr`: pinned
/// producers then pinned consumers, SDK_CLIENTS of each (a stream of one partition each),
/// SDK_BATCH messages of `size` bytes a batch, about `n` messages in all. None without
/// the tool or when its report cannot be read.
fn iggy_bench(bin: &std::path::Path, iggy: &Proc, size: usize, n: u64) -> Option<IggyBench> {
    let batches = (n / (SDK_CLIENTS * SDK_BATCH) as u64).max(1).to_string();
    let run = |reuse: bool, role: &str, count: &str| -> Option<(f64, [f64; 2])> {
        let (server, client) = (procs::cpu_secs(iggy.pid()), children_cpu_secs());
        let mut cmd = std::process::Command::new(bin);
        if reuse {
            cmd.arg("--reuse-streams");
        }
        let size = size.to_string();
        cmd.args([
            "-m",
            &size,
            "-P",
            &SDK_BATCH.to_string(),
            "-b",
            &batches,
            role,
        ])
        .args([
            count,
            &SDK_CLIENTS.to_string(),
            "tcp",
            "--server-address",
            &iggy.addr,
        ]);
        let out = cmd.output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        // "… Results: Total throughput: 160.96 MB/s, 157174 messages/s, …"
        let rps = text
            .lines()
            .find(|l| l.contains("Results: Total throughput"))?
            .split(", ")
            .find_map(|f| f.strip_suffix(" messages/s")?.trim().parse::<f64>().ok())?;
        let sent = (batches.parse::<u64>().ok()? * (SDK_CLIENTS * SDK_BATCH) as u64) as f64;
        let per = |secs: f64| secs * 1e6 / sent;
        let cpu = [
            per(procs::cpu_secs(iggy.pid()) - server),
            per(children_cpu_secs() - client),
        ];
        Some((rps, cpu))
    };
    let (produce_rps, produce_cpu) = run(false, "pinned-producer", "-p")?;
    let (consume_rps, consume_cpu) = run(true, "pinned-consumer", "-c")?;
    Some(IggyBench {
        produce_rps,
        consume_rps,
        cpu: [produce_cpu, consume_cpu],
    })
}

struct Measured {
    size: usize,
    /// Iggy's own `iggy-bench` on the same server, when it is there.
    iggy_bench: Option<IggyBench>,
    sdk: Row,
    /// SDK produce rate with the gateway's per-message headers, mapping versions 1 and 2.
    sdk_headers: [f64; 2],
    gateway: Row,
    /// The gateway read by plain Fetch requests on SDK_CLIENTS connections (`raw::fetch`).
    raw_consume: (f64, f64),
    /// The gateway written by plain Produce requests, as the SDK writes (`raw::produce`).
    raw_produce: Row,
    /// µs of CPU per record of (iggy-server, gateway, clients): SDK produce, raw Produce,
    /// SDK consume, raw Fetch.
    cpu: [[f64; 3]; 4],
    rate: f64,
    sdk_paced_p99: f64,
    gateway_paced_p99: f64,
    sdk_paced_p50: f64,
    gateway_paced_p50: f64,
}

fn main() {
    let Some(iggy_bin) = env::var_os("IGGY_SERVER_BIN").map(PathBuf::from) else {
        println!("SKIPPED iggy bench: set IGGY_SERVER_BIN");
        return;
    };
    // Set but wrong is a mistake, not an absence (as in tests/support/iggy.rs).
    assert!(
        iggy_bin.is_file(),
        "IGGY_SERVER_BIN={} names no file: set it to an iggy-server binary, or unset it to skip",
        iggy_bin.display()
    );
    let scale = common::env_f64("BENCH_RECORDS").unwrap_or(1.0);
    let rate_secs = common::env_f64("BENCH_RATE_SECS").unwrap_or(4.0);
    let limit = Duration::from_secs_f64(common::env_f64("BENCH_TIMEOUT_SECS").unwrap_or(120.0));
    let hard = limit + Duration::from_secs(30);
    let gateway_bin = common::gateway_bin();
    let bench_bin = env::var_os("IGGY_BENCH_BIN")
        .map(PathBuf::from)
        .or_else(|| Some(iggy_bin.with_file_name("iggy-bench")))
        .filter(|p| p.is_file());
    if bench_bin.is_none() {
        println!(
            "SKIPPED the iggy-bench rows: no iggy-bench beside IGGY_SERVER_BIN (or IGGY_BENCH_BIN)"
        );
    }

    let iggy = procs::iggy(&iggy_bin);
    eprintln!("iggy-server: listening on {}", iggy.addr);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let clients: Vec<Arc<TcpClient>> = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..SDK_CLIENTS {
            v.push(sdk_client(&iggy.addr).await);
        }
        v[0].create_stream(STREAM).await.expect("create stream");
        // A fresh server is slower on its first writes: warm it up before measuring.
        sdk_create_topic(&v[0], "warm-up").await;
        sdk_produce(&v, "warm-up", 100, 200_000, None).await;
        v
    });
    let gateway = procs::gateway(&gateway_bin, Some(&iggy.addr));
    eprintln!("gateway: listening on {}", gateway.addr);

    let mut results = Vec::new();
    for (size, base_n) in SIZES {
        let n = ((base_n * scale) as u64).max(1);
        let topic = format!("bench-{size}");

        // (0) Iggy's own benchmark tool, the direct ceiling.
        let iggy_bench = bench_bin
            .as_deref()
            .and_then(|b| iggy_bench(b, &iggy, size, n));
        if let Some(b) = &iggy_bench {
            eprintln!(
                "iggy-bench {size} B: produce {:.0} rec/s, consume {:.0} rec/s",
                b.produce_rps, b.consume_rps
            );
        }

        // (1) SDK.
        rt.block_on(sdk_create_topic(&clients[0], &topic));
        let cpu = CpuMeter::start(&iggy, &gateway);
        let mut sdk = rt.block_on(async {
            tokio::time::timeout(limit, sdk_produce(&clients, &topic, size, n, None))
                .await
                .expect("sdk produce: timed out")
        });
        eprintln!("sdk {size} B: {n} produced, {:.0} rec/s", sdk.produce_rps);
        let sdk_produce_cpu = cpu.per_record(n);
        // What Iggy's ingestion pays for the headers every gateway message carries.
        let sdk_headers = [1u8, 2].map(|version| {
            let topic = format!("{topic}-v{version}");
            rt.block_on(async {
                sdk_create_topic(&clients[0], &topic).await;
                let headers = Some(gateway_headers(version));
                tokio::time::timeout(limit, sdk_produce(&clients, &topic, size, n, headers))
                    .await
                    .expect("sdk produce with headers: timed out")
                    .produce_rps
            })
        });
        eprintln!("sdk {size} B with mapping v1/v2 headers: {sdk_headers:.0?} rec/s");
        let cpu = CpuMeter::start(&iggy, &gateway);
        (sdk.consume_rps, sdk.consume_mbps) = rt.block_on(async {
            tokio::time::timeout(limit, sdk_consume(&clients, &topic, size, n))
                .await
                .expect("sdk consume: timed out")
        });
        eprintln!("sdk {size} B: consumed, {:.0} rec/s", sdk.consume_rps);
        let sdk_consume_cpu = cpu.per_record(n);

        // (2) Gateway.
        create_topic(&gateway.addr, &topic);
        let (addr, t) = (gateway.addr.clone(), topic.clone());
        let (secs, lat) = bounded("produce", hard, move || {
            produce(&addr, &t, (size, "none"), n, None, limit)
        });
        let acked = lat.len() as u64;
        let mut gw = Row::produced(acked, size, secs, &lat);
        eprintln!(
            "gateway {size} B: {acked}/{n} acked, {:.0} rec/s",
            gw.produce_rps
        );
        let (addr, t) = (gateway.addr.clone(), topic.clone());
        (gw.consume_rps, gw.consume_mbps) = bounded("consume", hard, move || {
            consume(&addr, &t, (size, acked), "read_committed", limit)
        });
        eprintln!("gateway {size} B: consumed, {:.0} rec/s", gw.consume_rps);
        let (addr, t) = (gateway.addr.clone(), topic.clone());
        let cpu = CpuMeter::start(&iggy, &gateway);
        let raw_consume = bounded("raw consume", hard, move || {
            raw::fetch::consume(&addr, &t, PARTITIONS, SDK_CLIENTS, limit)
        });
        let raw_consume_cpu = cpu.per_record(acked);
        eprintln!(
            "gateway {size} B: raw Fetch consumed, {:.0} rec/s",
            raw_consume.0
        );
        let raw_topic = format!("{topic}-raw");
        create_topic(&gateway.addr, &raw_topic);
        let addr = gateway.addr.clone();
        let cpu = CpuMeter::start(&iggy, &gateway);
        let (secs, lat) = bounded("raw produce", hard, move || {
            let shape = (PARTITIONS, SDK_CLIENTS);
            raw::produce::produce(&addr, &raw_topic, shape, (size, n, SDK_BATCH), limit)
        });
        let raw_produce_cpu = cpu.per_record(n);
        let raw_produce = Row::produced(n, size, secs, &lat);
        eprintln!(
            "gateway {size} B: raw Produce, {:.0} rec/s",
            raw_produce.produce_rps
        );

        // (3) Half the peak, both ways, into the same topics: half the lower of the two peaks,
        // so that neither path is asked for more than it carried at full speed.
        let rate = gw.produce_rps.min(sdk.produce_rps) / 2.0;
        let paced_n = (rate * rate_secs) as u64;
        let (addr, t) = (gateway.addr.clone(), topic.clone());
        let (_, gw_lat) = bounded("paced produce", hard, move || {
            produce(&addr, &t, (size, "none"), paced_n, Some(rate), limit)
        });
        let sdk_lat = rt.block_on(async {
            tokio::time::timeout(limit, sdk_paced(&clients, &topic, size, rate, rate_secs))
                .await
                .expect("sdk paced: timed out")
        });
        eprintln!(
            "paced {size} B at {rate:.0} rec/s: p99 gateway {:.2} ms, sdk {:.2} ms",
            pct(&gw_lat, 0.99),
            pct(&sdk_lat, 0.99)
        );
        results.push(Measured {
            size,
            iggy_bench,
            sdk,
            sdk_headers,
            gateway: gw,
            raw_consume,
            raw_produce,
            cpu: [
                sdk_produce_cpu,
                raw_produce_cpu,
                sdk_consume_cpu,
                raw_consume_cpu,
            ],
            rate,
            sdk_paced_p99: pct(&sdk_lat, 0.99),
            gateway_paced_p99: pct(&gw_lat, 0.99),
            sdk_paced_p50: pct(&sdk_lat, 0.50),
            gateway_paced_p50: pct(&gw_lat, 0.50),
        });
    }
    drop(gateway);
    drop(iggy);

    println!("\n{PARTITIONS} partitions; SDK: {SDK_CLIENTS} clients, {SDK_BATCH} messages per send/poll;");
    println!("gateway: librdkafka linger.ms=5, batch.num.messages=10000, acks=all, no compression");
    println!("gw-raw: the gateway read by plain Fetch requests on {SDK_CLIENTS} connections (benches/raw/fetch.rs);");
    println!("         and written by plain Produce requests of {SDK_BATCH} records on {SDK_CLIENTS} connections (benches/raw/produce.rs)");
    print!("path       size   records | produce rec/s     MB/s   p50 ms   p99 ms |");
    println!(" consume rec/s     MB/s");
    for r in &results {
        for (name, row) in [("sdk", &r.sdk), ("gateway", &r.gateway)] {
            print!(
                "{name:<8} {:>5}B {:>9} | {:>13.0} {:>8.1}",
                r.size, row.records, row.produce_rps, row.produce_mbps
            );
            print!(" {:>8.1} {:>8.1} |", row.p50_ms, row.p99_ms);
            println!(" {:>13.0} {:>8.1}", row.consume_rps, row.consume_mbps);
        }
        let p = &r.raw_produce;
        let (rps, mbps) = r.raw_consume;
        print!(
            "gw-raw   {:>5}B {:>9} | {:>13.0} {:>8.1}",
            r.size, p.records, p.produce_rps, p.produce_mbps
        );
        println!(
            " {:>8.1} {:>8.1} | {rps:>13.0} {mbps:>8.1}",
            p.p50_ms, p.p99_ms
        );
    }
    println!(
        "\n(full-speed latency: SDK and gw-raw = one call of {SDK_BATCH}; gateway = send() to ack)"
    );
    println!("\nat half the peak produce rate (lower of the two) ({rate_secs} s each; from scheduled time to ack):");
    println!(
        " size   rate rec/s | sdk p50/p99 ms  | gateway p50/p99 ms | p99 overhead (target < 2 ms)"
    );
    for r in &results {
        println!(
            "{:>5}B {:>10.0} | {:>6.2} {:>7.2} | {:>8.2} {:>8.2} | {:>+7.2} ms",
            r.size,
            r.rate,
            r.sdk_paced_p50,
            r.sdk_paced_p99,
            r.gateway_paced_p50,
            r.gateway_paced_p99,
            r.gateway_paced_p99 - r.sdk_paced_p99
        );
    }
    println!("\nsdk produce with the gateway's per-message headers (Iggy's own cost of them)");
    for r in &results {
        let [v1, v2] = r.sdk_headers;
        println!(
            "{:>5}B  none {:>10.0}  mapping v1 {v1:>10.0} ({:.2}x)  v2 {v2:>10.0} ({:.2}x) rec/s",
            r.size,
            r.sdk.produce_rps,
            v1 / r.sdk.produce_rps,
            v2 / r.sdk.produce_rps
        );
    }
    println!("\nCPU per record, µs (iggy-server + gateway + clients = total): what the two");
    println!("paths cost whatever else the machine runs; on shared cores the ratio of the totals");
    println!("bounds the throughput ratio");
    for r in &results {
        let names = [
            "sdk produce",
            "gw-raw produce",
            "sdk consume",
            "gw-raw consume",
        ];
        for (name, [server, gw, client]) in names.iter().zip(r.cpu) {
            println!(
                "{:>5}B  {name:<15} {server:>6.2} + {gw:>6.2} + {client:>6.2} = {:>6.2}",
                r.size,
                server + gw + client
            );
        }
        let total = |i: usize| r.cpu[i].iter().sum::<f64>();
        println!(
            "{:>5}B  sdk / gateway CPU per record: produce {:.2}x  consume {:.2}x",
            r.size,
            total(0) / total(1),
            total(2) / total(3)
        );
    }
    println!("\nagainst iggy-bench (pinned producers / consumers, {SDK_CLIENTS} each, {SDK_BATCH} a batch), the same server:");
    println!("CPU per record, µs (iggy-server + iggy-bench = total), and gateway / iggy-bench throughput (target >= 0.8 at 1 KiB)");
    for r in &results {
        let Some(b) = r.iggy_bench else { continue };
        for (name, [server, client]) in ["produce", "consume"].iter().zip(b.cpu) {
            println!(
                "{:>5}B  iggy-bench {name:<8} {server:>6.2} + {client:>6.2} = {:>6.2}",
                r.size,
                server + client
            );
        }
        println!(
            "{:>5}B  iggy-bench produce {:>10.0} consume {:>10.0} rec/s;  gateway produce {:.2}x (librdkafka) {:.2}x (raw Produce)  consume {:.2}x (librdkafka) {:.2}x (raw Fetch)",
            r.size,
            b.produce_rps,
            b.consume_rps,
            r.gateway.produce_rps / b.produce_rps,
            r.raw_produce.produce_rps / b.produce_rps,
            r.gateway.consume_rps / b.consume_rps,
            r.raw_consume.0 / b.consume_rps
        );
    }
    println!("\ngateway / sdk throughput (target >= 0.7)");
    for r in &results {
        println!(
            "{:>5}B  produce {:.2}x (librdkafka)  {:.2}x (raw Produce; {:.2}x of sdk with v2 headers)  consume {:.2}x (librdkafka)  {:.2}x (raw Fetch)",
            r.size,
            r.gateway.produce_rps / r.sdk.produce_rps,
            r.raw_produce.produce_rps / r.sdk.produce_rps,
            r.raw_produce.produce_rps / r.sdk_headers[1],
            r.gateway.consume_rps / r.sdk.consume_rps,
            r.raw_consume.0 / r.sdk.consume_rps
        );
    }
}
