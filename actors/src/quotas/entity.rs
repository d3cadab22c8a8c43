//! Quota entities and keys as Kafka's `ClientQuotaControlManager` validates them.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// The kinds of entity a quota applies to, as the protocol names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityType {
    User,
    ClientId,
    Ip,
}

impl EntityType {
    pub const ALL: [EntityType; 3] = [EntityType::User, EntityType::ClientId, EntityType::Ip];

    pub fn name(self) -> &'static str {
        match self {
            EntityType::User => "user",
            EntityType::ClientId => "client-id",
            EntityType::Ip => "ip",
        }
    }

    pub fn from_name(name: &str) -> Option<EntityType> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// Whom a quota applies to: one name per entity type, sorted by type; a `None` name
/// is the type's `<default>` entity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaEntity(Vec<(EntityType, Option<String>)>);

impl QuotaEntity {
    /// An entity from the protocol's (type, name) pairs, refused as Kafka refuses it
    /// (an IP must be an address here: host names are not resolved).
    pub fn parse<'a>(
        parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<QuotaEntity, String> {
        let mut entity: Vec<(EntityType, Option<String>)> = Vec::new();
        for (kind, name) in parts {
            let Some(t) = EntityType::from_name(kind) else {
                return Err(format!("Unhandled client quota entity type: {kind}"));
            };
            if entity.iter().any(|(seen, _)| *seen == t) {
                return Err(format!(
                    "Invalid client quota entity, duplicate entity entry {kind}"
                ));
            }
            if name == Some("") {
                return Err(format!("Empty {kind} not supported"));
            }
            entity.push((t, name.map(str::to_string)));
        }
        entity.sort();
        let has = |t: EntityType| entity.iter().any(|(k, _)| *k == t);
        if entity.is_empty() {
            return Err("Invalid empty client quota entity".into());
        }
        if has(EntityType::Ip) {
            if has(EntityType::User) || has(EntityType::ClientId) {
                return Err("Invalid quota entity combination, IP entity should not be combined with User or ClientId".into());
            }
            if let Some(Some(ip)) = entity.first().map(|(_, n)| n) {
                if ip.parse::<IpAddr>().is_err() {
                    return Err(format!("{ip} is not a valid IP or resolvable host."));
                }
            }
        }
        Ok(QuotaEntity(entity))
    }

    /// The (type, name) pairs, sorted by type.
    pub fn parts(&self) -> &[(EntityType, Option<String>)] {
        &self.0
    }

    /// The name this entity gives `t`: `None` when it has no such part, `Some(None)`
    /// for `<default>`.
    pub fn name(&self, t: EntityType) -> Option<Option<&str>> {
        self.0
            .iter()
            .find(|(k, _)| *k == t)
            .map(|(_, n)| n.as_deref())
    }
}

impl fmt::Display for QuotaEntity {
    /// Kafka's path form: `/users/alice/clients/<default>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (t, name) in &self.0 {
            let dir = match t {
                EntityType::User => "users",
                EntityType::ClientId => "clients",
                EntityType::Ip => "ips",
            };
            write!(f, "/{dir}/{}", name.as_deref().unwrap_or("<default>"))?;
        }
        Ok(())
    }
}

/// The quota keys of user and client-id entities, and what values each takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaKey {
    /// Bytes per second a producer may send (a LONG): enforced on Produce.
    ProducerByteRate,
    /// Bytes per second a consumer may fetch (a LONG): enforced on Fetch.
    ConsumerByteRate,
    /// Percentage of request-handler time (a DOUBLE): stored and described only.
    RequestPercentage,
    /// Partition mutations per second (a DOUBLE): stored and described only.
    ControllerMutationRate,
    /// Connections an IP may open per second (an INT, IP entities only): enforced on accept.
    ConnectionCreationRate,
}

impl QuotaKey {
    pub const ALL: [QuotaKey; 5] = [
        QuotaKey::ProducerByteRate,
        QuotaKey::ConsumerByteRate,
        QuotaKey::RequestPercentage,
        QuotaKey::ControllerMutationRate,
        QuotaKey::ConnectionCreationRate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
            QuotaKey::RequestPercentage => "request_percentage",
            QuotaKey::ControllerMutationRate => "controller_mutation_rate",
            QuotaKey::ConnectionCreationRate => "connection_creation_rate",
        }
    }

    pub fn from_name(name: &str) -> Option<QuotaKey> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The largest value of an integral key (Kafka's LONG or INT), `None` for a DOUBLE.
    fn integral_max(self) -> Option<(f64, &'static str)> {
        match self {
            QuotaKey::ProducerByteRate | QuotaKey::ConsumerByteRate => {
                Some((i64::MAX as f64, "a LONG"))
            }
            QuotaKey::ConnectionCreationRate => Some((i32::MAX as f64, "an INT")),
            QuotaKey::RequestPercentage | QuotaKey::ControllerMutationRate => None,
        }
    }

    /// Checks a value to set for `entity` as Kafka's `validateQuotaKeyValue` does: IP
    /// entities take `connection_creation_rate` only, the others every other key. NaN
    /// and infinities are refused too, which no quota can mean.
    pub fn check(entity: &QuotaEntity, key: &str, value: f64) -> Result<QuotaKey, String> {
        let for_ip = entity.name(EntityType::Ip).is_some();
        let k = QuotaKey::from_name(key)
            .filter(|k| (*k == QuotaKey::ConnectionCreationRate) == for_ip)
            .ok_or_else(|| format!("Invalid configuration key {key}"))?;
        if !value.is_finite() {
            return Err(format!("Quota {key} must be a finite number"));
        }
        if value <= 0.0 {
            return Err(format!("Quota {key} must be greater than 0"));
        }
        if let Some((max, kind)) = k.integral_max() {
            if value > max {
                return Err(format!("Proposed value for {key} is too large for {kind}."));
            }
            if (value % 1.0).abs() > 1e-6 {
                return Err(format!("{key} cannot be a fractional value."));
            }
        }
        Ok(k)
    }
}

