//! One verification query against a PostgreSQL database named by a connection URL, with the
//! egress guard's address rule: the host is resolved here (or by the user's `[net] resolve`
//! map), every address is checked with [`hands_net::check_addr`], and the TCP connection goes to
//! a checked address — so a repository cannot point the tool at this machine's private services.
//! The one exception is the user's own URL ([`UrlFrom::User`]), which may name this machine.
//!
//! TLS follows the URL's `sslmode` as libpq does: `disable` none; `prefer` (the default) and
//! `require` encrypt without checking the server's certificate (Supabase's is signed by its own
//! CA); `verify-ca`/`verify-full` check it against the public web roots.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use hands_core::CancellationToken;
use tokio_postgres::config::{Host, SslMode};

/// Who chose a database URL: the address rule depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlFrom {
    /// A secret the user stored (`hands secrets set`, or typed at hands' own prompt) or the user's
    /// environment: it may name this machine (127.0.0.0/8, ::1), as Supabase's local stack does
    /// (127.0.0.1:54322), without a `[net] allow_hosts` entry. Other private addresses, the
    /// link-local metadata service among them, still need one.
    User,
    /// Text a repository or the model supplied: the guard's whole rule.
    Untrusted,
}

/// How long connecting and `select version()` may take together.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the database could not be verified. Messages never hold the URL (its password).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL is not a PostgreSQL connection URL hands can use.
    #[error("{0}")]
    Url(String),
    /// The address is one the guard refuses.
    #[error("{0}")]
    Refused(String),
    /// No connection or no answer.
    #[error("{0}")]
    Connect(String),
    /// The server refused the login.
    #[error("{0}")]
    Auth(String),
    /// The call was stopped.
    #[error("the database check was stopped (timeout or abort)")]
    Cancelled,
}

/// The connection parts of a URL, checked.
struct Target {
    config: tokio_postgres::Config,
    host: String,
    port: u16,
    verify: bool,
}

fn target(url: &str) -> Result<Target, DbError> {
    let bad = |why: &str| {
        DbError::Url(format!(
            "the stored database URL is not a usable PostgreSQL URL: {why}. It looks like \
             postgresql://postgres:PASSWORD@db.REF.supabase.co:5432/postgres (Supabase dashboard → \
             Connect → connection string)"
        ))
    };
    let mut parsed = url::Url::parse(url.trim()).map_err(|_| bad("it does not parse as a URL"))?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(bad("it must start with postgresql:// or postgres://"));
    }
    // tokio-postgres knows disable/prefer/require; the verifying modes are ours.
    let mut verify = false;
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .filter_map(|(k, v)| {
            if k == "sslmode" && (v == "verify-ca" || v == "verify-full") {
                verify = true;
                Some((k.into_owned(), "require".to_owned()))
            } else if matches!(&*k, "host" | "hostaddr") {
                // A second host in the query would bypass the check of the first.
                None
            } else {
                Some((k.into_owned(), v.into_owned()))
            }
        })
        .collect();
    if parsed.query_pairs().any(|(k, _)| k == "host" || k == "hostaddr") {
        return Err(bad(
            "`host`/`hostaddr` in the query is not supported: put the host in the URL",
        ));
    }
    if pairs.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    let config =
        tokio_postgres::Config::from_str(parsed.as_str()).map_err(|err| bad(&format!("{err}")))?;
    let (host, port) = match (config.get_hosts(), config.get_ports()) {
        ([Host::Tcp(host)], []) => (host.clone(), 5432),
        ([Host::Tcp(host)], [port]) => (host.clone(), *port),
        ([], _) => return Err(bad("it names no host")),
        ([Host::Tcp(_)], _) | ([_, _, ..], _) => {
            return Err(bad("it names several hosts; give one"));
        }
        _ => return Err(bad("a Unix socket is not a database hands connects to")),
    };
    if config.get_user().is_none() {
        return Err(bad("it names no user"));
    }
    Ok(Target { config, host, port, verify })
}

/// The addresses `host` stands for: an IP literal itself, the user's `[net] resolve` answer, or DNS.
async fn addresses(
    host: &str,
    port: u16,
    net: &hands_net::NetConfig,
) -> Result<Vec<SocketAddr>, DbError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if let Some(ips) = net.resolve.get(host) {
        return Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|err| DbError::Connect(format!("cannot resolve the database host {host}: {err}")))?
        .collect();
    if found.is_empty() {
        return Err(DbError::Connect(format!("the database host {host} has no address")));
    }
    Ok(found)
}

/// Connect to the database `url` names and return its `select version()`, within [`TIMEOUT`].
pub async fn version(
    url: &str,
    from: UrlFrom,
    net: &hands_net::NetConfig,
    cancel: &CancellationToken,
) -> Result<String, DbError> {
    let work = async {
        match tokio::time::timeout(TIMEOUT, query(url, from, net)).await {
            Ok(result) => result,
            Err(_) => Err(DbError::Connect(format!(
                "the database did not answer within {} s",
                TIMEOUT.as_secs()
            ))),
        }
    };
    tokio::select! {
        result = work => result,
        () = cancel.cancelled() => Err(DbError::Cancelled),
    }
}

