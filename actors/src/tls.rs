//! TLS on a listener: the handshake, bounded in time, with the server configuration
//! in force (the root package reloads it when its files change), and the principal a
//! client certificate gives: `User:` and the certificate's subject as Kafka's default
//! mapping writes it (Java's `X500Principal.getName()`, RFC 2253).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::server::TlsStream;

use crate::session::Principal;

/// The TLS side of a listener. Cheap to clone.
#[derive(Clone)]
pub struct TlsListener {
    /// The configuration new handshakes use; a reload replaces it, connections
    /// already established keep theirs.
    pub config: watch::Receiver<Arc<ServerConfig>>,
    /// A client must finish its handshake within this long.
    pub handshake_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("TLS handshake not finished within {0:?}")]
    Timeout(Duration),
    #[error("TLS handshake failed: {0}")]
    Failed(io::Error),
    #[error("the client certificate's subject cannot be read")]
    UnreadableSubject,
}

impl TlsListener {
    /// Runs the server side of the handshake; the principal is the client
    /// certificate's subject when the client sent one, else `User:ANONYMOUS`.
    pub async fn accept(
        &self,
        tcp: TcpStream,
    ) -> Result<(TlsStream<TcpStream>, Principal), HandshakeError> {
        let config = self.config.borrow().clone();
        let handshake = tokio_rustls::TlsAcceptor::from(config).accept(tcp);
        let stream = tokio::time::timeout(self.handshake_timeout, handshake)
            .await
            .map_err(|_| HandshakeError::Timeout(self.handshake_timeout))?
            .map_err(HandshakeError::Failed)?;
        let principal = match stream.get_ref().1.peer_certificates() {
            Some([leaf, ..]) => {
                certificate_principal(leaf).ok_or(HandshakeError::UnreadableSubject)?
            }
            _ => Principal::anonymous(),
        };
        Ok((stream, principal))
    }
}

/// `User:` and the certificate's subject DN in RFC 2253 form (`CN=alice,O=Example`).
pub fn certificate_principal(cert: &CertificateDer<'_>) -> Option<Principal> {
    Some(Principal::user(&rfc2253(subject(cert)?)?))
}

/// One DER element: its tag, its contents, and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |len, b| len << 8 | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;

/// The contents of the certificate's subject Name.
fn subject(cert: &[u8]) -> Option<&[u8]> {
    let (SEQUENCE, cert, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, mut tbs, _) = element(cert)? else {
        return None;
    };
    // version [0] (optional), serialNumber, signature, issuer, validity, subject
    let (tag, _, rest) = element(tbs)?;
    if tag == 0xa0 {
        tbs = rest;
    }
    for _ in 0..4 {
        tbs = element(tbs)?.2;
    }
    match element(tbs)? {
        (SEQUENCE, name, _) => Some(name),
        _ => None,
    }
}

