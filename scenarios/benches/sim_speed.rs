//! How fast grpc-chaos runs a story, each figure next to an anchor measured
//! in the same process, so the numbers mean something on any machine.
//!
//! Run with `cargo bench -p grpc-chaos-scenarios --bench sim_speed` (a
//! release build). It prints one table:
//!
//! 1. **Idle story, simulated seconds per wall second.** The reference
//!    services (Scoreboard gateway in front of Store), a player that makes
//!    one `Hit` and then sleeps 10 simulated minutes on a channel with a
//!    30 s keepalive (so a few PINGs cross the wire), at a tick of 1 ms and
//!    of 10 ms. turmoil steps every host by a fixed tick whether or not
//!    anything happens, so an idle minute costs as many steps as a busy one;
//!    the tick is the lever (`SimBuilder::tick`).
//!    *Anchor:* bare turmoil at the same tick — one host and one client that
//!    only sleep for the same simulated time. That is the floor the harness
//!    cannot go below; the ratio harness/anchor (1.0 = as fast as bare
//!    turmoil) is what the harness and tonic add per step. turmoil's cost
//!    per step grows with the number of hosts (every host's runtime is
//!    polled each tick), so a second line compares against bare turmoil
//!    with the story's layout, two sleeping hosts and a client: the gap
//!    left there is what grpc-chaos itself costs per step.
//! 2. **Unary calls per wall second.** A client calling `Store/Load`
//!    sequentially through `Host::channel` (the recorded channel), default
//!    tick and latency. *Anchor:* the same Store service and a tonic client
//!    over an in-memory `tokio::io::duplex` pipe in one ordinary
//!    current-thread tokio runtime — tonic's own cost with no network, no
//!    simulation and no recording. The ratio anchor/harness is the overhead
//!    factor of running a call inside grpc-chaos. A second line runs the
//!    harness with `SimBuilder::wire_tap(false)`: the same calls, recorded,
//!    with no frame decoded, so the gap between the two is what decoding and
//!    recording every frame costs. A third line (not an anchor) serves and
//!    calls the same Store with tonic over bare turmoil TCP, same tick and
//!    latency, so the rest splits into what turmoil costs and what
//!    grpc-chaos's wiring and recording cost.
//!    A last line runs the harness line's calls over TLS (`grpc_chaos::tls`,
//!    rustls on both ends below the tap): its ratio is TLS on / TLS off,
//!    #31's bar 2.00x.
//!    The harness line also says how much wall time came after the client
//!    returned (tearing down, building the `Trace`), which should stay
//!    small and linear in the number of calls.
//!
//! 3. **Server streams: CPU time and peak memory.** `BENCH_STREAMS`
//!    (default 1000) concurrent `Scoreboard/Watch` streams on one
//!    connection, each sending one `Score` per simulated second for
//!    `BENCH_STREAM_SECS` (default 60) simulated seconds, the server a small
//!    feed defined here, everything recording. *Anchor:* the same feed and
//!    client on bare turmoil + tonic, same tick and latency. The ratios are
//!    harness / anchor for CPU time and for peak heap.
//! 4. **Event log per recorded frame.** After the unary and the streams
//!    runs, every `EventKind::Frame` of the trace is cloned into a vector
//!    of exactly their number, and the heap that took is counted by the
//!    allocator below: the `Event` itself plus every heap block it owns
//!    (settings, a GOAWAY, a touched frame's fate). A decoded header
//!    block is shared by the frames that repeat it, and costs only a
//!    reference count in the clone; blocks that differ in one short value
//!    (a request's call id) share one field list. Each distinct block and
//!    each distinct field list is counted once, by building one copy of
//!    each with the same sharing (`HeaderFields::copies_sharing_as`), as
//!    the log holds them. Host names are
//!    interned for the process and cost nothing per event. That is what one frame costs
//!    in the log, headers decoded; the recorder's vector grows by doubling,
//!    so during a run up to that much again of the inline part can be
//!    capacity not yet used.
//! 5. **Exploration, schedules per wall second.** `BENCH_SCHEDULES`
//!    (default 200) random schedules of the bug zoo's
//!    `cancel-unsafe-reserve` (two hosts, five sequential unary calls, a
//!    generic space of cancels, partitions and slow handlers), through
//!    `Explorer::explore`: the two baseline runs, then per schedule its
//!    faults, the run, the render compared with the baseline's, the
//!    invariant. *Anchor:* the same scenario run as many times without
//!    faults (`Sim::run` alone): what one run costs. The ratio
//!    anchor/explorer is what exploring adds per run. A last line gives
//!    the fixed cost of a run: an empty scenario (one server, a client
//!    that returns at once) against the whole five-call run, CPU µs each.
//!    Then issue #26's targets on a 3-host unary scenario
//!    (`sim_speed/schedules.rs`): schedules per CPU second at 10, 50 and
//!    200 calls against as many runs without faults, what a run costs
//!    before its first call, and the instant sweep of a 100-instant
//!    baseline in seconds.
//!    Then shrinking (`sim_speed/shrink.rs`): `BENCH_SHRINK_SEEDS`
//!    (default 20) explorations with up to five faults a schedule, each
//!    first leak shrunk; the runs each shrink took and the wall time per
//!    shrink (the same explorations with shrinking on and off).
//!
//! Every figure is end to end: building the world, connecting, the calls,
//! and (for the harness) handing back the trace.
//!
//! **Time.** Each run reports wall time (`std::time::Instant`) and the CPU
//! time of the process (`getrusage(RUSAGE_SELF)`, user + system). turmoil
//! runs every host on the calling thread and the bench starts no other, so
//! CPU time is the work done, without the time the (shared) machine gave
//! to other processes; the ratios are taken on it. A part runs
//! `BENCH_REPEAT` rounds (default 3), each round the harness and its
//! anchors back to back, so a burst of load does not land on one side
//! only. The figures printed are each side's fastest round; each ratio is
//! given twice: *best*, the ratio of those fastest rounds, and *rounds*,
//! the ratio within each round: its median over the rounds, lowest and
//! highest. On a shared virtual machine the same work's CPU time varies
//! from round to round (other guests share the cores and caches), and the
//! two bests can come from rounds with different luck; the median of the
//! paired ratios is the steadier figure, and the range says how far the
//! rounds disagreed. `BENCH_REPEAT=15` or more narrows it.
//!
//! **Instructions.** For a figure no other guest can move, count
//! instructions instead: each measured run of the calls and streams parts
//! is a function of its own (`measured_calls_tapped`, `_untapped`,
//! `_duplex`, `_bare`, `measured_streams_tapped`, `_untapped`, `_bare`),
//! so callgrind can count each one apart, in one process:
//!
//! ```text
//! BENCH_ONLY=unary,streams BENCH_REPEAT=1 BENCH_CALLS=2000 BENCH_STREAMS=200 \
//!   valgrind --tool=callgrind --collect-atstart=no \
//!   --toggle-collect='sim_speed::measured_*' --callgrind-out-file=cg.out \
//!   target/release/deps/sim_speed-<hash> --bench
//! callgrind_annotate --inclusive=yes cg.out | grep 'sim_speed::measured_'
//! ```
//!
//! The counts do not move with the machine's load, only by about 1% from
//! process to process (hash seeds, addresses); they take about 50 times
//! longer to get. Their ratios leave out what instructions do not show
//! (cache misses, page faults, system calls).
//!
//! **Memory.** The bench binary's global allocator counts the bytes live on
//! the heap (requested sizes, as `GlobalAlloc` sees them) and the highest
//! count; each run's peak is that highest count minus what was live when
//! the run started. That is exact and per run, in one process; an RSS
//! figure would include allocator slack and could only be read per
//! process (`ru_maxrss` never goes down). Counting costs two relaxed atomic
//! operations per allocation, on both sides of every ratio.
//!
//! 6. **Health checking.** 1,000 calls over three replicas through a
//!    health-checked balanced channel against the same calls through a
//!    plain one (`sim_speed/health.rs`); the ratio is checked / plain CPU.
//! 7. **Outlier detection.** 1,000 calls over five replicas, one failing
//!    every 2nd call, through a balanced channel with outlier detection
//!    (gRFC A50) against the same calls through a plain one
//!    (`sim_speed/outlier.rs`); the ratio is detected / plain CPU.
//!
//! Sizes: `BENCH_CALLS` (default 10000), `BENCH_HEALTH_CALLS` and `BENCH_OUTLIER_CALLS` (default 1000), `BENCH_IDLE_SECS` (default 600),
//! `BENCH_STREAMS`, `BENCH_STREAM_SECS`, `BENCH_SCHEDULES` and `BENCH_REPEAT` make a quick run
//! possible, e.g. `BENCH_CALLS=1000 BENCH_IDLE_SECS=60 BENCH_REPEAT=1`;
//! `BENCH_ONLY=idle`, `unary`, `streams`, `explore`, `health`, `outlier` or `hedging` (comma-separated) runs only
//! those parts (for a profiler).
//!
//! Wall time is read outside the simulation, around `Sim::run` and
//! `turmoil::Sim::run`; the one reading inside a simulated host (the moment
//! the calls client returns) is only reported, never acted on, so it
//! cannot change what the simulation does.

