//! TLS client set-ups of hands, with rustls (no OpenSSL), for connections to a database that
//! follow libpq's `sslmode`: `verify-ca`/`verify-full` check the server's certificate against
//! roots (the public web roots, plus a managed database's own CA when given); `require` and
//! `prefer` encrypt and check the handshake's signatures, but not who signed the certificate.
//! Both the session store's PostgreSQL backend and the database tools use it, so the two
//! cannot drift apart.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How the server's certificate is checked.
pub enum Verify {
    /// Against these roots (`verify-ca`, `verify-full`).
    Roots(RootCertStore),
    /// Not at all: the connection is only encrypted (`require`, `prefer`).
    EncryptOnly,
}

/// The public web roots (a managed database's certificate usually chains to one); add a
/// private CA to them with [`RootCertStore::add`].
pub fn web_roots() -> RootCertStore {
    RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }
}

/// A client configuration with the aws-lc-rs provider and the safe protocol versions, checking
/// certificates as `verify` says. Fails only when the provider cannot be set up.
pub fn client_config(verify: Verify) -> Result<ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?;
    Ok(match verify {
        Verify::Roots(roots) => builder.with_root_certificates(roots).with_no_client_auth(),
        Verify::EncryptOnly => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth(),
    })
}

/// `sslmode=require`/`prefer` as libpq means them: any certificate is accepted, the handshake's
/// signatures are still checked (with the provider's algorithms).
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
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypt_only_accepts_any_certificate_and_roots_do_not() {
        assert!(!web_roots().is_empty());
        assert!(client_config(Verify::Roots(web_roots())).is_ok());
        assert!(client_config(Verify::EncryptOnly).is_ok());

        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let unsigned = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let name = ServerName::try_from("db.example").unwrap();
        let encrypt_only = EncryptOnly(Arc::clone(&provider));
        assert!(
            encrypt_only.verify_server_cert(&unsigned, &[], &name, &[], UnixTime::now()).is_ok()
        );
        assert!(!encrypt_only.supported_verify_schemes().is_empty());

        let verifying = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(web_roots()),
            provider,
        )
        .build()
        .unwrap();
        assert!(verifying.verify_server_cert(&unsigned, &[], &name, &[], UnixTime::now()).is_err());
    }
}
