use super::duration::parse_proto_duration;
use super::*;
use crate::spec::{code_from_name, code_name};

const SEED_EXAMPLE: &str = r#"{"methodConfig":[{"name":[{"service":"tt.v1.Scoreboard","method":"Hit"}],
    "retryPolicy":{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,
    "retryableStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}"#;

fn policy_json(fields: &str) -> String {
    format!(r#"{{"methodConfig":[{{"name":[{{"service":"s.S"}}],"retryPolicy":{{{fields}}}}}]}}"#)
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
    let e = err(r#"{"methodConfig":[{"name":[{"service":"a.A"}]},{"name":[{"service":"a.A"}]}]}"#);
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
fn unmodelled_fields_are_recorded() {
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
    let e = err(&with("perAttemptRecvTimeout", "\"1s\""));
    assert!(matches!(e, ConfigError::Json { .. }), "{e:?}");
}

fn hedge(body: &str) -> String {
    format!(r#"{{"methodConfig":[{{"name":[{{"service":"a.A"}}],"hedgingPolicy":{body}}}]}}"#)
}

#[test]
fn hedging_policy_is_read_with_a6_defaults_and_cap() {
    let c = RetryConfig::from_json(&hedge(
        r#"{"maxAttempts":7,"nonFatalStatusCodes":["UNAVAILABLE",14,"INTERNAL"]}"#,
    ))
    .unwrap();
    let h = c.hedging_for("/a.A/M").expect("hedged");
    assert_eq!((h.requested_max_attempts(), h.max_attempts()), (7, 5));
    assert_eq!(
        h.hedging_delay(),
        Duration::ZERO,
        "absent hedgingDelay is 0s"
    );
    assert_eq!(
        h.non_fatal_codes().collect::<Vec<_>>(),
        [Code::Internal, Code::Unavailable]
    );
    assert!(!h.is_non_fatal(Code::Ok));
    assert!(c.policy_for("/a.A/M").is_none());
    // 0s and no retryThrottling: allowed, but warned.
    let w = c.warnings();
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].to_string(),
        "hedgingPolicy for \"/a.A/\" has hedgingDelay 0s and the config has no retryThrottling: \
         every call sends 5 copies at once, even to an overloaded server; \
         add retryThrottling or a hedgingDelay"
    );
    let d = RetryConfig::from_json(&hedge(
        r#"{"maxAttempts":2,"hedgingDelay":"0.25s","NonFatalStatusCodes":["ABORTED"]}"#,
    ))
    .unwrap();
    assert_eq!(
        d.hedging_for("/a.A/M").unwrap().hedging_delay(),
        Duration::from_millis(250)
    );
    assert!(d.warnings().is_empty());
}

#[test]
fn bad_hedging_policies_say_what_to_change() {
    let e = err(&hedge(
        r#"{"maxAttempts":1,"nonFatalStatusCodes":["UNAVAILABLE"]}"#,
    ));
    assert_eq!(
        e.to_string(),
        "methodConfig[0].hedgingPolicy.maxAttempts is 1, must be an integer of at least 2 \
         (it counts the first attempt; values above 5 are capped); \
         remove the policy to disable retries or hedging"
    );
    let e = err(&hedge(r#"{"maxAttempts":3}"#));
    assert!(
        matches!(
            e,
            ConfigError::MissingField {
                field: "nonFatalStatusCodes",
                ..
            }
        ),
        "{e:?}"
    );
    let e = err(&hedge(r#"{"maxAttempts":3,"nonFatalStatusCodes":[]}"#));
    assert!(matches!(e, ConfigError::NoNonFatalCodes { .. }), "{e:?}");
    let e = err(&hedge(
        r#"{"maxAttempts":3,"nonFatalStatusCodes":["BUSY"]}"#,
    ));
    assert_eq!(
        e.to_string(),
        "methodConfig[0].hedgingPolicy.nonFatalStatusCodes has \"BUSY\", which is not a status \
         code; use an upper-case name such as \"UNAVAILABLE\" or a number 0..=16"
    );
    let e = err(&hedge(
        r#"{"maxAttempts":3,"hedgingDelay":"-1s","nonFatalStatusCodes":["UNAVAILABLE"]}"#,
    ));
    assert!(
        matches!(
            e,
            ConfigError::Duration {
                field: "hedgingDelay",
                problem: "must not be negative",
                ..
            }
        ),
        "{e:?}"
    );
    let e = err(&hedge(
        r#"{"maxAttempts":3,"hedgingDelay":"1s","nonFatal":[]}"#,
    ));
    assert!(matches!(e, ConfigError::Json { .. }), "{e:?}");
    let both = r#"{"methodConfig":[{"name":[{"service":"a.A"}],
        "retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s",
                       "backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]},
        "hedgingPolicy":{"maxAttempts":2,"nonFatalStatusCodes":["UNAVAILABLE"]}}]}"#;
    assert_eq!(
        err(both).to_string(),
        "methodConfig[0] has both a retryPolicy and a hedgingPolicy; gRFC A6 allows only one \
         per methodConfig: keep one, or put the other in its own entry for other methods"
    );
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
