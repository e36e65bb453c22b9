//! A `hedgingPolicy` (gRFC A6 "Hedging Policy"): the model, and reading it
//! from its JSON.
//!
//! Field rules are A6's "Integration with Service Config" (read, not
//! measured: grpc-go does not implement hedging, so there is no grpc-go code
//! to copy): `maxAttempts` required and ≥ 2, capped at [`MAX_ATTEMPTS_CAP`]
//! (A6 "Limits on Retries and Hedges"); `hedgingDelay` optional, `"0s"` or
//! absent sends every attempt at once; `nonFatalStatusCodes` required and
//! non-empty.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tonic::Code;

use super::duration::parse_proto_duration;
use super::json::{code_bits, max_attempts};
use super::{ConfigError, MAX_ATTEMPTS_CAP};
use crate::spec::CODE_NAMES;

/// A validated `hedgingPolicy`.
///
/// ```
/// use grpc_chaos::retry::RetryConfig;
/// let config: RetryConfig = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
///   "hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.05s",
///                     "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#.parse()?;
/// let hedging = config.hedging_for("/tt.v1.Store/Load").unwrap();
/// assert_eq!((hedging.requested_max_attempts(), hedging.max_attempts()), (9, 5));
/// assert_eq!(hedging.hedging_delay(), std::time::Duration::from_millis(50));
/// assert!(config.policy_for("/tt.v1.Store/Load").is_none());
/// # Ok::<(), grpc_chaos::retry::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HedgingPolicy {
    requested_max_attempts: u32,
    max_attempts: u32,
    hedging_delay: Duration,
    /// Bit `c` set when status code `c` is non-fatal.
    non_fatal: u32,
}

impl HedgingPolicy {
    /// `maxAttempts` after the cap of [`MAX_ATTEMPTS_CAP`]: the most attempts
    /// a call sends, the original included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `maxAttempts` as written, before the cap (saturating at `u32::MAX`).
    pub fn requested_max_attempts(&self) -> u32 {
        self.requested_max_attempts
    }

    /// `hedgingDelay`: the time between one attempt and the next when
    /// nothing shortcuts it; zero (the default) sends all attempts at once.
    pub fn hedging_delay(&self) -> Duration {
        self.hedging_delay
    }

    /// Whether a failed attempt with this code lets the other attempts go
    /// on (`nonFatalStatusCodes`). OK is never non-fatal: it wins.
    pub fn is_non_fatal(&self, code: Code) -> bool {
        code != Code::Ok && self.non_fatal & (1 << (code as u32)) != 0
    }

    /// The non-fatal codes, in code order.
    pub fn non_fatal_codes(&self) -> impl Iterator<Item = Code> + '_ {
        (0..CODE_NAMES.len() as i32)
            .map(Code::from_i32)
            .filter(|c| self.is_non_fatal(*c))
    }

    pub(super) fn from_json(hp: JsonHedgingPolicy, location: &str) -> Result<Self, ConfigError> {
        let missing = |field| ConfigError::MissingField {
            location: location.to_owned(),
            field,
        };
        let requested_max_attempts = max_attempts(
            hp.max_attempts.ok_or_else(|| missing("maxAttempts"))?,
            location,
        )?;
        let hedging_delay = match hp.hedging_delay {
            None => Duration::ZERO,
            Some(v) => delay(v, location)?,
        };
        let codes = hp
            .non_fatal_status_codes
            .ok_or_else(|| missing("nonFatalStatusCodes"))?;
        if codes.is_empty() {
            return Err(ConfigError::NoNonFatalCodes {
                location: location.to_owned(),
            });
        }
        let non_fatal = code_bits(&codes, &format!("{location}.nonFatalStatusCodes"))?;
        Ok(HedgingPolicy {
            requested_max_attempts,
            max_attempts: requested_max_attempts.min(MAX_ATTEMPTS_CAP),
            hedging_delay,
            non_fatal,
        })
    }
}

/// `hedgingDelay`: a protobuf-JSON duration, zero allowed.
fn delay(v: Value, location: &str) -> Result<Duration, ConfigError> {
    let err = |problem| ConfigError::Duration {
        location: location.to_owned(),
        field: "hedgingDelay",
        value: v.to_string(),
        problem,
    };
    match &v {
        Value::String(s) if s.starts_with('-') => Err(err("must not be negative")),
        Value::String(s) => parse_proto_duration(s).map_err(err),
        _ => Err(err("not a string")),
    }
}

/// Values are kept as JSON so that a wrong type gets a typed error naming the field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JsonHedgingPolicy {
    #[serde(
        default,
        rename = "maxAttempts",
        alias = "MaxAttempts",
        alias = "max_attempts"
    )]
    max_attempts: Option<Value>,
    #[serde(
        default,
        rename = "hedgingDelay",
        alias = "HedgingDelay",
        alias = "hedging_delay"
    )]
    hedging_delay: Option<Value>,
    #[serde(
        default,
        rename = "nonFatalStatusCodes",
        alias = "NonFatalStatusCodes",
        alias = "non_fatal_status_codes"
    )]
    non_fatal_status_codes: Option<Vec<Value>>,
}