/// Every stored quota: entity → key → value.
pub type ClientQuotas = BTreeMap<QuotaEntity, BTreeMap<String, f64>>;

/// One change to the stored quotas: a value set (`Some`) or removed (`None`).
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaChange {
    pub entity: QuotaEntity,
    pub key: String,
    pub value: Option<f64>,
}

/// Applies changes to stored quotas, dropping entities left without a value: how
/// every backend replays them.
pub fn apply(quotas: &mut ClientQuotas, changes: impl IntoIterator<Item = QuotaChange>) {
    for c in changes {
        match c.value {
            Some(v) => {
                quotas.entry(c.entity).or_default().insert(c.key, v);
            }
            None => {
                if let Some(values) = quotas.get_mut(&c.entity) {
                    values.remove(&c.key);
                    if values.is_empty() {
                        quotas.remove(&c.entity);
                    }
                }
            }
        }
    }
}

/// A DescribeClientQuotas filter, checked as Kafka's `describeClientQuotas` checks it.
pub struct QuotaFilter {
    /// Types that must have exactly this name (`None`: `<default>`).
    exact: Vec<(EntityType, Option<String>)>,
    /// Types that must be present, whatever their name.
    any: Vec<EntityType>,
    strict: bool,
}

/// Why a filter is refused: INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown
/// entity type, as Kafka answers.
#[derive(Debug, PartialEq, Eq)]
pub enum FilterError {
    Invalid(String),
    Unsupported(String),
}

impl QuotaFilter {
    pub const MATCH_EXACT: i8 = 0;
    pub const MATCH_DEFAULT: i8 = 1;
    pub const MATCH_ANY: i8 = 2;

