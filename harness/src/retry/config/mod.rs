//! Parsing and validating the retry part of a gRPC service config (gRFC A6); [`RetryConfig`] gives the accepted JSON.

// The model is here; `json` reads the JSON into it, `duration` parses the
// protobuf-JSON durations, `error` says what was rejected and why.
mod duration;
mod error;
mod hedging;
mod json;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tonic::Code;

use crate::spec::CODE_NAMES;
pub use error::ConfigError;
pub use hedging::HedgingPolicy;

/// The cap applied to `maxAttempts`: grpc-go's `defaultMaxCallAttempts`
/// (`dialoptions.go`), also the limit gRFC A6 recommends. Larger values are
/// silently lowered to this, as grpc-go does; the requested value is kept in
/// [`RetryPolicy::requested_max_attempts`].
pub const MAX_ATTEMPTS_CAP: u32 = 5;

/// A parsed, validated service config: the method configs with their retry
/// policies, and the optional retry throttling.
///
/// Build one with [`RetryConfig::from_json`] (or `str::parse`). The
/// [`Default`] config has no method configs: no call is retried.
///
/// # The accepted JSON
///
/// Parsing and validating the retry part of a gRPC service config (gRFC A6).
///
/// The accepted JSON is the service-config shape of gRFC A6 "Integration with
/// Service Config" and grpc `doc/service_config.md`:
///
/// ```json
/// {"methodConfig": [{"name": [{"service": "tt.v1.Scoreboard", "method": "Hit"}],
///                    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
///                                    "maxBackoff": "1s", "backoffMultiplier": 2,
///                                    "retryableStatusCodes": ["UNAVAILABLE"]}}],
///  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
/// ```
///
/// Validation follows grpc-go `service_config.go` (`parseServiceConfig`,
/// `convertRetryPolicy`) with one deliberate difference: grpc-go logs and
/// *ignores* an illegal `retryPolicy` (the method then gets no retries), while
/// this module returns a [`ConfigError`], because a silently dropped policy is
/// the kind of surprise a fault-injection test should not hide.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryConfig {
    /// Keyed as grpc-go keys `ServiceConfig.Methods`: `"/svc/method"`,
    /// `"/svc/"` for a whole service, `""` for the default entry.
    methods: BTreeMap<String, MethodEntry>,
    throttling: Option<ThrottlingPolicy>,
    ignored: Vec<String>,
}

/// One `methodConfig` entry as far as retries go: at most one of the two
/// policies. An entry with neither still matters: it shadows less specific
/// entries.
#[derive(Clone, Debug, PartialEq)]
struct MethodEntry {
    retry: Option<Arc<RetryPolicy>>,
    hedging: Option<Arc<HedgingPolicy>>,
}

/// Something allowed in a service config that a team would want to hear
/// about ([`RetryConfig::warnings`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// A `hedgingPolicy` with `hedgingDelay` zero and no `retryThrottling`:
    /// every call sends `maxAttempts` copies at once, always, whatever the
    /// server's state (gRFC A6 allows it).
    UnthrottledHedgingAllAtOnce {
        /// The entry's key: `"/svc/method"`, `"/svc/"` or `""` (the default).
        key: String,
        /// Copies sent per call.
        max_attempts: u32,
    },
}

impl RetryConfig {
    /// Parses and validates a service config in the JSON form of gRFC A6.
    ///
    /// Field names are the proto3-JSON camelCase names (`maxAttempts`); the
    /// PascalCase (`MaxAttempts`, used by grpc-go's own examples, since Go's
    /// JSON decoder ignores case) and snake_case (`max_attempts`) spellings are
    /// accepted too. Top-level and `methodConfig` fields this module does not
    /// model (`loadBalancingConfig`, `timeout`, `waitForReady`, …) are recorded
    /// in [`RetryConfig::ignored_fields`]; unknown fields inside `name`,
    /// `retryPolicy` and `retryThrottling` are errors.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the offending field and what to change, for
    /// malformed JSON or any rule of [`RetryPolicy`] / [`ThrottlingPolicy`].
    pub fn from_json(json: &str) -> Result<Self, ConfigError> {
        json::parse_service_config(json)
    }

    /// The retry policy for a request path (`"/tt.v1.Scoreboard/Hit"`), or
    /// `None` when the call is not retried.
    ///
    /// Lookup order, as grpc-go's `getMethodConfig`: the exact
    /// `service`+`method` entry, then the service-wide entry (`service` only),
    /// then the default entry (empty `name`). The first entry found decides,
    /// even when it has no `retryPolicy`.
    pub fn policy_for(&self, path: &str) -> Option<&RetryPolicy> {
        self.entry_for(path)?.1.retry.as_deref()
    }

    /// The hedging policy for a request path, or `None` when the call is not
    /// hedged. The same lookup as [`RetryConfig::policy_for`]; an entry has a
    /// retry policy or a hedging policy, never both.
    pub fn hedging_for(&self, path: &str) -> Option<&HedgingPolicy> {
        self.entry_for(path)?.1.hedging.as_deref()
    }

    /// Like [`RetryConfig::hedging_for`], but a shared handle.
    pub(crate) fn shared_hedging_for(&self, path: &str) -> Option<Arc<HedgingPolicy>> {
        self.entry_for(path)?.1.hedging.clone()
    }

