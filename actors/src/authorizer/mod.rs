//! Authorization: Kafka ACLs, decided as Kafka's `StandardAuthorizer` decides.
//!
//! The ACL bindings are a table of the metadata store, shared by every gateway on it
//! ([`store`]); this gateway's copy changes them (CreateAcls, DeleteAcls) and
//! publishes them as an immutable [`AclTable`]. Handlers ask one
//! [`Access`] per request (`Gateway::access`), which reads the latest table.
//! With no authorizer configured every request is allowed, as in Kafka.

pub mod acl;
pub mod store;

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;

pub use acl::{
    AclBinding, AclFilter, InvalidAcl, Operation, PatternType, Permission, ResourceType,
    CLUSTER_NAME,
};
use acl::{WILDCARD, WILDCARD_PRINCIPAL};

use crate::session::Caller;

/// The `authorizer` settings: who bypasses ACLs and what a resource without ACLs allows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    /// Principals allowed everything (`super_users`, `User:admin;User:bob`).
    pub super_users: Vec<String>,
    /// Kafka's `allow.everyone.if.no.acl.found`: a resource no ACL names is open.
    pub allow_everyone_if_no_acl_found: bool,
}

/// Every ACL binding in force, by resource type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AclTable {
    by_type: HashMap<ResourceType, Vec<AclBinding>>,
}

impl AclTable {
    pub fn new(bindings: impl IntoIterator<Item = AclBinding>) -> AclTable {
        let mut by_type: HashMap<ResourceType, Vec<AclBinding>> = HashMap::new();
        for b in bindings {
            by_type.entry(b.pattern.resource_type).or_default().push(b);
        }
        for list in by_type.values_mut() {
            list.sort();
            list.dedup();
        }
        AclTable { by_type }
    }

    pub fn all(&self) -> impl Iterator<Item = &AclBinding> {
        self.by_type.values().flatten()
    }

    fn of_type(&self, t: ResourceType) -> &[AclBinding] {
        self.by_type.get(&t).map_or(&[], Vec::as_slice)
    }
}

/// The authorizer of a running gateway: its settings, the store and the table it publishes.
#[derive(Clone)]
pub struct Authorizer {
    pub settings: Arc<AuthorizerSettings>,
    pub store: store::AclStore,
    pub table: watch::Receiver<Arc<AclTable>>,
}

/// What one caller may do, against the ACLs in force when its request arrived.
/// The one place requests are authorized.
#[derive(Clone)]
pub struct Access {
    /// `None` without an authorizer: everything is allowed.
    rules: Option<(Arc<AuthorizerSettings>, Arc<AclTable>)>,
    principal: String,
    /// The peer's IP address, as ACL hosts name it (no leading `/`).
    host: String,
}

impl Access {
    pub fn new(authorizer: Option<&Authorizer>, caller: &Caller) -> Access {
        Access {
            rules: authorizer.map(|a| (a.settings.clone(), a.table.borrow().clone())),
            principal: caller.principal.to_string(),
            host: caller.host.trim_start_matches('/').to_string(),
        }
    }

    /// Everything allowed: for requests made by the gateway itself and for tests.
    pub fn unrestricted() -> Access {
        Access {
            rules: None,
            principal: String::new(),
            host: String::new(),
        }
    }

    /// Whether `operation` on the resource is allowed; a refusal is logged, as
    /// Kafka's authorizer logs denials.
    pub fn allows(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        let allowed = self.permits(operation, resource_type, name);
        if !allowed {
            tracing::info!(
                principal = %self.principal,
                host = %self.host,
                ?operation,
                ?resource_type,
                resource = name,
                "denied by ACLs"
            );
        }
        allowed
    }