/// A Name's RDNs, last first, joined by `,`; a multi-valued RDN's values joined by `+`.
fn rfc2253(mut name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    while !name.is_empty() {
        let (SET, mut set, rest) = element(name)? else {
            return None;
        };
        let mut values = Vec::new();
        while !set.is_empty() {
            let (SEQUENCE, pair, rest) = element(set)? else {
                return None;
            };
            let (OID, oid, value) = element(pair)? else {
                return None;
            };
            let (tag, contents, end) = element(value)?;
            if !end.is_empty() {
                return None;
            }
            values.push(attribute(oid, tag, contents, value)?);
            set = rest;
        }
        rdns.push(values.join("+"));
        name = rest;
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// `KEYWORD=value` for the attributes RFC 2253 names, `1.2.3=#hex` of the encoded
/// value for the others, as Java writes them.
fn attribute(oid: &[u8], tag: u8, contents: &[u8], encoded: &[u8]) -> Option<String> {
    let keyword = match oid {
        [0x55, 0x04, 0x03] => Some("CN"),
        [0x55, 0x04, 0x06] => Some("C"),
        [0x55, 0x04, 0x07] => Some("L"),
        [0x55, 0x04, 0x08] => Some("ST"),
        [0x55, 0x04, 0x09] => Some("STREET"),
        [0x55, 0x04, 0x0a] => Some("O"),
        [0x55, 0x04, 0x0b] => Some("OU"),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => Some("DC"),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01] => Some("UID"),
        _ => None,
    };
    match (keyword, text(tag, contents)) {
        (Some(keyword), Some(value)) => Some(format!("{keyword}={}", escape(&value))),
        (keyword, _) => {
            let hex: String = encoded.iter().map(|b| format!("{b:02x}")).collect();
            Some(format!(
                "{}=#{hex}",
                keyword.map_or_else(|| dotted(oid), str::to_string)
            ))
        }
    }
}

/// The value of a string-typed attribute.
fn text(tag: u8, contents: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, PrintableString, TeletexString, IA5String
        0x0c | 0x13 | 0x14 | 0x16 => String::from_utf8(contents.to_vec()).ok(),
        // BMPString: UTF-16 big-endian
        0x1e if contents.len().is_multiple_of(2) => {
            char::decode_utf16(contents.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
                .collect::<Result<String, _>>()
                .ok()
        }
        // UniversalString: UTF-32 big-endian
        0x1c if contents.len().is_multiple_of(4) => contents
            .chunks(4)
            .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        _ => None,
    }
}

/// RFC 2253 escaping as Java does it: `,=+<>#;"\` anywhere, spaces at either end.
fn escape(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    let trail = chars.len() - chars.iter().rev().take_while(|c| **c == ' ').count();
    let mut out = String::with_capacity(value.len());
    for (i, c) in chars.into_iter().enumerate() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => out.push('\\'),
            ' ' if i < lead || i >= trail => out.push('\\'),
            '\0' => {
                out.push_str("\\00");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// An OID's dotted form.
fn dotted(oid: &[u8]) -> String {
    let mut arcs = Vec::new();
    let mut value: u64 = 0;
    for b in oid {
        value = value << 7 | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (value / 40).min(2);
                arcs.push(first);
                arcs.push(value - first * 40);
            } else {
                arcs.push(value);
            }
            value = 0;
        }
    }
    arcs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER element with a short or long length.
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match contents.len() {
            n if n < 0x80 => out.push(n as u8),
            n if n < 0x100 => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend_from_slice(contents);
        out
    }

    fn rdn(pairs: &[(&[u8], u8, &[u8])]) -> Vec<u8> {
        let mut set = Vec::new();
        for (oid, tag, value) in pairs {
            let mut pair = der(OID, oid);
            pair.extend(der(*tag, value));
            set.extend(der(SEQUENCE, &pair));
        }
        der(SET, &set)
    }

    /// A certificate shell: version, serial, algorithm, issuer, validity, subject.
    fn certificate(subject: &[u8]) -> Vec<u8> {
        let mut tbs = der(0xa0, &der(0x02, &[2]));
        tbs.extend(der(0x02, &[1]));
        tbs.extend(der(SEQUENCE, &der(OID, &[0x2a, 0x86, 0x48])));
        tbs.extend(der(SEQUENCE, &rdn(&[(&[0x55, 4, 3], 0x0c, b"issuer")])));
        tbs.extend(der(SEQUENCE, &[]));
        tbs.extend(der(SEQUENCE, subject));
        tbs.extend(der(SEQUENCE, &[])); // subject public key info
        der(SEQUENCE, &der(SEQUENCE, &tbs))
    }

    #[test]
    fn the_subject_is_written_as_kafka_writes_it() {
        const CN: &[u8] = &[0x55, 4, 3];
        const O: &[u8] = &[0x55, 4, 10];
        const OU: &[u8] = &[0x55, 4, 11];
        const C: &[u8] = &[0x55, 4, 6];
        const EMAIL: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01];
        let mut subject = rdn(&[(C, 0x13, b"US")]);
        subject.extend(rdn(&[(O, 0x0c, b"Acme, Inc.")]));
        subject.extend(rdn(&[(OU, 0x0c, b"ops"), (OU, 0x1e, &[0, b'd', 0, b'b'])]));
        subject.extend(rdn(&[(EMAIL, 0x16, b"a@x")]));
        subject.extend(rdn(&[(CN, 0x0c, b" #alice=admin ")]));
        let principal = certificate_principal(&CertificateDer::from(certificate(&subject)));
        assert_eq!(
            principal.unwrap().to_string(),
            "User:CN=\\ \\#alice\\=admin\\ ,\
             1.2.840.113549.1.9.1=#1603614078,\
             OU=ops+OU=db,O=Acme\\, Inc.,C=US"
        );
    }

    #[test]
    fn a_long_subject_and_garbage_are_handled() {
        let long = "x".repeat(300);
        let subject = rdn(&[(&[0x55, 4, 3], 0x0c, long.as_bytes())]);
        let cert = CertificateDer::from(certificate(&subject));
        assert_eq!(
            certificate_principal(&cert).unwrap().name.as_ref(),
            format!("CN={long}")
        );
        for garbage in [
            &b""[..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x30, 0x02, 0x30],
        ] {
            assert_eq!(
                certificate_principal(&CertificateDer::from(garbage.to_vec())),
                None
            );
        }
    }

    #[test]
    fn a_real_certificate_maps_to_its_subject() {
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in [
            (rcgen::DnType::CountryName, "DE"),
            (rcgen::DnType::OrganizationName, "Acme"),
            (rcgen::DnType::OrganizationalUnitName, "payments"),
            (rcgen::DnType::CommonName, "alice"),
        ] {
            params.distinguished_name.push(ty, value);
        }
        let cert = params
            .self_signed(&rcgen::KeyPair::generate().unwrap())
            .unwrap();
        assert_eq!(
            certificate_principal(cert.der()).unwrap(),
            Principal::user("CN=alice,OU=payments,O=Acme,C=DE")
        );
    }
}