// The health and outlier parts, what they share, and the shrinking rows
// live beside this file (it is a crate root, so its modules resolve from
// `benches/`).
#[path = "sim_speed/balanced.rs"]
mod balanced;
#[path = "sim_speed/health.rs"]
mod health;
#[path = "sim_speed/hedging.rs"]
mod hedging;
#[path = "sim_speed/outlier.rs"]
mod outlier;
#[path = "sim_speed/schedules.rs"]
mod schedules;
#[path = "sim_speed/shrink.rs"]
mod shrink;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use grpc_chaos::recorder::event::{Event, EventKind, FrameDetail, HeaderFields};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::scoreboard_server::{Scoreboard, ScoreboardServer};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, Rally, Score, WatchRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use grpc_chaos_scenarios::zoo;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;
use tonic::transport::{Endpoint, Server, Uri};
use tonic::{Request, Response, Status, Streaming};

/// Ticks the idle story runs at.
const IDLE_TICKS: [Duration; 2] = [Duration::from_millis(1), Duration::from_millis(10)];
/// The player's keepalive interval in the idle story.
const KEEPALIVE: Duration = Duration::from_secs(30);
/// Seed of every harness run (any fixed value; the bench is not about it).
const SEED: u64 = 1;

/// Counts the bytes live on the heap and their highest count (see the
/// module docs, "Memory").
struct CountingAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl CountingAlloc {
    fn add(n: usize) {
        let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
        // The bench allocates from one thread; a lost update between two
        // threads could only make the peak a little low.
        if live > PEAK.load(Ordering::Relaxed) {
            PEAK.store(live, Ordering::Relaxed);
        }
    }

