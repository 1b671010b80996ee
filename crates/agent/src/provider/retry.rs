//! When and how long to wait before trying a model call again: exponential backoff with jitter,
//! or what the provider asked for in `retry-after-ms` / `retry-after` (seconds or an HTTP date).
//! The waiting itself ends at once when the call is cancelled.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use crate::model::ProviderError;

/// HTTP statuses worth another try: rate limited, server errors, Anthropic's 529 "overloaded".
pub(crate) const RETRYABLE_STATUSES: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// How a provider retries a failed call (before the first text delta only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`[model] max_retries`); 0 never retries.
    pub max_retries: u32,
    /// Backoff before the first retry; doubled for each further one.
    pub base_delay: Duration,
    /// Ceiling of the exponential backoff.
    pub max_delay: Duration,
    /// The longest `retry-after` we wait out; asked for longer, we give up at once and report it.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first), or `None` when the provider asked
    /// for a longer wait than we accept.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(asked) = retry_after {
            return (asked <= self.max_retry_after).then_some(asked);
        }
        let exp = self.base_delay.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        let exp = exp.min(self.max_delay);
        // Equal jitter: half fixed, half random, so that clients that failed together spread out
        // without any of them retrying immediately.
        let half = exp / 2;
        Some(half + half.mul_f64(random_unit()))
    }
}

/// A number in `[0, 1)`, good enough for jitter (RandomState is seeded randomly per process and
/// per instance; this avoids a dependency for one random number).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What the response's headers ask us to wait: `retry-after-ms` (OpenAI, milliseconds), else
/// `retry-after` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = value("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let raw = value("retry-after")?;
    if let Ok(secs) = raw.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(raw).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Sleep `wait`, or return `Cancelled` as soon as `cancel` fires.
pub(crate) async fn wait(wait: Duration, cancel: &CancellationToken) -> Result<(), ProviderError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::Cancelled),
        () = tokio::time::sleep(wait) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1500"), ("retry-after", "9")])),
            Some(Duration::from_millis(1500)),
            "retry-after-ms is the more precise and wins"
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let got = retry_after(&headers(&[("retry-after", &soon)])).unwrap();
        assert!(got > Duration::from_secs(27) && got <= Duration::from_secs(30), "{got:?}");
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(30));
        assert_eq!(retry_after(&headers(&[("retry-after", &past)])), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[])), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            let first = policy.delay(1, None).unwrap();
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.delay(2, None).unwrap();
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.delay(10, None).unwrap();
            assert!(capped >= Duration::from_millis(175) && capped <= Duration::from_millis(350));
        }
        let spread: std::collections::HashSet<_> =
            (0..20).map(|_| policy.delay(3, None).unwrap()).collect();
        assert!(spread.len() > 1, "jitter varies the delay");
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_limit() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3))), Some(Duration::from_secs(3)));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3600))), None);
    }

    #[tokio::test]
    async fn cancellation_interrupts_the_wait() {
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            canceller.cancel();
        });
        let started = std::time::Instant::now();
        assert_eq!(wait(Duration::from_secs(30), &cancel).await, Err(ProviderError::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
