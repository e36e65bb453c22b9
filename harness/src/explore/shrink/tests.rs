//! The shrinking steps on synthetic predicates: no sim, every run counted.

use std::time::Duration;

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn crash(at: u64, until: u64) -> Placed {
    placed(Target::Crash { host: "b".into() }, at, Some(until), 0)
}

fn cut(at: u64, until: u64) -> Placed {
    let link = Target::Partition {
        a: "a".into(),
        b: "b".into(),
    };
    placed(link, at, Some(until), 0)
}

fn slow(at: u64, until: u64, delay: u64) -> Placed {
    let target = Target::HandlerDelay {
        host: "b".into(),
        delay: ms(delay),
    };
    placed(target, at, Some(until), 0)
}

fn cancel(at: u64, stream: u32) -> Placed {
    let target = Target::Cancel {
        caller: "a".into(),
        server: "b".into(),
    };
    placed(target, at, None, stream)
}

fn placed(target: Target, at: u64, until: Option<u64>, stream: u32) -> Placed {
    Placed {
        target,
        at: ms(at),
        until: until.map(ms),
        stream,
    }
}

/// One line per schedule run: each fault's kind, start and heal.
fn brief(ran: &[Schedule]) -> String {
    let fault = |p: &Placed| format!("{} {:?}..{:?}", p.target.kind(), p.at, p.until);
    let line = |s: &Schedule| s.faults.iter().map(fault).collect::<Vec<_>>().join(", ");
    ran.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// The baseline's instants: every 10 ms of a 1 s run, to 290 ms.
fn instants() -> Vec<Duration> {
    (0..30).map(|i| ms(i * 10)).collect()
}

/// Streams open in the baseline: stream 1 from 30 ms to 100 ms, stream
/// 3 after.
fn streams_at(_: &str, _: &str, at: Duration) -> Vec<u32> {
    match at {
        at if at < ms(30) => vec![],
        at if at < ms(100) => vec![1],
        _ => vec![3],
    }
}

fn moves<'a>(all: bool, instants: &'a [Duration], targets: &'a [Target]) -> Moves<'a> {
    Moves {
        all,
        instants,
        end: ms(1_000),
        targets,
        streams_at: &streams_at,
    }
}

fn lasts(p: &Placed) -> Option<Duration> {
    p.until.map(|u| u - p.at)
}

/// The planted bug: a crash of `b` that lands in [40 ms, 90 ms) and lasts
/// 30 ms or more.
fn crash_core(s: &Schedule) -> Option<()> {
    let hit = s.faults.iter().any(|p| {
        matches!(p.target, Target::Crash { .. })
            && (ms(40)..ms(90)).contains(&p.at)
            && lasts(p).is_none_or(|l| l >= ms(30))
    });
    hit.then_some(())
}

fn five_faults() -> Schedule {
    Schedule::new(
        3,
        12,
        vec![
            cut(5, 105),
            slow(120, 200, 400),
            crash(73, 273),
            cancel(150, 3),
            cut(200, 260),
        ],
    )
}

#[test]
fn five_faults_shrink_to_the_one_that_breaks_it_earliest_and_shortest() {
    let (instants, targets) = (instants(), [cut(0, 1).target, crash(0, 1).target]);
    let mut ran = Vec::new();
    let shrunk = shrink(
        five_faults(),
        (),
        &moves(true, &instants, &targets),
        100,
        |s| {
            ran.push(s.clone());
            crash_core(s)
        },
    );
    assert_eq!(shrunk.schedule.faults, [crash(40, 70)]);
    assert_eq!((shrunk.schedule.seed, shrunk.schedule.number), (3, 12));
    assert!(!shrunk.exhausted);
    // Drops: 4 kept and 1 refused (the crash); the swap to a partition
    // refused; the snap to 70 ms and 3 bisection steps to 40 ms; 8 steps
    // of 1..=200 ms to 30 ms; a second round: the swap and 2 earlier
    // instants at the new length, refused, the rest already tried.
    assert_eq!(shrunk.runs, 21, "{}", brief(&ran));
    assert_eq!(ran.len(), shrunk.runs);
    // Never the same schedule twice, never an empty one.
    for (i, s) in ran.iter().enumerate() {
        assert!(!s.faults.is_empty());
        assert!(ran[..i].iter().all(|r| r.faults != s.faults), "{s:?}");
    }
    // Deterministic: the same steps again.
    let again = shrink(
        five_faults(),
        (),
        &moves(true, &instants, &targets),
        100,
        crash_core,
    );
    assert_eq!((again.schedule, again.runs), (shrunk.schedule, 21));
}

#[test]
fn the_budget_bounds_the_runs_and_what_is_kept_still_fails() {
    let (instants, targets) = (instants(), [crash(0, 1).target]);
    let shrunk = shrink(
        five_faults(),
        (),
        &moves(true, &instants, &targets),
        4,
        crash_core,
    );
    assert_eq!(shrunk.runs, 4);
    assert!(shrunk.exhausted);
    assert!(crash_core(&shrunk.schedule).is_some());
    assert_eq!(shrunk.schedule.faults.len(), 2, "{:?}", shrunk.schedule);
}

#[test]
fn a_fault_becomes_the_simplest_kind_the_space_has_that_still_breaks_it() {
    let instants = instants();
    let targets = [
        crash(0, 1).target,
        cut(0, 1).target,
        slow(0, 1, 400).target,
        cancel(0, 1).target,
    ];
    // Anything landing on `b` in [40 ms, 90 ms) breaks it.
    let lands = |s: &Schedule| {
        let hit = s.faults.iter().any(|p| (ms(40)..ms(90)).contains(&p.at));
        hit.then_some(())
    };
    let start = Schedule::new(0, 0, vec![crash(73, 273)]);
    let shrunk = shrink(start, (), &moves(true, &instants, &targets), 100, lands);
    // A cancel of the stream open then, at the earliest instant.
    assert_eq!(shrunk.schedule.faults, [cancel(40, 1)]);
    assert_eq!(rank(&targets[3]), 0);
    assert!(rank(&targets[2]) < rank(&targets[1]) && rank(&targets[1]) < rank(&targets[0]));
}

#[test]
fn a_swept_fault_keeps_its_instant_and_loses_its_excess_outage_and_delay() {
    let instants = instants();
    let targets = [slow(0, 1, 400).target];
    // Delays of 100 ms or more, for 20 ms or more, break it.
    let slow_enough = |s: &Schedule| {
        let p = &s.faults[0];
        let Target::HandlerDelay { delay, .. } = p.target else {
            return None;
        };
        (delay >= ms(100) && lasts(p)? >= ms(20)).then_some(delay)
    };
    let start = Schedule::new(0, 5, vec![slow(73, 273, 400)]);
    let shrunk = shrink(
        start,
        ms(400),
        &moves(false, &instants, &targets),
        100,
        slow_enough,
    );
    assert_eq!(shrunk.schedule.faults, [slow(73, 93, 100)]);
    assert_eq!(shrunk.found, ms(100), "what the last failing run said");
    // Bisecting 1..=200 ms, then 1..=400 ms (8 runs each); a second
    // round tries nothing new.
    assert_eq!(shrunk.runs, 16);
}

#[test]
fn a_move_that_would_crash_a_crashed_host_is_never_run() {
    let (instants, targets) = (instants(), [crash(0, 1).target]);
    // Two crashes of `b` are needed: neither can be dropped.
    let both = |s: &Schedule| (s.faults.len() == 2).then_some(());
    let start = Schedule::new(0, 0, vec![crash(10, 30), crash(73, 273)]);
    let mut ran = Vec::new();
    let shrunk = shrink(start, (), &moves(true, &instants, &targets), 100, |s| {
        ran.push(s.clone());
        both(s)
    });
    let end = ms(1_000);
    for s in ran.iter().filter(|s| s.faults.len() == 2) {
        let (a, b) = (&s.faults[0], &s.faults[1]);
        assert!(!super::super::clashes(a, b, end), "ran {s:?}");
    }
    // Both 1 ms long; the second as early as the first's restart lets it
    // (a crash at 1 ms would touch it, and the instants are 10 ms apart).
    assert_eq!(
        shrunk.schedule.faults,
        [crash(0, 1), crash(10, 11)],
        "{}",
        brief(&ran)
    );
}

#[test]
fn a_heal_past_the_end_is_left_out_for_hosts_and_links_only() {
    let end = ms(1_000);
    let c = crash(0, 1).target;
    assert_eq!(heal_within(&c, ms(999), end), Some(ms(999)));
    assert_eq!(heal_within(&c, end, end), None);
    assert_eq!(
        heal_within(&slow(0, 1, 1).target, ms(1_500), end),
        Some(ms(1_500))
    );
    assert_eq!(heal_within(&cancel(0, 1).target, ms(5), end), None);
}

#[test]
fn a_cancel_moves_only_within_its_calls_life() {
    let (instants, targets) = (instants(), [cancel(0, 1).target]);
    let any = |_: &Schedule| Some(());
    let mut ran = Vec::new();
    let start = Schedule::new(0, 0, vec![cancel(150, 3)]);
    let shrunk = shrink(start, (), &moves(true, &instants, &targets), 100, |s| {
        ran.push(s.clone());
        any(s)
    });
    // Stream 3 opens at 100 ms: earlier, the cancel would land on no call.
    assert_eq!(shrunk.schedule.faults, [cancel(100, 3)], "{}", brief(&ran));
    assert!(
        ran.iter().all(|s| s.faults[0].at >= ms(100)),
        "{}",
        brief(&ran)
    );
}

#[test]
fn a_shutdown_never_heals_is_never_shortened_and_ranks_below_a_crash() {
    let instants = instants();
    let down = Target::Shutdown { host: "b".into() };
    let targets = [crash(0, 1).target, down.clone(), cut(0, 1).target];
    assert_eq!(heal_within(&down, ms(5), ms(1_000)), None);
    assert!(rank(&targets[2]) < rank(&down) && rank(&down) < rank(&targets[0]));
    // Anything but a partition on `b` in [40 ms, 90 ms) breaks it: the
    // crash becomes a shutdown, moved to the earliest instant, and no
    // run tries to shorten it.
    let lands = |s: &Schedule| {
        let hit = s.faults.iter().any(|p| {
            !matches!(p.target, Target::Partition { .. }) && (ms(40)..ms(90)).contains(&p.at)
        });
        hit.then_some(())
    };
    let mut ran = Vec::new();
    let start = Schedule::new(0, 0, vec![crash(73, 273)]);
    let shrunk = shrink(start, (), &moves(true, &instants, &targets), 100, |s| {
        ran.push(s.clone());
        lands(s)
    });
    assert_eq!(
        shrunk.schedule.faults,
        [placed(down, 40, None, 0)],
        "{}",
        brief(&ran)
    );
    assert!(
        ran.iter()
            .flat_map(|s| &s.faults)
            .all(|p| !matches!(p.target, Target::Shutdown { .. }) || p.until.is_none()),
        "{}",
        brief(&ran)
    );
}
