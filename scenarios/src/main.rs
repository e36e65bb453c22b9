//! `grpc-chaos`: runs the scenario catalog against the reference services
//! and prints a verdict per story.
//!
//! ```text
//! grpc-chaos list
//! grpc-chaos run --all [--seed N] [--out DIR]
//! grpc-chaos run deadline-chain slow-dependency
//! grpc-chaos sweep store-restart --seeds 1..200 --jitter-ms 2
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use grpc_chaos::trace::RunVerdict;
use grpc_chaos_scenarios::catalog::{self, Scenario, Verdict};

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
    /// Run stories and print a verdict for each.
    Run(RunArgs),
    /// Run one story over many seeds, with latency jitter so that seeds
    /// differ, and list the seeds whose verdict failed.
    Sweep(SweepArgs),
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
    /// Stories to run, by name (see `grpc-chaos list`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    names: Vec<String>,
    /// Run every story.
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
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(&args),
        Command::Sweep(args) => sweep(&args),
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
    let stories = match select(args) {
        Ok(s) => s,
        Err(unknown) => {
            let names: Vec<_> = catalog::all().iter().map(|s| s.name).collect();
            eprintln!(
                "unknown story `{unknown}`; the catalog has: {}",
                names.join(", ")
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
        stories.iter().map(|s| s.name).collect()
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
            match trace.write_with_verdict(&out, story.name, &verdict) {
                Ok(files) => {
                    println!("{:<32} trace: {}", "", files.txt.display());
                    println!("{:<32} page:  {}", "", files.html.display());
                }
                Err(e) => {
                    // A lost trace must not pass quietly in CI.
                    lost += 1;
                    eprintln!(
                        "could not write the trace of {} under {}: {e}; pass --out DIR with a writable folder",
                        story.name,
                        out.display()
                    );
                }
            }
        }
    }
    // Replays what failed, else what ran.
    let again = if failed > 0 { &failed_names } else { &ran };
    println!(
        "\n{} {}, {} passed, {failed} failed (seed {seed}; reproduce with {})",
        stories.len(),
        if stories.len() == 1 {
            "story"
        } else {
            "stories"
        },
        stories.len() - failed,
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

/// The stories named on the command line, or all of them.
fn select(args: &RunArgs) -> Result<Vec<Scenario>, String> {
    if args.all {
        return Ok(catalog::all());
    }
    args.names
        .iter()
        .map(|n| catalog::find(n).ok_or_else(|| n.clone()))
        .collect()
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
