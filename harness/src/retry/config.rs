//! Parsing and validating the retry part of a gRPC service config (gRFC A6).
//!
//! The accepted JSON is the service-config shape of gRFC A6 "Integration with
//! Service Config" and grpc `doc/service_config.md`:
//!
//! ```json
//! {"methodConfig": [{"name": [{"service": "tt.v1.Scoreboard", "method": "Hit"}],
//!                    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
//!                                    "maxBackoff": "1s", "backoffMultiplier": 2,
//!                                    "retryableStatusCodes": ["UNAVAILABLE"]}}],
//!  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
//! ```
//!
//! Validation follows grpc-go `service_config.go` (`parseServiceConfig`,
//! `convertRetryPolicy`) with one deliberate difference: grpc-go logs and
//! *ignores* an illegal `retryPolicy` (the method then gets no retries), while
//! this module returns a [`ConfigError`], because a silently dropped policy is
//! the kind of surprise a fault-injection test should not hide.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use tonic::Code;

/// The cap applied to `maxAttempts`: grpc-go's `defaultMaxCallAttempts`
/// (`dialoptions.go`), also the limit gRFC A6 recommends. Larger values are
/// silently lowered to this, as grpc-go does; the requested value is kept in
/// [`RetryPolicy::requested_max_attempts`].
pub const MAX_ATTEMPTS_CAP: u32 = 5;

/// The largest `seconds` part of a protobuf-JSON duration
/// (`google.protobuf.Duration`: ±10,000 years), as grpc-go checks it.
const MAX_PROTO_SECONDS: u64 = 315_576_000_000;

use crate::spec::CODE_NAMES;
pub use crate::spec::{code_from_name, code_name};

/// A parsed, validated service config: the method configs with their retry
/// policies, and the optional retry throttling.
///
/// Build one with [`RetryConfig::from_json`] (or `str::parse`). The
/// [`Default`] config has no method configs: no call is retried.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryConfig {
    /// Keyed as grpc-go keys `ServiceConfig.Methods`: `"/svc/method"`,
    /// `"/svc/"` for a whole service, `""` for the default entry.
    methods: BTreeMap<String, MethodEntry>,
    throttling: Option<ThrottlingPolicy>,
    ignored: Vec<String>,
}