    fn sub(n: usize) {
        LIVE.fetch_sub(n, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; only counters move.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            Self::add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            Self::add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        Self::sub(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        // Counted as the change in size: a large block grows in place
        // (glibc remaps it), so old and new never coexist.
        if !p.is_null() {
            match new_size.checked_sub(layout.size()) {
                Some(grown) => Self::add(grown),
                None => Self::sub(layout.size() - new_size),
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Heap bytes live now.
fn heap_live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a peak measurement: from now, [`heap_peak_since`] says how high
/// the heap went above what is live now.
fn heap_mark() -> usize {
    let live = heap_live();
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn heap_peak_since(mark: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(mark)
}

/// CPU time of the process so far (user + system), when the platform says.
#[cfg(unix)]
fn cpu_time() -> Option<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a `rusage` into the pointer it is given,
    // which points to one.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: it returned 0, so it filled the struct.
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

#[cfg(not(unix))]
fn cpu_time() -> Option<Duration> {
    None
}

/// Wall time, CPU time and peak heap of one run, measured around `f`.
struct Meter {
    wall: Instant,
    cpu: Option<Duration>,
    heap: usize,
}

impl Meter {
    fn start() -> Self {
        let heap = heap_mark();
        Self {
            cpu: cpu_time(),
            wall: Instant::now(),
            heap,
        }
    }

    /// A figure of `amount` units measured since [`Meter::start`].
    fn figure(self, amount: f64, note: String) -> Figure {
        let wall = self.wall.elapsed();
        // Without a CPU clock, wall time stands in for it.
        let cpu = match (self.cpu, cpu_time()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall,
        };
        Figure {
            amount,
            wall,
            cpu,
            peak_heap: heap_peak_since(self.heap),
            note,
        }
    }
}

/// Which parts of the bench run (`BENCH_ONLY`, default all).
struct Parts(Option<String>);

impl Parts {
    fn from_env() -> Self {
        Self(std::env::var("BENCH_ONLY").ok())
    }

    fn run(&self, part: &str) -> bool {
        self.0
            .as_deref()
            .is_none_or(|only| only.split(',').any(|p| p.trim() == part))
    }
}

fn main() {
    let calls = env_u64("BENCH_CALLS", 10_000);
    let idle = Duration::from_secs(env_u64("BENCH_IDLE_SECS", 600));
    let streams = env_u64("BENCH_STREAMS", 1_000);
    let stream_secs = env_u64("BENCH_STREAM_SECS", 60).max(1);
    let schedules = env_u64("BENCH_SCHEDULES", 200).max(1);
    let repeat = env_u64("BENCH_REPEAT", 3).max(1);
    let parts = Parts::from_env();

    println!(
        "grpc-chaos sim_speed: {repeat} rounds, harness and anchors interleaved \
         (CPU: getrusage, user + system; peak: heap bytes counted by the allocator)"
    );
    println!();
    println!(
        "{:<46} {:>12} {:>12} {:>8}  rounds: median (low-high)",
        "measure", "grpc-chaos", "anchor", "best"
    );
    if parts.run("idle") {
        idle_rows(idle, repeat);
    }
    if parts.run("unary") {
        unary_rows(calls, repeat);
    }
    if parts.run("streams") {
        stream_rows(streams, stream_secs, repeat);
    }
    if parts.run("explore") {
        explore_rows(schedules, repeat);
    }
    if parts.run("health") {
        health::health_rows(env_u64("BENCH_HEALTH_CALLS", 1_000), repeat);
    }
    if parts.run("outlier") {
        outlier::outlier_rows(env_u64("BENCH_OUTLIER_CALLS", 1_000), repeat);
    }
    if parts.run("hedging") {
        hedging::hedging_rows(env_u64("BENCH_HEDGING_CALLS", 1_000), repeat);
    }
    println!();
    println!(
        "ratio: idle rows    = grpc-chaos / bare turmoil, sim s per CPU s (1.00x = no overhead)"
    );
    println!("       calls rows   = anchor / grpc-chaos, calls per CPU s (overhead factor)");
    println!("       streams rows = grpc-chaos / bare turmoil, CPU s and peak heap");
    println!(
        "       explore row  = plain runs / explored schedules, per CPU s (cost of exploring)"
    );
    println!("       health row   = health-checked / plain balanced channel, CPU s (bar: 1.50x)");
    println!("       outlier row  = outlier detection / plain balanced channel, CPU s");
    println!("       hedging row  = hedging layer / plain balanced channel, CPU s (bar: 1.50x)");
    println!("       best   = the ratio of each side's fastest round (figures above)");
    println!("       rounds = each round's own ratio: the median, the lowest and the highest");
}

fn idle_rows(idle: Duration, repeat: u64) {
    for tick in IDLE_TICKS {
        let rounds = Rounds::run(repeat, || {
            [
                isolated(|| harness_idle(tick, idle)),
                turmoil_idle(tick, idle, 1),
                turmoil_idle(tick, idle, 2),
            ]
        });
        let [harness, anchor, same_hosts] = rounds.best();
        let label = format!(
            "idle {}s story, tick {}ms: sim s / CPU s",
            idle.as_secs(),
            tick.as_millis()
        );
        // harness / anchor: 1.00x means as fast as bare turmoil.
        let vs = |a: usize| move |r: &[Figure; 3]| r[0].rate() / r[a].rate();
        row(
            &label,
            harness,
            anchor,
            harness.rate() / anchor.rate(),
            rounds.paired(vs(1)),
        );
        row(
            "  (anchor with the story's 2 hosts + 1 client)",
            harness,
            same_hosts,
            harness.rate() / same_hosts.rate(),
            rounds.paired(vs(2)),
        );
        detail("  grpc-chaos", harness, "sim s");
        detail("  bare turmoil, 1 host + 1 client", anchor, "sim s");
        detail("  bare turmoil, 2 hosts + 1 client", same_hosts, "sim s");
    }
}

fn unary_rows(calls: u64, repeat: u64) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| measured_calls_tapped(calls)),
            isolated(|| measured_calls_untapped(calls)),
            measured_calls_duplex(calls),
            measured_calls_bare(calls),
            isolated(|| measured_calls_tls(calls)),
        ]
    });
    let best = rounds.best();
    let [harness, untapped, anchor, bare, tls] = best;
    // anchor / harness: how many times slower a call is in the harness.
    let slower = |h: usize, a: usize| move |r: &[Figure; 5]| r[a].rate() / r[h].rate();
    let rows = [
        (format!("{calls} unary Store/Load: calls / CPU s"), 0, 2),
        (
            "  (same, wire tap off, vs the same anchor)".to_owned(),
            1,
            2,
        ),
        (
            "  (tonic on bare turmoil, same tick + latency)".to_owned(),
            0,
            3,
        ),
        (
            "  (wire tap off, vs tonic on bare turmoil)".to_owned(),
            1,
            3,
        ),
        // #31's bar: TLS on costs at most 2x TLS off.
        ("  (TLS on, vs TLS off; bar: 2.00x)".to_owned(), 4, 0),
    ];
    for (label, h, a) in rows {
        let ratio = best[a].rate() / best[h].rate();
        row(&label, best[h], best[a], ratio, rounds.paired(slower(h, a)));
    }
    detail("  grpc-chaos (tick 1ms)", harness, "calls");
    detail("  grpc-chaos, wire_tap(false)", untapped, "calls");
    detail("  tonic over tokio::io::duplex", anchor, "calls");
    detail("  tonic on bare turmoil (tick 1ms)", bare, "calls");
    detail("  grpc-chaos over TLS (grpc_chaos::tls)", tls, "calls");
    // The log's size does not depend on the machine: one more run.
    let trace = harness_calls_trace(calls.min(1_000));
    log_size("  event log, unary (1000 calls max)", trace);
}

fn stream_rows(streams: u64, secs: u64, repeat: u64) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| measured_streams_tapped(streams, secs)),
            isolated(|| measured_streams_untapped(streams, secs)),
            measured_streams_bare(streams, secs),
        ]
    });
    let [harness, untapped, bare] = rounds.best();
    let cpu = |f: &Figure| f.cpu.as_secs_f64();
    let mb = |f: &Figure| f.peak_heap as f64 / 1e6;
    let lines = [
        (
            format!("{streams} streams x {secs} sim s: CPU s"),
            0,
            cpu as fn(&Figure) -> f64,
        ),
        ("  (same, wire tap off)".to_owned(), 1, cpu),
        ("  peak heap, MB".to_owned(), 0, mb),
        ("  (same, wire tap off)".to_owned(), 1, mb),
    ];
    let best = [harness, untapped];
    for (label, h, shown) in lines {
        println!(
            "{label:<46} {:>12.3} {:>12.3} {:>7.2}x  {}",
            shown(best[h]),
            shown(bare),
            shown(best[h]) / shown(bare),
            rounds.paired(|r| shown(&r[h]) / shown(&r[2])),
        );
    }
    detail("  grpc-chaos", harness, "messages");
    detail("  grpc-chaos, wire_tap(false)", untapped, "messages");
    detail("  tonic on bare turmoil", bare, "messages");
    let (_, trace) = harness_streams(streams, secs, true);
    log_size("  event log, streams", trace);
}

