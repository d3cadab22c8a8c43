//! SCRAM (RFC 5802, RFC 7677) for SHA-256 and SHA-512, the server side: credentials
//! from a password or a salted password, and the two-message exchange.
//!
//! An unknown user gets a server-first message like any other (a salt derived from
//! the name with a per-process key), and fails only on the proof: the answers never
//! tell whether the name or the password was wrong.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use crate::store::{ScramCredential, ScramMechanism};

/// Kafka's minimum for both mechanisms (`ScramMechanism.minIterations`).
pub const MIN_ITERATIONS: u32 = 4096;
/// Kafka's maximum (`ScramControlManager.MAX_ITERATIONS`).
pub const MAX_ITERATIONS: u32 = 16384;
/// Iterations of credentials the gateway derives itself (bootstrap users).
pub const DEFAULT_ITERATIONS: u32 = 8192;
const SALT_BYTES: usize = 16;
const NONCE_BYTES: usize = 18;

/// Why an exchange failed. Kept for the log line; the client only learns that it failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScramError {
    #[error("malformed {0} message")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("authorization id differs from the user name")]
    Authzid,
    #[error("nonce or channel binding changed between messages")]
    Mismatch,
    #[error("invalid proof")]
    InvalidProof,
}

fn hmac(mechanism: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        ScramMechanism::Sha512 => {
            let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

fn hash(mechanism: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// `Hi(password, salt, i)`: PBKDF2 with HMAC of the mechanism's hash. CPU-heavy by
/// design: callers run it off the actor threads.
pub fn salted_password(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => {
            pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
        }
        ScramMechanism::Sha512 => {
            pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
        }
    }
}

/// The stored and server keys of a salted password, as AlterUserScramCredentials
/// sends it (Kafka's `ScramFormatter`).
pub fn credential_from_salted(
    mechanism: ScramMechanism,
    salt: Vec<u8>,
    iterations: u32,
    salted: &[u8],
) -> ScramCredential {
    let client_key = hmac(mechanism, salted, b"Client Key");
    ScramCredential {
        salt,
        iterations,
        stored_key: hash(mechanism, &client_key),
        server_key: hmac(mechanism, salted, b"Server Key"),
    }
}

/// A new credential for `password`, with a random salt.
pub fn credential_for_password(
    mechanism: ScramMechanism,
    password: &str,
    iterations: u32,
) -> ScramCredential {
    let salt = random_bytes(SALT_BYTES);
    let salted = salted_password(mechanism, password.as_bytes(), &salt, iterations);
    credential_from_salted(mechanism, salt, iterations, &salted)
}

/// Whether `password` is the one `credential` was made from; constant time in the
/// comparison (the derivation itself costs the same for every password).
pub fn password_matches(
    mechanism: ScramMechanism,
    credential: &ScramCredential,
    password: &str,
) -> bool {
    let salted = salted_password(
        mechanism,
        password.as_bytes(),
        &credential.salt,
        credential.iterations,
    );
    let derived = credential_from_salted(
        mechanism,
        credential.salt.clone(),
        credential.iterations,
        &salted,
    );
    derived.stored_key.ct_eq(&credential.stored_key).into()
}

pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0; n];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes
}

/// A stand-in credential for a user that does not exist: stable for a name within
/// this process (a client retrying sees the same salt), useless for logging in.
pub fn decoy_credential(mechanism: ScramMechanism, key: &[u8], user: &str) -> ScramCredential {
    let seed = hmac(mechanism, key, user.as_bytes());
    ScramCredential {
        salt: seed[..SALT_BYTES].to_vec(),
        iterations: MIN_ITERATIONS,
        stored_key: hmac(mechanism, key, &seed),
        server_key: hmac(mechanism, &seed, key),
    }
}

/// A parsed client-first message.
#[derive(Debug)]
pub struct ClientFirst {
    pub user: String,
    /// `n,,` or `n,a=...,`: echoed (base64) in the client-final message.
    gs2_header: String,
    bare: String,
    nonce: String,
}

/// `saslname` with `=2C` and `=3D` decoded (RFC 5802 §5.1); other `=` are invalid.
fn decode_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

