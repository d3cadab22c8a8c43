//! Who is asking: the principal a connection speaks for, and the caller of one request.
//!
//! A connection starts as `User:ANONYMOUS`, as on a Kafka PLAINTEXT listener; an
//! authenticated listener (TLS client certificates, SASL) replaces the principal before
//! any other request is served. Authorization and quotas read it from the [`Caller`].

use std::fmt;
use std::sync::Arc;

/// A Kafka principal, `type:name` (`User:alice`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    pub kind: Arc<str>,
    pub name: Arc<str>,
}

impl Principal {
    /// The principal of an unauthenticated connection.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    pub fn user(name: &str) -> Principal {
        Principal {
            kind: "User".into(),
            name: name.into(),
        }
    }
}

impl Default for Principal {
    fn default() -> Principal {
        Principal::anonymous()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// Who sent one request: from its header and its connection.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub client_id: String,
    /// The peer's address as Kafka shows it in group descriptions (`/127.0.0.1`).
    pub host: String,
    pub principal: Principal,
    /// Name of the listener the request came through: answers name brokers by their
    /// address on that listener.
    pub listener: Arc<str>,
}

/// A listener as its connections know it: Kafka's listener name and security protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    pub name: Arc<str>,
    pub protocol: SecurityProtocol,
}

/// A listener's security protocol, as Kafka names them in `listener.security.protocol.map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Connections must pass SASL before any request but ApiVersions and the SASL ones.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// The socket is wrapped in TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

impl std::str::FromStr for SecurityProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "PLAINTEXT" => Ok(SecurityProtocol::Plaintext),
            "SSL" => Ok(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Ok(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Ok(SecurityProtocol::SaslSsl),
            other => Err(format!(
                "unknown security protocol '{other}' (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
            )),
        }
    }
}
