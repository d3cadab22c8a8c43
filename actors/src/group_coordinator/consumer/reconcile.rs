//! A member's way from its partitions to its target (Kafka's CurrentAssignmentBuilder):
//! partitions leaving it are revoked first, and the member stays at its epoch until it
//! says it no longer owns them; only then does it reach the target's epoch, and a
//! partition another member still owns (assigned, or being revoked) is given to it once
//! that member lets it go. So no partition is ever owned by two members at once.

use super::assignor::{Partitions, TopicPartition};

/// Where a member stands in its reconciliation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub assigned: Partitions,
    /// Partitions the member was told to give up and has not said it gave up.
    pub revoking: Partitions,
}

impl Reconciled {
    /// One step towards `target` at `target_epoch`. `reported` is what the member says
    /// it owns (`None`: unchanged since it last said); `owned_elsewhere` whether
    /// another member owns a partition.
    pub fn step(
        &mut self,
        (target, target_epoch): (&Partitions, i32),
        reported: Option<&Partitions>,
        owned_elsewhere: impl Fn(&TopicPartition) -> bool,
    ) {
        if !self.revoking.is_empty() {
            match reported {
                Some(owned) if owned.is_disjoint(&self.revoking) => self.revoking.clear(),
                _ => return,
            }
        }
        let revoke: Partitions = self.assigned.difference(target).copied().collect();
        self.assigned.retain(|tp| target.contains(tp));
        // A member that says it already let them go (a classic member rejoining after
        // revoking, as eager ones do) is not asked to.
        if !revoke.is_empty() && !reported.is_some_and(|owned| owned.is_disjoint(&revoke)) {
            self.revoking = revoke;
            return;
        }
        let assigned: Partitions = target
            .iter()
            .filter(|tp| self.assigned.contains(tp) || !owned_elsewhere(tp))
            .copied()
            .collect();
        self.assigned = assigned;
        if self.epoch != target_epoch {
            self.previous_epoch = self.epoch;
            self.epoch = target_epoch;
        }
    }

    /// Everything the member owns: assigned or still being revoked.
    pub fn owns(&self, tp: &TopicPartition) -> bool {
        self.assigned.contains(tp) || self.revoking.contains(tp)
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn parts(ps: &[i32]) -> Partitions {
        ps.iter().map(|p| (Uuid::nil(), *p)).collect()
    }

    #[test]
    fn revokes_first_and_moves_on_once_the_member_lets_go() {
        let mut m = Reconciled {
            epoch: 1,
            previous_epoch: 0,
            assigned: parts(&[0, 1, 2]),
            revoking: Partitions::new(),
        };
        let target = parts(&[0, 3]);
        m.step((&target, 2), None, |_| false);
        assert_eq!((m.epoch, m.assigned.clone()), (1, parts(&[0])));
        assert_eq!(m.revoking, parts(&[1, 2]));
        // Still owning 1: nothing moves.
        m.step((&target, 2), Some(&parts(&[0, 1])), |_| false);
        assert_eq!(m.epoch, 1);
        m.step((&target, 2), Some(&parts(&[0])), |_| false);
        assert_eq!((m.epoch, m.previous_epoch), (2, 1));
        assert_eq!(m.assigned, parts(&[0, 3]));
        assert!(m.revoking.is_empty());
    }

    #[test]
    fn a_member_that_already_let_go_moves_on_at_once() {
        let mut m = Reconciled {
            epoch: 1,
            previous_epoch: 0,
            assigned: parts(&[0, 1, 2]),
            revoking: Partitions::new(),
        };
        m.step((&parts(&[0, 3]), 2), Some(&parts(&[0])), |_| false);
        assert_eq!((m.epoch, m.assigned.clone()), (2, parts(&[0, 3])));
        assert!(m.revoking.is_empty());
    }

    #[test]
    fn a_partition_owned_elsewhere_waits_until_released() {
        let mut m = Reconciled::default();
        let target = parts(&[0, 1]);
        m.step((&target, 3), Some(&Partitions::new()), |tp| tp.1 == 1);
        assert_eq!((m.epoch, m.assigned.clone()), (3, parts(&[0])));
        m.step((&target, 3), None, |_| false);
        assert_eq!(m.assigned, parts(&[0, 1]));
    }
}