/// One `methodConfig` entry as far as retries go. An entry without a
/// `retryPolicy` still matters: it shadows less specific entries.
#[derive(Clone, Debug, PartialEq)]
struct MethodEntry {
    retry: Option<Arc<RetryPolicy>>,
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
        let raw: JsonServiceConfig = serde_json::from_str(json).map_err(|e| ConfigError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        let mut config = RetryConfig {
            ignored: raw.other.into_keys().collect(),
            ..RetryConfig::default()
        };
        for (i, mc) in raw
            .method_config
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            config.add_method_config(i, mc)?;
        }
        if let Some(t) = raw.retry_throttling {
            config.throttling = Some(ThrottlingPolicy::from_json(t)?);
        }
        Ok(config)
    }

    fn add_method_config(&mut self, i: usize, mc: JsonMethodConfig) -> Result<(), ConfigError> {
        let location = format!("methodConfig[{i}]");
        self.ignored
            .extend(mc.other.into_keys().map(|k| format!("{location}.{k}")));
        if mc.hedging_policy.is_some() {
            return Err(ConfigError::Hedging { location });
        }
        let Some(names) = mc.name else {
            // grpc-go skips an entry without names; record it so it is not silent.
            self.ignored.push(format!("{location} (no \"name\")"));
            return Ok(());
        };
        let retry = match mc.retry_policy {
            Some(rp) => Some(Arc::new(RetryPolicy::from_json(
                rp,
                &format!("{location}.retryPolicy"),
            )?)),
            None => None,
        };
        for (j, name) in names.into_iter().enumerate() {
            let path = name.path(&format!("{location}.name[{j}]"))?;
            if self.methods.contains_key(&path) {
                return Err(ConfigError::DuplicateName {
                    location: format!("{location}.name[{j}]"),
                    path,
                });
            }
            self.methods.insert(
                path,
                MethodEntry {
                    retry: retry.clone(),
                },
            );
        }
        Ok(())
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

    /// Like [`RetryConfig::policy_for`], but a shared handle.
    pub(crate) fn shared_policy_for(&self, path: &str) -> Option<Arc<RetryPolicy>> {
        self.entry_for(path)?.1.retry.clone()
    }

    /// The name of the entry that decides for `path`, as a key:
    /// `"/svc/method"`, `"/svc/"` (a whole service) or `""` (the default).
    pub(crate) fn key_for(&self, path: &str) -> Option<&str> {
        Some(self.entry_for(path)?.0)
    }

    /// The names of the entries that carry a `retryPolicy`, as keys (see
    /// [`RetryConfig::key_for`]).
    pub(crate) fn policy_keys(&self) -> impl Iterator<Item = &str> {
        self.methods
            .iter()
            .filter(|(_, e)| e.retry.is_some())
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
    fn from_json(rp: JsonRetryPolicy, location: &str) -> Result<Self, ConfigError> {
        let missing = |field| ConfigError::MissingField {
            location: location.to_owned(),
            field,
        };
        let attempts = rp.max_attempts.ok_or_else(|| missing("maxAttempts"))?;
        let requested =
            attempts
                .as_i64()
                .filter(|&n| n >= 2)
                .ok_or_else(|| ConfigError::MaxAttempts {
                    location: location.to_owned(),
                    value: attempts.to_string(),
                })?;
        let requested_max_attempts = u32::try_from(requested).unwrap_or(u32::MAX);
        let initial_backoff = parse_duration_field(
            rp.initial_backoff
                .ok_or_else(|| missing("initialBackoff"))?,
            location,
            "initialBackoff",
        )?;
        let max_backoff = parse_duration_field(
            rp.max_backoff.ok_or_else(|| missing("maxBackoff"))?,
            location,
            "maxBackoff",
        )?;
        let mult = rp
            .backoff_multiplier
            .ok_or_else(|| missing("backoffMultiplier"))?;
        let backoff_multiplier = mult
            .as_f64()
            .filter(|m| m.is_finite() && *m > 0.0)
            .ok_or_else(|| ConfigError::Multiplier {
                location: location.to_owned(),
                value: mult.to_string(),
            })?;
        let codes = rp
            .retryable_status_codes
            .ok_or_else(|| missing("retryableStatusCodes"))?;
        if codes.is_empty() {
            return Err(ConfigError::NoRetryableCodes {
                location: location.to_owned(),
            });
        }
        let mut retryable = 0u32;
        for c in &codes {
            retryable |= 1 << (parse_code(c, location)? as u32);
        }
        Ok(RetryPolicy {
            requested_max_attempts,
            max_attempts: requested_max_attempts.min(MAX_ATTEMPTS_CAP),
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            retryable,
        })
    }

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
    fn from_json(t: JsonThrottling) -> Result<Self, ConfigError> {
        let missing = |field| ConfigError::MissingField {
            location: "retryThrottling".to_owned(),
            field,
        };
        let mt = t.max_tokens.ok_or_else(|| missing("maxTokens"))?;
        let max_milli_tokens = mt
            .as_f64()
            .filter(|v| *v > 0.0 && *v <= 1000.0)
            .map(to_milli)
            .filter(|m| *m > 0)
            .ok_or_else(|| ConfigError::MaxTokens {
                value: mt.to_string(),
            })?;
        let tr = t.token_ratio.ok_or_else(|| missing("tokenRatio"))?;
        let token_ratio_milli = tr
            .as_f64()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(to_milli)
            .filter(|m| *m > 0)
            .ok_or_else(|| ConfigError::TokenRatio {
                value: tr.to_string(),
            })?;
        Ok(ThrottlingPolicy {
            max_milli_tokens,
            token_ratio_milli,
        })
    }

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

/// Keeps 3 decimals: round to millionths first so that binary noise
/// (`0.29 * 1000 = 289.999…`) does not lose a unit, then drop the rest.
fn to_milli(v: f64) -> u64 {
    ((v * 1_000_000.0).round() as u64) / 1000
}

/// Why a service config was rejected. Each message names the JSON location,
/// what is wrong, and what to change.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON, or a field has the wrong JSON type.
    Json {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// The parser's description, without the position.
        message: String,
    },
    /// A required field of `retryPolicy` or `retryThrottling` is absent.
    MissingField {
        /// Where the field belongs, e.g. `methodConfig[0].retryPolicy`.
        location: String,
        /// The missing field's camelCase name.
        field: &'static str,
    },
    /// `maxAttempts` is not an integer ≥ 2.
    MaxAttempts {
        /// The `retryPolicy`'s location.
        location: String,
        /// The value as written (JSON text).
        value: String,
    },
    /// `initialBackoff` or `maxBackoff` is not a positive protobuf-JSON duration.
    Duration {
        /// The `retryPolicy`'s location.
        location: String,
        /// `initialBackoff` or `maxBackoff`.
        field: &'static str,
        /// The value as written (JSON text).
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// `backoffMultiplier` is not a finite number > 0.
    Multiplier {
        /// The `retryPolicy`'s location.
        location: String,
        /// The value as written (JSON text).
        value: String,
    },
    /// `retryableStatusCodes` is empty.
    NoRetryableCodes {
        /// The `retryPolicy`'s location.
        location: String,
    },
    /// An entry of `retryableStatusCodes` is neither a code name nor 0..=16.
    UnknownStatusCode {
        /// The `retryPolicy`'s location.
        location: String,
        /// The entry as written (JSON text).
        value: String,
    },
    /// A `name` has a `method` but no `service`.
    EmptyServiceWithMethod {
        /// The `name` entry's location.
        location: String,
    },
    /// Two `name` entries select the same method, service or default.
    DuplicateName {
        /// The later entry's location.
        location: String,
        /// The path both select (`/svc/method`, `/svc/`, or empty for the default).
        path: String,
    },
    /// A `hedgingPolicy` is present; hedging is not modelled.
    Hedging {
        /// The `methodConfig` entry's location.
        location: String,
    },
    /// `retryThrottling.maxTokens` is outside (0, 1000].
    MaxTokens {
        /// The value as written (JSON text).
        value: String,
    },
    /// `retryThrottling.tokenRatio` is not > 0 once kept to 3 decimals.
    TokenRatio {
        /// The value as written (JSON text).
        value: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Json {
                line,
                column,
                message,
            } => write!(
                f,
                "service config is not valid JSON for gRFC A6 at line {line} column {column}: \
                 {message}; fix the JSON there"
            ),
            ConfigError::MissingField { location, field } => write!(
                f,
                "{location}: required field \"{field}\" is missing; add it (gRFC A6)"
            ),
            ConfigError::MaxAttempts { location, value } => write!(
                f,
                "{location}.maxAttempts is {value}, must be an integer of at least 2 \
                 (it counts the first attempt; values above {MAX_ATTEMPTS_CAP} are capped); \
                 remove the retryPolicy to disable retries"
            ),
            ConfigError::Duration {
                location,
                field,
                value,
                problem,
            } => write!(
                f,
                "{location}.{field} is {value}: {problem}; write a positive duration \
                 string in seconds such as \"0.1s\""
            ),
            ConfigError::Multiplier { location, value } => write!(
                f,
                "{location}.backoffMultiplier is {value}, must be a number greater than 0 \
                 (1 keeps the backoff constant)"
            ),
            ConfigError::NoRetryableCodes { location } => write!(
                f,
                "{location}.retryableStatusCodes is empty; list at least one code, \
                 e.g. [\"UNAVAILABLE\"]"
            ),
            ConfigError::UnknownStatusCode { location, value } => write!(
                f,
                "{location}.retryableStatusCodes has {value}, which is not a status code; \
                 use an upper-case name such as \"UNAVAILABLE\" or a number 0..=16"
            ),
            ConfigError::EmptyServiceWithMethod { location } => write!(
                f,
                "{location} names a \"method\" without a \"service\"; add the service, \
                 or remove both for the default entry"
            ),
            ConfigError::DuplicateName { location, path } => {
                let what = if path.is_empty() {
                    "the default (empty name)".to_owned()
                } else {
                    format!("\"{path}\"")
                };
                write!(
                    f,
                    "{location} selects {what}, already selected by an earlier entry; \
                     keep one of them"
                )
            }
            ConfigError::Hedging { location } => write!(
                f,
                "{location}.hedgingPolicy: hedging is not modelled by this harness; \
                 remove it or use a retryPolicy"
            ),
            ConfigError::MaxTokens { value } => write!(
                f,
                "retryThrottling.maxTokens is {value}, must be in (0, 1000]"
            ),
            ConfigError::TokenRatio { value } => write!(
                f,
                "retryThrottling.tokenRatio is {value}, must be at least 0.001 \
                 (3 decimal places are kept)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// serde_json appends " at line L column C"; the variant carries those already.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

fn parse_code(v: &Value, location: &str) -> Result<Code, ConfigError> {
    let unknown = || ConfigError::UnknownStatusCode {
        location: location.to_owned(),
        value: v.to_string(),
    };
    match v {
        Value::String(s) => code_from_name(s).ok_or_else(unknown),
        Value::Number(n) => n
            .as_u64()
            .filter(|&c| c < CODE_NAMES.len() as u64)
            .map(|c| Code::from_i32(c as i32))
            .ok_or_else(unknown),
        _ => Err(unknown()),
    }
}

fn parse_duration_field(
    v: Value,
    location: &str,
    field: &'static str,
) -> Result<Duration, ConfigError> {
    let err = |problem| ConfigError::Duration {
        location: location.to_owned(),
        field,
        value: v.to_string(),
        problem,
    };
    let Value::String(s) = &v else {
        return Err(err("not a string"));
    };
    match parse_proto_duration(s) {
        Ok(d) if d.is_zero() => Err(err("must be greater than 0")),
        Ok(d) => Ok(d),
        Err(problem) => Err(err(problem)),
    }
}

/// Parses a protobuf-JSON duration (`"0.1s"`, `"1.5s"`, `".01s"`, `"-1s"`),
/// as grpc-go `internal/serviceconfig.Duration.UnmarshalJSON` does: an
/// optional `-`, whole seconds and/or up to 9 fractional digits, then `s`.
/// Values beyond Go's `time.Duration` (~292 years) saturate there, as in
/// grpc-go. A negative value is reported as an error here, since both
/// backoff fields must be positive.
pub(crate) fn parse_proto_duration(s: &str) -> Result<Duration, &'static str> {
    let body = s.strip_suffix('s').ok_or("missing the \"s\" unit suffix")?;
    if body.starts_with('-') {
        return Err("must be greater than 0");
    }
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, f),
        None => (body, ""),
    };
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !all_digits(frac) {
        return Err("only digits and one '.' may precede \"s\"");
    }
    if whole.is_empty() && frac.is_empty() {
        return Err("contains no digits");
    }
    if frac.len() > 9 {
        return Err("more than 9 digits after the decimal point");
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "seconds out of range")?
    };
    if secs > MAX_PROTO_SECONDS {
        return Err("seconds out of range (at most 315576000000)");
    }
    let mut nanos: u32 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| "bad fraction")?
    };
    for _ in frac.len()..9 {
        nanos *= 10;
    }
    let d = Duration::new(secs, nanos);
    // Saturate at Go's time.Duration maximum, so the delay maths stays in u64 ns.
    Ok(d.min(Duration::from_nanos(i64::MAX as u64)))
}