    /// What in this config is allowed but amplifies load: hedging with a
    /// zero delay and no throttling. Empty for most configs.
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        if self.throttling.is_some() {
            return Vec::new();
        }
        self.methods
            .iter()
            .filter_map(|(key, e)| {
                let h = e.hedging.as_deref()?;
                h.hedging_delay()
                    .is_zero()
                    .then(|| ConfigWarning::UnthrottledHedgingAllAtOnce {
                        key: key.clone(),
                        max_attempts: h.max_attempts(),
                    })
            })
            .collect()
    }

    /// Like [`RetryConfig::policy_for`], but a shared handle.
    pub(crate) fn shared_policy_for(&self, path: &str) -> Option<Arc<RetryPolicy>> {
        self.entry_for(path)?.1.retry.clone()
    }

    /// The name of the entry that decides for `path`, as a key:
    /// `"/svc/method"`, `"/svc/"` (a whole service) or `""` (the default).
    pub(crate) fn key_for(&self, path: &str) -> Option<&str> {
        Some(self.entry_for(path)?.0)
    }

    /// The names of the entries that carry a `retryPolicy` or a
    /// `hedgingPolicy`, as keys (see [`RetryConfig::key_for`]).
    pub(crate) fn policy_keys(&self) -> impl Iterator<Item = &str> {
        self.methods
            .iter()
            .filter(|(_, e)| e.retry.is_some() || e.hedging.is_some())
            .map(|(k, _)| k.as_str())
    }

    /// Every entry's name that names a service: `(key, service)`.
    pub(crate) fn named_services(&self) -> impl Iterator<Item = (&str, &str)> {
        self.methods.keys().filter_map(|k| {
            let service = k.strip_prefix('/')?.split('/').next()?;
            Some((k.as_str(), service))
        })
    }

    fn entry_for(&self, path: &str) -> Option<(&str, &MethodEntry)> {
        let get = |key: &str| {
            self.methods
                .get_key_value(key)
                .map(|(k, e)| (k.as_str(), e))
        };
        if let Some(found) = get(path) {
            return Some(found);
        }
        // "/svc/method" → "/svc/"; a malformed path only matches the default.
        if let Some(cut) = path.rfind('/').filter(|&c| c > 0) {
            if let Some(found) = get(&path[..=cut]) {
                return Some(found);
            }
        }
        get("")
    }

    /// The retry throttling policy (`retryThrottling`), if the config has one.
    pub fn throttling(&self) -> Option<&ThrottlingPolicy> {
        self.throttling.as_ref()
    }

    /// Fields present in the JSON that this module does not model and ignored,
    /// as paths (`"loadBalancingConfig"`, `"methodConfig[0].timeout"`), in
    /// document order within each level.
    pub fn ignored_fields(&self) -> &[String] {
        &self.ignored
    }
}

impl FromStr for RetryConfig {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_json(s)
    }
}

/// A validated `retryPolicy` (gRFC A6 "Retry Policy").
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    requested_max_attempts: u32,
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    backoff_multiplier: f64,
    /// Bit `c` set when status code `c` is retryable.
    retryable: u32,
}

impl RetryPolicy {
    /// `maxAttempts` after the cap of [`MAX_ATTEMPTS_CAP`]: the most attempts
    /// a call makes, the first one included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `maxAttempts` as written in the config, before the cap (saturating at
    /// `u32::MAX`).
    pub fn requested_max_attempts(&self) -> u32 {
        self.requested_max_attempts
    }

    /// Whether `maxAttempts` was lowered to [`MAX_ATTEMPTS_CAP`].
    pub fn was_capped(&self) -> bool {
        self.requested_max_attempts != self.max_attempts
    }

    /// `initialBackoff`: the base of the first retry's delay (before jitter).
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// `maxBackoff`: the ceiling of the exponential backoff (before jitter).
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// `backoffMultiplier`: the growth factor between retries (> 0, finite).
    pub fn backoff_multiplier(&self) -> f64 {
        self.backoff_multiplier
    }

    /// Whether a failed attempt with this code may be retried
    /// (`retryableStatusCodes`).
    pub fn is_retryable(&self, code: Code) -> bool {
        self.retryable & (1 << (code as u32)) != 0
    }

    /// The retryable codes, in code order.
    pub fn retryable_codes(&self) -> impl Iterator<Item = Code> + '_ {
        (0..CODE_NAMES.len() as i32)
            .map(Code::from_i32)
            .filter(|c| self.is_retryable(*c))
    }
}

/// A validated `retryThrottling` policy (gRFC A6 "Throttling Retry Attempts").
///
/// Token counts are kept in thousandths of a token (milli-tokens), so
/// `tokenRatio` keeps 3 decimal places: gRFC A6 and grpc-go's
/// `retryThrottlingPolicy` document "up to 3 decimal places are supported";
/// further digits are dropped (truncated, as grpc C-core does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrottlingPolicy {
    max_milli_tokens: u64,
    token_ratio_milli: u64,
}

impl ThrottlingPolicy {
    /// `maxTokens`: the bucket's size and starting level, in tokens.
    pub fn max_tokens(&self) -> f64 {
        self.max_milli_tokens as f64 / 1000.0
    }

    /// `tokenRatio` kept to 3 decimals: tokens added per successful call.
    pub fn token_ratio(&self) -> f64 {
        self.token_ratio_milli as f64 / 1000.0
    }

    /// `maxTokens` in thousandths of a token.
    pub fn max_milli_tokens(&self) -> u64 {
        self.max_milli_tokens
    }

    /// `tokenRatio` in thousandths of a token.
    pub fn token_ratio_milli(&self) -> u64 {
        self.token_ratio_milli
    }
}
