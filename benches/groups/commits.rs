//! Part 1: OffsetCommit and OffsetFetch latency under many committing consumers.

use super::*;

/// What one committing consumer measured.
#[derive(Default)]
pub(crate) struct ConsumerResult {
    pub(crate) commits: Vec<Duration>,
    pub(crate) fetches: Vec<Duration>,
    pub(crate) errors: usize,
    pub(crate) first_error: Option<String>,
}

impl ConsumerResult {
    pub(crate) fn error(&mut self, e: String) {
        self.errors += 1;
        self.first_error.get_or_insert(e);
    }
}

pub(crate) struct OffsetsRun {
    pub(crate) label: String,
    pub(crate) commit: Vec<Duration>,
    pub(crate) commit_secs: f64,
    pub(crate) fetch: Vec<Duration>,
    pub(crate) fetch_secs: f64,
    pub(crate) errors: usize,
    pub(crate) first_error: Option<String>,
}

pub(crate) fn commit_request(group: &str, partition: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::default())
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s(OFFSETS_TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(s("bench")))])])
}

pub(crate) fn fetch_request(group: &str, partition: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(s(OFFSETS_TOPIC)))
            .with_partition_indexes(vec![partition])]))
}

/// One commit: its latency, or why it failed.
pub(crate) async fn commit_once(
    conn: &mut Conn,
    group: &str,
    partition: i32,
    offset: i64,
) -> Result<Duration, String> {
    let start = Instant::now();
    let resp = call!(
        conn,
        OffsetCommit,
        COMMIT_V,
        commit_request(group, partition, offset)
    );
    let took = start.elapsed();
    let code = resp
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .map(|p| p.error_code);
    match code {
        Some(0) => Ok(took),
        other => Err(format!("OffsetCommit {group}/{partition}: error {other:?}")),
    }
}

/// One fetch: its latency, or why it failed (an error or not the offset last committed).
pub(crate) async fn fetch_once(
    conn: &mut Conn,
    group: &str,
    partition: i32,
    expected: i64,
) -> Result<Duration, String> {
    let start = Instant::now();
    let resp = call!(conn, OffsetFetch, FETCH_V, fetch_request(group, partition));
    let took = start.elapsed();
    let p = resp.topics.first().and_then(|t| t.partitions.first());
    match p {
        Some(p) if resp.error_code == 0 && p.error_code == 0 && p.committed_offset == expected => {
            Ok(took)
        }
        Some(p) => Err(format!(
            "OffsetFetch {group}/{partition}: error {}/{}, offset {} (committed {expected})",
            resp.error_code, p.error_code, p.committed_offset
        )),
        None => Err(format!(
            "OffsetFetch {group}/{partition}: error {}, no partition",
            resp.error_code
        )),
    }
}

/// A committing consumer. Always reaches the three barriers, failed or not, so the run
/// cannot deadlock; a connection whose request failed is dropped (it may be out of step).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn committing_consumer(
    addr: String,
    index: usize,
    group: String,
    partition: i32,
    rounds: usize,
    barrier: Arc<Barrier>,
    deadline: Instant,
) -> ConsumerResult {
    let mut out = ConsumerResult::default();
    let mut conn = match Conn::connect(&addr, &format!("bench-consumer-{index}")).await {
        Ok(c) => Some(c),
        Err(e) => {
            out.error(e);
            None
        }
    };
    // Unmeasured warm-up: the group's first commit and read (which may create state).
    let base = index as i64 * 1_000_000;
    if let Some(c) = conn.as_mut() {
        let warm = async {
            commit_once(c, &group, partition, base).await?;
            fetch_once(c, &group, partition, base).await
        };
        if let Err(e) = warm.await {
            out.error(format!("warm-up: {e}"));
            conn = None;
        }
    }
    barrier.wait().await;
    let mut last = base;
    for round in 1..=rounds {
        let Some(c) = conn.as_mut() else { break };
        if Instant::now() > deadline {
            out.error("commit phase over its time bound".into());
            break;
        }
        match commit_once(c, &group, partition, base + round as i64).await {
            Ok(t) => {
                out.commits.push(t);
                last = base + round as i64;
            }
            Err(e) => {
                out.error(e);
                conn = None;
            }
        }
    }
    barrier.wait().await;
    for _ in 0..rounds {
        let Some(c) = conn.as_mut() else { break };
        if Instant::now() > deadline {
            out.error("fetch phase over its time bound".into());
            break;
        }
        match fetch_once(c, &group, partition, last).await {
            Ok(t) => out.fetches.push(t),
            Err(e) => {
                out.error(e);
                conn = None;
            }
        }
    }
    barrier.wait().await;
    out
}

/// `consumers` consumers over `groups` groups: consumer i is in group i % groups; the k-th
/// consumer of group g commits partition (g + k) % 32, so no two consumers of a group share a
/// partition and the partitions (hence the offset slots) are spread.
pub(crate) async fn offsets_run(
    addr: &str,
    consumers: usize,
    groups: usize,
    rounds: usize,
) -> OffsetsRun {
    let barrier = Arc::new(Barrier::new(consumers + 1));
    let deadline = Instant::now() + 2 * PHASE_TIMEOUT;
    let tasks: Vec<_> = (0..consumers)
        .map(|i| {
            let (g, k) = (i % groups, i / groups);
            let partition = ((g + k) % OFFSETS_PARTITIONS as usize) as i32;
            let group = format!("bench-offsets-{groups}g-{g}");
            tokio::spawn(committing_consumer(
                addr.to_string(),
                i,
                group,
                partition,
                rounds,
                barrier.clone(),
                deadline,
            ))
        })
        .collect();
    barrier.wait().await;
    let t0 = Instant::now();
    barrier.wait().await;
    let t1 = Instant::now();
    barrier.wait().await;
    let t2 = Instant::now();
    let mut run = OffsetsRun {
        label: if groups == consumers {
            format!("{consumers} groups, 1 consumer each")
        } else {
            format!("{groups} groups, {} consumers each", consumers / groups)
        },
        commit: Vec::new(),
        commit_secs: (t1 - t0).as_secs_f64(),
        fetch: Vec::new(),
        fetch_secs: (t2 - t1).as_secs_f64(),
        errors: 0,
        first_error: None,
    };
    for t in tasks {
        let r = t.await.expect("consumer task panicked");
        run.commit.extend(r.commits);
        run.fetch.extend(r.fetches);
        run.errors += r.errors;
        if run.first_error.is_none() {
            run.first_error = r.first_error;
        }
    }
    run.commit.sort_unstable();
    run.fetch.sort_unstable();
    run
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The p-quantile of sorted samples, in ms (nearest rank).
pub(crate) fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    ms(sorted[rank - 1])
}
