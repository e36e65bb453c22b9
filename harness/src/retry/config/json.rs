//! Reading a service config's JSON into the model: the serde shapes of
//! gRFC A6's JSON, and the conversion that checks every rule on the way.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use tonic::Code;

use super::duration::parse_proto_duration;
use super::{
    ConfigError, HedgingPolicy, MethodEntry, RetryConfig, RetryPolicy, ThrottlingPolicy,
    MAX_ATTEMPTS_CAP,
};
use crate::spec::{code_from_name, CODE_NAMES};

/// The body of [`RetryConfig::from_json`].
pub(super) fn parse_service_config(json: &str) -> Result<RetryConfig, ConfigError> {
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

impl RetryConfig {
    fn add_method_config(&mut self, i: usize, mc: JsonMethodConfig) -> Result<(), ConfigError> {
        let location = format!("methodConfig[{i}]");
        self.ignored
            .extend(mc.other.into_keys().map(|k| format!("{location}.{k}")));
        if mc.hedging_policy.is_some() && mc.retry_policy.is_some() {
            return Err(ConfigError::BothPolicies { location });
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
        let hedging = match mc.hedging_policy {
            Some(hp) => Some(Arc::new(HedgingPolicy::from_json(
                hp,
                &format!("{location}.hedgingPolicy"),
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
                    hedging: hedging.clone(),
                },
            );
        }
        Ok(())
    }
}

impl RetryPolicy {
    fn from_json(rp: JsonRetryPolicy, location: &str) -> Result<Self, ConfigError> {
        let missing = |field| ConfigError::MissingField {
            location: location.to_owned(),
            field,
        };
        let requested_max_attempts = max_attempts(
            rp.max_attempts.ok_or_else(|| missing("maxAttempts"))?,
            location,
        )?;
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
        let retryable = code_bits(&codes, &format!("{location}.retryableStatusCodes"))?;
        Ok(RetryPolicy {
            requested_max_attempts,
            max_attempts: requested_max_attempts.min(MAX_ATTEMPTS_CAP),
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            retryable,
        })
    }
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
}

/// `maxAttempts` as written (≥ 2, saturating at `u32::MAX`), before the cap.
pub(super) fn max_attempts(attempts: Value, location: &str) -> Result<u32, ConfigError> {
    let requested =
        attempts
            .as_i64()
            .filter(|&n| n >= 2)
            .ok_or_else(|| ConfigError::MaxAttempts {
                location: location.to_owned(),
                value: attempts.to_string(),
            })?;
    Ok(u32::try_from(requested).unwrap_or(u32::MAX))
}

/// Keeps 3 decimals: round to millionths first so that binary noise
/// (`0.29 * 1000 = 289.999…`) does not lose a unit, then drop the rest.
fn to_milli(v: f64) -> u64 {
    ((v * 1_000_000.0).round() as u64) / 1000
}

/// serde_json appends " at line L column C"; the variant carries those already.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// The codes of a status-code list as a bit set (bit `c` for code `c`).
pub(super) fn code_bits(codes: &[Value], location: &str) -> Result<u32, ConfigError> {
    let mut bits = 0u32;
    for c in codes {
        bits |= 1 << (parse_code(c, location)? as u32);
    }
    Ok(bits)
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
    hedging_policy: Option<super::hedging::JsonHedgingPolicy>,
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
