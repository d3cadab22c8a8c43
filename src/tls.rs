//! The TLS server configuration of the SSL and SASL_SSL listeners: certificate chain
//! and key from PEM files, optional client certificates checked against a CA file,
//! and a reload whenever the files change (polled) or, in the program, on SIGHUP. A configuration
//! that does not load keeps the one in force and says why; connections already
//! established keep the certificate they were served.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use serde::Deserialize;
use tokio::sync::watch;

/// Kafka's `ssl.client.auth`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// Asked for; a client without one is `User:ANONYMOUS`.
    Requested,
    /// A client without a valid one fails the handshake.
    Required,
}

/// Where the TLS material comes from.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub clients: ClientCertificates,
}

/// Whether client certificates are asked for, and the CAs they must chain to.
#[derive(Clone, Debug)]
pub enum ClientCertificates {
    NotAsked,
    Requested { ca: PathBuf },
    Required { ca: PathBuf },
}

impl TlsFiles {
    fn ca(&self) -> Option<&PathBuf> {
        match &self.clients {
            ClientCertificates::NotAsked => None,
            ClientCertificates::Requested { ca } | ClientCertificates::Required { ca } => Some(ca),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{}: {reason}", path.display())]
    File { path: PathBuf, reason: String },
    #[error("certificate and key do not go together: {0}")]
    Config(rustls::Error),
    #[error("client certificate verifier: {0}")]
    Verifier(rustls::server::VerifierBuilderError),
}

fn file_error(path: &Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The crypto provider the Iggy SDK installs too (aws-lc-rs): one in the process.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// What is wrong with a PEM file, in words (the library's own shows raw bytes).
fn pem_error(path: &Path, e: pem::Error) -> TlsError {
    let reason = match e {
        pem::Error::Io(e) => e.to_string(),
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "a PEM section does not end (no {} line)",
            String::from_utf8_lossy(&end_marker)
        ),
        pem::Error::IllegalSectionStart { .. } => "a PEM section starts badly".into(),
        pem::Error::Base64Decode(_) => "a PEM section is not base64".into(),
        pem::Error::NoItemsFound => "holds none".into(),
        other => other.to_string(),
    };
    file_error(path, reason)
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "holds no PEM certificate"));
    }
    Ok(certs)
}

/// Loads the files into a server configuration.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = provider();
    let chain = certificates(&files.certificate)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| match e {
        pem::Error::NoItemsFound => file_error(
            &files.key,
            "holds no unencrypted PKCS#8, PKCS#1 or SEC1 private key",
        ),
        e => pem_error(&files.key, e),
    })?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?;
    let builder = match files.ca() {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(|e| file_error(ca, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = match files.clients {
                ClientCertificates::Requested { .. } => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            builder.with_client_cert_verifier(verifier.build().map_err(TlsError::Verifier)?)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(TlsError::Config)?;
    // Kafka clients speak no ALPN; offering none keeps every client welcome.
    config.alpn_protocols.clear();
    Ok(Arc::new(config))
}

/// Loads the configuration, then keeps reloading it: every `interval` if a file's
/// modification time or size changed, and on every SIGHUP if `on_sighup` (a
/// process-wide handler, the program's choice).
pub fn watch_files(
    files: TlsFiles,
    interval: Duration,
    on_sighup: bool,
) -> Result<watch::Receiver<Arc<ServerConfig>>, TlsError> {
    let (tx, rx) = watch::channel(server_config(&files)?);
    actix_rt::spawn(reload(files, interval, on_sighup, tx));
    Ok(rx)
}

/// Modification time and size of each file; `None` for one that cannot be read.
fn stamps(files: &TlsFiles) -> Vec<Option<(SystemTime, u64)>> {
    [Some(&files.certificate), Some(&files.key), files.ca()]
        .into_iter()
        .flatten()
        .map(|p| {
            let meta = std::fs::metadata(p).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

async fn reload(
    files: TlsFiles,
    interval: Duration,
    on_sighup: bool,
    tx: watch::Sender<Arc<ServerConfig>>,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangup = match on_sighup.then(|| signal(SignalKind::hangup())) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            tracing::warn!(error = %e, "no SIGHUP handler; TLS files reload on change only");
            None
        }
    };
    let mut seen = stamps(&files);
    loop {
        let asked = tokio::select! {
            _ = tokio::time::sleep(interval) => false,
            Some(()) = async { hangup.as_mut()?.recv().await } => true,
        };
        let now = stamps(&files);
        if !asked && now == seen {
            continue;
        }
        // A half-written pair fails here and loads at the next change.
        seen = now;
        match server_config(&files) {
            Ok(config) => {
                tx.send_replace(config);
                tracing::info!(certificate = %files.certificate.display(), "TLS certificate reloaded");
            }
            Err(e) => {
                tracing::warn!(error = %e, "TLS files not reloaded; the previous certificate stays in use")
            }
        }
        if tx.is_closed() {
            return;
        }
    }
}