async fn query(url: &str, from: UrlFrom, net: &hands_net::NetConfig) -> Result<String, DbError> {
    let client = open(url, from, net).await?;
    let row = client.query_one("select version()", &[]).await.map_err(|err| {
        DbError::Connect(format!("the database did not answer `select version()`: {err}"))
    })?;
    row.try_get::<_, String>(0)
        .map_err(|err| DbError::Connect(format!("`select version()` gave no text: {err}")))
}

/// Connect to the database `url` names under the guard's address rule, within [`TIMEOUT`]; the
/// client's connection task runs on the current runtime until the client is dropped.
pub async fn connect(
    url: &str,
    from: UrlFrom,
    net: &hands_net::NetConfig,
) -> Result<tokio_postgres::Client, DbError> {
    match tokio::time::timeout(TIMEOUT, open(url, from, net)).await {
        Ok(result) => result,
        Err(_) => Err(DbError::Connect(format!(
            "the database did not answer within {} s",
            TIMEOUT.as_secs()
        ))),
    }
}

/// Start the transaction db_schema reads in: READ ONLY (a write in it fails with SQLSTATE 25006),
/// with `statement_timeout` set to `timeout` for every statement in it (SQLSTATE 57014 past it).
pub async fn read_only(
    client: &mut tokio_postgres::Client,
    timeout: Duration,
) -> Result<tokio_postgres::Transaction<'_>, tokio_postgres::Error> {
    let tx = client.build_transaction().read_only(true).start().await?;
    // A number of milliseconds, not an identifier: nothing from the caller is spliced in.
    tx.batch_execute(&format!("set local statement_timeout = {}", timeout.as_millis().max(1)))
        .await?;
    Ok(tx)
}

async fn open(
    url: &str,
    from: UrlFrom,
    net: &hands_net::NetConfig,
) -> Result<tokio_postgres::Client, DbError> {
    let target = target(url)?;
    let stream = checked_stream(&target, from, net).await?;
    login(&target, stream).await
}

/// Whether `from`'s URL may reach `addr` (named `host`).
fn allowed(
    host: &str,
    addr: IpAddr,
    from: UrlFrom,
    net: &hands_net::NetConfig,
) -> Result<(), hands_net::NetError> {
    if from == UrlFrom::User && hands_net::classify(addr) == Some(hands_net::Forbidden::Loopback) {
        return Ok(());
    }
    hands_net::check_addr(host, addr, net)
}

/// A TCP connection to the first address of the target's host that the guard allows.
async fn checked_stream(
    target: &Target,
    from: UrlFrom,
    net: &hands_net::NetConfig,
) -> Result<tokio::net::TcpStream, DbError> {
    let (host, port) = (&target.host, target.port);
    let mut refused = None;
    let mut last = None;
    for addr in addresses(host, port, net).await? {
        if let Err(err) = allowed(host, addr.ip(), from, net) {
            refused = Some(err.to_string());
            continue;
        }
        match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(err) => {
                last = Some(format!("cannot connect to the database at {host}:{port}: {err}"))
            }
        }
    }
    match (last, refused) {
        (Some(last), _) => Err(DbError::Connect(last)),
        (None, Some(refused)) => {
            Err(DbError::Refused(format!("the database host {host} is refused: {refused}")))
        }
        (None, None) => Err(DbError::Connect(format!("the database host {host} has no address"))),
    }
}

/// Ask the server to cancel what `token`'s session is running (a cancel request over a new
/// connection to the same host, under the same address rule and TLS), within [`TIMEOUT`].
pub async fn cancel(
    token: &tokio_postgres::CancelToken,
    url: &str,
    from: UrlFrom,
    net: &hands_net::NetConfig,
) -> Result<(), DbError> {
    let work = async {
        let target = target(url)?;
        let stream = checked_stream(&target, from, net).await?;
        let sent = if target.config.get_ssl_mode() == SslMode::Disable {
            token.cancel_query_raw(stream, tokio_postgres::NoTls).await
        } else {
            token.cancel_query_raw(stream, tls_for(&target)?).await
        };
        sent.map_err(|err| DbError::Connect(format!("the cancel request failed: {err}")))
    };
    tokio::time::timeout(TIMEOUT, work)
        .await
        .unwrap_or_else(|_| Err(DbError::Connect("the cancel request timed out".to_owned())))
}

/// The TLS connector of one connection to the database.
type Tls = <tokio_postgres_rustls::MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<
    tokio::net::TcpStream,
>>::TlsConnect;

