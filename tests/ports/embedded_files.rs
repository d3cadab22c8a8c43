//! What only the embedded store has to show about its partition files: a start after
//! a crash drops index entries whose batches the file lacks and cuts an unindexed
//! tail, DeleteRecords gives the space below the log start back, and a deleted topic's
//! files go.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iggy_kafka_actors::store::{Logs, ReadBatches, TopicLimits, Watermarks};
use iggy_kafka_gateway::{EmbeddedStore, SyncPolicy};
use kafka_protocol::records::Compression;

use super::{batch, batch_of, records_read, tp};

const T: i64 = 1_700_000_000_000;

/// The embedded store on `dir` with no checkpoint but at shutdown (`durability=off`),
/// so a drop is a crash: nothing is recorded as synced.
fn open(dir: &Path) -> Logs {
    Logs::new(Arc::new(
        EmbeddedStore::open(dir, SyncPolicy::Never).expect("store opens"),
    ))
}

/// The store opened on `dir` with a topic `name` of one partition made.
async fn with_topic(dir: &Path, name: &str) -> Logs {
    let logs = open(dir);
    logs.create(name.into(), 1, TopicLimits::default())
        .await
        .unwrap();
    logs
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// The file of partition 0 of the only topic in `dir`.
fn partition_file(dir: &Path) -> PathBuf {
    let mut topics: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .expect("a logs directory")
        .map(|d| d.unwrap().path())
        .collect();
    assert_eq!(topics.len(), 1, "one topic's directory: {topics:?}");
    topics.pop().unwrap().join("0")
}

fn offsets(read: &ReadBatches) -> Vec<i64> {
    records_read(read).iter().map(|r| r.offset).collect()
}

#[test]
fn a_start_drops_entries_whose_batches_the_file_lacks_and_cuts_an_unindexed_tail() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let logs = with_topic(dir.path(), "crashed").await;
        let mut ends = Vec::new();
        for first in [0, 3, 6] {
            logs.append(tp("crashed", 0), batch(first, 3, |n| T + n as i64))
                .await
                .unwrap();
            ends.push(std::fs::metadata(partition_file(dir.path())).unwrap().len());
        }
        drop(logs);
        // A machine crash that wrote the index back but not the second batch's bytes.
        let file = partition_file(dir.path());
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[ends[0] as usize + 40] ^= 0xff;
        bytes.extend_from_slice(b"a torn write no entry names");
        std::fs::write(&file, &bytes).unwrap();

        let logs = open(dir.path());
        let read = logs.read(tp("crashed", 0), 0, 1 << 20).await.unwrap();
        assert_eq!(offsets(&read), vec![0, 1, 2], "up to the damaged batch");
        assert_eq!(
            read.watermarks,
            Watermarks {
                log_start: 0,
                high: 3
            }
        );
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            ends[0],
            "cut after the last batch kept"
        );
        let next = logs
            .append(tp("crashed", 0), batch(3, 2, |_| T))
            .await
            .unwrap();
        assert_eq!(next.base_offset, 3);
        drop(logs);
        let logs = open(dir.path());
        let read = logs.read(tp("crashed", 0), 0, 1 << 20).await.unwrap();
        assert_eq!(
            offsets(&read),
            vec![0, 1, 2, 3, 4],
            "the dropped entries stay dropped"
        );
    });
}

#[test]
fn delete_records_gives_the_space_below_the_start_back_and_deleted_topics_lose_their_files() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let logs = with_topic(dir.path(), "trimmed").await;
        // 100 KiB batches, so each spans many file-system blocks.
        for _ in 0..4 {
            let records = (0..100)
                .map(|_| crate::support::record(None, &[b'x'; 1024], T))
                .collect();
            logs.append(tp("trimmed", 0), batch_of(records, Compression::None))
                .await
                .unwrap();
        }
        let file = partition_file(dir.path());
        let before = std::fs::metadata(&file).unwrap();
        logs.delete_records(tp("trimmed", 0), 300).await.unwrap();
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(after.len(), before.len(), "positions stay");
        assert!(
            after.blocks() < before.blocks() / 2,
            "three of four batches' blocks freed: {} then {}",
            before.blocks(),
            after.blocks()
        );
        let read = logs.read(tp("trimmed", 0), 300, 1 << 20).await.unwrap();
        assert_eq!(offsets(&read), (300..400).collect::<Vec<_>>());

        logs.delete("trimmed".into()).await.unwrap();
        assert!(!file.exists(), "the topic's file is gone");
        assert_eq!(
            std::fs::read_dir(dir.path().join("logs")).unwrap().count(),
            0
        );
    });
}
