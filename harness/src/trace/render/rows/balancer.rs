//! The rows of replica-set events: membership changes, and what a
//! balanced channel's balancer did.

use crate::recorder::event;
use crate::recorder::event::{
    BalancerChange, Ejection, Event, EventKind, HealthStatus, ResolutionOutcome,
};

/// The `where` column and text of a replica-set event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    let host = e.host.as_str();
    Some(match &e.kind {
        EventKind::ReplicaLeft { set } => (
            host.to_owned(),
            format!("left replica set {set} (balancers send it no new calls once they learn it)"),
        ),
        EventKind::ReplicaJoined { set } => (
            host.to_owned(),
            format!("joined replica set {set} (balancers connect to it once they learn it)"),
        ),
        EventKind::HealthSet { service, status } => (
            host.to_owned(),
            format!(
                "health: {service:?} set to {} (grpc.health.v1)",
                status.proto_name()
            ),
        ),
        EventKind::CallRouted {
            call,
            replica,
            answer,
        } => (
            format!("{host}→{replica}"),
            match answer {
                Some(n) => format!("{call} balanced to {replica} (dns answer {n})"),
                None => format!("{call} balanced to {replica}"),
            },
        ),
        EventKind::DnsOutage => (
            host.to_owned(),
            format!("DNS outage: resolutions of {host} get no answer"),
        ),
        EventKind::DnsRestored => (
            host.to_owned(),
            format!("DNS restored: {host} resolves again"),
        ),
        EventKind::Resolution(r) => (format!("{host}→{}", r.set), resolution(r)),
        EventKind::Balancer(balancer) => {
            let event::Balancer {
                set,
                replica,
                change,
            } = &**balancer;
            let what = match change {
                BalancerChange::Added => format!("{replica} added (it joined {set})"),
                BalancerChange::Removed => format!("{replica} removed (it left {set})"),
                BalancerChange::Connecting => {
                    format!("connecting to {replica} (not picked until connected)")
                }
                BalancerChange::Ready => format!("{replica} ready"),
                BalancerChange::Closed => {
                    format!("connection to {replica} closed; out of the ready set, redialling")
                }
                BalancerChange::ConnectFailed { error } => format!(
                    "connect to {replica} failed ({error}); counted ready with the error: \
                     the next call sent there fails"
                ),
                BalancerChange::HealthChecking => format!(
                    "connected to {replica}; health Watch started (not picked until it answers SERVING)"
                ),
                BalancerChange::Health { status } => health(replica.as_str(), *status),
                BalancerChange::HealthUnimplemented => format!(
                    "{replica} answered the health Watch UNIMPLEMENTED: health checking off \
                     for it, counted healthy (gRFC A17)"
                ),
                BalancerChange::HealthWatchCancelled => format!(
                    "{replica} sent GOAWAY: health Watch cancelled (gRFC A17), out of rotation \
                     until a new connection answers SERVING"
                ),
                BalancerChange::HealthWatchFailed { error, retry_in } => format!(
                    "health Watch on {replica} ended ({error}); out of rotation, Watch again \
                     in {}",
                    crate::units::fmt_duration(*retry_in)
                ),
                BalancerChange::Ejected {
                    why,
                    successes,
                    calls,
                    ejected_for,
                } => format!(
                    "{replica} ejected: {}; out of rotation for {} (outlier detection, gRFC A50)",
                    ejection(*why, *successes, *calls),
                    crate::units::fmt_duration(*ejected_for)
                ),
                BalancerChange::Unejected { after } => format!(
                    "{replica} back in rotation after {} ejected (outlier detection)",
                    crate::units::fmt_duration(*after)
                ),
            };
            (format!("{host}→{replica}"), format!("balancer: {what}"))
        }
        _ => return None,
    })
}

/// A DNS resolution: `dns: store answer 2 (made 10s ago): store-0,
/// store-1, store-2; stale: store-2 is no longer a member`.
fn resolution(r: &event::Resolution) -> String {
    let set = &r.set;
    match &r.outcome {
        ResolutionOutcome::Answered {
            answer,
            addresses,
            age,
            stale,
            missing,
        } => {
            let made = if age.is_zero() {
                String::new()
            } else {
                format!(" (made {} ago)", crate::units::fmt_duration(*age))
            };
            let list = if addresses.is_empty() {
                "no addresses".to_owned()
            } else {
                join(addresses)
            };
            let mut text = format!("dns: {set} answer {answer}{made}: {list}");
            if !stale.is_empty() {
                let verb = if stale.len() == 1 { "is" } else { "are" };
                text += &format!("; stale: {} {verb} no longer a member", join(stale));
            }
            if !missing.is_empty() {
                text += &format!("; {} joined, not in the answer yet", join(missing));
            }
            text
        }
        ResolutionOutcome::Failed { kept, retry_in } => {
            let keeps = match kept {
                Some(n) => format!("keeping answer {n}"),
                None => "no answer yet: calls wait".to_owned(),
            };
            format!(
                "dns: resolving {set} failed (no answer); {keeps}; again in {}",
                crate::units::fmt_duration(*retry_in)
            )
        }
    }
}

fn join(hosts: &[event::HostName]) -> String {
    hosts
        .iter()
        .map(|h| h.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A health status a replica's Watch answered, and what it does to picks.
fn health(replica: &str, status: HealthStatus) -> String {
    let name = status.proto_name();
    if status == HealthStatus::Serving {
        format!("{replica} health {name}: in rotation")
    } else {
        format!("{replica} health {name}: out of rotation, not picked until SERVING")
    }
}

/// Why a replica was ejected, with the numbers compared: `success rate
/// 50.0 % of 100 calls, below the line of 52.0 % (mean 90.0 %)`.
fn ejection(why: Ejection, successes: u32, calls: u32) -> String {
    let rate = f64::from(successes) * 100.0 / f64::from(calls.max(1));
    match why {
        Ejection::SuccessRate {
            mean_ppm,
            required_ppm,
        } => format!(
            "success rate {rate:.1} % of {calls} calls, below the line of {:.1} % (mean {:.1} %)",
            f64::from(required_ppm) / 10_000.0,
            f64::from(mean_ppm) / 10_000.0
        ),
        Ejection::FailurePercentage { threshold } => format!(
            "{:.1} % of {calls} calls failed, over the threshold {threshold} %",
            100.0 - rate
        ),
    }
}