// ---- JSON shapes (serde) ----

#[derive(Deserialize)]
struct JsonServiceConfig {
    #[serde(
        default,
        rename = "methodConfig",
        alias = "MethodConfig",
        alias = "method_config"
    )]
    method_config: Option<Vec<JsonMethodConfig>>,
    #[serde(
        default,
        rename = "retryThrottling",
        alias = "RetryThrottling",
        alias = "retry_throttling"
    )]
    retry_throttling: Option<JsonThrottling>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct JsonMethodConfig {
    #[serde(default, alias = "Name")]
    name: Option<Vec<JsonName>>,
    #[serde(
        default,
        rename = "retryPolicy",
        alias = "RetryPolicy",
        alias = "retry_policy"
    )]
    retry_policy: Option<JsonRetryPolicy>,
    #[serde(
        default,
        rename = "hedgingPolicy",
        alias = "HedgingPolicy",
        alias = "hedging_policy"
    )]
    hedging_policy: Option<IgnoredAny>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonName {
    #[serde(default, alias = "Service")]
    service: Option<String>,
    #[serde(default, alias = "Method")]
    method: Option<String>,
}

impl JsonName {
    /// The lookup key, as grpc-go `jsonName.generatePath`.
    fn path(&self, location: &str) -> Result<String, ConfigError> {
        let service = self.service.as_deref().unwrap_or("");
        let method = self.method.as_deref().unwrap_or("");
        match (service.is_empty(), method.is_empty()) {
            (true, true) => Ok(String::new()),
            (true, false) => Err(ConfigError::EmptyServiceWithMethod {
                location: location.to_owned(),
            }),
            (false, _) => Ok(format!("/{service}/{method}")),
        }
    }
}

