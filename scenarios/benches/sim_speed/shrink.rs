//! The shrinking rows of the bench's `explore` part: what shrinking a
//! failing schedule takes. `BENCH_SHRINK_SEEDS` (default 20) explorations
//! of the bug zoo's `cancel-unsafe-reserve`, up to five faults a schedule,
//! each with the budget its first leak needs; each first leak shrinks to
//! a minimal schedule. Printed: the faults found and kept, the runs each
//! shrink took (the bar: a 5-fault failure to its 1-fault core in
//! 50 runs or fewer), and the wall time per shrink: the same explorations
//! with shrinking on and off, the difference over the shrinks.

use grpc_chaos::explore::{Explorer, Report};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::zoo::cancel_unsafe::{self, STOCK_ACCOUNTING};

use super::{isolated, Meter};

fn explorer(seed: u64) -> Explorer<impl Fn(u64) -> Sim> {
    let bug = cancel_unsafe::BUG;
    let (name, check) = bug.invariant;
    Explorer::new(|seed| cancel_unsafe::scenario(seed, false))
        .space((bug.space)().max_faults(5))
        .invariant(name, check)
        .seed(seed)
        .budget(20)
}

/// The explorations of `seeds`, shrinking `on` or off, and their wall
/// time in seconds.
fn explorations(seeds: u64, on: bool) -> (Vec<Report>, f64) {
    let meter = Meter::start();
    let reports: Vec<Report> = (0..seeds)
        .map(|seed| {
            explorer(seed)
                .shrink(on)
                .explore()
                .expect("the zoo's exploration runs")
        })
        .collect();
    (reports, meter.figure(0.0, String::new()).wall.as_secs_f64())
}

pub(super) fn shrink_rows(seeds: u64) {
    let (shrunk, on) = isolated(|| explorations(seeds, true));
    let (_, off) = isolated(|| explorations(seeds, false));
    let mut runs = Vec::new();
    let (mut found, mut kept, mut five) = (0, 0, Vec::new());
    for g in shrunk.iter().filter_map(|r| r.broken(STOCK_ACCOUNTING)) {
        let Some(s) = &g.shrunk else { continue };
        runs.push(s.runs);
        found += s.from;
        kept += s.schedule.faults.len();
        if s.from == 5 {
            five.push((s.runs, s.schedule.faults.len()));
        }
    }
    runs.sort_unstable();
    let n = runs.len().max(1);
    println!(
        "{:<46} {} failures shrunk: {found} faults to {kept}; runs median {}, max {}",
        "  shrinking (up to 5 faults, first leak)",
        runs.len(),
        runs.get(runs.len() / 2).copied().unwrap_or(0),
        runs.last().copied().unwrap_or(0),
    );
    println!("{:<46} {five:?} (runs, faults kept)", "  5-fault failures");
    println!(
        "{:<46} {:.1} ms ({:.3} s on, {:.3} s off, wall)",
        "  wall per shrink",
        (on - off) * 1e3 / n as f64,
        on,
        off
    );
}
