//! A value checked against its definition, in the form it is stored and described:
//! trimmed, booleans in lower case, numbers as parsed, lists without spaces (Kafka's
//! `ConfigDef` parsing, then `convertToString`).

use super::definitions::{ConfigType, Definition, Rule};

/// The normalised value, or the rule it breaks.
pub fn normalize(def: &Definition, raw: &str) -> Result<String, String> {
    let value = raw.trim();
    if matches!(def.rule, Rule::NonEmpty) && value.is_empty() {
        return Err("must not be empty".into());
    }
    match def.kind {
        // Kafka keeps an unknown broker configuration's value as it was sent.
        ConfigType::Unknown => Ok(raw.to_string()),
        ConfigType::Boolean => match value.to_ascii_lowercase().as_str() {
            v @ ("true" | "false") => Ok(v.to_string()),
            _ => Err("must be true or false".into()),
        },
        ConfigType::Int => {
            let n: i32 = value
                .parse()
                .map_err(|_| "must be a 32-bit integer".to_string())?;
            in_range(def.rule, n.into()).map(|_| n.to_string())
        }
        ConfigType::Short => {
            let n: i16 = value
                .parse()
                .map_err(|_| "must be a 16-bit integer".to_string())?;
            in_range(def.rule, n.into()).map(|_| n.to_string())
        }
        ConfigType::Long => {
            let n: i64 = value
                .parse()
                .map_err(|_| "must be a 64-bit integer".to_string())?;
            in_range(def.rule, n).map(|_| n.to_string())
        }
        ConfigType::Double => match value.parse::<f64>() {
            Ok(x) if matches!(def.rule, Rule::Ratio) && !(0.0..=1.0).contains(&x) => {
                Err("must be a number between 0 and 1".into())
            }
            Ok(x) if x.is_finite() => Ok(format!("{x:?}")),
            _ => Err("must be a number".into()),
        },
        ConfigType::String => match def.rule {
            Rule::OneOf(words) if !words.contains(&value) => {
                Err(format!("must be one of {}", words.join(", ")))
            }
            Rule::OneOfAnyCase(words) if !words.iter().any(|w| w.eq_ignore_ascii_case(value)) => {
                Err(format!("must be one of (in any case) {}", words.join(", ")))
            }
            _ => Ok(value.to_string()),
        },
        // A class name or a secret: any text, as Kafka takes it before loading it.
        ConfigType::Class | ConfigType::Password => Ok(value.to_string()),
        ConfigType::List => {
            let items = list_items(value);
            match def.rule {
                Rule::ListOf(words) if !items.iter().all(|i| words.contains(i)) => Err(format!(
                    "must be a comma-separated list of {}",
                    words.join(", ")
                )),
                Rule::ThrottledReplicas if !throttled_replicas(&items) => Err(
                    "must be '*' or a list of replicas as [partitionId]:[brokerId],[partitionId]:[brokerId],…"
                        .into(),
                ),
                _ => Ok(items.join(",")),
            }
        }
    }
}

/// Kafka's list parsing: items split at commas, spaces around them dropped; an empty
/// value is the empty list.
pub fn list_items(value: &str) -> Vec<&str> {
    let value = value.trim();
    if value.is_empty() {
        return Vec::new();
    }
    value.split(',').map(str::trim).collect()
}

/// Whether a number keeps a numeric rule (other rules hold for every number).
pub(super) fn in_range(rule: Rule, n: i64) -> Result<(), String> {
    match rule {
        Rule::MultipleOf(m) if n % m != 0 => Err(format!("must be a multiple of {m}")),
        Rule::AtLeast(min) if n < min => Err(format!("must be at least {min}")),
        Rule::Between(lo, hi) if !(lo..=hi).contains(&n) => {
            Err(format!("must be between {lo} and {hi}"))
        }
        Rule::BetweenOr(lo, hi, or) if !(lo..=hi).contains(&n) && n != or => {
            Err(format!("must be between {lo} and {hi}, or {or}"))
        }
        _ => Ok(()),
    }
}

fn throttled_replicas(items: &[&str]) -> bool {
    let pair = |i: &&str| {
        i.is_empty()
            || i.split_once(':').is_some_and(|(p, b)| {
                [p, b]
                    .iter()
                    .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
            })
    };
    items == ["*"] || items.iter().all(pair)
}

#[cfg(test)]
mod tests {
    use super::super::definitions::topic_config;
    use super::*;

    fn check(name: &str, value: &str) -> Result<String, String> {
        normalize(topic_config(name).unwrap(), value)
    }

    #[test]
    fn values_are_normalised_as_kafka_shows_them() {
        assert_eq!(
            check("cleanup.policy", " compact , delete ").unwrap(),
            "compact,delete"
        );
        assert_eq!(check("cleanup.policy", "").unwrap(), "");
        assert_eq!(check("preallocate", "TRUE").unwrap(), "true");
        assert_eq!(check("retention.ms", " +5 ").unwrap(), "5");
        assert_eq!(check("min.cleanable.dirty.ratio", "1").unwrap(), "1.0");
        assert_eq!(
            check("leader.replication.throttled.replicas", "0:1, 1:2").unwrap(),
            "0:1,1:2"
        );
        assert_eq!(
            check("follower.replication.throttled.replicas", "*").unwrap(),
            "*"
        );
    }

    #[test]
    fn each_rule_names_what_it_wants() {
        let cases = [
            ("retention.ms", "-7", "at least -1"),
            ("retention.ms", "soon", "64-bit integer"),
            ("segment.bytes", "4294967296", "32-bit integer"),
            ("segment.bytes", "1000", "at least 1048576"),
            ("compression.lz4.level", "18", "between 1 and 17"),
            ("compression.gzip.level", "0", "between 1 and 9, or -1"),
            ("min.cleanable.dirty.ratio", "1.5", "between 0 and 1"),
            ("cleanup.policy", "shred", "list of compact, delete"),
            (
                "cleanup.policy",
                "compact,,delete",
                "list of compact, delete",
            ),
            ("compression.type", "brotli", "one of"),
            ("message.timestamp.type", "createtime", "one of"),
            ("preallocate", "yes", "true or false"),
            (
                "leader.replication.throttled.replicas",
                "0-1",
                "[partitionId]",
            ),
        ];
        for (name, value, rule) in cases {
            let e = check(name, value).unwrap_err();
            assert!(e.contains(rule), "{name}={value}: {e}");
        }
        assert!(check("compression.gzip.level", "-1").is_ok());
    }
}
