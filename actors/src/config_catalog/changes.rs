//! A set of stored values changed as AlterConfigs (the whole set replaced) or
//! IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT per key) asks, after Kafka's
//! `ConfigAdminManager`.

use std::collections::{BTreeMap, HashSet};

use super::definitions::{ConfigType, Definition};
use super::rules::{list_items, normalize};
use super::{features, ConfigError, ConfigKind};

/// IncrementalAlterConfigs' operation codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Set = 0,
    Delete = 1,
    Append = 2,
    Subtract = 3,
}

impl Op {
    pub fn from_code(code: i8) -> Option<Op> {
        [Op::Set, Op::Delete, Op::Append, Op::Subtract]
            .into_iter()
            .find(|op| *op as i8 == code)
    }
}

/// What a client asks to change.
#[derive(Clone, Debug)]
pub enum ConfigChange {
    /// AlterConfigs: these values become the whole stored set.
    Replace(Vec<(String, Option<String>)>),
    /// IncrementalAlterConfigs: each `(name, operation code, value)` applied in turn.
    Incremental(Vec<(String, i8, Option<String>)>),
}

/// The stored set after `change`, each value checked by Kafka's rules and those of
/// feature level `level`; `known` finds the definition of a name a client may set as a
/// `kind` configuration, or says why it may not.
pub fn apply(
    current: &BTreeMap<String, String>,
    change: ConfigChange,
    (kind, level): (ConfigKind, i16),
    known: impl Fn(&str) -> Result<&'static Definition, ConfigError>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let checked = |def: &Definition, name: &str, value: &str| -> Result<String, ConfigError> {
        let invalid = |rule| ConfigError::Invalid {
            kind,
            name: name.to_string(),
            value: value.to_string(),
            rule,
        };
        let normalised = normalize(def, value).map_err(invalid)?;
        features::check(def.name, &normalised, level).map_err(|rule| ConfigError::Level {
            name: name.to_string(),
            value: normalised.clone(),
            level,
            rule,
        })?;
        Ok(normalised)
    };
    match change {
        ConfigChange::Replace(values) => {
            refuse_nulls(values.iter().map(|(name, value)| (name, value, None)))?;
            let mut out = BTreeMap::new();
            for (name, value) in values {
                let def = known(&name)?;
                let value = checked(def, &name, value.as_deref().unwrap_or_default())?;
                out.insert(name, value);
            }
            Ok(out)
        }
        ConfigChange::Incremental(ops) => {
            let mut seen = HashSet::new();
            if let Some((name, ..)) = ops.iter().find(|(name, ..)| !seen.insert(name)) {
                return Err(ConfigError::Duplicate(name.clone()));
            }
            refuse_nulls(ops.iter().map(|(name, op, value)| (name, value, Some(*op))))?;
            let mut out = current.clone();
            for (name, code, value) in ops {
                let op = Op::from_code(code).ok_or_else(|| ConfigError::UnknownOp {
                    name: name.clone(),
                    code,
                })?;
                let value = value.unwrap_or_default();
                // Deleting a name removes whatever is stored under it, known or not.
                if op == Op::Delete {
                    out.remove(&name);
                    continue;
                }
                let def = known(&name)?;
                let merged = match op {
                    Op::Set => value,
                    Op::Append | Op::Subtract if def.kind != ConfigType::List => {
                        return Err(ConfigError::NotList { kind, name, op });
                    }
                    _ => {
                        let old = out.get(&name).map_or(def.default_text(), String::as_str);
                        let old = list_items(old);
                        let given = list_items(&value);
                        let items: Vec<&str> = if op == Op::Append {
                            let added = given.iter().filter(|i| !old.contains(i));
                            old.iter().chain(added).copied().collect()
                        } else {
                            old.into_iter().filter(|i| !given.contains(i)).collect()
                        };
                        items.join(",")
                    }
                };
                let normalised = checked(def, &name, &merged)?;
                out.insert(name, normalised);
            }
            Ok(out)
        }
    }
}

