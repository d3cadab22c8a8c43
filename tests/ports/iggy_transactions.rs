//! What only the Iggy engine has to show of transactions at the log port, where it
//! keeps one message a record and makes batches again on read: a transactional batch
//! is served whole however small the reads, from inside it too, with read-ahead on or
//! off and after a restart; and a native Iggy reader can tell a marker from a record.
//! Each test starts its own server and prints the SKIPPED line without one.

use std::sync::Arc;

use iggy::prelude::{Consumer, Identifier, IggyMessage, MessageClient, PollingStrategy};
use iggy_kafka_actors::protocol::markers::Marker;
use iggy_kafka_actors::protocol::records::{self, BatchHeader};
use iggy_kafka_actors::store::{Logs, ReadBatches, TopicLimits, TopicPartition};

use super::transactions::{marker, shape, transactional, Shape, T};
use super::{batch, iggy_backend, records_read, tp};
use crate::support::iggy::IggyServer;

async fn engine(server: &IggyServer, read_ahead_bytes: usize) -> Logs {
    let tune = |s: &mut iggy_kafka_gateway::Settings| s.iggy_read_ahead_bytes = read_ahead_bytes;
    Logs::new(Arc::new(iggy_backend(server, tune).await))
}

/// The transactional batches and markers of a read.
fn transactions(read: &ReadBatches) -> Vec<Shape> {
    (read.batches.iter())
        .filter(|b| BatchHeader::parse(b).transactional)
        .map(|b| shape(records::base_offset(b), b))
        .collect()
}

/// Reads the partition from 0 to its end `max_bytes` at a time, each read from where
/// the last one's batches end (so consecutive reads are the ones read-ahead starts):
/// every record comes once, and the transactions as in one big read.
async fn read_in_steps(logs: &Logs, t: &TopicPartition, max_bytes: usize, expected: &[Shape]) {
    let (mut at, mut offsets, mut seen) = (0, Vec::new(), Vec::new());
    while at < 30 {
        let read = logs.read(t.clone(), at, max_bytes).await.unwrap();
        let last = read
            .batches
            .last()
            .expect("a read before the end serves a batch");
        at = records::base_offset(last) + BatchHeader::parse(last).record_count as i64;
        offsets.extend(records_read(&read).iter().map(|r| r.offset));
        seen.extend(transactions(&read));
    }
    assert_eq!(
        offsets,
        (0..30).collect::<Vec<_>>(),
        "max_bytes {max_bytes}"
    );
    assert_eq!(seen, expected, "max_bytes {max_bytes}");
}

/// A header's raw bytes, as a native reader gets them from the SDK's map.
fn header(m: &IggyMessage, name: &str) -> Option<Vec<u8>> {
    let map = m.user_headers_map().expect("headers")?;
    (map.iter())
        .find(|(k, _)| k.as_bytes() == name.as_bytes())
        .map(|(_, v)| v.as_bytes().to_vec())
}

#[tokio::test(flavor = "multi_thread")]
async fn transactions_are_served_whole_by_reads_of_any_size_and_read_natively() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let on = engine(&server, 64 << 20).await;
    on.create("txn".into(), 1, TopicLimits::default())
        .await
        .unwrap();
    let t = tp("txn", 0);
    // Loose 0..2, a transaction of 20 at 3..22 (more than one small read polls), its
    // commit at 23, loose 24..25, another producer's transaction at 26..28, its abort.
    let appends = [
        batch(0, 3, |_| T),
        transactional(5, 1, 0, 20),
        marker(Marker::Commit, 5, 1),
        batch(3, 2, |_| T),
        transactional(7, 0, 0, 3),
        marker(Marker::Abort, 7, 0),
    ];
    for b in appends {
        on.append(t.clone(), b).await.unwrap();
    }
    let expected = transactions(&on.read(t.clone(), 0, 1 << 20).await.unwrap());
    let bases: Vec<i64> = expected.iter().map(|s| s.0).collect();
    assert_eq!(bases, [3, 23, 26, 29]);
    assert_eq!(
        expected[0].4, 20,
        "the transaction's 20 records in one batch"
    );

    // Read-ahead on, off, and on an engine opened again (as after a restart).
    let off = engine(&server, 0).await;
    let again = engine(&server, 64 << 20).await;
    for logs in [&on, &off, &again] {
        // A record's worth (each read serves its first batch whole), a few records'
        // (a transaction that does not fit after loose records waits for the next
        // read), everything.
        for max_bytes in [1, 300, 1 << 20] {
            read_in_steps(logs, &t, max_bytes, &expected).await;
        }
        // From inside the transaction: the read starts at its first record.
        for max_bytes in [1, 1 << 20] {
            let inside = logs.read(t.clone(), 10, max_bytes).await.unwrap();
            assert_eq!(transactions(&inside)[0], expected[0]);
            assert_eq!(records::base_offset(&inside.batches[0]), 3);
        }
    }

    // Natively: the data records are values, the markers messages of their own.
    let sdk = server.sdk().await;
    let polled = sdk
        .poll_messages(
            &Identifier::named("kafka").unwrap(),
            &Identifier::named("txn").unwrap(),
            Some(0),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    let messages = polled.messages;
    assert_eq!(messages.len(), 30);
    for m in &messages {
        let offset = m.header.offset;
        // Version 3 on a transaction's messages only; the loose records stay 2.
        let version = if matches!(offset, 3..=23 | 26..=29) {
            3
        } else {
            2
        };
        assert_eq!(
            header(m, "kafka.mapping"),
            Some(vec![version]),
            "at {offset}"
        );
        let control = header(m, "kafka.control");
        let producer = header(m, "kafka.producer");
        match offset {
            23 | 29 => {
                let kind = if offset == 23 { 1 } else { 0 };
                assert_eq!(control, Some(vec![0, kind, 0, 0, 0, 0]), "at {offset}");
                assert!(m.payload.is_empty());
                let stamp = producer.expect("a marker's producer");
                assert_eq!(stamp[10..14], (-1i32).to_be_bytes(), "no sequence");
            }
            3 | 26 => {
                assert_eq!(control, None);
                assert_eq!(producer.expect("a transaction's stamp")[18], 1);
                assert_eq!(m.payload.as_ref(), b"value-0");
            }
            4..=22 => {
                let n = (offset - 3) as u32;
                assert_eq!(header(m, "kafka.txn"), Some(n.to_le_bytes().to_vec()));
                assert_eq!(m.payload, format!("value-{n}").into_bytes());
                assert_eq!((control, producer), (None, None));
            }
            _ => assert_eq!((control, producer), (None, None), "at {offset}"),
        }
    }
}
