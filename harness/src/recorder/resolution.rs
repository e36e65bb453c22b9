//! The fields of a balanced channel's DNS resolution events
//! ([`EventKind::Resolution`](super::event::EventKind::Resolution)).

use std::time::Duration;

use serde::Serialize;

use super::host_name::HostName;

/// One resolution of a replica set's name by a balanced channel with DNS
/// ([`Dns`](crate::balance::Dns)); recorded at the caller. Boxed in the
/// event, as every large payload is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// The replica set whose name was resolved.
    pub set: String,
    /// What the resolution got.
    #[serde(flatten)]
    pub outcome: ResolutionOutcome,
}

/// What one resolution got. An `Answered` is recorded only when it tells
/// something new: a new address list, or a change in what the list gets
/// wrong against the membership.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResolutionOutcome {
    /// The DNS answered. The channel applies the addresses at its next
    /// pick (tower's balancer polls discovery then).
    Answered {
        /// The answer's number for this channel: 1 for the first address
        /// list, one more for each different list. Picks name it
        /// ([`EventKind::CallRouted`](super::event::EventKind::CallRouted)'s
        /// `answer`).
        answer: u32,
        /// The replicas it lists, in index order.
        addresses: Vec<HostName>,
        /// How old the DNS's answer was (zero: made for this resolution;
        /// more: from its cache). JSON: `age_us`.
        #[serde(rename = "age_us", serialize_with = "super::event::micros")]
        age: Duration,
        /// Listed, but not members of the set at this instant: a stale
        /// answer still hands them out.
        stale: Vec<HostName>,
        /// Members at this instant that the answer leaves out.
        missing: Vec<HostName>,
    },
    /// The DNS gave no answer ([`Fault::dns_outage`](crate::Fault::dns_outage)):
    /// the channel keeps the addresses it has.
    Failed {
        /// The answer the channel keeps, if it has one; with none, calls
        /// wait for a first answer.
        kept: Option<u32>,
        /// When it resolves again. JSON: `retry_in_us`.
        #[serde(rename = "retry_in_us", serialize_with = "super::event::micros")]
        retry_in: Duration,
    },
}