/// Kafka refuses a change without a value (other than DELETE) before anything else.
fn refuse_nulls<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Option<String>, Option<i8>)>,
) -> Result<(), ConfigError> {
    let nulls: Vec<&str> = entries
        .filter(|(_, value, op)| value.is_none() && *op != Some(Op::Delete as i8))
        .map(|(name, ..)| name.as_str())
        .collect();
    if nulls.is_empty() {
        Ok(())
    } else {
        Err(ConfigError::NullUpdate(nulls.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::super::settable_topic_config;
    use super::*;

    type Ops<'a> = &'a [(&'a str, Op, Option<&'a str>)];

    fn run(current: &[(&str, &str)], ops: Ops) -> Result<BTreeMap<String, String>, ConfigError> {
        let current = current
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ops = ops
            .iter()
            .map(|(n, op, v)| (n.to_string(), *op as i8, v.map(str::to_string)))
            .collect();
        apply(
            &current,
            ConfigChange::Incremental(ops),
            (ConfigKind::Topic, 1),
            settable_topic_config,
        )
    }

    #[test]
    fn every_incremental_operation() {
        let out = run(
            &[("retention.ms", "1000"), ("segment.ms", "5000")],
            &[
                ("retention.ms", Op::Delete, None),
                ("max.message.bytes", Op::Set, Some(" 2000 ")),
                ("cleanup.policy", Op::Append, Some("compact")),
            ],
        )
        .unwrap();
        let want = [
            ("cleanup.policy", "delete,compact"),
            ("max.message.bytes", "2000"),
            ("segment.ms", "5000"),
        ];
        assert_eq!(
            out,
            want.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        );
        let out = run(
            &[("cleanup.policy", "delete,compact")],
            &[("cleanup.policy", Op::Subtract, Some("delete"))],
        )
        .unwrap();
        assert_eq!(out["cleanup.policy"], "compact");
        // Appending what is there already changes nothing; subtracting all leaves an empty list.
        let out = run(&[], &[("cleanup.policy", Op::Append, Some("delete"))]).unwrap();
        assert_eq!(out["cleanup.policy"], "delete");
        let out = run(&[], &[("cleanup.policy", Op::Subtract, Some("delete"))]).unwrap();
        assert_eq!(out["cleanup.policy"], "");
        // Deleting a name nobody set (or knows) is not an error.
        assert!(run(&[], &[("no.such", Op::Delete, None)])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn refusals_name_the_key() {
        let cases: [(Ops, &str); 6] = [
            (&[("retention.ms", Op::Append, Some("1"))], "retention.ms"),
            (&[("retention.ms", Op::Set, None)], "null value"),
            (
                &[
                    ("retention.ms", Op::Set, Some("1")),
                    ("retention.ms", Op::Delete, None),
                ],
                "more than once",
            ),
            (&[("no.such", Op::Set, Some("1"))], "no.such"),
            (
                &[("cleanup.policy", Op::Append, Some("shred"))],
                "cleanup.policy",
            ),
            (&[("retention.ms", Op::Set, Some("x"))], "64-bit integer"),
        ];
        for (ops, says) in cases {
            let e = run(&[], ops).unwrap_err().to_string();
            assert!(e.contains(says), "{ops:?}: {e}");
        }
        let current = BTreeMap::new();
        let e = apply(
            &current,
            ConfigChange::Incremental(vec![("retention.ms".into(), 9, Some("1".into()))]),
            (ConfigKind::Topic, 1),
            settable_topic_config,
        );
        assert!(matches!(e, Err(ConfigError::UnknownOp { code: 9, .. })));
    }

    #[test]
    fn replace_sets_exactly_what_is_given() {
        let current = BTreeMap::from([("retention.ms".to_string(), "1".to_string())]);
        let out = apply(
            &current,
            ConfigChange::Replace(vec![("segment.ms".into(), Some("100".into()))]),
            (ConfigKind::Topic, 1),
            settable_topic_config,
        )
        .unwrap();
        assert_eq!(
            out,
            BTreeMap::from([("segment.ms".to_string(), "100".to_string())])
        );
    }
}
