//! End-to-end tests live in tests/; this library holds what several of
//! them share.

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
