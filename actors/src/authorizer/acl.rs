//! Kafka's ACL vocabulary: resource types, pattern types, operations, permissions
//! (with their wire codes), bindings as CreateAcls sends them, and the filters
//! DescribeAcls and DeleteAcls match bindings with (Kafka's `AclBindingFilter`).

use std::fmt;

/// The name of the one CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name matching every resource of its type.
pub const WILDCARD: &str = "*";
/// A principal matching every user (`User:*`).
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// Why a binding or filter is refused; CreateAcls, DescribeAcls and DeleteAcls answer
/// INVALID_REQUEST with this message, as Kafka's controller does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidAcl(pub String);

macro_rules! codes {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),* }

        impl $name {
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code),* }
            }

            pub fn from_code(code: i8) -> Option<$name> {
                match code { $($code => Some($name::$variant),)* _ => None }
            }
        }
    };
}

codes!(
    /// Kafka's `ResourceType`; `Any` only in filters.
    ResourceType {
        Any = 1,
        Topic = 2,
        Group = 3,
        Cluster = 4,
        TransactionalId = 5,
        DelegationToken = 6,
        User = 7,
    }
);

codes!(
    /// Kafka's `PatternType`; `Any` and `Match` only in filters.
    PatternType {
        Any = 1,
        Match = 2,
        Literal = 3,
        Prefixed = 4,
    }
);

codes!(
    /// Kafka's `AclOperation`; `Any` only in filters.
    Operation {
        Any = 1,
        All = 2,
        Read = 3,
        Write = 4,
        Create = 5,
        Delete = 6,
        Alter = 7,
        Describe = 8,
        ClusterAction = 9,
        DescribeConfigs = 10,
        AlterConfigs = 11,
        IdempotentWrite = 12,
        CreateTokens = 13,
        DescribeTokens = 14,
        TwoPhaseCommit = 15,
    }
);

codes!(
    /// Kafka's `AclPermissionType`; `Any` only in filters.
    Permission {
        Any = 1,
        Deny = 2,
        Allow = 3,
    }
);

impl ResourceType {
    /// The operations Kafka's authorized-operations fields report for a resource
    /// type (`AclEntry.supportedOperations`).
    pub fn operations(self) -> &'static [Operation] {
        use Operation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Any => &[],
        }
    }
}

impl Operation {
    /// Whether an ALLOW of `self` grants `asked` (Kafka's `StandardAuthorizerData`):
    /// ALL grants everything, READ, WRITE, DELETE and ALTER imply DESCRIBE, and
    /// ALTER_CONFIGS implies DESCRIBE_CONFIGS.
    pub fn allow_grants(self, asked: Operation) -> bool {
        use Operation::*;
        self == All
            || self == asked
            || (asked == Describe && matches!(self, Read | Write | Delete | Alter))
            || (asked == DescribeConfigs && self == AlterConfigs)
    }

    /// Whether a DENY of `self` refuses `asked`: only the same operation or ALL.
    pub fn deny_refuses(self, asked: Operation) -> bool {
        self == Operation::All || self == asked
    }
}

/// Which resources a binding applies to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    /// `Literal` (the name, or every resource for `*`) or `Prefixed`.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// Whether the pattern covers the resource `resource_type`/`name`.
    pub fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => self.name == name || self.name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&self.name),
                PatternType::Any | PatternType::Match => false,
            }
    }
}

/// Who, from where, may (or may not) do what.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessEntry {
    /// `type:name`, as sent (`User:alice`, `User:*`).
    pub principal: String,
    /// An IP address, or `*` for every host.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

/// One ACL: a resource pattern and an access entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessEntry,
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}:{:?}:{} {:?} {} {:?} from {}",
            self.pattern.resource_type,
            self.pattern.pattern_type,
            self.pattern.name,
            self.entry.permission,
            self.entry.principal,
            self.entry.operation,
            self.entry.host
        )
    }
}

