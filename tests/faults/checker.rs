//! Checks a [`History`] for what Jepsen's Kafka workload (`jepsen.tests.kafka`) checks,
//! by its names:
//! - `lost-write`: an acknowledged record never read, though a reader read past its
//!   offset in its partition;
//! - `unseen`: an acknowledged record no reader ever read (the tests end with a reader
//!   that reads every partition to its end, so none may remain);
//! - `duplicate`: one value at two offsets;
//! - `inconsistent-offsets`: two values at one offset;
//! - `G1a`: a read_committed reader read a record of an aborted transaction;
//! - `precommitted-read`: a read_committed reader read a transaction's record before
//!   its producer asked to commit it;
//! - `poll-skip`: a reader's consecutive reads of a partition jumped over a record it
//!   should have read;
//! - `nonmonotonic-poll`: a reader's consecutive reads of a partition went back;
//! - `nonmonotonic-send`: one producer's acknowledged offsets in a partition went back;
//! - `nonmonotonic-commit`: a group's committed offset of a partition went back.
//!
//! Records of transactions whose end is unknown count neither way.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::history::{Op, Outcome};

/// Every check's name, in the order printed.
pub const CHECKS: [&str; 10] = [
    "lost-write",
    "unseen",
    "duplicate",
    "inconsistent-offsets",
    "G1a",
    "precommitted-read",
    "poll-skip",
    "nonmonotonic-poll",
    "nonmonotonic-send",
    "nonmonotonic-commit",
];

/// How many examples of each anomaly a verdict keeps.
const EXAMPLES: usize = 5;

/// What the checks found: a count of each anomaly and a few examples.
#[derive(Debug, Default)]
pub struct Verdict {
    pub counts: BTreeMap<&'static str, usize>,
    examples: BTreeMap<&'static str, Vec<String>>,
    /// Acknowledged records, and records read (counted once each).
    pub acked: usize,
    pub read: usize,
    /// Transactions committed, aborted, and of unknown end.
    pub txns: [usize; 3],
}

impl Verdict {
    fn found(&mut self, check: &'static str, example: String) {
        *self.counts.entry(check).or_default() += 1;
        let examples = self.examples.entry(check).or_default();
        if examples.len() < EXAMPLES {
            examples.push(example);
        }
    }

    pub fn count(&self, check: &str) -> usize {
        self.counts.get(check).copied().unwrap_or(0)
    }

    /// Each check's count on a line, and each anomaly's examples.
    pub fn print(&self) {
        println!("checker: {} acknowledged, {} read", self.acked, self.read);
        let [committed, aborted, unknown] = self.txns;
        println!(
            "checker: transactions {committed} committed, {aborted} aborted, {unknown} unknown"
        );
        for check in CHECKS {
            println!("checker: {check:<21} {}", self.count(check));
            for example in self.examples.get(check).into_iter().flatten() {
                println!("checker:   {example}");
            }
        }
    }

    /// Fails the test if any check found anything.
    pub fn assert_valid(&self) {
        self.print();
        let found: Vec<String> = CHECKS
            .iter()
            .filter(|c| self.count(c) > 0)
            .map(|c| format!("{c} {}: {:?}", self.count(c), self.examples[c]))
            .collect();
        assert!(found.is_empty(), "the history has anomalies: {found:?}");
        assert!(
            self.acked > 0,
            "nothing was acknowledged: no history to check"
        );
    }
}

/// What the history says about each value and each offset.
#[derive(Default)]
struct Facts {
    /// The transaction each value was sent in.
    txn_of: HashMap<String, String>,
    outcomes: HashMap<String, Outcome>,
    /// The index at which each transaction's commit was asked for.
    committing: HashMap<String, usize>,
    /// Every value each `(partition, offset)` was acknowledged or read with.
    at: BTreeMap<(i32, i64), BTreeSet<String>>,
    /// Every `(partition, offset)` each value was acknowledged or read at.
    offsets: HashMap<String, BTreeSet<(i32, i64)>>,
    /// Acknowledged values: where.
    acked: Vec<(String, i32, i64)>,
    /// Values read at all, and the highest offset read in each partition.
    read: HashMap<String, usize>,
    read_up_to: HashMap<i32, i64>,
}

