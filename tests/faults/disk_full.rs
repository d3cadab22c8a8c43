//! The embedded store's disk full (its data directory on a size-limited tmpfs, filled
//! by a file to below the store's reserve, `embedded_min_free_bytes`): Produce answers
//! KAFKA_STORAGE_ERROR (56) with a log line that says why, reads go on, nothing
//! acknowledged is lost, and writing resumes once the file is gone, without a restart.
//! The gateway runs as a process, for its log.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::workload::{Workload, PARTITIONS};
use crate::support::kafka::create_topic;
use crate::support::{batch, call, record, topic_name, Gateway, RawClient};

const TOPIC: &str = "faults-disk-full";
/// A topic of large records, written until the disk is full.
const PROBE: &str = "faults-disk-probe";
const KAFKA_STORAGE_ERROR: i16 = 56;
/// The store's reserve: the filler leaves half of it free.
const RESERVE: u64 = 8 << 20;

#[test]
fn a_full_disk_refuses_produce_with_a_storage_error_until_space_returns() {
    let disk = Tmpfs::mount("64m");
    let logs = tempfile::tempdir().expect("temp dir");
    let log = logs.path().join("gateway.log");
    let data = disk.path().join("data");
    let gw = Gateway::process_logging_into(
        &log,
        "warn",
        &[
            ("data_dir", data.to_str().expect("a UTF-8 path")),
            ("embedded_min_free_bytes", &RESERVE.to_string()),
        ],
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(create_topic(&gw.bootstrap(), TOPIC, PARTITIONS, &[]));
    runtime.block_on(create_topic(&gw.bootstrap(), PROBE, 1, &[]));
    let workload = Workload::start(&gw.bootstrap(), TOPIC, logs.path());
    workload.wait_for_acks(1_000, Duration::from_secs(60));

    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        produce(&mut c, b"before").0,
        0,
        "Produce before the disk filled"
    );
    let filler = disk.fill(RESERVE / 2);
    let full = Instant::now();
    let refused = loop {
        let (code, message) = produce(&mut c, &vec![b'x'; 256 << 10]);
        match code {
            0 => assert!(
                full.elapsed() < Duration::from_secs(30),
                "still writing 30 s after the disk filled"
            ),
            KAFKA_STORAGE_ERROR => break message,
            other => panic!("Produce on a full disk answered {other}: {message:?}"),
        }
    };
    println!("Produce on the full disk: {refused:?}");
    // Full for a while, under the workload's producers; reads go on all along.
    let acked = workload.acked();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        fetch_values(&mut c)[0],
        b"before",
        "read while the disk is full"
    );
    println!(
        "{} records acknowledged in 3 s of full disk",
        workload.acked() - acked
    );

    std::fs::remove_file(&filler).expect("remove the filler");
    let space = Instant::now();
    let (code, message) = produce(&mut c, b"after");
    let first = space.elapsed();
    assert_eq!(code, 0, "Produce once space returned: {message:?}");
    // Nothing torn by the writes that failed: the records before, any acknowledged,
    // and the one after, in order.
    let values = fetch_values(&mut c);
    assert_eq!(values.first().map(Vec::as_slice), Some(&b"before"[..]));
    assert_eq!(values.last().map(Vec::as_slice), Some(&b"after"[..]));
    let resumed = workload.wait_for_acks(500, Duration::from_secs(60));
    println!(
        "space returned: a Produce written after {first:?}, 500 more acknowledged by {resumed:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    workload.finish().assert_valid();

    let logged = std::fs::read_to_string(&log).expect("gateway log");
    assert!(
        logged
            .lines()
            .any(|l| l.contains("append failed") && l.contains("disk full")),
        "no log line says the disk is full: {logged}"
    );
}

/// Produce v9 of one record of `value` to the probe topic: its error code and message.
fn produce(c: &mut RawClient, value: &[u8]) -> (i16, Option<String>) {
    let records = batch(&[record(None, value, 1)], Compression::None);
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(records));
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(PROBE))
            .with_partition_data(vec![partition])]);
    let answer = call!(c, Produce, 9, request);
    let p = &answer.responses[0].partition_responses[0];
    (
        p.error_code,
        p.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// The values of the probe topic from its start, as a Fetch returns them.
fn fetch_values(c: &mut RawClient) -> Vec<Vec<u8>> {
    let partition = FetchPartition::default()
        .with_fetch_offset(0)
        .with_partition_max_bytes(64 << 20);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(64 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(PROBE))
            .with_partitions(vec![partition])]);
    let answer = call!(c, Fetch, 12, request);
    let p = &answer.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "Fetch: {p:?}");
    let mut records = p.records.clone().unwrap_or_default();
    let batches = RecordBatchDecoder::decode_all(&mut records).expect("whole batches");
    batches
        .into_iter()
        .flat_map(|b| b.records)
        .map(|r| r.value.unwrap_or_default().to_vec())
        .collect()
}

/// A tmpfs of a given size mounted on a temporary directory; unmounted when dropped,
/// also when the test fails.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("temp dir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(mounted.success(), "mount a tmpfs (the tests run as root)");
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until no more than `leave` bytes are free; its path.
    fn fill(&self, leave: u64) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).expect("filler");
        let chunk = vec![0u8; 64 << 10];
        while self.free() > leave + chunk.len() as u64 {
            file.write_all(&chunk).expect("write the filler");
        }
        file.sync_all().expect("sync the filler");
        path
    }

    fn free(&self) -> u64 {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(self.path())
            .output()
            .expect("run df");
        let text = String::from_utf8_lossy(&out.stdout);
        let free = text.lines().nth(1).map(str::trim);
        free.and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("df answered {text:?}"))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a gateway still holding files open does not keep it mounted.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
