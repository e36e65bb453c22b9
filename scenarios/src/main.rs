//! `grpc-chaos`: runs the scenario catalog against the reference services
//! and prints a verdict per story.
//!
//! ```text
//! grpc-chaos list
//! grpc-chaos run --all [--seed N] [--out DIR]
//! grpc-chaos run deadline-chain slow-dependency
//! grpc-chaos sweep store-restart --seeds 1..200 --jitter-ms 2
//! grpc-chaos explore --list
//! grpc-chaos explore cancel-unsafe-reserve [--seed N] [--out DIR]
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use grpc_chaos::trace::RunVerdict;
use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog::{self, Scenario, Verdict};
use grpc_chaos_scenarios::zoo::{self, Bug, Hunt};

#[derive(Parser)]
#[command(
    name = "grpc-chaos",
    version,
    about = "Deterministic gRPC failure stories on a simulated network"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the stories in the catalog.
    List,
    /// Run stories (and bugs of the zoo) and print a verdict for each.
    Run(RunArgs),
    /// Run one story over many seeds, with latency jitter so that seeds
    /// differ, and list the seeds whose verdict failed.
    Sweep(SweepArgs),
    /// Hunt a bug of the zoo: explore the service with the bug planted
    /// under random fault schedules, shrink what breaks to a minimal
    /// schedule, then run the same exploration on the fixed service.
    Explore(ExploreArgs),
}

#[derive(Args)]
struct ExploreArgs {
    /// The bug (see `grpc-chaos explore --list`).
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    name: Option<String>,
    /// List the bugs of the zoo.
    #[arg(long)]
    list: bool,
    /// Seed of the exploration: of every run and of the schedules
    /// (default: CHAOS_SEED, else 0).
    #[arg(long, env = "CHAOS_SEED")]
    seed: Option<u64>,
    /// Where to write the minimal failing run's trace (`<name>.txt`,
    /// `.json`, `.html`, as `run --out`) [default: as `run`]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct SweepArgs {
    /// The story (see `grpc-chaos list`).
    name: String,
    /// Seeds to run, `FIRST..END` (END excluded).
    #[arg(long, default_value = "0..100", value_parser = parse_range)]
    seeds: std::ops::Range<u64>,
    /// Latency jitter per message, in milliseconds of simulated time.
    #[arg(long, default_value_t = 2)]
    jitter_ms: u64,
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range like 1..500 or 1..=499"))?;
    let parse = |x: &str| x.trim().parse::<u64>().map_err(|e| format!("`{x}`: {e}"));
    // `a..=b` as in Rust: b included.
    let (a, b) = match b.strip_prefix('=') {
        Some(last) => (parse(a)?, parse(last)?.saturating_add(1)),
        None => (parse(a)?, parse(b)?),
    };
    if a >= b {
        return Err(format!("`{s}` is empty"));
    }
    Ok(a..b)
}

#[derive(Args)]
struct RunArgs {
    /// Stories to run, by name (see `grpc-chaos list`), or bugs of the zoo
    /// (see `grpc-chaos explore --list`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    names: Vec<String>,
    /// Run every story, then hunt every bug of the zoo.
    #[arg(long)]
    all: bool,
    /// Seed of every run (default: CHAOS_SEED, else 0).
    #[arg(long, env = "CHAOS_SEED")]
    seed: Option<u64>,
    /// Where to write each story's trace (`<name>.txt`: the summary and the
    /// default render, DATA folded; `<name>.json`: every frame;
    /// `<name>.html`: the page) [default: $CARGO_TARGET_DIR/grpc-chaos/catalog when
    /// CARGO_TARGET_DIR is set, else ./target/grpc-chaos/catalog, next to
    /// the traces failed tests leave]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// `--out` when not given: the rule its help states, read when the CLI runs
/// (a literal default in the help would name one machine's folder).
fn default_out() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from("target"), PathBuf::from)
        .join("grpc-chaos")
        .join("catalog")
}