impl Facts {
    fn of(ops: &[Op]) -> Facts {
        let mut facts = Facts::default();
        for (index, op) in ops.iter().enumerate() {
            match op {
                Op::Send {
                    txn: Some(txn),
                    value,
                    ..
                } => {
                    facts.txn_of.insert(value.clone(), txn.clone());
                }
                Op::Acked {
                    partition,
                    offset,
                    value,
                    ..
                } => {
                    // A negative offset: acknowledged, but where is unknown (librdkafka
                    // reports a retried batch it infers was written so).
                    if *offset >= 0 {
                        facts.saw(*partition, *offset, value);
                    }
                    facts.acked.push((value.clone(), *partition, *offset));
                }
                Op::Committing { txn } => {
                    facts.committing.entry(txn.clone()).or_insert(index);
                }
                Op::TxnEnd { txn, outcome } => {
                    facts.outcomes.insert(txn.clone(), *outcome);
                }
                Op::Poll { records, .. } => {
                    for (p, o, v) in records {
                        facts.saw(*p, *o, v);
                        *facts.read.entry(v.clone()).or_default() += 1;
                        let up_to = facts.read_up_to.entry(*p).or_insert(*o);
                        *up_to = (*up_to).max(*o);
                    }
                }
                _ => {}
            }
        }
        facts
    }

    fn saw(&mut self, partition: i32, offset: i64, value: &str) {
        self.at
            .entry((partition, offset))
            .or_default()
            .insert(value.to_string());
        self.offsets
            .entry(value.to_string())
            .or_default()
            .insert((partition, offset));
    }

    /// How the transaction of `value` ended; committed for a value sent without one.
    fn outcome(&self, value: &str) -> Outcome {
        match self.txn_of.get(value) {
            None => Outcome::Committed,
            Some(txn) => self.outcomes.get(txn).copied().unwrap_or(Outcome::Unknown),
        }
    }

    /// Whether a read_committed reader must read the record at `(partition, offset)`:
    /// one of its values is committed.
    fn visible(&self, at: &(i32, i64), read_committed: bool) -> bool {
        self.at.get(at).is_some_and(|values| {
            !read_committed || values.iter().any(|v| self.outcome(v) == Outcome::Committed)
        })
    }
}

/// Runs every check over `ops`.
pub fn check(ops: &[Op]) -> Verdict {
    let facts = Facts::of(ops);
    let mut verdict = Verdict {
        acked: facts.acked.len(),
        read: facts.read.len(),
        txns: [Outcome::Committed, Outcome::Aborted, Outcome::Unknown]
            .map(|o| facts.outcomes.values().filter(|v| **v == o).count()),
        ..Verdict::default()
    };
    writes(&facts, &mut verdict);
    offsets(&facts, &mut verdict);
    reads(ops, &facts, &mut verdict);
    sends(ops, &mut verdict);
    commits(ops, &mut verdict);
    verdict
}

/// `lost-write` and `unseen`.
fn writes(facts: &Facts, verdict: &mut Verdict) {
    for (value, p, o) in &facts.acked {
        if facts.outcome(value) != Outcome::Committed || facts.read.contains_key(value) {
            continue;
        }
        if *o >= 0 && facts.read_up_to.get(p).is_some_and(|up_to| up_to > o) {
            verdict.found("lost-write", format!("{value} acknowledged at {p}/{o}"));
        } else {
            verdict.found("unseen", format!("{value} acknowledged at {p}/{o}"));
        }
    }
}

/// `duplicate` and `inconsistent-offsets`.
fn offsets(facts: &Facts, verdict: &mut Verdict) {
    for (value, at) in &facts.offsets {
        if at.len() > 1 {
            verdict.found("duplicate", format!("{value} at {at:?}"));
        }
    }
    for ((p, o), values) in &facts.at {
        if values.len() > 1 {
            verdict.found("inconsistent-offsets", format!("{p}/{o} holds {values:?}"));
        }
    }
}

