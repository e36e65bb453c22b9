//! End-to-end tests live in tests/, one test binary per area
//! (`tests/<area>/main.rs`, a module per file); this library holds what
//! several of them share. A library rather than a `mod support;` in every
//! binary: it is built once, the three binaries of their own use it too,
//! and a helper one binary leaves unused is no dead-code warning there.

use std::process::Command;
use std::time::Duration;

use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog::{self, Report};

/// The seed the catalog's tests run stories with (the CLI's default).
pub const SEED: u64 = 0;

/// Runs the catalog story `name` at [`SEED`] and judges it.
///
/// # Panics
/// When `name` is not in the catalog, its run fails, or its verdict is not
/// a pass (the message names the story and says why).
pub fn story(name: &str) -> (Trace, Report) {
    let scenario = catalog::find(name).unwrap_or_else(|| panic!("{name}: not in the catalog"));
    let trace = (scenario.simulate)(SEED).unwrap_or_else(|e| panic!("{name}: {e}"));
    let report = (scenario.judge)(&trace);
    assert!(report.passed(), "{name}: {:?}", report.verdict);
    (trace, report)
}

/// The example part of a test file that the README or a guide page
/// (`harness/src/guide/`) shows: what follows its first blank line (the
/// module docs), up to its `#[test] fn the_readme_shows_this_file` or
/// `#[test] fn the_guide_shows_this_file`.
///
/// # Panics
/// When `file` has no blank line.
pub fn readme_example(file: &str) -> &str {
    let (_, rest) = file
        .split_once("\n\n")
        .expect("a blank line after the module docs");
    let end = ["readme", "guide"]
        .iter()
        .filter_map(|page| rest.find(&format!("\n#[test]\nfn the_{page}_shows_this_file")))
        .min()
        .unwrap_or(rest.len());
    rest[..end].trim_end()
}

/// `n` milliseconds (simulated, where a sim reads it).
pub const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `n` seconds (simulated, where a sim reads it).
pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The status code of each call `player` made, in order: `"open"` for a
/// call that never ended.
pub fn codes(trace: &Trace) -> Vec<&'static str> {
    trace
        .calls_from("player")
        .map(|c| c.outcome().map_or("open", |o| o.code))
        .collect()
}

/// The name libtest gives test `name` of the module at `module_path`
/// (pass `module_path!()`): the module path without the test binary's own
/// name (`artifacts::stale_probe` for `stale_probe` in
/// `tests/trace/artifacts.rs`, whose module path is `trace::artifacts`),
/// as `--exact` and the artifact folders (`::` as `__`) take it.
pub fn test_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_binary, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

/// This test binary again, set to run only its ignored test `name` of the
/// module at `module_path` (pass `module_path!()`), as the tests that
/// change the environment do: the child gets it, this process keeps its
/// own.
///
/// # Panics
/// When the path of the running binary cannot be read.
pub fn rerun(module_path: &str, name: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args(["--ignored", "--exact", &test_name(module_path, name)]);
    cmd
}

/// The rows of a replica story a reviewer reads, from the RPC-only render:
/// the header, `replica`'s own rows (its faults and termination, not its
/// handler runs or logs), the balancer's rows about it, any DNS answer, and
/// every call that did not end OK.
pub fn replica_story_rows(trace: &Trace, replica: &str) -> String {
    let render = trace.render_with(&grpc_chaos::trace::RenderOptions::rpc_only());
    let mut lines = render.lines();
    let mut out = format!("{}\n", lines.next().unwrap_or_default());
    let own = format!("  {replica}  ");
    for line in lines {
        let fault = line.contains(&own) && !line.contains("handler") && !line.contains(" log ");
        let balancer = line.contains("balancer: ") && line.contains(replica);
        let dns = line.contains("dns: ");
        let failed = line.contains(" ended ") && !line.ends_with(" ended OK");
        if fault || balancer || dns || failed {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