impl AclBinding {
    /// A binding from the wire's codes, checked as Kafka's `AclControlManager.validateNewAcl`.
    pub fn new(
        resource: (i8, &str, i8),
        principal: &str,
        host: &str,
        operation: i8,
        permission: i8,
    ) -> Result<AclBinding, InvalidAcl> {
        let (resource_type, name, pattern_type) = resource;
        let resource_type = ResourceType::from_code(resource_type)
            .filter(|t| *t != ResourceType::Any)
            .ok_or_else(|| InvalidAcl(format!("invalid resource type {resource_type}")))?;
        let pattern_type = PatternType::from_code(pattern_type)
            .filter(|p| matches!(p, PatternType::Literal | PatternType::Prefixed))
            .ok_or_else(|| InvalidAcl(format!("invalid pattern type {pattern_type}")))?;
        let operation = Operation::from_code(operation)
            .filter(|o| *o != Operation::Any)
            .ok_or_else(|| InvalidAcl(format!("invalid operation {operation}")))?;
        let permission = Permission::from_code(permission)
            .filter(|p| *p != Permission::Any)
            .ok_or_else(|| InvalidAcl(format!("invalid permission type {permission}")))?;
        if name.is_empty() {
            return Err(InvalidAcl("resource name must not be empty".into()));
        }
        if resource_type == ResourceType::Cluster && name != CLUSTER_NAME {
            return Err(InvalidAcl(format!(
                "the only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            )));
        }
        match principal.split_once(':') {
            Some((kind, who)) if !kind.is_empty() && !who.is_empty() => {}
            _ => {
                return Err(InvalidAcl(format!(
                    "could not parse principal '{principal}': expected type:name"
                )))
            }
        }
        if host.is_empty() {
            return Err(InvalidAcl("host must not be empty (use * for any)".into()));
        }
        Ok(AclBinding {
            pattern: ResourcePattern {
                resource_type,
                name: name.to_string(),
                pattern_type,
            },
            entry: AccessEntry {
                principal: principal.to_string(),
                host: host.to_string(),
                operation,
                permission,
            },
        })
    }
}

/// Which bindings DescribeAcls lists and DeleteAcls removes (Kafka's `AclBindingFilter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    /// `None` matches every name.
    pub name: Option<String>,
    /// `Any`: every pattern of exactly `name`; `Match`: every pattern that applies to
    /// the resource `name`; `Literal`/`Prefixed`: that pattern type with exactly `name`.
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclFilter {
    /// A filter from the wire's codes; unknown codes are refused.
    pub fn new(
        resource: (i8, Option<&str>, i8),
        principal: Option<&str>,
        host: Option<&str>,
        operation: i8,
        permission: i8,
    ) -> Result<AclFilter, InvalidAcl> {
        let (resource_type, name, pattern_type) = resource;
        Ok(AclFilter {
            resource_type: ResourceType::from_code(resource_type)
                .ok_or_else(|| InvalidAcl(format!("invalid resource type {resource_type}")))?,
            name: name.map(str::to_string),
            pattern_type: PatternType::from_code(pattern_type)
                .ok_or_else(|| InvalidAcl(format!("invalid pattern type {pattern_type}")))?,
            principal: principal.map(str::to_string),
            host: host.map(str::to_string),
            operation: Operation::from_code(operation)
                .ok_or_else(|| InvalidAcl(format!("invalid operation {operation}")))?,
            permission: Permission::from_code(permission)
                .ok_or_else(|| InvalidAcl(format!("invalid permission type {permission}")))?,
        })
    }

    pub fn matches(&self, b: &AclBinding) -> bool {
        self.matches_pattern(&b.pattern) && self.matches_entry(&b.entry)
    }

    fn matches_pattern(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        let exact = match self.pattern_type {
            PatternType::Any => true,
            PatternType::Match => false,
            t => {
                if t != p.pattern_type {
                    return false;
                }
                true
            }
        };
        let Some(name) = &self.name else {
            return true;
        };
        if exact {
            return *name == p.name;
        }
        match p.pattern_type {
            PatternType::Literal => *name == p.name || p.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&p.name),
            PatternType::Any | PatternType::Match => false,
        }
    }

    fn matches_entry(&self, e: &AccessEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == Operation::Any || self.operation == e.operation)
            && (self.permission == Permission::Any || self.permission == e.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(t: ResourceType, name: &str, p: PatternType, principal: &str) -> AclBinding {
        AclBinding::new(
            (t.code(), name, p.code()),
            principal,
            "*",
            Operation::Read.code(),
            Permission::Allow.code(),
        )
        .unwrap()
    }

    fn filter(t: ResourceType, name: Option<&str>, p: PatternType) -> AclFilter {
        AclFilter::new(
            (t.code(), name, p.code()),
            None,
            None,
            Operation::Any.code(),
            Permission::Any.code(),
        )
        .unwrap()
    }

    #[test]
    fn bindings_are_checked_as_kafka_checks_them() {
        let bad = |r: (i8, &str, i8), principal: &str, op: i8| {
            AclBinding::new(r, principal, "*", op, Permission::Allow.code()).unwrap_err()
        };
        assert!(bad((1, "t", 3), "User:a", 3).0.contains("resource type"));
        assert!(bad((2, "t", 2), "User:a", 3).0.contains("pattern type"));
        assert!(bad((2, "t", 3), "User:a", 1).0.contains("operation"));
        assert!(bad((2, "t", 3), "alice", 3).0.contains("principal"));
        assert!(bad((4, "other", 3), "User:a", 3).0.contains(CLUSTER_NAME));
        assert!(bad((2, "", 3), "User:a", 3).0.contains("empty"));
        assert!(AclBinding::new((4, CLUSTER_NAME, 3), "User:a", "*", 7, 3).is_ok());
    }

    #[test]
    fn filters_match_as_kafka_filters_do() {
        let lit = binding(
            ResourceType::Topic,
            "orders",
            PatternType::Literal,
            "User:a",
        );
        let star = binding(ResourceType::Topic, "*", PatternType::Literal, "User:a");
        let pre = binding(ResourceType::Topic, "ord", PatternType::Prefixed, "User:a");
        let group = binding(
            ResourceType::Group,
            "orders",
            PatternType::Literal,
            "User:a",
        );
        let all = filter(ResourceType::Any, None, PatternType::Any);
        assert!([&lit, &star, &pre, &group].iter().all(|b| all.matches(b)));
        // ANY with a name: exactly that name, any pattern type.
        let any = filter(ResourceType::Topic, Some("orders"), PatternType::Any);
        assert!(any.matches(&lit) && !any.matches(&star) && !any.matches(&pre));
        // MATCH: every pattern that applies to the resource.
        let m = filter(ResourceType::Topic, Some("orders"), PatternType::Match);
        assert!(m.matches(&lit) && m.matches(&star) && m.matches(&pre) && !m.matches(&group));
        let p = filter(ResourceType::Topic, Some("ord"), PatternType::Prefixed);
        assert!(p.matches(&pre) && !p.matches(&lit));
        let mut by_principal = all.clone();
        by_principal.principal = Some("User:b".into());
        assert!(!by_principal.matches(&lit));
    }

    #[test]
    fn implications_follow_kafka() {
        use Operation::*;
        for op in [Read, Write, Delete, Alter, All, Describe] {
            assert!(op.allow_grants(Describe), "{op:?}");
        }
        assert!(!Create.allow_grants(Describe));
        assert!(AlterConfigs.allow_grants(DescribeConfigs));
        assert!(!Read.allow_grants(Write));
        assert!(!Read.deny_refuses(Describe));
        assert!(All.deny_refuses(Describe));
    }
}