fn tls_for(target: &Target) -> Result<Tls, DbError> {
    let mut make = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config(target.verify)?);
    <tokio_postgres_rustls::MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<
        tokio::net::TcpStream,
    >>::make_tls_connect(&mut make, &target.host)
    .map_err(|err| {
        DbError::Url(format!("the database host {} is not a TLS name: {err}", target.host))
    })
}

async fn login(
    target: &Target,
    stream: tokio::net::TcpStream,
) -> Result<tokio_postgres::Client, DbError> {
    let (host, port) = (&target.host, target.port);
    let failed = |err: tokio_postgres::Error| {
        if let Some(db) = err.as_db_error() {
            let code = db.code().code();
            // 28P01 invalid_password, 28000 invalid_authorization_specification.
            if code.starts_with("28") {
                return DbError::Auth(format!(
                    "the database at {host}:{port} refused the login: {} (check the user and \
                     password in the stored database URL: Supabase dashboard → Connect, or \
                     reset the database password under Project Settings → Database)",
                    db.message()
                ));
            }
            return DbError::Connect(format!(
                "the database at {host}:{port} answered: {} ({code})",
                db.message()
            ));
        }
        let mut why = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(inner) = source {
            why.push_str(&format!(": {inner}"));
            source = inner.source();
        }
        if why.contains("certificate") {
            why.push_str(
                " (sslmode=verify-full and verify-ca check the server's certificate against the \
                 public web roots; Supabase's database has a certificate of its own CA, so use \
                 sslmode=require with it)",
            );
        }
        DbError::Connect(format!("the database at {host}:{port} failed: {why}"))
    };
    let client = if target.config.get_ssl_mode() == SslMode::Disable {
        let (client, connection) =
            target.config.connect_raw(stream, tokio_postgres::NoTls).await.map_err(failed)?;
        tokio::spawn(connection);
        client
    } else {
        let tls = tls_for(target)?;
        let (client, connection) = target.config.connect_raw(stream, tls).await.map_err(failed)?;
        tokio::spawn(connection);
        client
    };
    Ok(client)
}

fn tls_config(verify: bool) -> Result<rustls::ClientConfig, DbError> {
    let verify = if verify {
        hands_tls::Verify::Roots(hands_tls::web_roots())
    } else {
        hands_tls::Verify::EncryptOnly
    };
    hands_tls::client_config(verify)
        .map_err(|err| DbError::Connect(format!("TLS set-up failed: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_never_echoed() {
        let ok = target("postgresql://postgres:pw-canary-123@db.abc.supabase.co:6543/postgres?sslmode=verify-full").unwrap();
        assert_eq!((ok.host.as_str(), ok.port, ok.verify), ("db.abc.supabase.co", 6543, true));
        assert_eq!(ok.config.get_ssl_mode(), SslMode::Require);
        let ok = target("postgres://u:p@127.0.0.1/db?sslmode=disable").unwrap();
        assert_eq!((ok.port, ok.config.get_ssl_mode()), (5432, SslMode::Disable));
        for (url, why) in [
            ("mysql://u:pw-canary-123@h/db", "postgresql://"),
            ("not a url pw-canary-123", "does not parse"),
            ("postgresql://u:pw-canary-123@/db", "not a usable"),
            ("postgresql:///db?user=u", "no host"),
            ("postgresql://u:pw-canary-123@h/db?host=127.0.0.1", "host"),
            ("postgresql://u:pw-canary-123@h/db?sslmode=sometimes", "not a usable"),
        ] {
            let err = target(url).err().unwrap().to_string();
            assert!(err.contains(why), "{url}: {err}");
            assert!(!err.contains("pw-canary-123"), "{err}");
        }
    }

    /// The user's own URL may name this machine; nothing else may, and nothing else widens: the
    /// metadata service and private networks keep the guard's rule for every URL.
    #[test]
    fn only_the_users_url_may_name_this_machine() {
        let net = hands_net::NetConfig::default();
        let ip = |t: &str| t.parse::<IpAddr>().unwrap();
        for this in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            assert!(allowed("localhost", ip(this), UrlFrom::User, &net).is_ok(), "{this}");
            assert!(allowed("localhost", ip(this), UrlFrom::Untrusted, &net).is_err(), "{this}");
        }
        for other in
            ["10.0.0.5", "192.168.1.2", "169.254.169.254", "172.17.0.1", "0.0.0.0", "fe80::1"]
        {
            assert!(allowed("db", ip(other), UrlFrom::User, &net).is_err(), "{other}");
        }
        assert!(allowed("db.example.com", ip("93.184.215.14"), UrlFrom::Untrusted, &net).is_ok());
        let mut listed = net.clone();
        listed.allow_hosts = vec!["127.0.0.1".into()];
        assert!(allowed("127.0.0.1", ip("127.0.0.1"), UrlFrom::Untrusted, &listed).is_ok());
    }
}
