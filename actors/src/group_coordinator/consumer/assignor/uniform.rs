//! The `uniform` assignor: every member gets as many partitions as the others, give
//! or take one, and keeps what it had up to that share (sticky), so a member joining
//! or leaving moves only the partitions balance needs.

use std::collections::{BTreeMap, HashSet};

use uuid::Uuid;

use super::{MemberSpec, Partitions, TopicPartition};

pub(super) fn assign(
    members: &[MemberSpec],
    topics: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Partitions> {
    let mut out: BTreeMap<String, Partitions> = members
        .iter()
        .map(|m| (m.id.to_string(), Partitions::new()))
        .collect();
    if members.is_empty() {
        return out;
    }
    let all: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|(t, n)| (0..*n).map(move |p| (*t, p)))
        .collect();
    let share = all.len() / members.len();
    // Members that may hold one more than the share, so every partition has a place.
    let mut extra = all.len() % members.len();
    let mut taken: HashSet<TopicPartition> = HashSet::new();
    let mut ordered: Vec<&MemberSpec> = members.iter().collect();
    ordered.sort_by_key(|m| m.id);
    for m in ordered {
        let kept: Vec<TopicPartition> = m
            .current
            .iter()
            .filter(|tp| m.topics.contains(&tp.0) && topics.get(&tp.0).is_some_and(|n| tp.1 < *n))
            .filter(|tp| !taken.contains(*tp))
            .copied()
            .collect();
        let cap = if kept.len() > share && extra > 0 {
            extra -= 1;
            share + 1
        } else {
            share
        };
        let mine = out.get_mut(m.id).expect("every member has an entry");
        for tp in kept.into_iter().take(cap) {
            taken.insert(tp);
            mine.insert(tp);
        }
    }
    for tp in all.into_iter().filter(|tp| !taken.contains(tp)) {
        let least = members
            .iter()
            .filter(|m| m.topics.contains(&tp.0))
            .min_by_key(|m| (out[m.id].len(), m.id));
        if let Some(m) = least {
            out.get_mut(m.id)
                .expect("every member has an entry")
                .insert(tp);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::testing::{run, topic};
    use super::super::Assignor;
    use super::*;

    fn subs(ids: &[&str], topics: &[Uuid]) -> BTreeMap<String, BTreeSet<Uuid>> {
        let set: BTreeSet<Uuid> = topics.iter().copied().collect();
        ids.iter().map(|id| (id.to_string(), set.clone())).collect()
    }

    fn sizes(out: &BTreeMap<String, Partitions>) -> Vec<usize> {
        out.values().map(|p| p.len()).collect()
    }

    #[test]
    fn balances_within_one() {
        let topics = BTreeMap::from([(topic(1), 7), (topic(2), 3)]);
        for n in 1..=12 {
            let ids: Vec<String> = (0..n).map(|i| format!("m{i:02}")).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let out = run(
                Assignor::Uniform,
                &subs(&ids, &[topic(1), topic(2)]),
                &BTreeMap::new(),
                &topics,
            );
            let (min, max) = (sizes(&out).into_iter().min(), sizes(&out).into_iter().max());
            assert!(max.unwrap() - min.unwrap() <= 1, "{n} members: {out:?}");
        }
    }

    #[test]
    fn a_member_joining_takes_only_what_balance_needs() {
        let topics = BTreeMap::from([(topic(1), 6)]);
        let before = run(
            Assignor::Uniform,
            &subs(&["a", "b", "c"], &[topic(1)]),
            &BTreeMap::new(),
            &topics,
        );
        let after = run(
            Assignor::Uniform,
            &subs(&["a", "b", "c", "d"], &[topic(1)]),
            &before,
            &topics,
        );
        let moved: usize = before
            .iter()
            .map(|(m, parts)| parts.difference(&after[m]).count())
            .sum();
        assert_eq!(moved, 1, "{before:?} → {after:?}");
        assert_eq!(after["d"].len(), 1);
    }

    #[test]
    fn a_member_leaving_moves_only_its_partitions() {
        let topics = BTreeMap::from([(topic(1), 8), (topic(2), 4)]);
        let before = run(
            Assignor::Uniform,
            &subs(&["a", "b", "c"], &[topic(1), topic(2)]),
            &BTreeMap::new(),
            &topics,
        );
        let after = run(
            Assignor::Uniform,
            &subs(&["a", "c"], &[topic(1), topic(2)]),
            &before,
            &topics,
        );
        for m in ["a", "c"] {
            assert!(before[m].is_subset(&after[m]), "{m} lost partitions");
        }
        assert_eq!(sizes(&after), vec![6, 6]);
    }

    #[test]
    fn members_get_only_the_topics_they_subscribe_to() {
        let topics = BTreeMap::from([(topic(1), 4), (topic(2), 2)]);
        let mut s = subs(&["a", "b"], &[topic(1)]);
        s.insert("c".into(), BTreeSet::from([topic(1), topic(2)]));
        let out = run(Assignor::Uniform, &s, &BTreeMap::new(), &topics);
        assert_eq!(out["c"].iter().filter(|tp| tp.0 == topic(2)).count(), 2);
    }
}
