//! The explore part's figures for issue #26's speed targets, on a 3-host
//! unary scenario: `player` calls `gateway` (`Scoreboard/Hit`, each
//! reply waiting on a `Store/Save` the gateway makes), `calls` calls one
//! after the other, each with a 100 ms deadline so a fault costs at most
//! that. The space: the store crashed, the gateway↔store link cut, the
//! store's handlers slowed by 50 ms or failing UNAVAILABLE, a player call
//! cancelled; up to 3 faults, in the calls' part of the run.
//!
//! Rows:
//! - schedules per CPU second with 10, 50 and 200 calls (`BENCH_SCHEDULES`
//!   schedules at 50 calls, scaled to the same number of calls in all:
//!   fewer schedules of 200 calls, more of 10), shrinking off; *anchor:*
//!   the scenario run as many times without faults (`Sim::run`);
//! - what a run costs before its first event: the same three hosts with
//!   a player that returns at once, CPU µs per run, against the 50-call
//!   run;
//! - the instant sweep of the smallest call count whose baseline visits
//!   100 instants or more, one crash of the store at each: wall and CPU
//!   seconds for the whole sweep (target ≤ 5 s).

use std::time::Duration;

use grpc_chaos::explore::{Explorer, Space};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use tonic::{Code, Request};

use super::{detail, isolated, row, Figure, Meter, Rounds, SEED};

/// One call's deadline (*simulated*).
const DEADLINE: Duration = Duration::from_millis(100);
/// The call counts the rate is measured at.
const CALLS: [usize; 3] = [10, 50, 200];

/// The scenario with `calls` sequential calls.
fn scenario(seed: u64, calls: usize) -> Sim {
    let room = DEADLINE * u32::try_from(calls).unwrap_or(u32::MAX);
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(room + Duration::from_secs(1))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", move |c| async move {
        let mut gateway = ScoreboardClient::new(c.channel("gateway"));
        for i in 0..calls {
            let mut req = Request::new(Rally {
                match_id: format!("m{i}"),
                player: "a".into(),
                shots: 1,
            });
            req.set_timeout(DEADLINE);
            // Under a fault a call may fail; the run goes on.
            let _ = gateway.hit(req).await;
        }
        Ok(())
    });
    sim
}

/// The same hosts, the player returning at once: a run's fixed cost.
fn empty() -> Sim {
    let mut sim = Sim::builder().seed(SEED).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", |_| async { Ok(()) });
    sim
}

fn space(calls: usize) -> Space {
    // Each call takes a few ms without faults: faults start among them.
    let window = Duration::from_millis(4) * u32::try_from(calls).unwrap_or(u32::MAX);
    Space::new()
        .crash("store")
        .partition("gateway", "store")
        .handler_delay("store", Duration::from_millis(50))
        .handler_fail("store", Code::Unavailable)
        .cancel("player", "gateway")
        .max_faults(3)
        .outage(Duration::from_millis(100))
        .window(Duration::ZERO, window.max(Duration::from_millis(20)))
}

fn measured_schedules(calls: usize, schedules: usize) -> Figure {
    let explorer = Explorer::new(move |seed| scenario(seed, calls))
        .space(space(calls))
        .seed(SEED)
        .budget(schedules)
        .shrink(false)
        .progress(false);
    let meter = Meter::start();
    let report = explorer.explore().expect("the 3-host exploration runs");
    let broken = report.failures.iter().map(|g| g.runs).sum::<usize>();
    meter.figure(
        report.runs as f64,
        format!(", {broken} runs that failed by themselves"),
    )
}

fn measured_plain(calls: usize, runs: usize) -> Figure {
    let meter = Meter::start();
    for _ in 0..runs {
        scenario(SEED, calls)
            .run()
            .expect("the 3-host scenario runs");
    }
    meter.figure(runs as f64, String::new())
}

fn measured_empty(runs: usize) -> Figure {
    let meter = Meter::start();
    for _ in 0..runs {
        empty().run().expect("an empty 3-host scenario runs");
    }
    meter.figure(runs as f64, String::new())
}

pub(super) fn schedule_rows(schedules_at_50: u64, repeat: u64) {
    let per_50 = usize::try_from(schedules_at_50).unwrap_or(usize::MAX);
    for calls in CALLS {
        let schedules = (per_50 * 50 / calls).max(5);
        let rounds = Rounds::run(repeat, || {
            [
                isolated(|| measured_schedules(calls, schedules)),
                isolated(|| measured_plain(calls, schedules)),
            ]
        });
        let [explored, plain] = rounds.best();
        row(
            &format!("3 hosts, {calls} calls: schedules / CPU s"),
            explored,
            plain,
            plain.rate() / explored.rate(),
            rounds.paired(|r| r[1].rate() / r[0].rate()),
        );
        detail("  Explorer::explore", explored, "schedules");
        detail("  Sim::run without faults", plain, "runs");
    }
    let runs = per_50.max(20);
    let (empty, whole) = (
        isolated(|| measured_empty(runs)),
        isolated(|| measured_plain(50, runs)),
    );
    let per_run = |f: &Figure| f.cpu.as_secs_f64() * 1e6 / f.amount;
    println!(
        "{:<46} {:>12.0} of {:.0} µs CPU",
        "  3 hosts: a run before its first call / 50 calls",
        per_run(&empty),
        per_run(&whole)
    );
    sweep_row();
}

/// The smallest call count whose baseline visits 100 instants or more,
/// and how many it visits.
fn hundred_instants() -> (usize, usize) {
    for calls in 1..=50 {
        let report = sweep_explorer(calls)
            .budget(1)
            .sweep_instants()
            .expect("the 3-host sweep runs");
        let (instants, _) = report.instants.unwrap_or_default();
        if instants >= 100 {
            return (calls, instants);
        }
    }
    (50, 0)
}

fn sweep_explorer(calls: usize) -> Explorer<impl Fn(u64) -> Sim> {
    Explorer::new(move |seed| scenario(seed, calls))
        .space(
            Space::new()
                .crash("store")
                .outage(Duration::from_millis(100)),
        )
        .seed(SEED)
        .budget(10_000)
        .shrink(false)
        .progress(false)
}

fn sweep_row() {
    let (calls, instants) = hundred_instants();
    let (figure, runs) = isolated(|| {
        let meter = Meter::start();
        let report = sweep_explorer(calls)
            .sweep_instants()
            .expect("the 3-host sweep runs");
        (meter.figure(report.runs as f64, String::new()), report.runs)
    });
    println!(
        "{:<46} {:>12.3} s wall, {:.3} s CPU ({runs} placements, target ≤ 5 s)",
        format!("  sweep of {instants} instants ({calls} calls)"),
        figure.wall.as_secs_f64(),
        figure.cpu.as_secs_f64(),
    );
}