/// `G1a`, `precommitted-read`, `poll-skip` and `nonmonotonic-poll`.
fn reads(ops: &[Op], facts: &Facts, verdict: &mut Verdict) {
    // Each reader's last offset read in each partition since its last assignment.
    let mut last: HashMap<(&str, i32), i64> = HashMap::new();
    for (index, op) in ops.iter().enumerate() {
        match op {
            Op::Assign {
                process,
                partitions,
            } => {
                for p in partitions {
                    last.remove(&(process.as_str(), *p));
                }
            }
            Op::Poll {
                process,
                read_committed,
                records,
            } => {
                for (p, o, v) in records {
                    if *read_committed {
                        transactional_read(facts, index, (p, o, v), verdict);
                    }
                    if let Some(before) = last.insert((process.as_str(), *p), *o) {
                        if *o <= before {
                            verdict.found(
                                "nonmonotonic-poll",
                                format!("{process} read {p}/{o} after {p}/{before}"),
                            );
                            continue;
                        }
                        let skipped: Vec<i64> = facts
                            .at
                            .range((*p, before + 1)..(*p, *o))
                            .map(|(at, _)| at)
                            .filter(|at| facts.visible(at, *read_committed))
                            .map(|(_, o)| *o)
                            .collect();
                        if !skipped.is_empty() {
                            verdict.found(
                                "poll-skip",
                                format!(
                                    "{process} read {p}/{o} after {p}/{before}, skipping {skipped:?}"
                                ),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// `G1a` and `precommitted-read` of one record read by a read_committed reader at
/// history index `index`.
fn transactional_read(
    facts: &Facts,
    index: usize,
    (p, o, value): (&i32, &i64, &String),
    verdict: &mut Verdict,
) {
    let Some(txn) = facts.txn_of.get(value) else {
        return;
    };
    if facts.outcome(value) == Outcome::Aborted {
        verdict.found("G1a", format!("{value} of aborted {txn} read at {p}/{o}"));
    } else if facts.committing.get(txn).is_none_or(|asked| *asked > index) {
        verdict.found(
            "precommitted-read",
            format!("{value} of {txn} read at {p}/{o} before its commit was asked for"),
        );
    }
}

/// `nonmonotonic-send`: each producer's acknowledged offsets in a partition rise in the
/// order it sent the records (Jepsen's definition). Acknowledgements may arrive out of
/// that order: a batch answered REQUEST_TIMED_OUT that had landed is acknowledged on its
/// retry, after later batches, at its first place, as Kafka answers it; its offset must
/// still be below theirs.
fn sends(ops: &[Op], verdict: &mut Verdict) {
    let sent: HashMap<&str, usize> = (ops.iter().enumerate())
        .filter_map(|(at, op)| match op {
            Op::Send { value, .. } => Some((value.as_str(), at)),
            _ => None,
        })
        .collect();
    // Per (producer, partition): (place in the history of its send, offset, value).
    type Acks<'a> = Vec<(usize, i64, &'a str)>;
    let mut acked: BTreeMap<(&str, i32), Acks> = BTreeMap::new();
    for op in ops {
        if let Op::Acked {
            process,
            partition,
            offset,
            value,
        } = op
        {
            let Some(&at) = sent.get(value.as_str()).filter(|_| *offset >= 0) else {
                continue;
            };
            let key = (process.as_str(), *partition);
            acked.entry(key).or_default().push((at, *offset, value));
        }
    }
    for ((process, partition), mut acks) in acked {
        acks.sort_unstable();
        for pair in acks.windows(2) {
            let [(_, before, earlier), (_, offset, value)] = pair else {
                continue;
            };
            if offset <= before {
                verdict.found(
                    "nonmonotonic-send",
                    format!("{process}: {value}, sent after {earlier}, acknowledged at {partition}/{offset}, not above {partition}/{before}"),
                );
            }
        }
    }
}

/// `nonmonotonic-commit`: a group's committed offsets never go back.
fn commits(ops: &[Op], verdict: &mut Verdict) {
    let mut last: HashMap<(&str, i32), i64> = HashMap::new();
    for op in ops {
        if let Op::Committed {
            group,
            partition,
            offset,
        } = op
        {
            if let Some(before) = last.insert((group.as_str(), *partition), *offset) {
                if *offset < before {
                    verdict.found(
                        "nonmonotonic-commit",
                        format!(
                            "{group} committed {partition}/{offset} after {partition}/{before}"
                        ),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Small hand-made histories, each with one anomaly, so each check is seen to fail;
    //! and a clean one that passes them all.

    use super::super::history::{History, Op, Outcome};
    use super::{check, CHECKS};

    fn send(h: &History, process: &str, txn: Option<&str>, p: i32, value: &str) {
        h.record(Op::Send {
            process: process.into(),
            txn: txn.map(Into::into),
            partition: p,
            value: value.into(),
        });
    }

    fn ack(h: &History, process: &str, p: i32, offset: i64, value: &str) {
        h.record(Op::Acked {
            process: process.into(),
            partition: p,
            offset,
            value: value.into(),
        });
    }

    fn poll(h: &History, process: &str, records: &[(i32, i64, &str)]) {
        h.record(Op::Poll {
            process: process.into(),
            read_committed: true,
            records: records
                .iter()
                .map(|(p, o, v)| (*p, *o, v.to_string()))
                .collect(),
        });
    }

    fn end(h: &History, txn: &str, outcome: Outcome) {
        if outcome == Outcome::Committed {
            h.record(Op::Committing { txn: txn.into() });
        }
        h.record(Op::TxnEnd {
            txn: txn.into(),
            outcome,
        });
    }

    fn committed(h: &History, p: i32, offset: i64) {
        h.record(Op::Committed {
            group: "g".into(),
            partition: p,
            offset,
        });
    }

    /// Three acknowledged writes on partition 0, a committed transaction of one record
    /// at offset 4 (a marker at 5), an aborted one at 3 (its marker 6... here only its
    /// record), read in full.
    fn clean() -> History {
        let h = History::in_memory("t");
        for (o, v) in [(0, "a"), (1, "b"), (2, "c")] {
            send(&h, "p", None, 0, v);
            ack(&h, "p", 0, o, v);
        }
        send(&h, "tx", Some("t1"), 0, "x");
        ack(&h, "tx", 0, 3, "x");
        end(&h, "t1", Outcome::Aborted);
        send(&h, "tx", Some("t2"), 0, "y");
        ack(&h, "tx", 0, 5, "y");
        end(&h, "t2", Outcome::Committed);
        h.record(Op::Assign {
            process: "r".into(),
            partitions: vec![0],
        });
        poll(&h, "r", &[(0, 0, "a"), (0, 1, "b")]);
        poll(&h, "r", &[(0, 2, "c"), (0, 5, "y")]);
        committed(&h, 0, 2);
        committed(&h, 0, 7);
        h
    }

    /// `history` with only anomaly `name` found, once or more.
    fn only(name: &str, history: &History) {
        let verdict = check(&history.ops());
        for c in CHECKS {
            assert_eq!(
                verdict.count(c) > 0,
                c == name,
                "{c}: {} ({verdict:?})",
                verdict.count(c)
            );
        }
    }

    #[test]
    fn a_clean_history_passes() {
        let verdict = check(&clean().ops());
        verdict.assert_valid();
        assert_eq!((verdict.acked, verdict.read), (5, 4));
    }

    #[test]
    fn an_acknowledged_write_skipped_by_every_reader_is_lost() {
        let h = clean();
        send(&h, "p", None, 0, "d");
        ack(&h, "p", 0, 7, "d");
        send(&h, "p", None, 0, "e");
        ack(&h, "p", 0, 8, "e");
        h.record(Op::Assign {
            process: "late".into(),
            partitions: vec![0],
        });
        poll(&h, "late", &[(0, 8, "e")]);
        only("lost-write", &h);
    }

    #[test]
    fn an_acknowledged_write_nobody_read_is_unseen() {
        let h = clean();
        send(&h, "p", None, 1, "d");
        ack(&h, "p", 1, 0, "d");
        only("unseen", &h);
    }

    #[test]
    fn one_value_at_two_offsets_is_a_duplicate() {
        let h = clean();
        poll(&h, "r", &[(0, 6, "c")]);
        only("duplicate", &h);
    }

    #[test]
    fn two_values_at_one_offset_are_inconsistent() {
        let h = clean();
        send(&h, "q", None, 1, "z");
        ack(&h, "q", 1, 0, "z");
        h.record(Op::Assign {
            process: "s".into(),
            partitions: vec![1],
        });
        poll(&h, "s", &[(1, 0, "z")]);
        poll(&h, "other", &[(1, 0, "w")]);
        only("inconsistent-offsets", &h);
    }

    #[test]
    fn a_read_of_an_aborted_transaction_is_g1a() {
        let h = clean();
        h.record(Op::Assign {
            process: "r2".into(),
            partitions: vec![0],
        });
        poll(&h, "r2", &[(0, 2, "c"), (0, 3, "x")]);
        only("G1a", &h);
    }

    #[test]
    fn a_read_before_the_commit_was_asked_for_is_precommitted() {
        let h = clean();
        send(&h, "tx", Some("t3"), 0, "u");
        ack(&h, "tx", 0, 7, "u");
        poll(&h, "r", &[(0, 7, "u")]);
        end(&h, "t3", Outcome::Committed);
        only("precommitted-read", &h);
    }

    #[test]
    fn a_reader_jumping_over_a_committed_record_skips() {
        let h = clean();
        h.record(Op::Assign {
            process: "r2".into(),
            partitions: vec![0],
        });
        poll(&h, "r2", &[(0, 0, "a"), (0, 2, "c")]);
        only("poll-skip", &h);
    }

    #[test]
    fn a_reader_going_back_is_nonmonotonic() {
        let h = clean();
        poll(&h, "r", &[(0, 1, "b")]);
        only("nonmonotonic-poll", &h);
    }

    #[test]
    fn a_reader_starting_over_after_an_assignment_is_not() {
        let h = clean();
        h.record(Op::Assign {
            process: "r".into(),
            partitions: vec![0],
        });
        poll(&h, "r", &[(0, 1, "b")]);
        check(&h.ops()).assert_valid();
    }

    #[test]
    fn an_acknowledgement_without_an_offset_places_nothing() {
        let h = clean();
        send(&h, "p", None, 0, "d");
        ack(&h, "p", 0, -1001, "d");
        send(&h, "p", None, 0, "e");
        ack(&h, "p", 0, 8, "e");
        poll(&h, "r", &[(0, 7, "d"), (0, 8, "e")]);
        check(&h.ops()).assert_valid();
        let unread = clean();
        send(&unread, "p", None, 0, "d");
        ack(&unread, "p", 0, -1001, "d");
        only("unseen", &unread);
    }

    #[test]
    fn acknowledgements_going_back_are_nonmonotonic() {
        let h = History::in_memory("t");
        send(&h, "p", None, 0, "b");
        ack(&h, "p", 0, 1, "b");
        send(&h, "p", None, 0, "a");
        ack(&h, "p", 0, 0, "a");
        poll(&h, "r", &[(0, 0, "a"), (0, 1, "b")]);
        only("nonmonotonic-send", &h);
    }

    #[test]
    fn a_retried_batch_acknowledged_late_at_its_place_is_monotonic() {
        let h = History::in_memory("t");
        send(&h, "p", None, 0, "a");
        send(&h, "p", None, 0, "b");
        ack(&h, "p", 0, 1, "b");
        ack(&h, "p", 0, 0, "a");
        poll(&h, "r", &[(0, 0, "a"), (0, 1, "b")]);
        check(&h.ops()).assert_valid();
    }

    #[test]
    fn a_committed_offset_going_back_is_nonmonotonic() {
        let h = clean();
        committed(&h, 0, 3);
        only("nonmonotonic-commit", &h);
    }

    #[test]
    fn the_history_file_has_one_json_line_an_operation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let h = History::to_file("t", &path);
        for op in clean().ops() {
            h.record(op);
        }
        h.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), h.ops().len());
        assert_eq!(lines[1]["type"], "ok");
        assert_eq!(lines[1]["f"], "send");
        assert_eq!(lines[1]["value"][0][1], "t/0");
    }
}