fn explore_rows(schedules: u64, repeat: u64) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| measured_explore(schedules)),
            isolated(|| measured_plain_runs(schedules)),
            isolated(|| measured_empty_runs(schedules)),
        ]
    });
    let [explored, plain, empty] = rounds.best();
    row(
        &format!("{schedules} schedules, 5 unary calls: runs / CPU s"),
        explored,
        plain,
        plain.rate() / explored.rate(),
        rounds.paired(|r| r[1].rate() / r[0].rate()),
    );
    let per_wall = explored.amount / explored.wall.as_secs_f64();
    println!("{:<46} {per_wall:>12.0}", "  explored schedules / wall s");
    detail("  Explorer::explore", explored, "schedules");
    detail("  Sim::run without faults", plain, "runs");
    detail("  Sim::run of an empty scenario", empty, "runs");
    let per_run = |f: &Figure| f.cpu.as_secs_f64() * 1e6 / f.amount;
    println!(
        "{:<46} {:>12.0} of {:.0} µs CPU",
        "  fixed cost of a run (empty / whole run)",
        per_run(empty),
        per_run(plain)
    );
    schedules::schedule_rows(schedules, repeat);
    shrink::shrink_rows(env_u64("BENCH_SHRINK_SEEDS", 20));
}

/// Runs with one server and a client that returns at once: what a run
/// costs before and around its first event (building the hosts, the
/// runtimes, the trace).
fn measured_empty_runs(runs: u64) -> Figure {
    let meter = Meter::start();
    for _ in 0..runs {
        let mut sim = Sim::builder().build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |_| async { Ok(()) });
        sim.run().expect("an empty scenario runs");
    }
    meter.figure(runs as f64, String::new())
}

/// Random schedules of the zoo's cancel-unsafe reservation.
fn measured_explore(schedules: u64) -> Figure {
    let budget = usize::try_from(schedules).unwrap_or(usize::MAX);
    // Shrinking has rows of its own (`shrink.rs`): these runs are the
    // schedules alone.
    let explorer = zoo::cancel_unsafe::BUG
        .explorer(false)
        .budget(budget)
        .shrink(false);
    let meter = Meter::start();
    let report = explorer.explore().expect("the zoo's exploration runs");
    let note = format!(", {} invariant broken", report.failures.len());
    meter.figure(report.runs as f64, note)
}

