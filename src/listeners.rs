//! Kafka-style listener settings: `listeners`, `listener_security_protocol_map` and
//! `advertised_listeners`, resolved into the listeners the gateway binds.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use iggy_kafka_actors::session::{Listener, SecurityProtocol};
use iggy_kafka_actors::store::Endpoint;

/// One listener to bind: its name, protocol, address, and what it advertises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerConfig {
    pub name: String,
    pub protocol: SecurityProtocol,
    pub bind: SocketAddr,
    /// Host clients are told; the bind address's IP when unset.
    pub advertised_host: Option<String>,
    /// Port clients are told; the bound port when unset (or 0).
    pub advertised_port: Option<u16>,
}

impl ListenerConfig {
    pub fn listener(&self) -> Listener {
        Listener {
            name: Arc::from(self.name.as_str()),
            protocol: self.protocol,
        }
    }

    /// What this listener advertises, once its real address is known.
    pub fn endpoint(&self, bound: SocketAddr) -> Endpoint {
        Endpoint {
            listener: self.name.clone(),
            host: self
                .advertised_host
                .clone()
                .unwrap_or_else(|| bound.ip().to_string()),
            port: self
                .advertised_port
                .filter(|p| *p != 0)
                .unwrap_or(bound.port()),
        }
    }
}

/// A listener setting that cannot be used: the setting's name and why.
pub type Invalid = (&'static str, String);

/// Resolves `listeners` with `listener_security_protocol_map` and `advertised_listeners`.
pub fn resolve(
    listeners: &str,
    protocol_map: Option<&str>,
    advertised_listeners: Option<&str>,
) -> Result<Vec<ListenerConfig>, Invalid> {
    let map = match protocol_map {
        Some(m) => parse_protocol_map(m)?,
        None => HashMap::new(),
    };
    let mut out: Vec<ListenerConfig> = Vec::new();
    for (name, host, port) in parse_list("listeners", listeners)? {
        let protocol = match map.get(&name) {
            Some(p) => *p,
            None => name.parse().map_err(|_| {
                (
                    "listener_security_protocol_map",
                    format!("listener '{name}' has no security protocol: map it like {name}:SSL"),
                )
            })?,
        };
        if out.iter().any(|l| l.name == name) {
            return Err(("listeners", format!("listener name '{name}' is used twice")));
        }
        let bind = bind_address(&host, port)
            .map_err(|reason| ("listeners", format!("{name}://{host}:{port}: {reason}")))?;
        if let Some(other) = out.iter().find(|l| l.bind == bind && port != 0) {
            return Err((
                "listeners",
                format!("'{name}' and '{}' both bind {bind}", other.name),
            ));
        }
        out.push(ListenerConfig {
            name,
            protocol,
            bind,
            advertised_host: None,
            advertised_port: None,
        });
    }
    if out.is_empty() {
        return Err(("listeners", "names no listener".into()));
    }
    if let Some(advertised) = advertised_listeners {
        let mut seen = Vec::new();
        for (name, host, port) in parse_list("advertised_listeners", advertised)? {
            if seen.contains(&name) {
                return Err((
                    "advertised_listeners",
                    format!("listener name '{name}' is used twice"),
                ));
            }
            let Some(l) = out.iter_mut().find(|l| l.name == name) else {
                return Err((
                    "advertised_listeners",
                    format!("'{name}' is not one of the listeners"),
                ));
            };
            l.advertised_host = (!host.is_empty()).then_some(host);
            l.advertised_port = Some(port);
            seen.push(name);
        }
    }
    for (key, entry) in &map {
        if !out.iter().any(|l| &l.name == key) {
            return Err((
                "listener_security_protocol_map",
                format!("'{key}:{entry:?}' names no listener"),
            ));
        }
    }
    Ok(out)
}

/// `NAME://HOST:PORT,...` into (upper-case name, host without brackets, port).
fn parse_list(setting: &'static str, value: &str) -> Result<Vec<(String, String, u16)>, Invalid> {
    value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let bad = |why: &str| (setting, format!("'{entry}': {why}"));
            let (name, address) = entry
                .split_once("://")
                .ok_or_else(|| bad("expected NAME://HOST:PORT"))?;
            let name = name.trim().to_ascii_uppercase();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(bad("a listener name is letters, digits and '_'"));
            }
            let (host, port) = address
                .rsplit_once(':')
                .ok_or_else(|| bad("expected NAME://HOST:PORT"))?;
            let port: u16 = port
                .parse()
                .map_err(|_| bad("the port is not a number up to 65535"))?;
            let host = match host.strip_prefix('[') {
                Some(v6) => v6
                    .strip_suffix(']')
                    .ok_or_else(|| bad("unclosed '[' in the host"))?,
                None if host.contains(':') => return Err(bad("an IPv6 host goes in brackets")),
                None => host,
            };
            Ok((name, host.to_string(), port))
        })
        .collect()
}

