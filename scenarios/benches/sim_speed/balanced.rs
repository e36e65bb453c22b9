//! What parts 5 and 7 of the bench share: a story of sequential
//! `Store/Save` calls from one player through one balanced channel, timed
//! with a part of the channel on against the same story with it off (the
//! anchor), and the row that prints the ratio.

use grpc_chaos::balance::BalanceConfig;
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;

use super::{detail, isolated, row, Figure, Meter, Rounds};

/// One part's comparison: `run(calls, true)` with the part on, `run(calls,
/// false)` the anchor; `what` names the row, `channel` the part's channel.
pub(super) fn compare(
    what: &str,
    channel: &str,
    calls: u64,
    repeat: u64,
    run: fn(u64, bool) -> Figure,
) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| run(calls, true)),
            isolated(|| run(calls, false)),
        ]
    });
    let [on, anchor] = rounds.best();
    // on / anchor CPU: 1.00x = the part costs nothing.
    let cost = |r: &[Figure; 2]| r[0].cpu.as_secs_f64() / r[1].cpu.as_secs_f64();
    row(
        &format!("{calls} balanced Saves, {what}: calls / CPU s"),
        on,
        anchor,
        on.cpu.as_secs_f64() / anchor.cpu.as_secs_f64(),
        rounds.paired(cost),
    );
    detail(&format!("  grpc-chaos, {channel}"), on, "calls");
    detail("  grpc-chaos, balanced_channel", anchor, "calls");
}

/// Adds the player: `calls` Saves one after another through a balanced
/// channel to `store` built from `config`; a failed Save is part of the
/// story, not an error.
pub(super) fn add_player(sim: &mut Sim, calls: u64, config: BalanceConfig) {
    sim.client("bench", move |player| {
        let config = config.clone();
        async move {
            let store = StoreClient::new(player.balanced_channel_config("store", config));
            for n in 0..calls {
                let req = SaveRequest {
                    match_id: format!("m{n}"),
                    points: 1,
                };
                let _ = store.clone().save(req).await;
            }
            Ok(())
        }
    });
}

/// Runs `sim` under the meter; the figure notes the trace's size and the
/// calls store-1 got. `story` names it in the panic of a failed run.
pub(super) fn measure(sim: Sim, calls: u64, story: &str) -> Figure {
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("{story} story failed: {e}"));
    let on_one = trace
        .calls_from("bench")
        .filter(|c| c.replica.as_deref() == Some("store-1"))
        .count();
    let note = format!(
        " ({} trace events, {on_one} calls on store-1)",
        trace.events().len()
    );
    meter.figure(calls as f64, note)
}
