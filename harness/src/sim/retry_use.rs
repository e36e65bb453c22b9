//! The retry channels of a run and what their service configs matched. A
//! retry policy that matched no call (a method name with a typo, a config
//! without `retryPolicy`) is reported at the end of the trace, as a fault
//! that never fired is; a `methodConfig` naming a service its target does
//! not serve is a misconfiguration.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Kind};
use crate::retry::RetryConfig;

/// One retry layer made by [`Host::retry_layer`](crate::Host::retry_layer).
struct Use {
    host: Arc<str>,
    target: Arc<str>,
    config: Arc<RetryConfig>,
    /// The paths of the calls through it so far.
    paths: Arc<Mutex<BTreeSet<String>>>,
}

/// Every retry layer of a run, and the services each server host serves.
#[derive(Default)]
pub(crate) struct RetryUses {
    uses: Mutex<Vec<Use>>,
    /// Known once the host's server closure has run.
    served: Mutex<BTreeMap<String, Vec<&'static str>>>,
}

impl RetryUses {
    /// Registers a layer on `host` for calls to `target`; the hook it
    /// returns notes the path of each call through the layer.
    pub(crate) fn register(
        &self,
        host: Arc<str>,
        target: Arc<str>,
        config: Arc<RetryConfig>,
    ) -> Arc<dyn Fn(&str) + Send + Sync> {
        let paths: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        lock(&self.uses).push(Use {
            host,
            target,
            config,
            paths: paths.clone(),
        });
        Arc::new(move |path: &str| {
            let mut paths = lock(&paths);
            if !paths.contains(path) {
                paths.insert(path.to_owned());
            }
        })
    }

    /// Notes the services `host` serves.
    pub(crate) fn served(&self, host: &str, services: &[&'static str]) {
        lock(&self.served).insert(host.to_owned(), services.to_vec());
    }

    /// At the end of the run: `(host, description)` of every retry policy
    /// that matched no call, and an error for every `methodConfig` name of
    /// a service its target does not serve. Layers with the same host,
    /// target and config count as one.
    pub(crate) fn check(&self) -> (Vec<(String, String)>, Vec<Error>) {
        let served = lock(&self.served);
        let (mut unused, mut errors) = (Vec::new(), Vec::new());
        for (host, target, config, paths) in merged(&lock(&self.uses)) {
            let channel = format!("{host}→{target}");
            if let Some(services) = served.get(&*target) {
                for (key, service) in config.named_services() {
                    if !services.contains(&service) {
                        errors.push(not_served(&channel, key, &target, services));
                    }
                }
            }
            let host = host.to_string();
            unused.extend(unused_policies(&channel, &config, &paths).map(|u| (host.clone(), u)));
        }
        (unused, errors)
    }
}

/// What a retry layer's config selected that no call used, in words.
fn unused_policies<'a>(
    channel: &'a str,
    config: &'a RetryConfig,
    paths: &'a BTreeSet<String>,
) -> impl Iterator<Item = String> + 'a {
    let calls = if paths.is_empty() {
        "no call went through it".to_owned()
    } else {
        let list: Vec<&str> = paths.iter().map(String::as_str).collect();
        format!("calls through it: {}", list.join(", "))
    };
    let mut keys = config.policy_keys().peekable();
    // A methodConfig without "name" has a retryPolicy that selects nothing
    // (grpc-go skips it too): say what was skipped.
    let none = keys.peek().is_none().then(|| {
        let ignored = match config.ignored_fields() {
            [] => String::new(),
            fields => format!(" (ignored: {})", fields.join(", ")),
        };
        format!("retry channel {channel} has no retryPolicy that a method name selects{ignored}, so no call through it is retried; {calls}")
    });
    let unmatched = keys
        .filter(|key| !paths.iter().any(|p| config.key_for(p) == Some(*key)))
        .map(move |key| {
            format!(
                "retry policy for {} on {channel} matched no call; {calls}",
                describe_key(key)
            )
        });
    none.into_iter().chain(unmatched)
}

type Merged = (Arc<str>, Arc<str>, Arc<RetryConfig>, BTreeSet<String>);

/// The uses grouped by host, target and config, in order of registration,
/// with the paths of all the calls of each group.
fn merged(uses: &[Use]) -> Vec<Merged> {
    let mut out: Vec<Merged> = Vec::new();
    for u in uses {
        let paths = lock(&u.paths).clone();
        let same = |m: &&mut Merged| m.0 == u.host && m.1 == u.target && *m.2 == *u.config;
        match out.iter_mut().find(same) {
            Some(m) => m.3.extend(paths),
            None => out.push((u.host.clone(), u.target.clone(), u.config.clone(), paths)),
        }
    }
    out
}

fn not_served(channel: &str, key: &str, target: &str, services: &[&str]) -> Error {
    Error::new(Kind::Misconfigured(format!(
        "retry channel {channel}: its service config names {}, but `{target}` does not serve that service; it serves: {}",
        describe_key(key),
        if services.is_empty() { "(none)".to_owned() } else { services.join(", ") }
    )))
}

/// A `methodConfig` name in words.
fn describe_key(key: &str) -> String {
    match key.strip_prefix('/').and_then(|k| k.strip_suffix('/')) {
        _ if key.is_empty() => "the default entry (an empty name)".to_owned(),
        Some(service) => format!("every method of {service}"),
        None => key.to_owned(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
