//! The `grpc.health.v1` service the harness serves on the hosts named by
//! [`Sim::health`](super::Sim::health): tonic-health's own server, one per
//! start of the host, and its `HealthReporter`, kept here so that
//! [`Fault::health`](crate::Fault::health) can set a status between steps.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use futures_util::FutureExt;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::recorder::event::HealthStatus;

/// The hosts that serve tonic-health, and the reporter of each one's
/// current server.
#[derive(Default)]
pub(crate) struct HealthServers {
    hosts: BTreeSet<String>,
    reporters: Mutex<HashMap<String, HealthReporter>>,
}

impl HealthServers {
    pub(crate) fn new(hosts: BTreeSet<String>) -> Self {
        Self {
            hosts,
            reporters: Mutex::default(),
        }
    }

    /// Whether `host` serves tonic-health.
    pub(crate) fn serves(&self, host: &str) -> bool {
        self.hosts.contains(host)
    }

    /// A new health service for a start of `host`: `services` and the
    /// whole server (`""`, tonic-health's own default) SERVING, as a
    /// server's `main` marks the services it has added
    /// (`HealthReporter::set_serving`).
    pub(crate) fn start(
        &self,
        host: &str,
        services: &[&'static str],
    ) -> tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>
    {
        let (reporter, server) = tonic_health::server::health_reporter();
        for service in services {
            set(&reporter, service, ServingStatus::Serving);
        }
        lock(&self.reporters).insert(host.to_owned(), reporter);
        server
    }

    /// `host`'s software stopped (a crash): its health service is gone
    /// with it until the next start.
    pub(crate) fn stopped(&self, host: &str) {
        lock(&self.reporters).remove(host);
    }

    /// Sets `service`'s status on `host`'s current server; false when the
    /// host runs no server (not started yet, or crashed).
    pub(crate) fn set(&self, host: &str, service: &str, status: HealthStatus) -> bool {
        let reporters = lock(&self.reporters);
        let Some(reporter) = reporters.get(host) else {
            return false;
        };
        let status = match status {
            HealthStatus::Serving => ServingStatus::Serving,
            HealthStatus::NotServing => ServingStatus::NotServing,
            // Validation refuses SERVICE_UNKNOWN: tonic-health cannot
            // serve it (its Watch fails with NOT_FOUND instead).
            _ => ServingStatus::Unknown,
        };
        set(reporter, service, status);
        true
    }
}

/// tonic-health's setter is async only for its `tokio::sync::RwLock`,
/// which nothing holds between simulation steps (its handlers take it
/// inside one poll), so it completes at its first poll.
fn set(reporter: &HealthReporter, service: &str, status: ServingStatus) {
    let done = reporter
        .set_service_status(service, status)
        .now_or_never()
        .is_some();
    debug_assert!(done, "tonic-health's status lock was held between steps");
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a usable map.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
