//! The world of the replica stories: three `store` replicas behind one
//! name, and a player whose balanced channel calls them at a steady rate.

use std::collections::BTreeMap;
use std::time::Duration;

use grpc_chaos::balance::BalanceConfig;
use grpc_chaos::trace::Call;
use grpc_chaos::{Sim, SimBuilder, Trace};

use super::world::{ms, with_timeout};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// Replicas in the set.
pub(crate) const REPLICAS: usize = 3;
/// Store time per Save, *simulated*.
pub(crate) const WORK: Duration = ms(50);
/// One Save every this often, *simulated*.
pub(crate) const EVERY: Duration = ms(10);
/// Each Save's deadline.
pub(crate) const DEADLINE: Duration = ms(500);
/// The player's `Endpoint::connect_timeout` on each replica connection.
pub(crate) const CONNECT_TIMEOUT: Duration = ms(1000);

/// A sim with replica set `store` (`store-0`…`store-2`) serving the
/// reference store, and a player that starts `calls` Saves, one every
/// [`EVERY`], each with a [`DEADLINE`], through one balanced channel with a
/// [`CONNECT_TIMEOUT`], and waits for all of them.
pub(crate) fn sim(builder: SimBuilder, calls: u32) -> Sim {
    sim_config(builder, calls, EVERY, BalanceConfig::new())
}

/// [`sim`], with a Save every `every` through a balanced channel built
/// from `config` (its endpoint options replaced by the
/// [`CONNECT_TIMEOUT`]).
pub(crate) fn sim_config(
    builder: SimBuilder,
    calls: u32,
    every: Duration,
    config: BalanceConfig,
) -> Sim {
    let mut sim = builder.build();
    sim.servers("store", REPLICAS, |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    let config = config.endpoint(|e| e.connect_timeout(CONNECT_TIMEOUT));
    add_player(&mut sim, calls, every, config);
    sim
}

/// Adds the player: `calls` Saves, one every `every`, each with a
/// [`DEADLINE`], through one balanced channel to `store` built from
/// `config`; it waits for all of them.
pub(crate) fn add_player(sim: &mut Sim, calls: u32, every: Duration, config: BalanceConfig) {
    sim.client("player", move |player| {
        let config = config.clone();
        async move {
            let store = StoreClient::new(player.balanced_channel_config("store", config));
            let mut saves = tokio::task::JoinSet::new();
            for n in 0..calls {
                let mut store = store.clone();
                saves.spawn(async move {
                    let req = SaveRequest {
                        match_id: format!("m{n}"),
                        points: 1,
                    };
                    let _ = store.save(with_timeout(req, DEADLINE)).await;
                });
                tokio::time::sleep(every).await;
            }
            while saves.join_next().await.is_some() {}
            Ok(())
        }
    });
}

/// The player's calls that did not end OK.
pub(crate) fn failed(trace: &Trace) -> Vec<&Call> {
    trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect()
}

/// Replica → how many of `calls` the balancer sent there.
pub(crate) fn per_replica<'a>(calls: impl Iterator<Item = &'a Call>) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> =
        (0..REPLICAS).map(|i| (format!("store-{i}"), 0)).collect();
    for c in calls {
        if let Some(r) = &c.replica {
            *counts.entry(r.clone()).or_default() += 1;
        }
    }
    counts
}

/// `store-0 12, store-1 0, store-2 14`.
pub(crate) fn fmt_counts(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Spec code → count, `2× UNAVAILABLE, 1× DEADLINE_EXCEEDED`, or `none`.
pub(crate) fn fmt_codes(calls: &[&Call]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in calls {
        *counts
            .entry(c.outcome().map_or("(no status)", |o| o.spec_code))
            .or_default() += 1;
    }
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(c, n)| format!("{n}× {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}
