//! The `range` assignor: for each topic, its members (by member id) get contiguous
//! ranges of its partitions, the first ones one more when they do not divide evenly,
//! so members subscribed to co-partitioned topics get the same partition numbers of
//! each.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{MemberSpec, Partitions};

pub(super) fn assign(
    members: &[MemberSpec],
    topics: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Partitions> {
    let mut out: BTreeMap<String, Partitions> = members
        .iter()
        .map(|m| (m.id.to_string(), Partitions::new()))
        .collect();
    for (topic, count) in topics {
        let mut subscribed: Vec<&str> = members
            .iter()
            .filter(|m| m.topics.contains(topic))
            .map(|m| m.id)
            .collect();
        if subscribed.is_empty() {
            continue;
        }
        subscribed.sort_unstable();
        let n = subscribed.len() as i32;
        let (share, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, id) in subscribed.into_iter().enumerate() {
            let len = share + i32::from((i as i32) < extra);
            let mine = out.get_mut(id).expect("every member has an entry");
            mine.extend((next..next + len).map(|p| (*topic, p)));
            next += len;
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

    #[test]
    fn contiguous_ranges_the_first_members_one_more() {
        let topics = BTreeMap::from([(topic(1), 7)]);
        let subs = ["a", "b", "c"]
            .map(|m| (m.to_string(), BTreeSet::from([topic(1)])))
            .into();
        let out = run(Assignor::Range, &subs, &BTreeMap::new(), &topics);
        let parts = |m: &str| out[m].iter().map(|tp| tp.1).collect::<Vec<_>>();
        assert_eq!(parts("a"), vec![0, 1, 2]);
        assert_eq!(parts("b"), vec![3, 4]);
        assert_eq!(parts("c"), vec![5, 6]);
    }

    #[test]
    fn co_partitioned_topics_line_up() {
        let topics = BTreeMap::from([(topic(1), 4), (topic(2), 4)]);
        let subs = ["a", "b"]
            .map(|m| (m.to_string(), BTreeSet::from([topic(1), topic(2)])))
            .into();
        let out = run(Assignor::Range, &subs, &BTreeMap::new(), &topics);
        for parts in out.values() {
            let of = |t: Uuid| parts.iter().filter(move |tp| tp.0 == t).map(|tp| tp.1);
            assert!(of(topic(1)).eq(of(topic(2))), "{out:?}");
        }
    }
}
