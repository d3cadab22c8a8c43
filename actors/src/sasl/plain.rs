//! SASL/PLAIN (RFC 4616): one message, `[authzid] NUL authcid NUL password`.

/// A PLAIN login. `Debug` hides the password.
pub struct PlainLogin {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for PlainLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainLogin({}, <password hidden>)", self.user)
    }
}

/// Parses a PLAIN message; `None` when it is malformed, names no user or no password,
/// or asks for an authorization id other than the user (Kafka refuses those too).
pub fn parse(message: &[u8]) -> Option<PlainLogin> {
    let text = std::str::from_utf8(message).ok()?;
    let mut parts = text.split('\0');
    let (authzid, user, password) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || user.is_empty() || password.is_empty() {
        return None;
    }
    if !authzid.is_empty() && authzid != user {
        return None;
    }
    Some(PlainLogin {
        user: user.to_string(),
        password: password.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_logins_as_kafka_accepts_them() {
        let l = parse(b"\0alice\0secret").unwrap();
        assert_eq!((l.user.as_str(), l.password.as_str()), ("alice", "secret"));
        assert!(parse(b"alice\0alice\0secret").is_some());
        for bad in [
            &b"bob\0alice\0secret"[..],
            b"\0\0secret",
            b"\0alice\0",
            b"\0alice",
            b"\0alice\0secret\0more",
            b"\0\xff\0secret",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
        assert!(!format!("{:?}", parse(b"\0alice\0secret").unwrap()).contains("secret"));
    }
}