/// The same scenario, as many runs, without faults or checks.
fn measured_plain_runs(runs: u64) -> Figure {
    let meter = Meter::start();
    for _ in 0..runs {
        zoo::cancel_unsafe::scenario(0, false)
            .run()
            .expect("the zoo's scenario runs");
    }
    meter.figure(runs as f64, String::new())
}

/// Prints what the log's frame events take, heap included, as the log
/// holds them: the events cloned into a vector of exactly their number
/// (the `Event`s and every heap block each owns, counted by the
/// allocator), plus each distinct header block and each distinct field
/// list once. A block the log shares between frames ([`HeaderFields`])
/// costs nothing in the clone; it is counted by building one copy of each
/// distinct block, sharing one copy of each distinct list as the
/// originals do. Host names are interned for the process and cost nothing
/// per event.
fn log_size(label: &str, trace: grpc_chaos::Trace) {
    let events = trace.events();
    let frames: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Frame { .. }))
        .collect();
    let all = deep_bytes(events.iter()) + shared_bytes(events.iter());
    let framed = deep_bytes(frames.iter().copied()) + shared_bytes(frames.iter().copied());
    let per = |bytes: usize, n: usize| bytes as f64 / n.max(1) as f64;
    println!(
        "{label:<46} {:.1} bytes per frame ({} frames; Event is {} bytes inline), {:.1} per event ({} events)",
        per(framed, frames.len()),
        frames.len(),
        std::mem::size_of::<Event>(),
        per(all, events.len()),
        events.len(),
    );
}

/// Heap bytes a copy of `events` takes: the vector of them and whatever
/// each owns (a shared header block: only its reference count).
fn deep_bytes<'a>(events: impl ExactSizeIterator<Item = &'a Event>) -> usize {
    let before = heap_live();
    let mut copy = Vec::with_capacity(events.len());
    copy.extend(events.cloned());
    let bytes = heap_live().saturating_sub(before);
    drop(copy);
    bytes
}

/// Heap bytes of the distinct header blocks `events` hold and of their
/// distinct field lists, each counted once: one copy of each is built,
/// shared as in the log, and counted.
fn shared_bytes<'a>(events: impl Iterator<Item = &'a Event>) -> usize {
    let mut blocks: Vec<&HeaderFields> = Vec::new();
    for e in events {
        let block = match &e.kind {
            EventKind::Frame {
                detail: FrameDetail::Headers(b),
                ..
            } => b,
            EventKind::FrameReplaced(r) => match &r.detail {
                FrameDetail::Headers(b) => b,
                _ => continue,
            },
            _ => continue,
        };
        blocks.push(block);
    }
    let before = heap_live();
    // By reference: `blocks`, allocated before, must not be freed inside.
    let copies = HeaderFields::copies_sharing_as(blocks.iter().copied());
    // The vector holding the copies is not part of the log.
    let bytes = heap_live()
        .saturating_sub(before)
        .saturating_sub(copies.capacity() * std::mem::size_of::<HeaderFields>());
    drop(copies);
    bytes
}

/// One measured run: `amount` units (simulated seconds, calls, messages)
/// in `wall` and `cpu`, with the heap at most `peak_heap` bytes above
/// what was live before it.
struct Figure {
    amount: f64,
    wall: Duration,
    cpu: Duration,
    peak_heap: usize,
    note: String,
}

impl Figure {
    /// Units per CPU second.
    fn rate(&self) -> f64 {
        self.amount / self.cpu.as_secs_f64()
    }
}

/// Runs `run` on a thread of its own and returns what it returns. The
/// harness keeps a thread's last trace for its panic hook and drops it
/// when the thread's next run starts (`trace/artifacts.rs`, `running`):
/// on one thread, each harness run's measure would include freeing the
/// previous run's whole event log (~4% of a unary run, more after the
/// streams part). On a thread of its own, a run's log is freed when the
/// thread ends, after its measure, as bare turmoil's world is freed after
/// its own. `getrusage(RUSAGE_SELF)` counts every thread; the waiting
/// caller uses no CPU.
fn isolated<T: Send>(run: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(run)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Every round of a part: the figures of each round, harness and anchors
/// run back to back.
struct Rounds<const N: usize>(Vec<[Figure; N]>);

impl<const N: usize> Rounds<N> {
    /// Runs `measure` `repeat` times. Harness and anchors alternate within
    /// a round, so a burst of load on this (shared) machine does not land
    /// on one side only.
    fn run(repeat: u64, mut measure: impl FnMut() -> [Figure; N]) -> Self {
        Self((0..repeat.max(1)).map(|_| measure()).collect())
    }

    /// For each slot, the round with the least CPU time.
    fn best(&self) -> [&Figure; N] {
        std::array::from_fn(|slot| {
            self.0
                .iter()
                .map(|round| &round[slot])
                .min_by_key(|f| f.cpu)
                .unwrap_or_else(|| unreachable!("Rounds::run makes at least one round"))
        })
    }

    /// `ratio` of each round's own figures over the rounds: their median
    /// (the mean of the middle two for an even count), lowest and highest.
    /// A burst of load inflates both sides of the round it lands on, so
    /// the median moves less than a ratio of two bests, which may come
    /// from different rounds; the range says how much the rounds agreed.
    fn paired(&self, ratio: impl Fn(&[Figure; N]) -> f64) -> Paired {
        let mut all: Vec<f64> = self.0.iter().map(ratio).collect();
        all.sort_by(f64::total_cmp);
        let mid = all.len() / 2;
        let median = match all.len() % 2 {
            0 => (all[mid - 1] + all[mid]) / 2.0,
            _ => all[mid],
        };
        Paired {
            median,
            low: all[0],
            high: all[all.len() - 1],
        }
    }
}

/// The rounds' own ratios of one row ([`Rounds::paired`]).
struct Paired {
    median: f64,
    low: f64,
    high: f64,
}

impl std::fmt::Display for Paired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>5.2}x ({:.2}-{:.2})",
            self.median, self.low, self.high
        )
    }
}

