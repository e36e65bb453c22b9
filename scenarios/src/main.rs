//! `grpc-chaos`: runs the scenario catalog against the reference services
//! and prints a verdict per story.
//!
//! ```text
//! grpc-chaos list
//! grpc-chaos run --all [--seed N] [--out DIR]
//! grpc-chaos run deadline-chain slow-dependency
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
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
    /// Where to write each story's trace (`<name>.txt`, `<name>.json`).
    #[arg(long, default_value = "target/grpc-chaos/catalog")]
    out: PathBuf,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List => {
            for s in catalog::all() {
                println!("{:<18} {:<26} {}", s.name, s.source, s.checks);
            }
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(&args),
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
    println!("{:<18} {:<7} what happened", "story", "verdict");
    let mut failed = 0;
    for story in &stories {
        let (report, trace) = story.run(seed);
        let verdict = match &report.verdict {
            Verdict::Pass => "PASS".to_owned(),
            Verdict::Fail(_) => {
                failed += 1;
                "FAIL".to_owned()
            }
        };
        println!("{:<18} {:<7} {}", story.name, verdict, report.happened);
        println!("{:<26} checks: {}", "", story.checks);
        if let Verdict::Fail(why) = &report.verdict {
            println!("{:<26} failed: {why}", "");
        }
        for f in &report.findings {
            println!("{:<26} finding: {f}", "");
        }
        if let Some(trace) = trace {
            match trace.write_to(&args.out, story.name) {
                Ok([txt, _]) => println!("{:<26} trace: {}", "", txt.display()),
                Err(e) => eprintln!("could not write the trace of {}: {e}", story.name),
            }
        }
    }
    println!(
        "\n{} stories, {} passed, {failed} failed (seed {seed}; reproduce with CHAOS_SEED={seed})",
        stories.len(),
        stories.len() - failed
    );
    if failed == 0 {
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