fn printable_nonce(nonce: &str) -> bool {
    !nonce.is_empty()
        && nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// `gs2-header client-first-bare`: `n,[a=authzid],n=user,r=nonce[,extensions]`.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, ScramError> {
    const WHAT: &str = "client-first";
    let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed(WHAT))?;
    let mut parts = text.splitn(3, ',');
    let (flag, authzid, bare) = match (parts.next(), parts.next(), parts.next()) {
        (Some(f), Some(a), Some(b)) => (f, a, b),
        _ => return Err(ScramError::Malformed(WHAT)),
    };
    match flag {
        "n" | "y" => {}
        f if f.starts_with("p=") => return Err(ScramError::ChannelBinding),
        _ => return Err(ScramError::Malformed(WHAT)),
    }
    let mut fields = bare.split(',');
    let user = fields
        .next()
        .and_then(|f| f.strip_prefix("n="))
        .and_then(decode_name)
        .filter(|u| !u.is_empty())
        .ok_or(ScramError::Malformed(WHAT))?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .filter(|n| printable_nonce(n))
        .ok_or(ScramError::Malformed(WHAT))?;
    if !authzid.is_empty() {
        let id = authzid
            .strip_prefix("a=")
            .and_then(decode_name)
            .ok_or(ScramError::Malformed(WHAT))?;
        if id != user {
            return Err(ScramError::Authzid);
        }
    }
    Ok(ClientFirst {
        gs2_header: format!("{flag},{authzid},"),
        nonce: nonce.to_string(),
        bare: bare.to_string(),
        user,
    })
}

/// An exchange after the server-first message, waiting for the client's proof.
pub struct Exchange {
    mechanism: ScramMechanism,
    user: String,
    gs2_header: String,
    nonce: String,
    /// `client-first-bare "," server-first`: the start of the AuthMessage.
    auth_start: String,
    credential: ScramCredential,
    /// False for a decoy credential: the proof is checked all the same, and fails.
    known: bool,
}

impl Exchange {
    /// Answers a client-first message with the user's credential (`None`: unknown,
    /// answered with `decoy`). Returns the exchange and the server-first message.
    pub fn start(
        mechanism: ScramMechanism,
        first: ClientFirst,
        credential: Option<ScramCredential>,
        decoy: ScramCredential,
    ) -> (Exchange, Vec<u8>) {
        let known = credential.is_some();
        let credential = credential.unwrap_or(decoy);
        let nonce = format!(
            "{}{}",
            first.nonce,
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(random_bytes(NONCE_BYTES))
        );
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let exchange = Exchange {
            mechanism,
            user: first.user,
            gs2_header: first.gs2_header,
            nonce,
            auth_start: format!("{},{server_first}", first.bare),
            credential,
            known,
        };
        (exchange, server_first.into_bytes())
    }

