//! TLS to the database, with rustls (no OpenSSL), following the URL's `sslmode` as libpq does:
//! `disable` none; `prefer` (the default) tries TLS and falls back to plain; `require` encrypts
//! without checking the server's certificate; `verify-ca` and `verify-full` check it against the
//! public web roots plus `[store] ca_file` (a managed database's own CA, in PEM). The rustls
//! set-ups themselves are `hands-tls`'s, shared with the database tools.

use std::path::Path;

use hands_tls::Verify;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
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
        let verify = if verify {
            let mut roots = hands_tls::web_roots();
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
            Verify::Roots(roots)
        } else {
            Verify::EncryptOnly
        };
        let tls = hands_tls::client_config(verify)
            .map_err(|e| StoreError::Backend(format!("TLS set-up failed: {e}")))?;
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
