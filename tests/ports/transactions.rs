//! Transactional batches and markers on both engines: a read gives back each one as a
//! batch of its own with the header it was appended with (producer id and epoch, base
//! sequence, record count, the transactional and control flags), and a marker its
//! commit or abort, before and after a restart, so read-committed Fetch can tell whose
//! records a transaction holds and where it ends; a read of headers (the transaction
//! index's) names the same. Markers carry no sequence: producer history leaves them out.

use bytes::Bytes;
use iggy_kafka_actors::protocol::markers::{self, Marker};
use iggy_kafka_actors::protocol::records::{self, BatchHeader};
use iggy_kafka_actors::store::{AppendBatch, ProducerBatch, TopicLimits};
use kafka_protocol::records::{Compression, Record};

use super::{batch, batch_of, idempotent, record, records_read, tp, Engine};
use crate::support::on_every_store;

on_every_store!(run: crate::ports::run;
    transactional_batches_and_markers_read_back_as_appended,
);

pub(super) const T: i64 = 1_700_000_000_000;

/// A transactional producer's batch of `count` records from sequence `sequence`.
pub(super) fn transactional(
    producer_id: i64,
    epoch: i16,
    sequence: i32,
    count: usize,
) -> AppendBatch {
    let records = (0..count)
        .map(|n| Record {
            transactional: true,
            producer_id,
            producer_epoch: epoch,
            sequence,
            ..record(n, T + n as i64)
        })
        .collect();
    batch_of(records, Compression::None)
}

pub(super) fn marker(marker: Marker, producer_id: i64, epoch: i16) -> AppendBatch {
    let bytes = markers::batch(marker, producer_id, epoch, 0, T);
    AppendBatch {
        header: BatchHeader::parse(&bytes),
        bytes,
        records: Bytes::new(),
        whole: false,
    }
}

/// What read-committed Fetch needs of a batch: where it starts, its producer, sequence
/// and size, its flags, and what it marks.
pub(super) type Shape = (i64, i64, i16, i32, i32, bool, bool, Option<Marker>);

pub(super) fn shape(base_offset: i64, b: &[u8]) -> Shape {
    let h = BatchHeader::parse(b);
    let marks = markers::read(b);
    let count = h.record_count;
    let (pid, epoch, seq) = (h.producer_id, h.producer_epoch, h.base_sequence);
    (
        base_offset,
        pid,
        epoch,
        seq,
        count,
        h.transactional,
        h.control,
        marks,
    )
}

async fn transactional_batches_and_markers_read_back_as_appended(e: Engine) {
    let none = TopicLimits::default();
    e.logs.create("txn".into(), 1, none).await.unwrap();
    let t = tp("txn", 0);
    // Producer 5's transaction around a plain batch and producer 6's idempotent one,
    // then its commit; producer 8 aborts one of its own.
    let appends = [
        transactional(5, 1, 0, 2),
        batch(0, 2, |_| T),
        idempotent(6, 0, 0, 1),
        transactional(5, 1, 2, 3),
        marker(Marker::Commit, 5, 1),
        transactional(8, 0, 0, 1),
        marker(Marker::Abort, 8, 0),
    ];
    let mut expected = Vec::new();
    for b in appends {
        let at = e
            .logs
            .append(t.clone(), b.clone())
            .await
            .unwrap()
            .base_offset;
        if b.header.transactional {
            expected.push(shape(at, &b.bytes));
        }
    }
    assert_eq!(
        expected.iter().map(|s| s.0).collect::<Vec<_>>(),
        [0, 5, 8, 9, 10]
    );
    let e = check_read_back(e, &expected).await;
    let e = e.restart().await;
    check_read_back(e, &expected).await;
}

async fn check_read_back(e: Engine, expected: &[Shape]) -> Engine {
    let t = tp("txn", 0);
    let read = e.logs.read(t.clone(), 0, 1 << 20).await.unwrap();
    assert_eq!(read.watermarks.high, 11);
    let got: Vec<Shape> = read
        .batches
        .iter()
        .filter(|b| BatchHeader::parse(b).transactional)
        .map(|b| shape(records::base_offset(b), b))
        .collect();
    assert_eq!(
        got, expected,
        "transactional batches and markers as appended"
    );
    // A read of headers (what the transaction index reads) names the same batches with
    // the same headers and markers; where the engine keeps batches, a data batch comes
    // as its header alone.
    let heads = e.logs.read_headers(t.clone(), 0, 1 << 20).await.unwrap();
    let shapes = |batches: &[Bytes]| -> Vec<Shape> {
        (batches.iter())
            .map(|b| shape(records::base_offset(b), b))
            .collect()
    };
    assert_eq!(shapes(&heads.batches), shapes(&read.batches));
    assert_eq!(heads.watermarks, read.watermarks);
    if e.promises.keeps_batches {
        let data = heads
            .batches
            .iter()
            .filter(|b| !BatchHeader::parse(b).control);
        let lengths: Vec<usize> = data.map(Bytes::len).collect();
        assert_eq!(
            lengths,
            vec![records::HEADER_LEN; 5],
            "data batches as headers"
        );
    }
    // Every data record is still there, the markers' records too, in offset order.
    let offsets: Vec<i64> = records_read(&read).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, (0..11).collect::<Vec<_>>());
    // A read from inside the transaction's second batch starts at that batch.
    let from = e.logs.read(t.clone(), 6, 1 << 20).await.unwrap();
    let first = &from.batches[0];
    assert_eq!(shape(records::base_offset(first), first), expected[1]);
    let history = e.logs.producer_history(t).await.unwrap();
    let batch =
        |producer_id, producer_epoch, first_sequence, last_sequence, base_offset| ProducerBatch {
            producer_id,
            producer_epoch,
            first_sequence,
            last_sequence,
            base_offset,
            last_offset: base_offset + (last_sequence - first_sequence) as i64,
        };
    let mut history = history;
    history.sort_by_key(|b| b.base_offset);
    assert_eq!(
        history,
        [
            batch(5, 1, 0, 1, 0),
            batch(6, 0, 0, 0, 4),
            batch(5, 1, 2, 4, 5),
            ProducerBatch::marker(5, 1, 8),
            batch(8, 0, 0, 0, 9),
            ProducerBatch::marker(8, 0, 10),
        ],
        "markers are kept for their epochs, without a sequence"
    );
    e
}
