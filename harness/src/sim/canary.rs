//! The determinism canary: with `GRPC_CHAOS_CANARY=1`, every run a test
//! makes is made twice and compared.
//!
//! A run cannot simply be made twice in this process: a client body is a
//! `FnOnce`, a frame rule is the user's own value with its own counters,
//! and a test's state often lives outside the closures (an `Arc` counter
//! it asserts on afterwards), so a second run of one `Sim` would start
//! from what the first left. So the first [`Sim::run`](super::Sim::run)
//! of a test starts the same test binary again in a child process, with
//! only this test (`<name> --exact`), and waits for it: the child runs the
//! test from its start and writes each of its runs down (how it
//! ended, its full render and its event log). Every run of the
//! test in this process is then compared, byte for byte, with the child's
//! run of the same number. A difference fails the run with
//! [`Error::is_nondeterministic`](crate::Error::is_nondeterministic),
//! naming the first differing line, the instant it is at, and which side
//! said what. What differs only between processes (tokio's `select!` RNG
//! without `--cfg tokio_unstable`, `HashMap` order, addresses) is caught,
//! and so is what leaks between the tests one process runs side by side.
//!
//! Runs made off a test's thread (a thread the test spawned, a doc test's
//! or a binary's `main`) are not checked: there is no test to run again.
//! The child writes its failure artifacts under its own folder, not the
//! test's, so the two never mix.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Differs, Error, Kind};
use crate::trace::{RenderOptions, Trace};

/// Environment variable that turns the canary on when set to `1`.
pub const CANARY_ENV: &str = "GRPC_CHAOS_CANARY";

/// Set in the child: the folder it writes its runs to.
const CHILD_ENV: &str = "GRPC_CHAOS_CANARY_CHILD";

/// Set in the child: the test it runs. Only that test's thread writes its
/// runs down (a thread the test names, or a process it starts that
/// inherits the environment, does not).
const CHILD_TEST_ENV: &str = "GRPC_CHAOS_CANARY_TEST";

/// What the canary does with this thread's runs.
enum Role {
    /// Not a test's thread, or the canary is off.
    Off,
    /// The child: write run `k` to `dir`.
    Child { dir: PathBuf },
    /// The test in the parent: compare run `k` with the child's, in `dir`
    /// (removed when the test's thread ends).
    Parent { dir: TempDir, child: ChildEnd },
}

/// How the child process ended, for a run it never made.
struct ChildEnd {
    status: String,
    /// The end of its output: the test's own failure, if it failed.
    output: String,
    /// The thread's name is no test of this binary.
    ran_no_test: bool,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

std::thread_local! {
    /// This thread's role and the number of runs it made so far.
    static CANARY: RefCell<Option<(Role, usize)>> = const { RefCell::new(None) };
}

/// Whether `GRPC_CHAOS_CANARY=1`.
fn turned_on() -> bool {
    std::env::var(CANARY_ENV).is_ok_and(|v| v.trim() == "1")
}

/// The test this thread runs: libtest names a test's thread after it.
fn test_name() -> Option<String> {
    let thread = std::thread::current();
    let name = thread.name()?;
    (name != "main").then(|| name.to_owned())
}

/// Runs `run` (one run of a sim) under the canary, when it is on for
/// this thread.
pub(crate) fn checked(run: impl FnOnce() -> Result<Trace, Error>) -> Result<Trace, Error> {
    let k = CANARY.with(|c| {
        let mut c = c.borrow_mut();
        let (_, runs) = c.get_or_insert_with(|| (role(), 0));
        *runs += 1;
        *runs
    });
    let result = run();
    CANARY.with(|c| match &c.borrow().as_ref().map(|(role, _)| role) {
        Some(Role::Child { dir }) => {
            write_down(dir, k, &result);
            result
        }
        Some(Role::Parent { dir, child }) => compare(&dir.0, child, k, result),
        _ => result,
    })
}

/// This thread's role, decided at its first run.
fn role() -> Role {
    let Some(test) = test_name() else {
        return Role::Off;
    };
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        return match std::env::var(CHILD_TEST_ENV) {
            Ok(name) if name == test => Role::Child { dir: dir.into() },
            _ => Role::Off,
        };
    }
    if !turned_on() {
        return Role::Off;
    }
    let dir = TempDir(std::env::temp_dir().join(format!(
        "grpc-chaos-canary-{}-{}",
        std::process::id(),
        test.replace("::", "__")
    )));
    match run_child(&test, &dir.0) {
        // A thread the test named itself: no test of that name to run.
        Some(child) if child.ran_no_test => Role::Off,
        Some(child) => Role::Parent { dir, child },
        None => Role::Off,
    }
}