/// Values are kept as JSON so that a wrong type gets a typed error naming the field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRetryPolicy {
    #[serde(
        default,
        rename = "maxAttempts",
        alias = "MaxAttempts",
        alias = "max_attempts"
    )]
    max_attempts: Option<Value>,
    #[serde(
        default,
        rename = "initialBackoff",
        alias = "InitialBackoff",
        alias = "initial_backoff"
    )]
    initial_backoff: Option<Value>,
    #[serde(
        default,
        rename = "maxBackoff",
        alias = "MaxBackoff",
        alias = "max_backoff"
    )]
    max_backoff: Option<Value>,
    #[serde(
        default,
        rename = "backoffMultiplier",
        alias = "BackoffMultiplier",
        alias = "backoff_multiplier"
    )]
    backoff_multiplier: Option<Value>,
    #[serde(
        default,
        rename = "retryableStatusCodes",
        alias = "RetryableStatusCodes",
        alias = "retryable_status_codes"
    )]
    retryable_status_codes: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonThrottling {
    #[serde(
        default,
        rename = "maxTokens",
        alias = "MaxTokens",
        alias = "max_tokens"
    )]
    max_tokens: Option<Value>,
    #[serde(
        default,
        rename = "tokenRatio",
        alias = "TokenRatio",
        alias = "token_ratio"
    )]
    token_ratio: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_EXAMPLE: &str = r#"{"methodConfig":[{"name":[{"service":"tt.v1.Scoreboard","method":"Hit"}],
        "retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,
        "retryableStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}"#;

    fn policy_json(fields: &str) -> String {
        format!(
            r#"{{"methodConfig":[{{"name":[{{"service":"s.S"}}],"retryPolicy":{{{fields}}}}}]}}"#
        )
    }

    fn with(field: &str, value: &str) -> String {
        let mut fields = vec![
            ("maxAttempts", "4"),
            ("initialBackoff", "\"0.1s\""),
            ("maxBackoff", "\"1s\""),
            ("backoffMultiplier", "2"),
            ("retryableStatusCodes", "[\"UNAVAILABLE\"]"),
        ];
        fields.retain(|(k, _)| *k != field);
        if !value.is_empty() {
            fields.push((field, value));
        }
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        policy_json(&body.join(","))
    }

    fn err(json: &str) -> ConfigError {
        RetryConfig::from_json(json).unwrap_err()
    }

    #[test]
    fn parses_the_seed_example() {
        let c = RetryConfig::from_json(SEED_EXAMPLE).unwrap();
        let p = c.policy_for("/tt.v1.Scoreboard/Hit").unwrap();
        assert_eq!(p.max_attempts(), 4);
        assert!(!p.was_capped());
        assert_eq!(p.initial_backoff(), Duration::from_millis(100));
        assert_eq!(p.max_backoff(), Duration::from_secs(1));
        assert_eq!(p.backoff_multiplier(), 2.0);
        assert_eq!(p.retryable_codes().collect::<Vec<_>>(), [Code::Unavailable]);
        assert!(!p.is_retryable(Code::Internal));
        let t = c.throttling().unwrap();
        assert_eq!((t.max_tokens(), t.token_ratio()), (10.0, 0.1));
        assert!(c.ignored_fields().is_empty());
        assert!(c.policy_for("/tt.v1.Scoreboard/Miss").is_none());
    }

    #[test]
    fn max_attempts_above_five_is_capped_and_recorded() {
        let c = RetryConfig::from_json(&with("maxAttempts", "9")).unwrap();
        let p = c.policy_for("/s.S/M").unwrap();
        assert_eq!(
            (p.requested_max_attempts(), p.max_attempts(), p.was_capped()),
            (9, 5, true)
        );
        let c = RetryConfig::from_json(&with("maxAttempts", "5")).unwrap();
        assert!(!c.policy_for("/s.S/M").unwrap().was_capped());
        let c = RetryConfig::from_json(&with("maxAttempts", "2")).unwrap();
        assert_eq!(c.policy_for("/s.S/M").unwrap().max_attempts(), 2);
    }

    #[test]
    fn max_attempts_below_two_or_not_an_integer_is_an_error() {
        for v in ["1", "0", "-3", "2.5", "\"4\"", "[4]"] {
            let e = err(&with("maxAttempts", v));
            assert!(matches!(e, ConfigError::MaxAttempts { .. }), "{v}: {e:?}");
            assert!(e.to_string().contains("at least 2"), "{e}");
        }
        let e = err(&with("maxAttempts", ""));
        assert!(
            matches!(
                e,
                ConfigError::MissingField {
                    field: "maxAttempts",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn durations_follow_protobuf_json() {
        let d = |s| parse_proto_duration(s);
        assert_eq!(d("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(d(".01s"), Ok(Duration::from_millis(10)));
        assert_eq!(d("1.s"), Ok(Duration::from_secs(1)));
        assert_eq!(d("1.000000001s"), Ok(Duration::new(1, 1)));
        assert_eq!(d("3s"), Ok(Duration::from_secs(3)));
        assert!(d("1").is_err());
        assert!(d("1ms").is_err());
        assert!(d("s").is_err());
        assert!(d(".s").is_err());
        assert!(d("1.0000000001s").is_err());
        assert!(d("1e3s").is_err());
        assert!(d("-1s").is_err());
        assert!(d("315576000001s").is_err());
        // Beyond Go's time.Duration: saturates like grpc-go.
        assert_eq!(
            d("315576000000s"),
            Ok(Duration::from_nanos(i64::MAX as u64))
        );
    }

    #[test]
    fn backoffs_must_be_positive_strings() {
        for (field, v) in [
            ("initialBackoff", "\"0s\""),
            ("maxBackoff", "\"-1s\""),
            ("initialBackoff", "0.1"),
            ("maxBackoff", "\"1\""),
        ] {
            let e = err(&with(field, v));
            assert!(
                matches!(&e, ConfigError::Duration { field: f, .. } if *f == field),
                "{field}={v}: {e:?}"
            );
            assert!(e.to_string().contains("\"0.1s\""), "{e}");
        }
    }

    #[test]
    fn multiplier_must_be_positive() {
        for v in ["0", "-1", "\"2\""] {
            assert!(
                matches!(
                    err(&with("backoffMultiplier", v)),
                    ConfigError::Multiplier { .. }
                ),
                "{v}"
            );
        }
        let c = RetryConfig::from_json(&with("backoffMultiplier", "0.5")).unwrap();
        assert_eq!(c.policy_for("/s.S/M").unwrap().backoff_multiplier(), 0.5);
    }

    #[test]
    fn retryable_codes_by_name_or_number() {
        let c = RetryConfig::from_json(&with(
            "retryableStatusCodes",
            "[\"UNAVAILABLE\", 4, \"ABORTED\"]",
        ))
        .unwrap();
        let codes: Vec<_> = c.policy_for("/s.S/M").unwrap().retryable_codes().collect();
        assert_eq!(
            codes,
            [Code::DeadlineExceeded, Code::Aborted, Code::Unavailable]
        );
        assert!(matches!(
            err(&with("retryableStatusCodes", "[]")),
            ConfigError::NoRetryableCodes { .. }
        ));
        for v in ["[\"unavailable\"]", "[17]", "[-1]", "[\"NOPE\"]", "[true]"] {
            let e = err(&with("retryableStatusCodes", v));
            assert!(
                matches!(e, ConfigError::UnknownStatusCode { .. }),
                "{v}: {e:?}"
            );
        }
    }

    #[test]
    fn method_beats_service_beats_default() {
        let retry = |n: u32| {
            format!(
                r#""retryPolicy":{{"maxAttempts":{n},"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":[14]}}"#
            )
        };
        let json = format!(
            r#"{{"methodConfig":[
              {{"name":[{{}}], {}}},
              {{"name":[{{"service":"a.A"}}], {}}},
              {{"name":[{{"service":"a.A","method":"M"}}], {}}},
              {{"name":[{{"service":"a.A","method":"NoRetry"}}]}}]}}"#,
            retry(2),
            retry(3),
            retry(4)
        );
        let c = RetryConfig::from_json(&json).unwrap();
        let attempts = |path| c.policy_for(path).map(RetryPolicy::max_attempts);
        assert_eq!(attempts("/a.A/M"), Some(4));
        assert_eq!(attempts("/a.A/Other"), Some(3));
        assert_eq!(attempts("/b.B/M"), Some(2));
        // A method entry without retryPolicy shadows the service entry.
        assert_eq!(attempts("/a.A/NoRetry"), None);
        assert_eq!(attempts("garbage"), Some(2));
    }

    #[test]
    fn name_rules() {
        let e = err(r#"{"methodConfig":[{"name":[{"method":"M"}]}]}"#);
        assert!(
            matches!(e, ConfigError::EmptyServiceWithMethod { .. }),
            "{e:?}"
        );
        let e =
            err(r#"{"methodConfig":[{"name":[{"service":"a.A"}]},{"name":[{"service":"a.A"}]}]}"#);
        assert!(
            matches!(&e, ConfigError::DuplicateName { path, .. } if path == "/a.A/"),
            "{e:?}"
        );
        assert!(e.to_string().contains("methodConfig[1].name[0]"), "{e}");
        let e = err(r#"{"methodConfig":[{"name":[{}]},{"name":[{"service":""}]}]}"#);
        assert!(
            matches!(&e, ConfigError::DuplicateName { path, .. } if path.is_empty()),
            "{e:?}"
        );
        let e = err(r#"{"methodConfig":[{"name":[{"service":"a.A","methd":"M"}]}]}"#);
        assert!(matches!(e, ConfigError::Json { .. }), "{e:?}");
    }

    #[test]
    fn throttling_rules() {
        let t = |mt: &str, tr: &str| {
            RetryConfig::from_json(&format!(
                r#"{{"retryThrottling":{{"maxTokens":{mt},"tokenRatio":{tr}}}}}"#
            ))
        };
        assert!(matches!(t("0", "0.1"), Err(ConfigError::MaxTokens { .. })));
        assert!(matches!(
            t("1000.5", "0.1"),
            Err(ConfigError::MaxTokens { .. })
        ));
        assert!(matches!(t("-1", "0.1"), Err(ConfigError::MaxTokens { .. })));
        assert_eq!(
            t("1000", "0.1").unwrap().throttling().unwrap().max_tokens(),
            1000.0
        );
        assert!(matches!(t("10", "0"), Err(ConfigError::TokenRatio { .. })));
        assert!(matches!(
            t("10", "-0.5"),
            Err(ConfigError::TokenRatio { .. })
        ));
        // Only 3 decimals are kept; below 0.001 nothing is left.
        assert!(matches!(
            t("10", "0.0004"),
            Err(ConfigError::TokenRatio { .. })
        ));
        let kept = t("10", "0.1239").unwrap();
        assert_eq!(kept.throttling().unwrap().token_ratio_milli(), 123);
        assert_eq!(
            t("10", "0.29")
                .unwrap()
                .throttling()
                .unwrap()
                .token_ratio_milli(),
            290
        );
        let e = RetryConfig::from_json(r#"{"retryThrottling":{"maxTokens":10}}"#).unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::MissingField {
                    field: "tokenRatio",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn unmodelled_fields_are_recorded_and_hedging_rejected() {
        let c = RetryConfig::from_json(
            r#"{"loadBalancingConfig":[{"round_robin":{}}],
                "methodConfig":[{"name":[{"service":"a.A"}],"timeout":"1s","waitForReady":true},
                                {"retryPolicy":null}]}"#,
        )
        .unwrap();
        assert_eq!(
            c.ignored_fields(),
            [
                "loadBalancingConfig",
                "methodConfig[0].timeout",
                "methodConfig[0].waitForReady",
                "methodConfig[1] (no \"name\")"
            ]
        );
        let e = err(r#"{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":2}}]}"#);
        assert!(matches!(e, ConfigError::Hedging { .. }), "{e:?}");
        let e = err(&with("perAttemptRecvTimeout", "\"1s\""));
        assert!(matches!(e, ConfigError::Json { .. }), "{e:?}");
    }

    #[test]
    fn pascal_case_as_in_grpc_go_examples() {
        let c = RetryConfig::from_json(
            r#"{"methodConfig":[{"name":[{"service":"grpc.examples.echo.Echo"}],"waitForReady":true,
              "retryPolicy":{"MaxAttempts":4,"InitialBackoff":".01s","MaxBackoff":".01s",
              "BackoffMultiplier":1.0,"RetryableStatusCodes":["UNAVAILABLE"]}}]}"#,
        )
        .unwrap();
        assert!(c.policy_for("/grpc.examples.echo.Echo/UnaryEcho").is_some());
    }

    #[test]
    fn bad_json_reports_position() {
        let e = err("{\"methodConfig\": [}");
        let ConfigError::Json {
            line,
            column,
            message,
        } = e.clone()
        else {
            panic!("{e:?}")
        };
        assert_eq!((line, column), (1, 19));
        assert!(!message.contains("line"), "{message}");
        assert!(e.to_string().contains("at line 1 column 19"), "{e}");
        assert!(RetryConfig::from_json("{}")
            .unwrap()
            .policy_for("/a.A/M")
            .is_none());
    }

    #[test]
    fn code_names_round_trip() {
        for i in 0..17 {
            let c = Code::from_i32(i);
            assert_eq!(code_from_name(code_name(c)), Some(c));
        }
        assert_eq!(code_name(Code::DeadlineExceeded), "DEADLINE_EXCEEDED");
    }
}