/// One ratio row: the rates of the best runs, the ratio of those bests,
/// and the rounds' own ratios.
fn row(label: &str, harness: &Figure, anchor: &Figure, best: f64, rounds: Paired) {
    println!(
        "{label:<46} {:>12.0} {:>12.0} {best:>7.2}x  {rounds}",
        harness.rate(),
        anchor.rate()
    );
}

fn detail(label: &str, f: &Figure, unit: &str) {
    println!(
        "{label:<46} {:.1} {unit} in {:.3} s CPU, {:.3} s wall, peak heap {:.1} MB{}",
        f.amount,
        f.cpu.as_secs_f64(),
        f.wall.as_secs_f64(),
        f.peak_heap as f64 / 1e6,
        f.note
    );
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("sim_speed: ignoring {name}={v:?}: not an unsigned integer");
            default
        }),
        Err(_) => default,
    }
}

/// The simulated time between two points of a client body, measured with
/// tokio's clock (which turmoil drives), shared out of the `!Send` body.
#[derive(Clone, Default)]
struct SimSpan(Rc<Cell<Duration>>);

/// The reference services and a player: one `Hit`, then `idle` asleep with
/// the channel (and its 30 s keepalive) held open.
fn harness_idle(tick: Duration, idle: Duration) -> Figure {
    let span = SimSpan::default();
    let mut sim = Sim::builder()
        .seed(SEED)
        .tick(tick)
        .duration(idle + Duration::from_secs(60))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    let out = span.clone();
    sim.client("player", move |c| async move {
        let start = tokio::time::Instant::now();
        let channel = c.channel_with("gateway", |e| {
            e.http2_keep_alive_interval(KEEPALIVE)
                .keep_alive_while_idle(true)
        });
        let mut client = ScoreboardClient::new(channel);
        client
            .hit(Rally {
                match_id: "m1".into(),
                player: "a".into(),
                shots: 1,
            })
            .await?;
        tokio::time::sleep(idle).await;
        drop(client);
        out.0.set(start.elapsed());
        Ok(())
    });
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("idle story failed: {e}"));
    let note = format!(
        ", {} trace events, {} PING frames (ping + ack)",
        trace.events().len(),
        trace
            .events()
            .iter()
            .filter(|e| matches!(
                e.kind,
                EventKind::Frame {
                    frame: grpc_chaos::wire::FrameType::Ping,
                    ..
                }
            ))
            .count()
    );
    meter.figure(span.0.get().as_secs_f64(), note)
}

/// Bare turmoil: `hosts` hosts and a client that only sleep for `idle`.
fn turmoil_idle(tick: Duration, idle: Duration, hosts: usize) -> Figure {
    let span = SimSpan::default();
    let mut sim = turmoil::Builder::new()
        .rng_seed(SEED)
        .tick_duration(tick)
        .simulation_duration(idle + Duration::from_secs(60))
        .build();
    for i in 0..hosts {
        sim.host(format!("server{i}"), move || async move {
            tokio::time::sleep(idle * 2).await;
            Ok(())
        });
    }
    let out = span.clone();
    sim.client("client", async move {
        let start = tokio::time::Instant::now();
        tokio::time::sleep(idle).await;
        out.0.set(start.elapsed());
        Ok(())
    });
    let meter = Meter::start();
    sim.run()
        .unwrap_or_else(|e| panic!("bare turmoil idle run failed: {e}"));
    meter.figure(span.0.get().as_secs_f64(), String::new())
}

/// The measured runs of the calls and streams parts, one function each and
/// never inlined, so that under callgrind each one's instructions show
/// apart (module docs, "Instructions").
#[inline(never)]
fn measured_calls_tapped(calls: u64) -> Figure {
    harness_calls(calls, true)
}

#[inline(never)]
fn measured_calls_tls(calls: u64) -> Figure {
    harness_calls_run(calls, true, true).0
}

#[inline(never)]
fn measured_calls_untapped(calls: u64) -> Figure {
    harness_calls(calls, false)
}

#[inline(never)]
fn measured_calls_duplex(calls: u64) -> Figure {
    duplex_calls(calls)
}

#[inline(never)]
fn measured_calls_bare(calls: u64) -> Figure {
    turmoil_calls(calls)
}

#[inline(never)]
fn measured_streams_tapped(streams: u64, secs: u64) -> Figure {
    harness_streams(streams, secs, true).0
}

#[inline(never)]
fn measured_streams_untapped(streams: u64, secs: u64) -> Figure {
    harness_streams(streams, secs, false).0
}

#[inline(never)]
fn measured_streams_bare(streams: u64, secs: u64) -> Figure {
    turmoil_streams(streams, secs)
}

/// `calls` sequential `Store/Load` calls through the recorded channel, with
/// the wire tap on or off.
fn harness_calls(calls: u64, wire_tap: bool) -> Figure {
    harness_calls_run(calls, wire_tap, false).0
}

/// The trace of [`harness_calls`] with the wire tap on.
fn harness_calls_trace(calls: u64) -> grpc_chaos::Trace {
    harness_calls_run(calls, true, false).1
}