/// Runs `test` again in a child process that writes its runs to `dir`;
/// `None` when it could not be started (the runs are then not checked,
/// and stderr says why, once per test).
fn run_child(test: &str, dir: &Path) -> Option<ChildEnd> {
    let _ = std::fs::remove_dir_all(dir);
    let out = std::fs::create_dir_all(dir)
        .and_then(|()| std::env::current_exe())
        .and_then(|exe| {
            Command::new(exe)
                .args([test, "--exact", "--include-ignored", "--test-threads=1"])
                .env(CHILD_ENV, dir)
                .env(CHILD_TEST_ENV, test)
                // Its failure artifacts stay in its own folder
                // (trace/artifacts.rs).
                .env("CARGO_TARGET_DIR", dir.join("target"))
                .stdin(Stdio::null())
                .output()
        });
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            // Past libtest's capture: a check that did not happen must be
            // seen even when the test passes.
            let line =
                format!("grpc-chaos: the determinism canary could not run `{test}` again: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let text = stdout.clone() + String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().collect();
    Some(ChildEnd {
        status: out.status.to_string(),
        output: lines[lines.len().saturating_sub(20)..].join("\n"),
        // libtest's words when the name matched no test.
        ran_no_test: stdout.lines().any(|l| l == "running 0 tests"),
    })
}

/// What is compared of a run: how it ended, its full render, its event
/// log.
pub(crate) struct Record {
    pub(crate) ending: String,
    pub(crate) render: String,
    pub(crate) json: String,
}

impl Record {
    /// The record of `run`, or `None` when it was refused before running
    /// (no trace: nothing to compare).
    pub(crate) fn of(run: &Result<Trace, Error>) -> Option<Self> {
        let (trace, ending) = match run {
            Ok(trace) => (trace, "the run passed".to_owned()),
            Err(e) => (e.trace()?, format!("the run failed: {}", e.what())),
        };
        Some(Self {
            ending,
            render: trace.render_with(&RenderOptions::everything()),
            json: trace.to_json(),
        })
    }

    /// The first difference from `other`: where (the render, the JSON, or
    /// how the runs ended), the line (1-based; 0 for the ending) and both
    /// versions of it.
    pub(crate) fn difference(&self, other: &Self) -> Option<Difference> {
        let found = |at: Differs, (line, left, right)| Difference {
            at,
            line,
            left,
            right,
        };
        first_difference(&self.render, &other.render)
            .map(|d| found(Differs::Render, d))
            .or_else(|| first_difference(&self.json, &other.json).map(|d| found(Differs::Json, d)))
            // A client's error is not in the trace: compare the endings too.
            .or_else(|| {
                let (x, y) = (&self.ending, &other.ending);
                (x != y).then(|| found(Differs::Ending, (0, x.clone(), y.clone())))
            })
    }
}

/// The first difference between two runs.
#[derive(Debug)]
pub(crate) struct Difference {
    pub(crate) at: Differs,
    pub(crate) line: usize,
    pub(crate) left: String,
    pub(crate) right: String,
}

impl Difference {
    /// The error for it; `run_error` is what the run itself failed with,
    /// if it failed (kept in the message).
    pub(crate) fn into_error(self, sides: [&'static str; 2], run_error: Option<String>) -> Error {
        Error::new(Kind::Nondeterministic {
            at: self.at,
            line: self.line,
            left: self.left,
            right: self.right,
            sides,
            run_error,
        })
    }
}

/// The first line (1-based) where `a` and `b` differ, with both versions.
pub(crate) fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                let show = |l: Option<&str>| l.unwrap_or("(end of trace)").to_owned();
                return Some((n, show(x), show(y)));
            }
        }
    }
    None
}

/// The child writes run `k` down; a run with no trace writes nothing
/// (the parent's refuses the same way).
fn write_down(dir: &Path, k: usize, run: &Result<Trace, Error>) {
    let Some(record) = Record::of(run) else {
        return;
    };
    let _ = std::fs::write(dir.join(format!("{k}.end")), record.ending);
    let _ = std::fs::write(dir.join(format!("{k}.json")), record.json);
    // Last: the parent counts the runs by this file.
    let _ = std::fs::write(dir.join(format!("{k}.txt")), record.render);
}

/// Run `k` of this process against the child's.
fn compare(
    dir: &Path,
    child: &ChildEnd,
    k: usize,
    run: Result<Trace, Error>,
) -> Result<Trace, Error> {
    let Some(mine) = Record::of(&run) else {
        return run;
    };
    let diff = match read_down(dir, k) {
        Some(theirs) => mine.difference(&theirs),
        None => Some(Difference {
            at: Differs::Ending,
            line: 0,
            left: mine.ending.clone(),
            right: format!(
                "(no run {k}: the child wrote down {} run(s) with a trace and ended with {}; its output ends:\n{})",
                runs_written(dir),
                child.status,
                child.output
            ),
        }),
    };
    let Some(diff) = diff else {
        return run;
    };
    let (trace, run_error) = match run {
        Ok(trace) => (Some(trace), None),
        Err(e) => (e.trace().cloned(), Some(e.what())),
    };
    let e = diff.into_error(["this process", "the canary's child process"], run_error);
    match trace {
        Some(trace) => Err(super::run_failed(e, trace)),
        None => Err(e),
    }
}

/// The child's run `k`, as it wrote it down.
fn read_down(dir: &Path, k: usize) -> Option<Record> {
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{k}.{ext}"))).ok();
    Some(Record {
        render: read("txt")?,
        json: read("json")?,
        ending: read("end")?,
    })
}

/// How many runs the child wrote down.
fn runs_written(dir: &Path) -> usize {
    (1..)
        .take_while(|k| dir.join(format!("{k}.txt")).exists())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(first_difference("a\nb\nc", "a\nb\nc"), None);
        assert_eq!(
            first_difference("a\nb\nc", "a\nX\nc"),
            Some((2, "b".into(), "X".into()))
        );
        assert_eq!(
            first_difference("a\nb", "a\nb\nc"),
            Some((3, "(end of trace)".into(), "c".into()))
        );
    }
}
