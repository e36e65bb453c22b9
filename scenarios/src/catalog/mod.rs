//! The scenario catalog: field stories (seed articles 000 and 003) run
//! against the reference services, each judged on its trace.
//!
//! A story's verdict says whether the trace shows what the story must show.
//! Behaviour of tonic itself that differs from the gRPC spec (such as
//! CANCELLED for an expired deadline) is reported as a *finding*: visible,
//! not hidden, and not a failure.

mod cancel_upload;
mod connection_age;
mod dead_peer;
mod dead_peer_stream;
mod deadline_chain;
mod dns_stale;
mod etcd_keepalive;
mod fresh_request;
mod gcp_lifetime_cap;
mod graceful_drain;
mod gray_replica;
mod hedging;
mod injected_resets;
mod keepalive_mismatch;
mod keepalive_world;
mod mtls_rotation_lockout;
mod nginx_read_timeout;
mod nlb_idle_reset;
mod partition_heals;
mod pod_termination;
mod proxy_stream_limit;
mod proxy_timeout;
mod queueing;
mod receiver_speed;
mod reconnect_storm;
mod replica_crash;
mod replica_not_serving;
pub(crate) mod replica_world;
mod report;
mod retry_backoff;
mod retry_committed;
mod retry_deadline;
mod retry_not_retryable;
mod retry_pushback;
mod retry_storm;
mod retry_throttling;
pub(crate) mod retry_world;
mod rolling_restart;
mod slow_dependency;
mod store_restart;
mod tls_cert_expires;
pub(crate) mod world;

use grpc_chaos::Trace;

pub use report::{Report, Verdict};

/// One story in the catalog.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Short name used on the command line (`deadline-chain`).
    pub name: &'static str,
    /// The public sources the story's behaviour comes from: gRFCs, grpc's
    /// docs, RFC sections, the vendor's or library's own docs.
    pub source: &'static str,
    /// The field story in one sentence: what goes wrong in production.
    pub story: &'static str,
    /// What the trace must show, in one line.
    pub checks: &'static str,
    /// Runs the simulation with a seed.
    pub simulate: fn(u64) -> grpc_chaos::Result<Trace>,
    /// Judges a trace of this story.
    pub judge: fn(&Trace) -> Report,
}

impl Scenario {
    /// Simulates with `seed` and judges the trace. A run that fails to
    /// complete is a failed verdict that carries the error's message,
    /// without its replay hint: the CLI prints one with the jitter too.
    pub fn run(&self, seed: u64) -> (Report, Option<Trace>) {
        match (self.simulate)(seed) {
            Ok(trace) => ((self.judge)(&trace), Some(trace)),
            Err(e) => {
                let trace = e.trace().cloned();
                (
                    Report::failed(format!("run failed: {}", e.message())),
                    trace,
                )
            }
        }
    }
}

/// Every story, in the order the CLI runs them.
pub fn all() -> Vec<Scenario> {
    vec![
        deadline_chain::SCENARIO,
        fresh_request::SCENARIO,
        store_restart::SCENARIO,
        slow_dependency::SCENARIO,
        proxy_timeout::SCENARIO,
        queueing::SCENARIO,
        dead_peer::SCENARIO,
        dead_peer_stream::SCENARIO,
        receiver_speed::SCENARIO,
        cancel_upload::SCENARIO,
        injected_resets::SCENARIO,
        retry_backoff::SCENARIO,
        retry_not_retryable::SCENARIO,
        retry_committed::SCENARIO,
        retry_pushback::SCENARIO,
        retry_deadline::SCENARIO,
        retry_storm::SCENARIO,
        retry_storm::FIX,
        retry_throttling::SCENARIO,
        keepalive_mismatch::SCENARIO,
        etcd_keepalive::SCENARIO,
        replica_crash::SCENARIO,
        rolling_restart::SCENARIO,
        replica_not_serving::SCENARIO,
        replica_not_serving::CHECKED,
        gray_replica::SCENARIO,
        gray_replica::EJECTED,
        pod_termination::SIGTERM_FIRST,
        pod_termination::PRE_STOP,
        dns_stale::STALE,
        dns_stale::FRESH,
        reconnect_storm::STORM,
        reconnect_storm::BACKOFF,
        connection_age::SCENARIO,
        graceful_drain::SCENARIO,
        partition_heals::SCENARIO,
        nginx_read_timeout::SCENARIO,
        gcp_lifetime_cap::SCENARIO,
        proxy_stream_limit::SCENARIO,
        nlb_idle_reset::SCENARIO,
        hedging::SLOW_REPLICA,
        hedging::OVERLOAD,
        tls_cert_expires::SCENARIO,
        mtls_rotation_lockout::SCENARIO,
    ]
}

/// The story named `name`.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}