/// [`harness_calls`], over TLS when `tls` ([`grpc_chaos::tls`]: one
/// handshake, then every call's frames sealed and opened by rustls).
fn harness_calls_run(calls: u64, wire_tap: bool, tls: bool) -> (Figure, grpc_chaos::Trace) {
    let span = SimSpan::default();
    // Each call takes a few simulated ms; leave plenty of room.
    let room = Duration::from_millis(10) * u32::try_from(calls).unwrap_or(u32::MAX);
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(room + Duration::from_secs(60))
        .wire_tap(wire_tap)
        .build();
    let ca = grpc_chaos::tls::Ca::new(SEED);
    let server_tls = tls.then(|| {
        let id = ca
            .leaf("store")
            .identity()
            .unwrap_or_else(|e| panic!("{e}"));
        grpc_chaos::tls::ServerTls::new(id)
    });
    sim.server("store", move |s| {
        let s = match &server_tls {
            Some(t) => s.tls(t.clone()),
            None => s,
        };
        s.add_service(Store::default().into_server())
    });
    let client_tls =
        tls.then(|| grpc_chaos::tls::ClientTls::new().ca_certificate(ca.certificate()));
    let out = span.clone();
    // The wall-clock moment the client body returned, so the time spent
    // after it (tearing the world down, building the trace) shows apart.
    // Reading the wall clock inside a simulated host is wrong in a story;
    // here it is only observed, never acted on.
    let body_done = Rc::new(Cell::new(None::<Instant>));
    let done = body_done.clone();
    sim.client("bench", move |c| async move {
        let start = tokio::time::Instant::now();
        let channel = match client_tls {
            Some(t) => c.channel_tls("store", t),
            None => c.channel("store"),
        };
        let mut client = StoreClient::new(channel);
        for _ in 0..calls {
            client
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
        }
        out.0.set(start.elapsed());
        done.set(Some(Instant::now()));
        Ok(())
    });
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("calls story failed: {e}"));
    let after_body = body_done.get().map(|t| t.elapsed()).unwrap_or_default();
    let note = format!(
        " ({:.1} sim s, {} trace events; {:.3} s wall of it after the client returned)",
        span.0.get().as_secs_f64(),
        trace.events().len(),
        after_body.as_secs_f64()
    );
    let figure = meter.figure(calls as f64, note);
    let recorded = trace.calls_from("bench").count();
    assert_eq!(
        recorded as u64, calls,
        "the trace should hold every call the client made"
    );
    (figure, trace)
}

/// The anchor for calls: Store served by tonic on one half of an in-memory
/// pipe, a tonic `Channel` on the other, one current-thread runtime (turmoil
/// also runs every host on one thread).
fn duplex_calls(calls: u64) -> Figure {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let meter = Meter::start();
    rt.block_on(async {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        // One connection, then an incoming stream that never ends, so the
        // server keeps running for as long as the runtime does.
        let incoming = futures_util::stream::once(async { Ok::<_, io::Error>(server_io) })
            .chain(futures_util::stream::pending());
        tokio::spawn(
            Server::builder()
                .add_service(Store::default().into_server())
                .serve_with_incoming(incoming),
        );
        let mut client_io = Some(client_io);
        let channel = Endpoint::from_static("http://in-memory.invalid")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let io = client_io.take();
                async move {
                    io.map(TokioIo::new)
                        .ok_or_else(|| io::Error::other("the in-memory pipe is used up"))
                }
            }))
            .await
            .unwrap_or_else(|e| panic!("connect over duplex: {e}"));
        let mut client = StoreClient::new(channel);
        for _ in 0..calls {
            client
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await
                .unwrap_or_else(|e| panic!("Load over duplex: {e}"));
        }
    });
    meter.figure(calls as f64, String::new())
}

/// Not an anchor, but it splits the calls overhead in two:
/// tonic served and called over plain turmoil TCP, with the tick and link
/// latency grpc-chaos uses, and none of its wiring, recording or layers.
fn turmoil_calls(calls: u64) -> Figure {
    let done = Rc::new(Cell::new(0u64));
    let room = Duration::from_millis(10) * u32::try_from(calls).unwrap_or(u32::MAX);
    let latency = grpc_chaos::defaults::LATENCY;
    let mut sim = turmoil::Builder::new()
        .rng_seed(SEED)
        .tick_duration(grpc_chaos::defaults::TICK)
        .min_message_latency(latency)
        .max_message_latency(latency)
        .simulation_duration(room + Duration::from_secs(60))
        .build();
    sim.host("store", || async {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
        let incoming = futures_util::stream::unfold(listener, |listener| async move {
            let conn = listener.accept().await.map(|(stream, _)| TurmoilIo(stream));
            Some((conn, listener))
        });
        Server::builder()
            .add_service(Store::default().into_server())
            .serve_with_incoming(incoming)
            .await?;
        Ok(())
    });
    let out = done.clone();
    sim.client("bench", async move {
        let channel = Endpoint::from_static("http://store:50051")
            .connect_with_connector(tower::service_fn(|_: Uri| async {
                let stream = turmoil::net::TcpStream::connect(("store", PORT)).await?;
                Ok::<_, io::Error>(TokioIo::new(stream))
            }))
            .await?;
        let mut client = StoreClient::new(channel);
        for _ in 0..calls {
            client
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
            out.set(out.get() + 1);
        }
        Ok(())
    });
    let meter = Meter::start();
    sim.run()
        .unwrap_or_else(|e| panic!("tonic on bare turmoil failed: {e}"));
    // The same simulated time as the harness's calls means the same
    // number of turmoil steps: the ratio is per call, not per tick.
    let note = format!(" ({:.1} sim s)", sim.elapsed().as_secs_f64());
    let figure = meter.figure(calls as f64, note);
    assert_eq!(done.get(), calls, "every call should have been made");
    figure
}

