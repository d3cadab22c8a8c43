//! What a fault test's clients did and saw, in the order it happened: every send
//! (acknowledged or not), every poll, every transaction's end, every committed group
//! offset. Recorded from many client threads at once; each operation also goes to a
//! file as one JSON line, in the shape of Jepsen's Kafka workload (`f` `send`, `poll`,
//! `txn`, micro-ops of `[f, key, value]`), so the history can be checked elsewhere.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

/// How a transaction ended, as far as its producer knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    Aborted,
    /// The producer failed mid-end (fatal error, timeout): either may have happened.
    Unknown,
}

/// One operation of the history.
#[derive(Clone, Debug)]
pub enum Op {
    /// A record handed to a producer; `txn` names the transaction it belongs to.
    Send {
        process: String,
        txn: Option<String>,
        partition: i32,
        value: String,
    },
    /// The producer acknowledged `value` at `offset`.
    Acked {
        process: String,
        partition: i32,
        offset: i64,
        value: String,
    },
    /// The producer gave up on `value`: it may or may not be stored.
    Failed {
        process: String,
        value: String,
        error: String,
    },
    /// The producer asked to commit transaction `txn`.
    Committing { txn: String },
    /// Transaction `txn` ended so.
    TxnEnd { txn: String, outcome: Outcome },
    /// Reader `process` now reads these partitions from where it is told (a group's
    /// rebalance, or an assignment): its offsets start over.
    Assign {
        process: String,
        partitions: Vec<i32>,
    },
    /// Records a reader got, `(partition, offset, value)` in the order it got them.
    Poll {
        process: String,
        read_committed: bool,
        records: Vec<(i32, i64, String)>,
    },
    /// Group `group`'s offset of `partition`, as committed or fetched.
    Committed {
        group: String,
        partition: i32,
        offset: i64,
    },
}

/// A history being recorded; `ops` in the order recorded.
pub struct History {
    topic: String,
    start: Instant,
    ops: Mutex<Vec<Op>>,
    acked: AtomicUsize,
    file: Option<Mutex<BufWriter<File>>>,
}

impl History {
    /// A history of clients of `topic`, written line by line to `path`.
    pub fn to_file(topic: &str, path: &Path) -> History {
        let file = File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        History {
            file: Some(Mutex::new(BufWriter::new(file))),
            ..Self::in_memory(topic)
        }
    }

    /// A history kept in memory only (the checker's own tests).
    pub fn in_memory(topic: &str) -> History {
        History {
            topic: topic.to_string(),
            start: Instant::now(),
            ops: Mutex::new(Vec::new()),
            acked: AtomicUsize::new(0),
            file: None,
        }
    }

    pub fn record(&self, op: Op) {
        if matches!(op, Op::Acked { .. }) {
            self.acked.fetch_add(1, Ordering::Relaxed);
        }
        let mut ops = self.ops.lock().unwrap();
        if let Some(file) = &self.file {
            let line = self.json(ops.len(), &op);
            let _ = writeln!(file.lock().unwrap(), "{line}");
        }
        ops.push(op);
    }

    /// How many records were acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked.load(Ordering::Relaxed)
    }

    /// Every operation so far, in order.
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }

    /// Writes out what is buffered.
    pub fn flush(&self) {
        if let Some(file) = &self.file {
            let _ = file.lock().unwrap().flush();
        }
    }

    /// Operation `op` as Jepsen's Kafka workload writes it: `type` ok/fail/info/invoke,
    /// `f`, `process`, and `value` as micro-ops on keys `topic/partition`.
    fn json(&self, index: usize, op: &Op) -> Value {
        let key = |p: &i32| format!("{}/{p}", self.topic);
        let (kind, f, process, value) = match op {
            Op::Send {
                process,
                txn,
                partition,
                value,
            } => (
                "invoke",
                "send",
                process.clone(),
                json!({"txn": txn, "mops": [["send", key(partition), value]]}),
            ),
            Op::Acked {
                process,
                partition,
                offset,
                value,
            } => (
                "ok",
                "send",
                process.clone(),
                json!([["send", key(partition), [offset, value]]]),
            ),
            Op::Failed {
                process,
                value,
                error,
            } => (
                "info",
                "send",
                process.clone(),
                json!({"value": value, "error": error}),
            ),
            Op::Committing { txn } => ("invoke", "commit", txn.clone(), json!(null)),
            Op::TxnEnd { txn, outcome } => {
                let kind = match outcome {
                    Outcome::Committed => "ok",
                    Outcome::Aborted => "fail",
                    Outcome::Unknown => "info",
                };
                (kind, "txn", txn.clone(), json!(null))
            }
            Op::Assign {
                process,
                partitions,
            } => (
                "ok",
                "assign",
                process.clone(),
                json!(partitions.iter().map(key).collect::<Vec<_>>()),
            ),
            Op::Poll {
                process,
                read_committed,
                records,
            } => {
                let mut by_key = serde_json::Map::new();
                for (p, o, v) in records {
                    let read = by_key.entry(key(p)).or_insert_with(|| json!([]));
                    read.as_array_mut().unwrap().push(json!([o, v]));
                }
                (
                    "ok",
                    "poll",
                    process.clone(),
                    json!({"read_committed": read_committed, "mops": [["poll", by_key]]}),
                )
            }
            Op::Committed {
                group,
                partition,
                offset,
            } => (
                "ok",
                "committed-offset",
                group.clone(),
                json!([[key(partition), offset]]),
            ),
        };
        json!({
            "index": index,
            "time": self.start.elapsed().as_nanos() as u64,
            "type": kind,
            "f": f,
            "process": process,
            "value": value,
        })
    }
}