    pub fn topic(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Topic, name)
    }

    pub fn group(&self, operation: Operation, name: &str) -> bool {
        self.allows(operation, ResourceType::Group, name)
    }

    pub fn cluster(&self, operation: Operation) -> bool {
        self.allows(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// As [`Access::allows`], without a log line: for lists filtered by what the
    /// caller may see (Kafka's `logIfDenied = false`).
    pub fn permits(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        let Some((settings, table)) = &self.rules else {
            return true;
        };
        if settings.super_users.contains(&self.principal) {
            return true;
        }
        let mut any_acl = false;
        let mut allowed = false;
        for b in table.of_type(resource_type) {
            if !b.pattern.covers(resource_type, name) {
                continue;
            }
            any_acl = true;
            if !self.concerns_me(&b.entry) {
                continue;
            }
            match b.entry.permission {
                Permission::Deny if b.entry.operation.deny_refuses(operation) => return false,
                Permission::Allow if b.entry.operation.allow_grants(operation) => allowed = true,
                _ => {}
            }
        }
        allowed || (!any_acl && settings.allow_everyone_if_no_acl_found)
    }

    /// Kafka's `authorizeByResourceType`: whether `operation` is allowed on at least
    /// one resource of the type, allowed patterns not wholly covered by a denial.
    /// InitProducerId accepts WRITE on any topic in place of IDEMPOTENT_WRITE this way.
    pub fn allows_any(&self, operation: Operation, resource_type: ResourceType) -> bool {
        let Some((_, table)) = &self.rules else {
            return true;
        };
        // Super users, and an open resource type, through the ordinary decision.
        if self.permits(operation, resource_type, "hardcode") {
            return true;
        }
        let mine = |permission: Permission| {
            table.of_type(resource_type).iter().filter(move |b| {
                b.entry.permission == permission
                    && (b.entry.operation == operation || b.entry.operation == Operation::All)
                    && self.concerns_me(&b.entry)
            })
        };
        let denied = |pattern: &acl::ResourcePattern| {
            mine(Permission::Deny).any(|d| {
                (d.pattern.pattern_type == PatternType::Literal && d.pattern.name == WILDCARD)
                    || match (d.pattern.pattern_type, pattern.pattern_type) {
                        (PatternType::Literal, PatternType::Literal) => {
                            d.pattern.name == pattern.name
                        }
                        (PatternType::Prefixed, _) => pattern.name.starts_with(&d.pattern.name),
                        _ => false,
                    }
            })
        };
        mine(Permission::Allow).any(|a| !denied(&a.pattern))
    }

    /// Kafka's authorized-operations bit field for a resource: the bit of each
    /// operation its type supports that the caller may perform.
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        resource_type
            .operations()
            .iter()
            .filter(|op| self.permits(**op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    fn concerns_me(&self, entry: &acl::AccessEntry) -> bool {
        (entry.principal == self.principal || entry.principal == WILDCARD_PRINCIPAL)
            && (entry.host == self.host || entry.host == WILDCARD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Principal;

    fn acl(
        spec: (ResourceType, &str, PatternType),
        who: (&str, &str),
        op: Operation,
        p: Permission,
    ) -> AclBinding {
        let (t, name, pattern) = spec;
        AclBinding::new(
            (t.code(), name, pattern.code()),
            who.0,
            who.1,
            op.code(),
            p.code(),
        )
        .unwrap()
    }

    fn access(
        user: &str,
        host: &str,
        settings: AuthorizerSettings,
        acls: Vec<AclBinding>,
    ) -> Access {
        Access {
            rules: Some((Arc::new(settings), Arc::new(AclTable::new(acls)))),
            principal: Principal::user(user).to_string(),
            host: host.into(),
        }
    }

    use Operation::*;
    use PatternType::*;
    use Permission::*;
    use ResourceType::*;

    const ANY_HOST: (&str, &str) = ("User:alice", "*");

    #[test]
    fn without_an_authorizer_everything_is_allowed() {
        let a = Access::new(None, &Caller::default());
        assert!(a.topic(Write, "t") && a.cluster(Alter) && a.allows_any(Write, Topic));
        assert_eq!(a.operations(Group, "g"), 0b1_0100_1000);
    }

    #[test]
    fn no_acl_means_denied_unless_everyone_is_allowed() {
        let closed = access("alice", "10.0.0.1", AuthorizerSettings::default(), vec![]);
        assert!(!closed.topic(Read, "t"));
        let open = AuthorizerSettings {
            allow_everyone_if_no_acl_found: true,
            ..Default::default()
        };
        let other = acl((Topic, "t", Literal), ("User:bob", "*"), Read, Allow);
        let a = access("alice", "10.0.0.1", open, vec![other]);
        assert!(a.topic(Read, "u"), "no ACL names u");
        assert!(!a.topic(Read, "t"), "t has ACLs, none for alice");
    }

    #[test]
    fn literal_prefixed_and_wildcard_patterns() {
        let a = access(
            "alice",
            "10.0.0.1",
            Default::default(),
            vec![
                acl((Topic, "orders", Literal), ANY_HOST, Read, Allow),
                acl((Topic, "pay-", Prefixed), ANY_HOST, Write, Allow),
                acl((Group, "*", Literal), ANY_HOST, Read, Allow),
            ],
        );
        assert!(a.topic(Read, "orders") && !a.topic(Read, "orders2"));
        assert!(a.topic(Write, "pay-eu") && !a.topic(Write, "pa"));
        assert!(a.group(Read, "any-group"));
        assert!(!a.topic(Write, "orders"));
    }

    #[test]
    fn deny_wins_and_implications_apply_to_allows_only() {
        let a = access(
            "alice",
            "10.0.0.1",
            Default::default(),
            vec![
                acl((Topic, "*", Literal), ANY_HOST, All, Allow),
                acl((Topic, "secret", Prefixed), ANY_HOST, Read, Deny),
            ],
        );
        assert!(a.topic(Write, "orders") && a.topic(Read, "orders"));
        assert!(!a.topic(Read, "secret-1"));
        // A denied READ leaves DESCRIBE, which the ALL allow grants.
        assert!(a.topic(Describe, "secret-1"));
        let b = access(
            "alice",
            "10.0.0.1",
            Default::default(),
            vec![
                acl((Topic, "t", Literal), ANY_HOST, Write, Allow),
                acl((Topic, "t", Literal), ANY_HOST, AlterConfigs, Allow),
            ],
        );
        assert!(b.topic(Describe, "t") && b.topic(DescribeConfigs, "t"));
        assert!(!b.topic(Read, "t") && !b.topic(Create, "t"));
    }

    #[test]
    fn principals_hosts_and_super_users() {
        let acls = vec![
            acl((Topic, "t", Literal), ("User:*", "10.0.0.1"), Read, Allow),
            acl((Topic, "t", Literal), ("User:bob", "*"), Read, Deny),
        ];
        let supers = AuthorizerSettings {
            super_users: vec!["User:bob".into()],
            ..Default::default()
        };
        assert!(access("alice", "10.0.0.1", Default::default(), acls.clone()).topic(Read, "t"));
        assert!(!access("alice", "10.0.0.2", Default::default(), acls.clone()).topic(Read, "t"));
        assert!(!access("bob", "10.0.0.1", Default::default(), acls.clone()).topic(Read, "t"));
        assert!(access("bob", "10.0.0.2", supers, acls).topic(Read, "t"));
    }

    #[test]
    fn caller_hosts_lose_their_slash() {
        let caller = Caller {
            host: "/127.0.0.1".into(),
            principal: Principal::user("alice"),
            ..Default::default()
        };
        let a = Access::new(None, &caller);
        assert_eq!(
            (a.host.as_str(), a.principal.as_str()),
            ("127.0.0.1", "User:alice")
        );
    }

    #[test]
    fn by_resource_type_as_kafka_decides_it() {
        let allow = |name, p| acl((Topic, name, p), ANY_HOST, Write, Allow);
        let deny = |name, p| acl((Topic, name, p), ANY_HOST, Write, Deny);
        let by = |acls| access("alice", "h", Default::default(), acls).allows_any(Write, Topic);
        assert!(!by(vec![]));
        assert!(by(vec![allow("t", Literal)]));
        assert!(!by(vec![allow("t", Literal), deny("t", Literal)]));
        assert!(by(vec![allow("t", Literal), deny("u", Literal)]));
        assert!(!by(vec![allow("ab", Prefixed), deny("a", Prefixed)]));
        assert!(!by(vec![allow("t", Literal), deny("*", Literal)]));
        let read_only = acl((Topic, "t", Literal), ANY_HOST, Read, Allow);
        assert!(!by(vec![read_only]));
    }

    #[test]
    fn authorized_operations_are_the_allowed_bits() {
        let a = access(
            "alice",
            "h",
            Default::default(),
            vec![acl((Topic, "t", Literal), ANY_HOST, Read, Allow)],
        );
        assert_eq!(a.operations(Topic, "t"), (1 << 3) | (1 << 8));
        assert_eq!(a.operations(Topic, "u"), 0);
    }
}
