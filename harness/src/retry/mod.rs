//! gRPC client retries (gRFC A6) for tonic channels, as grpc-go does them.
//!
//! tonic has no retry policy, no service config and no
//! `grpc-retry-pushback-ms` support. [`RetryLayer`] is a tower layer that
//! puts grpc-go's retry behaviour in front of a tonic client channel,
//! configured by the `retryPolicy` / `retryThrottling` parts of an A6
//! service config ([`RetryConfig`]).
//!
//! ```
//! use grpc_chaos::retry::{RetryConfig, RetryLayer, StopReason};
//!
//! let config: RetryConfig = r#"{
//!   "methodConfig": [{"name": [{"service": "tt.v1.Scoreboard", "method": "Hit"}],
//!                     "retryPolicy": {"maxAttempts": 9, "initialBackoff": "0.1s",
//!                                     "maxBackoff": "1s", "backoffMultiplier": 2,
//!                                     "retryableStatusCodes": ["UNAVAILABLE"]}}],
//!   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#.parse()?;
//! let policy = config.policy_for("/tt.v1.Scoreboard/Hit").unwrap();
//! assert_eq!((policy.requested_max_attempts(), policy.max_attempts()), (9, 5));
//! assert!(config.policy_for("/tt.v1.Scoreboard/Miss").is_none());
//!
//! let layer = RetryLayer::new(config, 7)
//!     .observer(std::sync::Arc::new(|event| println!("{event}")));
//! // Then: tower::ServiceBuilder::new().layer(layer).service(channel),
//! // and hand that to the generated client instead of the channel.
//! # let _ = (layer, StopReason::Throttled);
//! # Ok::<(), grpc_chaos::retry::ConfigError>(())
//! ```
//!
//! # In the harness: every attempt in the trace
//!
//! [`Host::retry_channel`](crate::Host::retry_channel) wraps a recorded
//! [`Channel`](crate::Channel) in this layer (`Retry<grpc_chaos::Channel>`),
//! seeded from the run's seed, with an observer that writes the layer's
//! steps into the trace: a `RetryAttempt` event (group id `gN` per logical
//! call, attempt number, delay waited) right before each attempt's own
//! recorded call (`rN`, which reaches a handler run `hN` on the server), and
//! a `RetryDecision` event after it (how it ended, then `retry in … (backoff
//! n=…)`, `retry in … (pushback …ms)` or `stop: <rule>`).
//! [`Trace::retried_calls`](crate::Trace::retried_calls) groups them and
//! [`Trace::assert_retries_conform`](crate::Trace::assert_retries_conform)
//! checks them against a [`RetryConfig`] with times measured on the trace.
//! [`Host::retry_layer`](crate::Host::retry_layer) gives the same layer for a
//! channel made another way.
//!
//! # What is emulated, and where each rule comes from
//!
//! | rule | source |
//! |---|---|
//! | config shape, field validation, `maxAttempts` ≥ 2, capped at 5 | gRFC A6 "Integration with Service Config"; grpc-go `service_config.go` (`convertRetryPolicy`), `dialoptions.go` (`defaultMaxCallAttempts`) |
//! | method entry beats service entry beats default entry | grpc-go `service_config.go` / `clientconn.go` `getMethodConfig` |
//! | backoff `min(initial × mult^n, max)` × uniform[0.8, 1.2) (or A6's uniform[0, b)) | grpc-go `stream.go` `csAttempt.shouldRetry`; gRFC A6 "Exponential Backoff" ([`delay_window`]) |
//! | retry only while not committed: trailers-only responses; ≤ 256 KiB of request sent | grpc-go `stream.go` `shouldRetry`, `bufferForRetryLocked`; `rpc_util.go` ([`decide()`]) |
//! | `grpc-retry-pushback-ms`: ≥ 0 waits exactly that and resets the backoff; negative, unparsable or repeated stops | grpc-go `stream.go` `shouldRetry`; gRFC A6 "Pushback" |
//! | token bucket: −1 per retryable failure or pushback stop, +tokenRatio per OK call, throttled at ≤ half | grpc-go `clientconn.go` `retryThrottler`; gRFC A6 "Throttling" ([`Throttler`]) |
//! | `grpc-previous-rpc-attempts` on attempts ≥ 2 | gRFC A6 "Exposed Retry Metadata"; grpc-go `http2_client.go` |
//! | `grpc-timeout` is the whole call's deadline; each attempt carries what is left (rounded up); a call that runs out ends with DEADLINE_EXCEEDED | grpc-go `stream.go` (context deadline), `internal/grpcutil` `EncodeDuration` (rounds up) |
//!
//! The order in which the stop rules are checked, and which of them take a
//! token, is grpc-go's; [`decide()`] lists it.
//!
//! # Hedging (`hedgingPolicy`)
//!
//! A method whose config entry has a `hedgingPolicy` ([`HedgingPolicy`];
//! one entry may not have both, [`ConfigError::BothPolicies`]) is hedged:
//! the original attempt goes at once, then one more every `hedgingDelay`
//! while fewer than `maxAttempts` (capped at 5) are out and no response
//! has won; the attempts run side by side, each a recorded call of its own
//! with `grpc-previous-rpc-attempts`. What each end means is
//! [`HedgeDecision`] (its rules):
//!
//! | attempt ends with | the call | source (read) |
//! |---|---|---|
//! | OK, response headers, or a code not in `nonFatalStatusCodes` | commits to it: its response is returned, the others are dropped (tonic resets their streams, RST_STREAM CANCEL) at that instant | A6 "Hedging Policy"; "Summary of Retry and Hedging Logic" items 1, 2; "When Retries are Valid" |
//! | a non-fatal code | the others go on; the next hedge is sent at once, later ones `hedgingDelay` after it | A6 summary item 3 |
//! | a non-fatal code with `grpc-retry-pushback-ms` ≥ 0 | the next hedge after exactly that long, later ones `hedgingDelay` after it | A6 "Pushback"; summary item 5 |
//! | a negative or unparsable pushback | no further hedge; the others go on | A6 "Pushback"; summary item 4 |
//! | the last attempt in flight fails and no hedge is to come | the call fails with that status | A6 "Hedging Policy" |
//! | (in flight) its request passes the buffer limit ([`RetryLayer::buffer_limit`]) | commits to the attempt that sent past it (it had sent the most): the others are cancelled at once (RST_STREAM CANCEL), no hedge follows, its end is the call's | A6 "Memory Management (Buffering)"; grpc-java `RetriableStream` (`BufferSizeTracer`, `commit`) |
//!
//! `retryThrottling` is shared with retries (one bucket per channel): a
//! non-fatal failure or a pushback stop takes a token, an OK call gives
//! `tokenRatio` back, and no hedge is sent while the bucket is at or below
//! half ([`HedgeDecision`]; A6 "Throttling Retry Attempts and Hedged
//! RPCs"). A refused hedge ends the call's hedging. A `hedgingDelay` of 0
//! with no throttling is allowed but reported by [`RetryConfig::warnings`]:
//! every call then sends `maxAttempts` copies at once.
//!
//! In the trace each attempt is a `RetryAttempt` marked hedged (`g4
//! hedging: hedge 2 of …, 50.000ms after the previous one`), and each end,
//! cancellation (`g4 attempt 1 cancelled: attempt 2 won`), commit at the
//! buffer limit (`g4 attempt 2 committed: …`) or refused hedge a `Hedge`
//! event; [`Trace::hedged_calls`](crate::Trace::hedged_calls)
//! groups them and
//! [`Trace::assert_hedging_conforms`](crate::Trace::assert_hedging_conforms)
//! checks the schedule, the winner, the cancellations and the shared token
//! bucket against a config, with times measured on the trace.
//!
//! Measured in the simulation (seed 0, catalog stories `hedging-slow-replica`
//! and `hedging-overload`): with one replica of three 500 ms slow, 30 Saves
//! through a balanced channel have a p90 of 512 ms plain and 112 ms hedged
//! (3 attempts, 50 ms apart) for 18 extra attempts; the one hedged call
//! still over 500 ms had every attempt picked onto the slow replica. With
//! the store shedding every call, hedging sends 90 attempts for 30 calls
//! unthrottled and 33 with `retryThrottling` (10 tokens, ratio 0.1).
//!
//! # Differences from grpc-go, and what is not modelled
//!
//! - Hedging follows gRFC A6's text (below); grpc-go and C-core have no
//!   hedging (A6's header: "Go except hedging, and C-Core except hedging";
//!   grpc-go `stream.go`: "TODO(hedging)"), so nothing of it was measured
//!   against a real client; where A6 leaves a detail open, grpc-java's
//!   `RetriableStream` was read. grpc-java departs from A6 in one function,
//!   and the layer keeps to A6 there: its `makeHedgingDecision` turns a
//!   positive pushback on a non-fatal code into 0 (the next hedge at once,
//!   where A6 "Pushback" waits that long), and a non-fatal code without
//!   pushback leaves the hedging timer as it is (where A6's summary item 3
//!   sends the next hedge at once) (read).
//! - **Hedges are not steered away from a replica the call already
//!   used**, as in grpc: A6 does not ask for it (its "Hedging Policy"
//!   section once said hedges "should be sent to distinct backends, if
//!   possible"; grpc/proposal#339, 2023, removed that paragraph), and
//!   grpc-java sends each hedge as a new stream through the channel's
//!   ordinary pick (`RetriableStream.createSubstream` → `newSubstream` →
//!   `delayedTransport.newStream`; its `isHedging` flag reaches only stream
//!   tracers, no load-balancing policy) (read). On a
//!   [balanced channel](crate::Host::balanced_channel) a hedge can
//!   therefore land on the replica that is already slow: each hedge's row
//!   in the trace names the replica it went to (`g15 hedging: hedge 2 of
//!   /tt.v1.Store/Save to store-2, 50ms after the previous one`), and
//!   [`HedgeAttempt::call`](crate::trace::HedgeAttempt::call) leads to the
//!   recorded call and its `replica`. In the `hedging-slow-replica` story
//!   one call of 30 had all three attempts picked onto the slow replica.
//! - **Transparent retry** (a request that provably never reached the server
//!   is resent regardless of policy) is not modelled: such failures are
//!   ordinary attempts here.
//! - An illegal `retryPolicy` is an error here; grpc-go logs and ignores it.
//! - Token counts are exact thousandths, not `f64` (see [`Throttler`]).
//! - When the next retry's delay would reach the deadline, [`decide()`] says
//!   [`StopReason::Deadline`] at once; the call still ends *at* the deadline
//!   with DEADLINE_EXCEEDED, as in grpc-go, which sleeps into it.
//! - A deadline that expires while an attempt is in flight ends the call with
//!   DEADLINE_EXCEEDED (grpc-go's code); plain tonic would report
//!   `CANCELLED "Timeout expired"`.
//! - Methods without a retry policy pass through untouched (no events, no
//!   deadline handling); only their successes feed the token bucket.
//! - A response with headers but a non-200 HTTP status and no `grpc-status`
//!   counts as committed and is passed on for tonic to map.
//!
//! # Units and time
//!
//! Durations are `std::time::Duration`; trace text prints milliseconds with 3
//! decimals. All waiting uses `tokio::time` (`sleep`, `sleep_until`,
//! `timeout_at`, `Instant::now`), so inside the harness every delay is
//! *simulated* time and a 5-attempt story costs no wall time. All randomness
//! comes from one `SmallRng` per target seeded by [`RetryLayer::new`]'s
//! `seed`: the same seed and call order give the same delays. (`SmallRng`'s
//! algorithm may change between `rand` releases; pinned versions keep it.)

mod backoff;
mod body;
mod check;
mod check_hedge;
mod config;
mod decide;
mod event;
mod future;
mod hedge;
mod hedged;
mod layer;
mod record;
mod record_hedge;
mod service;
mod throttle;
mod timeout;

pub use backoff::{base_delay, delay_window, jittered_delay, DelayWindow, Jitter};
pub use config::{
    ConfigError, ConfigWarning, HedgingPolicy, RetryConfig, RetryPolicy, ThrottlingPolicy,
    MAX_ATTEMPTS_CAP,
};
pub use decide::{
    decide, DecideInput, Decision, Pushback, RetryReason, StopReason, DEFAULT_BUFFER_LIMIT,
    PUSHBACK_HEADER,
};
pub use event::{AttemptEvent, AttemptEventKind, AttemptOutcome, Observer};
pub use future::RetryFuture;
pub use hedge::{HedgeDecision, HedgeStop, NextHedge};
pub use layer::RetryLayer;
pub use service::Retry;
pub use throttle::Throttler;

pub(crate) use record::{channel_seed, recording_observer};

#[cfg(test)]
mod tests;