    /// The user name the client gave.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Checks the client-final message `c=...,r=...[,ext],p=proof`; the server-final
    /// message `v=signature` when the proof holds.
    pub fn finish(self, message: &[u8]) -> Result<Vec<u8>, ScramError> {
        const WHAT: &str = "client-final";
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed(WHAT))?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError::Malformed(WHAT))?;
        let proof = B64.decode(proof).map_err(|_| ScramError::Malformed(WHAT))?;
        let mut fields = without_proof.split(',');
        let binding = fields
            .next()
            .and_then(|f| f.strip_prefix("c="))
            .and_then(|c| B64.decode(c).ok())
            .ok_or(ScramError::Malformed(WHAT))?;
        let nonce = fields
            .next()
            .and_then(|f| f.strip_prefix("r="))
            .ok_or(ScramError::Malformed(WHAT))?;
        if binding != self.gs2_header.as_bytes() || nonce != self.nonce {
            return Err(ScramError::Mismatch);
        }
        let auth_message = format!("{},{without_proof}", self.auth_start);
        let m = self.mechanism;
        let signature = hmac(m, &self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::InvalidProof);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        let matches: bool = hash(m, &client_key)
            .ct_eq(&self.credential.stored_key)
            .into();
        if !(matches && self.known) {
            return Err(ScramError::InvalidProof);
        }
        let server_signature = hmac(m, &self.credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client following RFC 5802, to run exchanges against the server side.
    fn client_final(
        m: ScramMechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> (String, Vec<u8>) {
        let fields: Vec<&str> = server_first.split(',').collect();
        let nonce = fields[0].strip_prefix("r=").unwrap();
        let salt = B64.decode(fields[1].strip_prefix("s=").unwrap()).unwrap();
        let iterations: u32 = fields[2].strip_prefix("i=").unwrap().parse().unwrap();
        let salted = salted_password(m, password.as_bytes(), &salt, iterations);
        let client_key = hmac(m, &salted, b"Client Key");
        let stored_key = hash(m, &client_key);
        let without_proof = format!("c={},r={nonce}", B64.encode("n,,"));
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = hmac(m, &stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(m, &salted, b"Server Key");
        let expected = format!("v={}", B64.encode(hmac(m, &server_key, auth.as_bytes())));
        (
            format!("{without_proof},p={}", B64.encode(proof)),
            expected.into_bytes(),
        )
    }

    fn run(
        m: ScramMechanism,
        stored: Option<ScramCredential>,
        password: &str,
    ) -> Result<(), ScramError> {
        let bare = "n=al=3Dice,r=fyko+d2lbbFgONRv9qkxdawL";
        let first = parse_client_first(format!("n,,{bare}").as_bytes())?;
        assert_eq!(first.user, "al=ice");
        let decoy = decoy_credential(m, b"key", &first.user);
        let (exchange, server_first) = Exchange::start(m, first, stored, decoy);
        let server_first = String::from_utf8(server_first).unwrap();
        let (last, expected) = client_final(m, password, bare, &server_first);
        let server_final = exchange.finish(last.as_bytes())?;
        assert_eq!(server_final, expected);
        Ok(())
    }

    #[test]
    fn the_right_password_passes_and_the_server_proves_itself() {
        for m in ScramMechanism::ALL {
            let stored = credential_for_password(m, "pencil", MIN_ITERATIONS);
            assert_eq!(run(m, Some(stored.clone()), "pencil"), Ok(()));
            assert_eq!(
                run(m, Some(stored), "pencil!"),
                Err(ScramError::InvalidProof)
            );
        }
    }

    #[test]
    fn an_unknown_user_fails_only_at_the_proof_with_a_stable_salt() {
        let m = ScramMechanism::Sha256;
        assert_eq!(run(m, None, "pencil"), Err(ScramError::InvalidProof));
        let a = decoy_credential(m, b"key", "nobody");
        assert_eq!(a, decoy_credential(m, b"key", "nobody"));
        assert_ne!(a.salt, decoy_credential(m, b"key", "somebody").salt);
    }

    /// RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil".
    #[test]
    fn rfc_7677_example_keys() {
        let m = ScramMechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = salted_password(m, b"pencil", &salt, 4096);
        let cred = credential_from_salted(m, salt, 4096, &salted);
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let server_signature = hmac(m, &cred.server_key, auth.as_bytes());
        assert_eq!(
            B64.encode(server_signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert!(password_matches(m, &cred, "pencil"));
        assert!(!password_matches(m, &cred, "pencil2"));
    }

    #[test]
    fn malformed_and_unsupported_client_first_messages_are_refused() {
        for bad in [
            &b""[..],
            b"n,,r=abc",
            b"n,,n=,r=abc",
            b"n,,n=u=zz,r=abc",
            b"x,,n=u,r=abc",
            b"n,,n=u,r=",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(parse_client_first(bad), Err(ScramError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_client_first(b"p=tls-unique,,n=u,r=abc").unwrap_err(),
            ScramError::ChannelBinding
        );
        assert_eq!(
            parse_client_first(b"n,a=other,n=u,r=abc").unwrap_err(),
            ScramError::Authzid
        );
        assert!(parse_client_first(b"n,a=u,n=u,r=abc,ext=1").is_ok());
    }

    #[test]
    fn a_changed_nonce_is_refused() {
        let m = ScramMechanism::Sha512;
        let first = parse_client_first(b"n,,n=u,r=abc").unwrap();
        let stored = credential_for_password(m, "pw", MIN_ITERATIONS);
        let (exchange, _) = Exchange::start(m, first, Some(stored.clone()), stored);
        let last = format!(
            "c={},r=abcdef,p={}",
            B64.encode("n,,"),
            B64.encode([0u8; 64])
        );
        assert_eq!(
            exchange.finish(last.as_bytes()).unwrap_err(),
            ScramError::Mismatch
        );
    }
}