    /// From the request's (entity type, match type, match) components.
    pub fn new<'a>(
        components: impl IntoIterator<Item = (&'a str, i8, Option<&'a str>)>,
        strict: bool,
    ) -> Result<QuotaFilter, FilterError> {
        let invalid = |m: String| Err(FilterError::Invalid(m));
        let mut filter = QuotaFilter {
            exact: Vec::new(),
            any: Vec::new(),
            strict,
        };
        for (kind, match_type, name) in components {
            if kind.is_empty() {
                return invalid("Invalid empty entity type.".into());
            }
            let t = EntityType::from_name(kind)
                .ok_or_else(|| FilterError::Unsupported(format!("Unsupported entity type {kind}")));
            if let Ok(t) = t {
                if filter.exact.iter().any(|(k, _)| *k == t) || filter.any.contains(&t) {
                    return invalid(format!(
                        "Entity type {kind} cannot appear more than once in the filter."
                    ));
                }
            }
            let t = t?;
            match (match_type, name) {
                (Self::MATCH_EXACT, Some(n)) => filter.exact.push((t, Some(n.to_string()))),
                (Self::MATCH_EXACT, None) => {
                    return invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    )
                }
                (Self::MATCH_DEFAULT, None) => filter.exact.push((t, None)),
                (Self::MATCH_DEFAULT, Some(_)) => {
                    return invalid(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    )
                }
                (Self::MATCH_ANY, None) => filter.any.push(t),
                (Self::MATCH_ANY, Some(_)) => return invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ),
                (other, _) => {
                    return Err(FilterError::Unsupported(format!(
                        "Unknown match type {other}"
                    )))
                }
            }
        }
        let names =
            |t: EntityType| filter.exact.iter().any(|(k, _)| *k == t) || filter.any.contains(&t);
        if names(EntityType::Ip) && (names(EntityType::User) || names(EntityType::ClientId)) {
            return invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into());
        }
        Ok(filter)
    }

    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.parts().len() != self.exact.len() + self.any.len() {
            return false;
        }
        self.exact
            .iter()
            .all(|(t, name)| entity.name(*t) == Some(name.as_deref()))
            && self.any.iter().all(|t| entity.name(*t).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(parts: &[(&str, Option<&str>)]) -> QuotaEntity {
        QuotaEntity::parse(parts.iter().copied()).unwrap()
    }

    #[test]
    fn entities_are_checked_as_kafka_checks_them() {
        let e = entity(&[("client-id", None), ("user", Some("alice"))]);
        assert_eq!(e.to_string(), "/users/alice/clients/<default>");
        assert_eq!(e.name(EntityType::ClientId), Some(None));
        assert_eq!(e.name(EntityType::Ip), None);
        let refused =
            |parts: &[(&str, Option<&str>)]| QuotaEntity::parse(parts.iter().copied()).unwrap_err();
        assert_eq!(refused(&[]), "Invalid empty client quota entity");
        assert_eq!(
            refused(&[("group", Some("g"))]),
            "Unhandled client quota entity type: group"
        );
        assert_eq!(refused(&[("user", Some(""))]), "Empty user not supported");
        assert!(refused(&[("user", None), ("user", Some("a"))]).contains("duplicate"));
        assert!(refused(&[("ip", None), ("user", Some("a"))]).contains("combination"));
        assert!(refused(&[("ip", Some("host.example"))]).contains("not a valid IP"));
        assert_eq!(
            entity(&[("ip", Some("10.0.0.1"))]).to_string(),
            "/ips/10.0.0.1"
        );
    }

    #[test]
    fn values_are_checked_by_key_type() {
        let user = entity(&[("user", None)]);
        let check = |key, value| QuotaKey::check(&user, key, value);
        assert_eq!(
            check("producer_byte_rate", 1024.0),
            Ok(QuotaKey::ProducerByteRate)
        );
        assert_eq!(
            check("nope", 1.0).unwrap_err(),
            "Invalid configuration key nope"
        );
        assert!(check("consumer_byte_rate", 0.0)
            .unwrap_err()
            .contains("greater than 0"));
        assert!(check("consumer_byte_rate", 1.5)
            .unwrap_err()
            .contains("fractional"));
        assert!(check("request_percentage", 12.5).is_ok());
        assert!(check("request_percentage", f64::NAN).is_err());
        assert!(check("connection_creation_rate", 5.0).is_err(), "an IP key");
        let ip = entity(&[("ip", None)]);
        assert!(QuotaKey::check(&ip, "connection_creation_rate", 5.0).is_ok());
        assert!(QuotaKey::check(&ip, "connection_creation_rate", 3e9)
            .unwrap_err()
            .contains("an INT"));
        assert!(QuotaKey::check(&ip, "producer_byte_rate", 5.0).is_err());
    }

    #[test]
    fn filters_match_as_kafka_matches() {
        let alice = entity(&[("user", Some("alice"))]);
        let alice_c = entity(&[("user", Some("alice")), ("client-id", Some("c"))]);
        let default_user = entity(&[("user", None)]);
        let f = |c: &[(&str, i8, Option<&str>)], strict| {
            QuotaFilter::new(c.iter().copied(), strict).unwrap()
        };
        let exact = f(&[("user", 0, Some("alice"))], false);
        assert!(exact.matches(&alice) && exact.matches(&alice_c));
        assert!(!exact.matches(&default_user));
        let strict = f(&[("user", 0, Some("alice"))], true);
        assert!(strict.matches(&alice) && !strict.matches(&alice_c));
        let default = f(&[("user", 1, None)], false);
        assert!(default.matches(&default_user) && !default.matches(&alice));
        let any = f(&[("user", 2, None)], false);
        assert!(any.matches(&default_user) && any.matches(&alice_c));
        assert!(f(&[], false).matches(&alice) && !f(&[], true).matches(&alice));
        let refused =
            |c: &[(&str, i8, Option<&str>)]| QuotaFilter::new(c.iter().copied(), false).err();
        assert!(matches!(
            refused(&[("group", 2, None)]),
            Some(FilterError::Unsupported(_))
        ));
        assert!(matches!(
            refused(&[("user", 0, None)]),
            Some(FilterError::Invalid(_))
        ));
        assert!(matches!(
            refused(&[("user", 2, None), ("user", 1, None)]),
            Some(FilterError::Invalid(_))
        ));
        assert!(matches!(
            refused(&[("ip", 2, None), ("user", 2, None)]),
            Some(FilterError::Invalid(_))
        ));
        assert!(matches!(
            refused(&[("user", 7, None)]),
            Some(FilterError::Unsupported(_))
        ));
    }

    #[test]
    fn removing_the_last_value_removes_the_entity() {
        let e = entity(&[("client-id", Some("c"))]);
        let mut q = ClientQuotas::new();
        let set = |v| QuotaChange {
            entity: e.clone(),
            key: "producer_byte_rate".into(),
            value: v,
        };
        apply(&mut q, [set(Some(10.0))]);
        assert_eq!(q[&e]["producer_byte_rate"], 10.0);
        apply(&mut q, [set(None)]);
        assert!(q.is_empty());
    }
}
