//! The requests whose cost grows with the partition count, sent raw (`raw::call`) so the
//! client's own work stays out of the figure: a full Metadata (every topic) and a Fetch of
//! every partition. `cost` repeats one of them and charges it to the broker's CPU.
//! Also the record each partition holds for the Fetch, and what Metadata says of brokers
//! and leaders.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::produce_request::PartitionProduceData;
use kafka_protocol::messages::{
    ApiKey, FetchResponse, MetadataResponse, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::procs::System;
use crate::raw::{self, call};

/// Both by topic name (v13 of each names topics by id).
const METADATA_VERSION: i16 = 12;
const FETCH_VERSION: i16 = 12;
const PRODUCE_VERSION: i16 = 12;

/// A request's cost: wall time and CPU of the broker's processes, per request.
#[derive(Clone)]
pub struct Cost {
    pub ms: f64,
    pub cpu_ms: f64,
    /// Each process's share of `cpu_ms`, with the ms of CPU it spends per request's
    /// time when no request runs (a server's own timers): what the request costs it is
    /// the difference.
    pub procs: Vec<ProcCost>,
}

#[derive(Clone)]
pub struct ProcCost {
    pub name: &'static str,
    pub cpu_ms: f64,
    pub idle_cpu_ms: f64,
}

impl Cost {
    /// `gateway 1.2 + iggy-server 3.4 (idle 0.5)`: where a system of several processes
    /// spends it, empty for one process.
    pub fn split(&self) -> String {
        if self.procs.len() < 2 {
            return String::new();
        }
        let parts: Vec<String> = (self.procs.iter())
            .map(|p| format!("{} {:.2} (idle {:.2})", p.name, p.cpu_ms, p.idle_cpu_ms))
            .collect();
        parts.join(" + ")
    }
}

/// One of the two requests, over `topics` (name, partitions).
#[derive(Clone, Copy)]
pub enum Request<'a> {
    /// Metadata of every topic (topics: null), as an admin client or a consumer with a
    /// regex subscription asks.
    Metadata,
    /// Fetch of every partition of `topics` from offset 0, sessionless, as a consumer's
    /// first full fetch.
    Fetch(&'a [(String, i32)]),
}

impl Request<'_> {
    fn send(&self, conn: &mut TcpStream, correlation: i32) -> bytes::Bytes {
        match self {
            Request::Metadata => call(
                conn,
                ApiKey::Metadata,
                METADATA_VERSION,
                correlation,
                &MetadataRequest::default().with_topics(None),
            ),
            Request::Fetch(topics) => call(
                conn,
                ApiKey::Fetch,
                FETCH_VERSION,
                correlation,
                &fetch_every_partition(topics),
            ),
        }
    }

    /// Sends the request once and checks the answer covers every partition of `topics`
    /// (Metadata: at least those; Fetch: each with no error and its records).
    fn check(&self, conn: &mut TcpStream, topics: &[(String, i32)]) -> Result<(), String> {
        let want: i32 = topics.iter().map(|t| t.1).sum();
        let mut body = self.send(conn, 0);
        let got = match self {
            Request::Metadata => {
                let answer = MetadataResponse::decode(&mut body, METADATA_VERSION)
                    .map_err(|e| e.to_string())?;
                let ours = answer.topics.iter().filter(|t| {
                    t.name
                        .as_ref()
                        .is_some_and(|n| topics.iter().any(|(m, _)| n.as_str() == m))
                });
                ours.flat_map(|t| &t.partitions)
                    .filter(|p| p.error_code == 0 && p.leader_id.0 >= 0)
                    .count()
            }
            Request::Fetch(_) => {
                let answer =
                    FetchResponse::decode(&mut body, FETCH_VERSION).map_err(|e| e.to_string())?;
                answer
                    .responses
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .filter(|p| {
                        p.error_code == 0 && p.records.as_ref().is_some_and(|r| !r.is_empty())
                    })
                    .count()
            }
        };
        if got == want as usize {
            Ok(())
        } else {
            Err(format!("{got} of {want} partitions answered whole"))
        }
    }
}

