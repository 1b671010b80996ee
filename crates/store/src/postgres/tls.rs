//! TLS to the database, with rustls (no OpenSSL), following the URL's `sslmode` as libpq does:
//! `disable` none; `prefer` (the default) tries TLS and falls back to plain; `require` encrypts
//! without checking the server's certificate; `verify-ca` and `verify-full` check it against the
//! public web roots plus `[store] ca_file` (a managed database's own CA, in PEM).

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// How connections are wrapped.
#[derive(Clone)]
pub(crate) enum Tls {
    /// `sslmode=disable`.
    Plain,
    /// Every other mode.
    Rustls(MakeRustlsConnect),
}

impl Tls {
    /// The TLS for `config` (`verify`: the URL asked for a verifying mode), with the extra roots
    /// of `ca_file`.
    pub(crate) fn for_config(
        config: &tokio_postgres::Config,
        verify: bool,
        ca_file: Option<&Path>,
    ) -> Result<Self, StoreError> {
        if config.get_ssl_mode() == SslMode::Disable {
            return Ok(Self::Plain);
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Backend(format!("TLS set-up failed: {e}")))?;
        let tls = if verify {
            let mut roots =
                rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            if let Some(file) = ca_file {
                for cert in read_pem(file)? {
                    roots.add(cert).map_err(|e| {
                        StoreError::Backend(format!(
                            "[store] ca_file {}: a certificate is not usable: {e}",
                            file.display()
                        ))
                    })?;
                }
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
                .with_no_client_auth()
        };
        Ok(Self::Rustls(MakeRustlsConnect::new(tls)))
    }

    /// Open a connection; its task is spawned on the current runtime and ends with the client.
    pub(crate) async fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> Result<Client, tokio_postgres::Error> {
        match self {
            Self::Plain => {
                let (client, connection) = config.connect(NoTls).await?;
                tokio::spawn(connection);
                Ok(client)
            }
            Self::Rustls(make) => {
                let (client, connection) = config.connect(make.clone()).await?;
                tokio::spawn(connection);
                Ok(client)
            }
        }
    }
}

fn read_pem(file: &Path) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    let bad =
        |why: String| StoreError::Backend(format!("[store] ca_file {}: {why}", file.display()));
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| bad(format!("cannot be read: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(certs)
}

/// `sslmode=require`/`prefer` as libpq means them: the connection is encrypted and the
/// handshake's signatures are checked, but not who signed the certificate.
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