fn main() -> ExitCode {
    // The CLI writes every trace under --out; the test-failure copies under
    // target/grpc-chaos/<test>/ would only duplicate them.
    std::env::set_var(grpc_chaos::trace::ARTIFACTS_ENV, "0");
    match Cli::parse().command {
        Command::List => {
            for s in catalog::all() {
                println!(
                    "{}\n    {}\n    from: {}\n    checks: {}",
                    s.name, s.story, s.source, s.checks
                );
            }
            println!("\nthe bug zoo (grpc-chaos explore --list): {}", zoo_names());
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(&args),
        Command::Sweep(args) => sweep(&args),
        Command::Explore(args) => explore(&args),
    }
}

/// The zoo's names, for an error about a name that is not one.
fn zoo_names() -> String {
    let names: Vec<_> = zoo::all().iter().map(|b| b.name).collect();
    names.join(", ")
}

fn explore(args: &ExploreArgs) -> ExitCode {
    if args.list {
        for b in zoo::all() {
            println!(
                "{}\n    {}\n    from: {}\n    invariant: {}",
                b.name, b.story, b.source, b.invariant.0
            );
        }
        return ExitCode::SUCCESS;
    }
    let name = args.name.as_deref().unwrap_or_default();
    let Some(bug) = zoo::find(name) else {
        eprintln!("unknown bug `{name}`; the zoo has: {}", zoo_names());
        return ExitCode::from(2);
    };
    let seed = args.seed.unwrap_or(grpc_chaos::defaults::SEED);
    let out = args.out.clone().unwrap_or_else(default_out);
    println!("{}: {}\n    from: {}", bug.name, bug.story, bug.source);
    let hunt = match bug.hunt(seed) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{}: the exploration could not run: {e}", bug.name);
            return ExitCode::FAILURE;
        }
    };
    println!("\nthe service with the bug:\n{}", hunt.buggy.summary());
    let written = write_hunt_trace(&hunt, &out, 2);
    println!("\nthe fixed service:\n{}", hunt.fixed.summary());
    println!(
        "\n{}: {} (seed {seed}; reproduce with {})",
        bug.name,
        hunt.line(),
        replay(
            &grpc_chaos::check::replay_env(seed),
            &format!("explore {}", bug.name)
        )
    );
    if hunt.passed() && written {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Writes the trace of a hunt's minimal failing run, if any, under `out`
/// as `<bug>.txt|json|html`, the lines that say where `indent` spaces in.
/// False when it could not be written.
fn write_hunt_trace(hunt: &Hunt, out: &Path, indent: usize) -> bool {
    match (&hunt.minimal, hunt.verdict()) {
        (Some(trace), Some(verdict)) => write_trace(
            trace,
            out,
            hunt.bug.name,
            &RunVerdict::fail(verdict),
            indent,
        ),
        _ => true,
    }
}

/// Writes `trace` under `out` as `<name>.txt|json|html` headed by
/// `verdict` and prints where, `indent` spaces in; false (and why on
/// stderr) when it could not.
fn write_trace(trace: &Trace, out: &Path, name: &str, verdict: &RunVerdict, indent: usize) -> bool {
    match trace.write_with_verdict(out, name, verdict) {
        Ok(files) => {
            println!("{:<indent$}trace: {}", "", files.txt.display());
            println!("{:<indent$}page:  {}", "", files.html.display());
            true
        }
        Err(e) => {
            // A lost trace must not pass quietly in CI.
            eprintln!(
                "could not write the trace of {name} under {}: {e}; pass --out DIR with a writable folder",
                out.display()
            );
            false
        }
    }
}

fn sweep(args: &SweepArgs) -> ExitCode {
    let Some(story) = catalog::find(&args.name) else {
        let names: Vec<_> = catalog::all().iter().map(|s| s.name).collect();
        eprintln!(
            "unknown story `{}`; the catalog has: {}",
            args.name,
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    // Read by SimBuilder's default: every run of the story gets the jitter.
    std::env::set_var(
        grpc_chaos::env::JITTER_ENV,
        (args.jitter_ms * 1000).to_string(),
    );
    let bar = indicatif::ProgressBar::new(args.seeds.end - args.seeds.start);
    let report = grpc_chaos::check::sweep(args.seeds.clone(), |seed| {
        bar.inc(1);
        match story.run(seed).0.verdict {
            Verdict::Pass => Ok(()),
            Verdict::Fail(why) => Err(grpc_chaos::Error::from(
                grpc_chaos::trace::Violation::custom(story.name, why),
            )),
        }
    });
    bar.finish_and_clear();
    // The summary's first line counts (or says what CHAOS_SEED did); each
    // failing seed then gets one line that ends with the whole command
    // that replays it, jitter included (`run` reads both variables).
    let counts = report.summary();
    println!(
        "{}: {}",
        story.name,
        counts.lines().next().unwrap_or_default()
    );
    for (seed, why) in &report.failures {
        println!(
            "  seed {seed}: {why}\n    replay: {}",
            replay(&report.replay_env(*seed), &format!("run {}", story.name))
        );
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let (stories, bugs) = match select(args) {
        Ok(s) => s,
        Err(unknown) => {
            let names: Vec<_> = catalog::all().iter().map(|s| s.name).collect();
            eprintln!(
                "unknown story or zoo bug `{unknown}`; the catalog has: {}; the zoo has: {}",
                names.join(", "),
                zoo_names()
            );
            return ExitCode::from(2);
        }
    };
    let seed = args.seed.unwrap_or(grpc_chaos::defaults::SEED);
    let out = args.out.clone().unwrap_or_else(default_out);
    println!("{:<24} {:<7} what happened", "story", "verdict");
    let (mut failed, mut lost) = (0, 0);
    let mut failed_names = Vec::new();
    let ran: Vec<&str> = if args.all {
        vec!["--all"]
    } else {
        args.names.iter().map(String::as_str).collect()
    };
    for story in &stories {
        let (report, trace) = story.run(seed);
        let verdict = match &report.verdict {
            Verdict::Pass => "PASS".to_owned(),
            Verdict::Fail(_) => {
                failed += 1;
                failed_names.push(story.name);
                "FAIL".to_owned()
            }
        };
        println!("{:<24} {:<7} {}", story.name, verdict, report.happened);
        println!("{:<32} checks: {}", "", story.checks);
        // A run that did not complete already says why under "what
        // happened"; once is enough.
        match &report.verdict {
            Verdict::Fail(why) if *why != report.happened => {
                println!("{:<32} failed: {why}", "");
            }
            _ => {}
        }
        for f in &report.findings {
            println!("{:<32} finding: {f}", "");
        }
        if let Some(trace) = trace {
            // The story's verdict heads the summary of the .txt and the page.
            let verdict = match &report.verdict {
                Verdict::Pass => RunVerdict::pass(&report.happened),
                Verdict::Fail(why) => RunVerdict::fail(why),
            };
            if !write_trace(&trace, &out, story.name, &verdict, 33) {
                lost += 1;
            }
        }
    }
    // Each bug of the zoo: found by the explorer and shrunk, the fixed
    // service passing the same exploration.
    for bug in &bugs {
        let hunt = match bug.hunt(seed) {
            Ok(h) => h,
            Err(e) => {
                failed += 1;
                failed_names.push(bug.name);
                println!(
                    "{:<24} {:<7} the exploration could not run: {e}",
                    bug.name, "FAIL"
                );
                continue;
            }
        };
        let verdict = if hunt.passed() {
            "PASS"
        } else {
            failed += 1;
            failed_names.push(bug.name);
            "FAIL"
        };
        println!("{:<24} {:<7} {}", bug.name, verdict, hunt.line());
        println!(
            "{:<32} checks: the explorer finds `{}` broken, the fixed service keeps it",
            "", bug.invariant.0
        );
        if !write_hunt_trace(&hunt, &out, 33) {
            lost += 1;
        }
    }
    // Replays what failed, else what ran.
    let again = if failed > 0 { &failed_names } else { &ran };
    let what = match (stories.len(), bugs.len()) {
        (n, 0) => count(n, "story", "stories"),
        (0, b) => count(b, "zoo bug", "zoo bugs"),
        (n, b) => format!(
            "{} and {}",
            count(n, "story", "stories"),
            count(b, "zoo bug", "zoo bugs")
        ),
    };
    println!(
        "\n{what}, {} passed, {failed} failed (seed {seed}; reproduce with {})",
        stories.len() + bugs.len() - failed,
        replay(
            &grpc_chaos::check::replay_env(seed),
            &format!("run {}", again.join(" "))
        )
    );
    if failed == 0 && lost == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The stories and zoo bugs named on the command line (in their order:
/// stories first), or all of them.
fn select(args: &RunArgs) -> Result<(Vec<Scenario>, Vec<Bug>), String> {
    if args.all {
        return Ok((catalog::all(), zoo::all()));
    }
    let (mut stories, mut bugs) = (Vec::new(), Vec::new());
    for n in &args.names {
        match (catalog::find(n), zoo::find(n)) {
            (Some(s), _) => stories.push(s),
            (None, Some(b)) => bugs.push(b),
            (None, None) => return Err(n.clone()),
        }
    }
    Ok((stories, bugs))
}

/// The whole command that replays `args` with the environment `env`, in
/// the form this process was started with: through `cargo run` (Cargo sets
/// `CARGO` for what it runs) from a clone, else the binary on PATH.
fn replay(env: &str, args: &str) -> String {
    if std::env::var_os("CARGO").is_none() {
        return format!("{env} grpc-chaos {args}");
    }
    // `cargo run` builds in the profile the binary lives in.
    let release = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.ends_with("release")))
        .unwrap_or(false);
    let profile = if release { " --release" } else { "" };
    format!("{env} cargo run{profile} --bin grpc-chaos -- {args}")
}
