//! The finalized feature level `gateway.version` (after Kafka's metadata-version-aware
//! validators): configuration rules that hold from a level on. Level 1 is Kafka's rules
//! alone; level 2 adds what the Iggy backend can enforce as stated, so a configuration
//! accepted is one Iggy keeps exactly:
//!
//! - `segment.bytes` / `log.segment.bytes`: 1 MiB to 1 GiB, a multiple of 512 (Iggy's
//!   segment sizes);
//! - `retention.bytes` / `log.retention.bytes`: -1 or at least 1 MiB (Iggy keeps at
//!   least one segment);
//! - `max.message.bytes` / `message.max.bytes`: at most 64 MiB (Iggy's largest payload),
//!   the static `message_max_bytes` setting included.
//!
//! The level lives in the backend (shared map `features`) with an epoch raised on every
//! change; UpdateFeatures changes it after auditing every stored configuration.

use std::collections::BTreeMap;

use super::definitions::Rule;
use super::rules::in_range;
use crate::store::ClusterConfigs;

pub const FEATURE: &str = "gateway.version";
pub const MIN_LEVEL: i16 = 1;
pub const MAX_LEVEL: i16 = 2;
/// The level of a cluster that never finalized one: Kafka's rules alone.
const DEFAULT_LEVEL: i16 = 1;
/// Shared map holding the finalized level and its epoch.
pub const FEATURES: &str = "features";
const EPOCH: &str = "epoch";

/// A rule on a configuration's value that holds from level `from` on.
struct LevelRule {
    /// The topic configuration (its broker synonym follows the same rule).
    name: &'static str,
    from: i16,
    rule: Rule,
}

const LEVEL_RULES: &[LevelRule] = &[
    LevelRule {
        name: "segment.bytes",
        from: 2,
        rule: Rule::Between(1 << 20, 1 << 30),
    },
    LevelRule {
        name: "segment.bytes",
        from: 2,
        rule: Rule::MultipleOf(512),
    },
    LevelRule {
        name: "retention.bytes",
        from: 2,
        rule: Rule::BetweenOr(1 << 20, i64::MAX, -1),
    },
    LevelRule {
        name: "max.message.bytes",
        from: 2,
        rule: Rule::Between(0, 64 << 20),
    },
];

/// Whether a (normalised) value of configuration `name` keeps the rules of `level`;
/// the rule it breaks otherwise.
pub fn check(name: &str, value: &str, level: i16) -> Result<(), String> {
    let Ok(n) = value.parse::<i64>() else {
        return Ok(());
    };
    LEVEL_RULES
        .iter()
        .filter(|r| r.name == name && r.from <= level)
        .try_for_each(|r| in_range(r.rule, n))
}

/// The finalized level and its epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finalized {
    pub level: i16,
    pub epoch: i64,
}

impl Finalized {
    pub fn from_stored(stored: &ClusterConfigs) -> Finalized {
        let map = stored.get(FEATURES);
        let get = |key: &str| map.and_then(|m| m.get(key)).and_then(|v| v.parse().ok());
        Finalized {
            level: get(FEATURE).map_or(DEFAULT_LEVEL, |l: i64| l as i16),
            epoch: get(EPOCH).unwrap_or(0),
        }
    }

    /// The next finalized state at `level`, as stored.
    pub fn next(&self, level: i16) -> (Finalized, BTreeMap<String, String>) {
        let next = Finalized {
            level,
            epoch: self.epoch + 1,
        };
        let stored = BTreeMap::from([
            (FEATURE.to_string(), level.to_string()),
            (EPOCH.to_string(), next.epoch.to_string()),
        ]);
        (next, stored)
    }
}

impl Default for Finalized {
    fn default() -> Self {
        Finalized {
            level: DEFAULT_LEVEL,
            epoch: 0,
        }
    }
}

/// UpdateFeatures' upgrade types (v1+; v0's `allow_downgrade` maps onto them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeType {
    Upgrade = 1,
    SafeDowngrade = 2,
    UnsafeDowngrade = 3,
}

impl UpgradeType {
    pub fn from_code(code: i8) -> Option<UpgradeType> {
        [
            UpgradeType::Upgrade,
            UpgradeType::SafeDowngrade,
            UpgradeType::UnsafeDowngrade,
        ]
        .into_iter()
        .find(|t| *t as i8 == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_two_tightens_what_iggy_cannot_keep() {
        for (name, value) in [
            ("segment.bytes", "1000000"),
            ("segment.bytes", "2147483136"),
            ("retention.bytes", "1000"),
            ("max.message.bytes", "100000000"),
        ] {
            assert!(check(name, value, 1).is_ok(), "{name}={value} at 1");
            let e = check(name, value, 2).unwrap_err();
            assert!(e.starts_with("must be"), "{e}");
        }
        for (name, value) in [
            ("segment.bytes", "1048576"),
            ("retention.bytes", "-1"),
            ("retention.bytes", "1048576"),
            ("max.message.bytes", "1048588"),
            ("retention.ms", "1"),
        ] {
            assert!(check(name, value, 2).is_ok(), "{name}={value}");
        }
    }

    #[test]
    fn the_finalized_level_round_trips_through_its_stored_map() {
        let none = ClusterConfigs::new();
        assert_eq!(Finalized::from_stored(&none), Finalized::default());
        let (next, stored) = Finalized::default().next(2);
        let read = Finalized::from_stored(&ClusterConfigs::from([(FEATURES.to_string(), stored)]));
        assert_eq!((read, next), (Finalized { level: 2, epoch: 1 }, read));
    }
}
