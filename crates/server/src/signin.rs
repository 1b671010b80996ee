//! One-time sign-in links for `hands serve --open`. The server mints a code (32 bytes from the
//! kernel's CSPRNG), the browser is opened at `http://addr/#signin=CODE` — a fragment, so the code
//! is in no request line and no `Referer` —, and the page trades it at `POST /v1/signin` (the one
//! operation of `/v1` without the bearer token, in signin_route.rs) for that token. The token
//! itself is never in a URL.
//!
//! A code is good for one exchange within its lifetime ([`LIFETIME`] for `hands serve`): the
//! exchange removes it, used or expired. At most [`MAX_CODES`] wait at once (a new one drops the
//! oldest). Codes are compared in constant time, and a used, an expired and a wrong code get the
//! same refusal, so that an answer says nothing about the codes that exist.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use subtle::ConstantTimeEq as _;
// tokio's clock, so that a test pauses and advances it instead of waiting for an expiry.
use tokio::time::Instant;

/// How long a sign-in link `hands serve --open` makes is good for.
pub const LIFETIME: Duration = Duration::from_secs(60);

/// Codes waiting at once; minting one more drops the oldest.
pub const MAX_CODES: usize = 8;

/// What precedes the code in the link's fragment (`#signin=CODE`); the page looks for it.
pub const FRAGMENT_KEY: &str = "signin";

/// The refusal of any code that is not a live one, as the page shows it.
pub const REFUSED: &str = "This sign-in link was already used or has expired: run `hands serve \
                           --open` again, or sign in with the token (`hands serve` printed the \
                           file it is kept in when it started)";

/// The sign-in codes of one server. Cloning shares them.
#[derive(Clone)]
pub struct SignIn {
    inner: Arc<Inner>,
}

struct Inner {
    /// Oldest first.
    codes: Mutex<VecDeque<Code>>,
    lifetime: Duration,
    /// What a good code is traded for; `None` when the server requires no token.
    token: Option<String>,
}

struct Code {
    value: String,
    expires: Instant,
}

/// Why a code was not traded for the token: it was used, it expired, or it was never made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{REFUSED}")]
pub struct Refused;

impl SignIn {
    /// Codes good for `lifetime` each, traded for `token`.
    pub fn new(token: Option<String>, lifetime: Duration) -> Self {
        let token = token.filter(|t| !t.is_empty());
        Self { inner: Arc::new(Inner { codes: Mutex::default(), lifetime, token }) }
    }

    /// How long a code is good for.
    pub fn lifetime(&self) -> Duration {
        self.inner.lifetime
    }

    /// A new code, good for one exchange within [`SignIn::lifetime`]. Fails only when the
    /// kernel gives no random bytes.
    pub fn mint(&self) -> std::io::Result<String> {
        let value = crate::token::random_token()?;
        let now = Instant::now();
        let mut codes = self.lock();
        codes.retain(|code| code.expires > now);
        while codes.len() >= MAX_CODES {
            codes.pop_front();
        }
        codes.push_back(Code { value: value.clone(), expires: now + self.inner.lifetime });
        Ok(value)
    }

    /// A one-time link to the web UI at `base` (`http://127.0.0.1:7777`): `base/#signin=CODE`.
    pub fn link(&self, base: &str) -> std::io::Result<String> {
        let code = self.mint()?;
        Ok(format!("{}/#{FRAGMENT_KEY}={code}", base.trim_end_matches('/')))
    }

    /// Trade `code` for the token (`None` when the server requires none). A code is removed by
    /// its first exchange, in time or not, so a second one is refused.
    pub fn redeem(&self, code: &str) -> Result<Option<String>, Refused> {
        let now = Instant::now();
        let mut codes = self.lock();
        // Every waiting code is compared, whichever matches, so the time taken says nothing.
        let mut found = None;
        for (i, waiting) in codes.iter().enumerate() {
            if bool::from(waiting.value.as_bytes().ct_eq(code.as_bytes())) {
                found = Some(i);
            }
        }
        let code = found.and_then(|i| codes.remove(i)).ok_or(Refused)?;
        codes.retain(|code| code.expires > now);
        if code.expires <= now {
            return Err(Refused);
        }
        Ok(self.inner.token.clone())
    }

    /// Codes waiting now (expired ones included until the next mint or exchange).
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Code>> {
        self.inner.codes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signin() -> SignIn {
        SignIn::new(Some("the-token".into()), LIFETIME)
    }

    #[tokio::test(start_paused = true)]
    async fn a_code_is_good_once() {
        let signin = signin();
        let code = signin.mint().unwrap();
        assert_eq!(code.len(), 64, "256 bits as hex");
        assert!(code.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(signin.redeem(&code), Ok(Some("the-token".into())));
        assert_eq!(signin.redeem(&code), Err(Refused), "a second use");
        assert_eq!(signin.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_code_expires_after_its_lifetime() {
        let signin = signin();
        let late = signin.mint().unwrap();
        let in_time = signin.mint().unwrap();
        tokio::time::advance(LIFETIME - Duration::from_millis(1)).await;
        assert_eq!(signin.redeem(&in_time), Ok(Some("the-token".into())), "just in time");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(signin.redeem(&late), Err(Refused), "at its lifetime");
        assert_eq!(signin.waiting(), 0, "an expired code is gone too");
        // A lifetime of the caller's choosing (how a test of the binary could shorten it).
        let short = SignIn::new(None, Duration::from_secs(1));
        let code = short.mint().unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(short.redeem(&code), Err(Refused));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wrong_code_is_refused_and_spends_no_other() {
        let signin = signin();
        let code = signin.mint().unwrap();
        for wrong in ["", "0", &code[..63], &format!("{code}0"), &code.to_uppercase()] {
            if wrong == code {
                continue;
            }
            assert_eq!(signin.redeem(wrong), Err(Refused), "{wrong:?}");
        }
        assert_eq!(Refused.to_string(), REFUSED);
        assert!(REFUSED.contains("already used or has expired"));
        assert_eq!(signin.redeem(&code), Ok(Some("the-token".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_max_codes_wait_and_the_oldest_goes_first() {
        let signin = signin();
        let codes: Vec<String> = (0..MAX_CODES + 2).map(|_| signin.mint().unwrap()).collect();
        assert_eq!(signin.waiting(), MAX_CODES);
        assert_eq!(signin.redeem(&codes[0]), Err(Refused), "dropped for a newer one");
        assert_eq!(signin.redeem(&codes[1]), Err(Refused), "dropped for a newer one");
        for code in &codes[2..] {
            assert_eq!(signin.redeem(code), Ok(Some("the-token".into())));
        }
        // Expired codes take no room: a new one clears them.
        let old = signin.mint().unwrap();
        tokio::time::advance(LIFETIME).await;
        let fresh = signin.mint().unwrap();
        assert_eq!(signin.waiting(), 1);
        assert_eq!(signin.redeem(&old), Err(Refused));
        assert_eq!(signin.redeem(&fresh), Ok(Some("the-token".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_link_carries_the_code_in_its_fragment_and_never_the_token() {
        let signin = signin();
        let link = signin.link("http://127.0.0.1:7777/").unwrap();
        let code = link.strip_prefix("http://127.0.0.1:7777/#signin=").unwrap();
        assert!(!link.contains("the-token"), "{link}");
        assert_eq!(signin.redeem(code), Ok(Some("the-token".into())));
        assert_eq!(SignIn::new(Some(String::new()), LIFETIME).inner.token, None);
    }
}
