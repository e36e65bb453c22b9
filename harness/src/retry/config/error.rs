//! Why a service config was rejected, and the messages that say so.

use std::fmt;

use super::MAX_ATTEMPTS_CAP;

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
    /// A required field of `retryPolicy`, `hedgingPolicy` or `retryThrottling`
    /// is absent.
    MissingField {
        /// Where the field belongs, e.g. `methodConfig[0].retryPolicy`.
        location: String,
        /// The missing field's camelCase name.
        field: &'static str,
    },
    /// `maxAttempts` is not an integer ≥ 2.
    MaxAttempts {
        /// The `retryPolicy`'s or `hedgingPolicy`'s location.
        location: String,
        /// The value as written (JSON text).
        value: String,
    },
    /// `initialBackoff` or `maxBackoff` is not a positive protobuf-JSON
    /// duration, or `hedgingDelay` not a non-negative one.
    Duration {
        /// The policy's location.
        location: String,
        /// `initialBackoff`, `maxBackoff` or `hedgingDelay`.
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
    /// An entry of `retryableStatusCodes` (or `nonFatalStatusCodes`) is
    /// neither a code name nor 0..=16.
    UnknownStatusCode {
        /// The list's location, e.g. `methodConfig[0].retryPolicy.retryableStatusCodes`.
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
    /// One `methodConfig` entry has both a `retryPolicy` and a
    /// `hedgingPolicy` (gRFC A6 "Integration with Service Config": only one
    /// of them may be set).
    BothPolicies {
        /// The `methodConfig` entry's location.
        location: String,
    },
    /// `hedgingPolicy.nonFatalStatusCodes` is empty (gRFC A6 requires it
    /// non-empty).
    NoNonFatalCodes {
        /// The `hedgingPolicy`'s location.
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
                 remove the policy to disable retries or hedging"
            ),
            ConfigError::Duration {
                location,
                field,
                value,
                problem,
            } => write!(
                f,
                "{location}.{field} is {value}: {problem}; write a duration string \
                 in seconds such as \"0.1s\""
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
                "{location} has {value}, which is not a status code; \
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
            ConfigError::BothPolicies { location } => write!(
                f,
                "{location} has both a retryPolicy and a hedgingPolicy; gRFC A6 allows \
                 only one per methodConfig: keep one, or put the other in its own entry \
                 for other methods"
            ),
            ConfigError::NoNonFatalCodes { location } => write!(
                f,
                "{location}.nonFatalStatusCodes is empty; list at least one code that \
                 lets the other hedges go on, e.g. [\"UNAVAILABLE\"]"
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

impl fmt::Display for super::ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            super::ConfigWarning::UnthrottledHedgingAllAtOnce { key, max_attempts } => {
                let what = if key.is_empty() {
                    "the default entry".to_owned()
                } else {
                    format!("\"{key}\"")
                };
                write!(
                    f,
                    "hedgingPolicy for {what} has hedgingDelay 0s and the config has no \
                     retryThrottling: every call sends {max_attempts} copies at once, \
                     even to an overloaded server; add retryThrottling or a hedgingDelay"
                )
            }
        }
    }
}