/// Every partition of `topics` from offset 0, up to librdkafka's default 1 MiB each and
/// Kafka's default `fetch.max.bytes` in all.
fn fetch_every_partition(topics: &[(String, i32)]) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_topics(
            topics
                .iter()
                .map(|(name, partitions)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(name.clone())))
                        .with_partitions(
                            (0..*partitions)
                                .map(|p| {
                                    FetchPartition::default()
                                        .with_partition(p)
                                        .with_partition_max_bytes(1 << 20)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

/// Sends `request` about `topics` to `sys` back to back on one connection: once checked,
/// for one second unmeasured (Kafka's JIT), then for `secs` measured. CPU comes in 10 ms
/// ticks, so `secs` should be seconds. Before that, each process's CPU over `secs / 2`
/// with no request running.
pub fn cost(
    sys: &System,
    request: Request,
    topics: &[(String, i32)],
    secs: f64,
) -> Result<Cost, String> {
    let mut conn = TcpStream::connect(&sys.addr).map_err(|e| e.to_string())?;
    conn.set_nodelay(true).unwrap();
    request.check(&mut conn, topics)?;
    let mut correlation = 1;
    let mut repeat = |for_secs: f64| {
        let (start, mut n) = (Instant::now(), 0u32);
        while start.elapsed() < Duration::from_secs_f64(for_secs) || n < 3 {
            correlation += 1;
            request.send(&mut conn, correlation);
            n += 1;
        }
        n
    };
    repeat(1.0);
    let each = || sys.procs.iter().map(|p| p.cpu_secs()).collect::<Vec<_>>();
    let (idle_before, idle_start) = (each(), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(secs / 2.0));
    let idle_rate: Vec<f64> = (each().iter().zip(&idle_before))
        .map(|(after, before)| (after - before) / idle_start.elapsed().as_secs_f64())
        .collect();
    let (cpu, start) = (each(), Instant::now());
    let n = repeat(secs) as f64;
    let wall = start.elapsed().as_secs_f64();
    let procs: Vec<ProcCost> = (sys.procs.iter().zip(each().iter().zip(&cpu)))
        .zip(&idle_rate)
        .map(|((p, (after, before)), rate)| ProcCost {
            name: p.name,
            cpu_ms: (after - before) * 1e3 / n,
            idle_cpu_ms: rate * wall * 1e3 / n,
        })
        .collect();
    Ok(Cost {
        ms: wall * 1e3 / n,
        cpu_ms: procs.iter().map(|p| p.cpu_ms).sum(),
        procs,
    })
}

/// Brokers listed by `addr`'s Metadata (asked about no topic).
pub fn brokers(addr: &str) -> Result<usize, String> {
    let mut conn = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    let mut body = call(&mut conn, ApiKey::Metadata, METADATA_VERSION, 1, &request);
    let answer =
        MetadataResponse::decode(&mut body, METADATA_VERSION).map_err(|e| e.to_string())?;
    Ok(answer.brokers.len())
}

/// Partitions of `topic` led by each broker `addr` lists, by node id.
pub fn leaders(addr: &str, topic: &str) -> Result<Vec<(i32, usize)>, String> {
    let mut conn = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let name = TopicName(StrBytes::from_string(topic.to_string()));
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(name)),
    ]));
    let mut body = call(&mut conn, ApiKey::Metadata, METADATA_VERSION, 1, &request);
    let answer =
        MetadataResponse::decode(&mut body, METADATA_VERSION).map_err(|e| e.to_string())?;
    let mut led: Vec<(i32, usize)> = answer.brokers.iter().map(|b| (b.node_id.0, 0)).collect();
    for p in answer.topics.iter().flat_map(|t| &t.partitions) {
        if let Some(e) = led.iter_mut().find(|(id, _)| *id == p.leader_id.0) {
            e.1 += 1;
        }
    }
    led.sort_unstable();
    Ok(led)
}

/// Writes one 100 B record into every partition of `topic` with Produce requests of all
/// partitions at once, again for those answering an error (Kafka: NOT_LEADER for a moment
/// after CreateTopics, while metadata already lists the partitions), for up to `limit`.
pub fn one_record_each(
    addr: &str,
    (topic, partitions): (&str, i32),
    limit: Duration,
) -> Result<(), String> {
    let mut conn = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let value = bytes::Bytes::from(crate::common::payload(100));
    let mut pending: Vec<i32> = (0..partitions).collect();
    let deadline = Instant::now() + limit;
    for correlation in 1.. {
        let mut request = raw::produce::request(topic, 0, &value, 1);
        let batch = request.topic_data[0].partition_data[0].records.clone();
        request.topic_data[0].partition_data = pending
            .iter()
            .map(|&p| {
                PartitionProduceData::default()
                    .with_index(p)
                    .with_records(batch.clone())
            })
            .collect();
        let mut body = call(
            &mut conn,
            ApiKey::Produce,
            PRODUCE_VERSION,
            correlation,
            &request,
        );
        let answer =
            ProduceResponse::decode(&mut body, PRODUCE_VERSION).map_err(|e| e.to_string())?;
        pending = answer
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .filter(|p| p.error_code != 0)
            .map(|p| p.index)
            .collect();
        if pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{topic}: {} partitions still refuse a record",
                pending.len()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}