/// `NAME:PROTOCOL,...`.
fn parse_protocol_map(value: &str) -> Result<HashMap<String, SecurityProtocol>, Invalid> {
    let setting = "listener_security_protocol_map";
    let mut map = HashMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| (setting, format!("'{entry}': expected NAME:PROTOCOL")))?;
        let name = name.trim().to_ascii_uppercase();
        let protocol: SecurityProtocol = protocol
            .trim()
            .parse()
            .map_err(|e| (setting, format!("'{entry}': {e}")))?;
        if map.insert(name.clone(), protocol).is_some() {
            return Err((setting, format!("listener name '{name}' is mapped twice")));
        }
    }
    Ok(map)
}

/// An empty host binds every interface, as in Kafka; a name is resolved once, here.
fn bind_address(host: &str, port: u16) -> Result<SocketAddr, String> {
    if host.is_empty() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve '{host}': {e}"))?
        .next()
        .ok_or_else(|| format!("'{host}' resolves to no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_default_to_their_protocol_and_custom_names_are_mapped() {
        let ls = resolve(
            "PLAINTEXT://127.0.0.1:9092, ssl://[::1]:9093,INTERNAL://:9094",
            Some("INTERNAL:SASL_SSL"),
            Some("INTERNAL://kafka.internal:19094,SSL://:0"),
        )
        .unwrap();
        let got: Vec<_> = ls
            .iter()
            .map(|l| (l.name.as_str(), l.protocol, l.bind.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "PLAINTEXT",
                    SecurityProtocol::Plaintext,
                    "127.0.0.1:9092".into()
                ),
                ("SSL", SecurityProtocol::Ssl, "[::1]:9093".into()),
                (
                    "INTERNAL",
                    SecurityProtocol::SaslSsl,
                    "0.0.0.0:9094".to_string()
                ),
            ]
        );
        let bound: SocketAddr = "[::1]:40000".parse().unwrap();
        assert_eq!(
            ls[1].endpoint(bound).host,
            "::1",
            "empty host: the bound IP"
        );
        assert_eq!(ls[1].endpoint(bound).port, 40000, "port 0: the bound port");
        let internal = ls[2].endpoint("0.0.0.0:9094".parse().unwrap());
        assert_eq!(
            (internal.host.as_str(), internal.port),
            ("kafka.internal", 19094)
        );
    }

    #[test]
    fn bad_listener_settings_name_the_setting() {
        let cases = [
            ("FOO://:9092", None, None, "listener_security_protocol_map"),
            (
                "PLAINTEXT://:9092,PLAINTEXT://:9093",
                None,
                None,
                "listeners",
            ),
            ("PLAINTEXT://127.0.0.1:99999", None, None, "listeners"),
            ("PLAINTEXT://::1:9092", None, None, "listeners"),
            ("PLAINTEXT:9092", None, None, "listeners"),
            ("PLAINTEXT://:9092,SSL://:9092", None, None, "listeners"),
            (
                "A://:9092",
                Some("A:TLS"),
                None,
                "listener_security_protocol_map",
            ),
            (
                "A://:9092",
                Some("A:SSL,B:SSL"),
                None,
                "listener_security_protocol_map",
            ),
            (
                "PLAINTEXT://:9092",
                None,
                Some("SSL://h:1"),
                "advertised_listeners",
            ),
            (
                "PLAINTEXT://:9092",
                None,
                Some("PLAINTEXT://h"),
                "advertised_listeners",
            ),
            ("", None, None, "listeners"),
        ];
        for (listeners, map, advertised, setting) in cases {
            let err = resolve(listeners, map, advertised).unwrap_err();
            assert_eq!(
                err.0, setting,
                "{listeners} {map:?} {advertised:?}: {}",
                err.1
            );
        }
    }
}
