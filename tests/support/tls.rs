//! Test certificates, made fresh by each test with rcgen (no key is ever committed):
//! a CA, server certificates for 127.0.0.1/localhost, client certificates with a
//! subject, all as PEM files in a temporary directory; and TLS connections (rustls)
//! trusting the CA, with a client certificate or without.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A CA and the files it signs, in `dir`.
pub struct Pki {
    pub dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, as files.
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    pub fn new() -> Pki {
        Pki::named("gateway test CA")
    }

    /// A CA whose subject's common name is `cn`.
    pub fn named(cn: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = dn(&[(DnType::CommonName, cn)]);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
            ca,
        };
        std::fs::write(pki.ca_file(), pki.ca.pem()).unwrap();
        pki
    }

    /// The CA certificate (PEM), for clients and for `ssl_ca_file`.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A server certificate for 127.0.0.1 and localhost with common name `cn`, written
    /// to `NAME.pem` and `NAME.key`.
    pub fn server(&self, name: &str, cn: &str) -> Issued {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name = dn(&[(DnType::CommonName, cn)]);
        self.issue(name, params)
    }

    /// A client certificate with subject `subject` (in the order given, most
    /// significant first, as certificates list it).
    pub fn client(&self, name: &str, subject: &[(DnType, &str)]) -> Issued {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name = dn(subject);
        self.issue(name, params)
    }

    /// A TLS connection to `addr` (handshake done) trusting this CA, presenting
    /// `client`'s certificate when given.
    pub fn connect(
        &self,
        addr: SocketAddr,
        client: Option<&Issued>,
    ) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
        self.try_connect(addr, client).expect("TLS handshake")
    }

    /// [`Self::connect`], with the handshake's failure as its error.
    pub fn try_connect(
        &self,
        addr: SocketAddr,
        client: Option<&Issued>,
    ) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in pem_certificates(&self.ca_file()) {
            roots.add(cert).unwrap();
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match client {
            Some(c) => {
                let key = PrivateKeyDer::from_pem_file(&c.key).unwrap();
                config
                    .with_client_auth_cert(pem_certificates(&c.cert), key)
                    .unwrap()
            }
            None => config.with_no_client_auth(),
        };
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        tls.flush()?; // drives the handshake
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(tls)
    }

    fn issue(&self, name: &str, params: CertificateParams) -> Issued {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        let issued = Issued {
            cert: self.dir.path().join(format!("{name}.pem")),
            key: self.dir.path().join(format!("{name}.key")),
        };
        write_atomically(&issued.cert, cert.pem().as_bytes());
        write_atomically(&issued.key, key.serialize_pem().as_bytes());
        issued
    }
}

fn dn(entries: &[(DnType, &str)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (ty, value) in entries {
        dn.push(ty.clone(), *value);
    }
    dn
}

/// Replaces `path` in one step, as a deployment tool would (write, then rename).
pub fn write_atomically(path: &Path, contents: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The certificates of a PEM file, in order.
pub fn pem_certificates(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}