/// The port the bare-turmoil store listens on.
const PORT: u16 = 50051;

/// The gap between two scores of a feed stream, *simulated* time.
const FEED_INTERVAL: Duration = Duration::from_secs(1);

/// The streams case's server, the same on both sides: `Watch` sends
/// `count` scores, one per [`FEED_INTERVAL`]; the other methods are not
/// used.
#[derive(Clone, Copy, Default)]
struct Feed;

type ScoreStream = Pin<Box<dyn Stream<Item = Result<Score, Status>> + Send>>;

#[tonic::async_trait]
impl Scoreboard for Feed {
    async fn hit(&self, _: Request<Rally>) -> Result<Response<Score>, Status> {
        Err(Status::unimplemented("the feed only streams"))
    }

    type WatchStream = ScoreStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<ScoreStream>, Status> {
        let req = request.into_inner();
        let stream = futures_util::stream::iter(0..req.count).then(move |i| {
            let score = Score {
                match_id: req.match_id.clone(),
                home: i + 1,
                ..Score::default()
            };
            async move {
                if i > 0 {
                    tokio::time::sleep(FEED_INTERVAL).await;
                }
                Ok(score)
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn upload(&self, _: Request<Streaming<Rally>>) -> Result<Response<Score>, Status> {
        Err(Status::unimplemented("the feed only streams"))
    }

    type RallyStream = ScoreStream;

    async fn rally(&self, _: Request<Streaming<Rally>>) -> Result<Response<ScoreStream>, Status> {
        Err(Status::unimplemented("the feed only streams"))
    }
}

/// `streams` concurrent `Watch` calls of `secs` scores each on one
/// channel (the harness's recorded one or tonic's); the scores received,
/// counted.
async fn watch_all<T: grpc_chaos::GrpcChannel>(
    channel: T,
    streams: u64,
    secs: u64,
) -> Result<u64, Status> {
    let count = u32::try_from(secs).unwrap_or(u32::MAX);
    let received = Rc::new(Cell::new(0u64));
    let watches = (0..streams).map(|i| {
        let mut client = ScoreboardClient::new(channel.clone());
        let received = received.clone();
        async move {
            let mut scores = client
                .watch(WatchRequest {
                    match_id: format!("m{i}"),
                    count,
                    padding: 0,
                })
                .await?
                .into_inner();
            while scores.message().await?.is_some() {
                received.set(received.get() + 1);
            }
            Ok::<_, Status>(())
        }
    });
    for done in futures_util::future::join_all(watches).await {
        done?;
    }
    Ok(received.get())
}

/// The streams case in the harness, everything recording; the figure's
/// amount is the scores received.
fn harness_streams(streams: u64, secs: u64, wire_tap: bool) -> (Figure, grpc_chaos::Trace) {
    let received = Rc::new(Cell::new(0u64));
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(Duration::from_secs(secs + 60))
        .wire_tap(wire_tap)
        .build();
    sim.server("feed", |s| s.add_service(ScoreboardServer::new(Feed)));
    let out = received.clone();
    sim.client("watcher", move |c| async move {
        out.set(watch_all(c.channel("feed"), streams, secs).await?);
        Ok(())
    });
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("streams story failed: {e}"));
    let note = format!(", {} trace events", trace.events().len());
    let figure = meter.figure(received.get() as f64, note);
    assert_eq!(
        received.get(),
        streams * secs,
        "every stream should have received every score"
    );
    (figure, trace)
}

/// The streams case on bare turmoil + tonic, same tick and latency.
fn turmoil_streams(streams: u64, secs: u64) -> Figure {
    let received = Rc::new(Cell::new(0u64));
    let latency = grpc_chaos::defaults::LATENCY;
    let mut sim = turmoil::Builder::new()
        .rng_seed(SEED)
        .tick_duration(grpc_chaos::defaults::TICK)
        .min_message_latency(latency)
        .max_message_latency(latency)
        .simulation_duration(Duration::from_secs(secs + 60))
        .build();
    sim.host("feed", || async {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
        let incoming = futures_util::stream::unfold(listener, |listener| async move {
            let conn = listener.accept().await.map(|(stream, _)| TurmoilIo(stream));
            Some((conn, listener))
        });
        Server::builder()
            .add_service(ScoreboardServer::new(Feed))
            .serve_with_incoming(incoming)
            .await?;
        Ok(())
    });
    let out = received.clone();
    sim.client("watcher", async move {
        let channel = Endpoint::from_static("http://feed:50051")
            .connect_with_connector(tower::service_fn(|_: Uri| async {
                let stream = turmoil::net::TcpStream::connect(("feed", PORT)).await?;
                Ok::<_, io::Error>(TokioIo::new(stream))
            }))
            .await?;
        out.set(watch_all(channel, streams, secs).await?);
        Ok(())
    });
    let meter = Meter::start();
    sim.run()
        .unwrap_or_else(|e| panic!("streams on bare turmoil failed: {e}"));
    let figure = meter.figure(received.get() as f64, String::new());
    assert_eq!(
        received.get(),
        streams * secs,
        "every stream should have received every score"
    );
    figure
}

/// A turmoil TCP stream tonic's server can accept: it needs `Connected`.
struct TurmoilIo(turmoil::net::TcpStream);

impl Connected for TurmoilIo {
    type ConnectInfo = ();

    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for TurmoilIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TurmoilIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
