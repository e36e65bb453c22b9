//! Failure artifacts: when a run fails, an assertion on its trace fails, or
//! a test panics after it ran a sim, the trace is written to disk so
//! nothing is lost: `<target>/grpc-chaos/<test name>/<seed>/trace.{txt,json,html}`
//! ([`Trace::write_with_verdict`], the failure as the verdict at the top of
//! the text and the page), and beside them `error.txt`, what failed.
//!
//! A panic is caught by a panic hook, installed (once, in front of the hook
//! already set) by the first [`Sim::run`](crate::Sim::run): it writes the
//! last trace the panicking thread's runs produced, with the panic's
//! message and location as `error.txt`, so a test that dropped its trace
//! before it panicked (`insta::assert_snapshot!(sim.run()?.render())`)
//! still leaves it. Every failure writes once: a trace already written
//! with its error (by the run or a failed assertion) is not written again
//! when the test then unwraps that error. A panic hook set after the first
//! run replaces ours; errors and assertions still write their traces.
//!
//! `<target>` is `CARGO_TARGET_DIR`, else the `target` folder next to the
//! nearest `Cargo.lock` above `CARGO_MANIFEST_DIR` (cargo sets both when it
//! runs tests), else `./target`. `<test name>` is the test thread's name
//! (libtest names it after the test). Set `GRPC_CHAOS_ARTIFACTS=0` to turn
//! this off.
//!
//! A run that passes removes what an earlier process's failure of the same
//! test and seed left in `<test name>/<seed>/` ([`clear_stale`]), so the
//! folder never shows a failure the test no longer has: only the four
//! files the harness writes there (`trace.{txt,json,html}`, `error.txt`),
//! then the folder and `<test name>/` if that leaves them empty; any other
//! file, and the folder holding it, stays. A failure of this process is
//! never removed (a test that expects a failed run and then runs the same
//! seed again keeps it), and the next failure writes its files again. A
//! failure of another seed stays until that seed runs again and passes.
//! With `GRPC_CHAOS_ARTIFACTS=0` nothing is written or removed.
//!
//! The explorer writes the minimal run of each failure it reports in a
//! folder of its own, `<test name>/explore-<seed>/<mode>-<schedule>-<invariant>/`
//! ([`write_in`]): every run of an exploration has the explorer's seed, so
//! the seed's folder would hold one of them only. An exploration clears
//! those an earlier process left in its `explore-<seed>/` ([`clear_stale_in`]).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, Once};

use super::Trace;

/// Environment variable that turns failure artifacts off when set to `0`.
pub const ARTIFACTS_ENV: &str = "GRPC_CHAOS_ARTIFACTS";

/// The files a failure artifact is made of: what [`clear_stale`] may
/// remove, and nothing else.
const FILES: [&str; 4] = ["trace.txt", "trace.json", "trace.html", "error.txt"];

/// The artifact folders this process wrote: [`clear_stale`] leaves them.
static WRITTEN: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// The artifact folders a message has named (an `Error` or a `Violation`
/// displayed): a panic after that does not name them again.
static SHOWN: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A message named the artifact folder `dir`.
pub(crate) fn shown(dir: &Path) {
    if let Ok(mut shown) = SHOWN.lock() {
        shown
            .get_or_insert_with(HashSet::new)
            .insert(dir.to_owned());
    }
}

/// Whether a message named `dir` (see [`shown`]).
fn was_shown(dir: &Path) -> bool {
    SHOWN
        .lock()
        .is_ok_and(|s| s.as_ref().is_some_and(|s| s.contains(dir)))
}

fn turned_off() -> bool {
    std::env::var(ARTIFACTS_ENV).is_ok_and(|v| v.trim() == "0")
}

/// `<target>/grpc-chaos/<test name>`, for this thread's test.
fn test_dir() -> PathBuf {
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .replace("::", "__");
    target_dir().join("grpc-chaos").join(test)
}

/// Writes `trace` as a failure artifact, with `error.txt` holding `why`
/// (what failed). Returns the folder, or `None` when turned off or the
/// write failed (which it says on stderr). It does not print the folder:
/// the failed run's `Error` and the failed assertion's `Violation` carry
/// it, and their message names it with the seed to reproduce, once; only
/// a panic, whose message cannot, has the hook print it ([`announce`]).
pub(crate) fn write_with(trace: &Trace, why: &str) -> Option<PathBuf> {
    if turned_off() {
        return None;
    }
    trace.written.store(true, Ordering::Relaxed);
    write_at(trace, test_dir().join(trace.seed().to_string()), why, why)
}

/// Writes `trace` as a failure artifact in `<test name>/<folder>/<name>/`
/// (one folder per failure, where runs of one seed would share the
/// seed's): the explorer's minimal run of each failure. `verdict` (one
/// line) heads the summary, `error` is `error.txt`. As [`write_with`]
/// otherwise.
pub(crate) fn write_in(
    trace: &Trace,
    [folder, name]: [&str; 2],
    verdict: &str,
    error: &str,
) -> Option<PathBuf> {
    if turned_off() {
        return None;
    }
    write_at(trace, test_dir().join(folder).join(name), verdict, error)
}

/// Removes, from each folder in `<test name>/<folder>/` that this process
/// did not write, what an earlier process's failure left ([`clear_stale`]):
/// an exploration's failures of an earlier run that this one may no
/// longer have.
pub(crate) fn clear_stale_in(folder: &str) {
    if turned_off() {
        return;
    }
    let parent = test_dir().join(folder);
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return;
    };
    let written = WRITTEN
        .lock()
        .ok()
        .and_then(|w| w.clone())
        .unwrap_or_default();
    for dir in entries.flatten().map(|e| e.path()) {
        if !written.contains(&dir) {
            clear_stale(&parent, &dir);
        }
    }
}

fn write_at(trace: &Trace, dir: PathBuf, verdict: &str, error: &str) -> Option<PathBuf> {
    if let Ok(mut written) = WRITTEN.lock() {
        written.get_or_insert_with(HashSet::new).insert(dir.clone());
    }
    let written = trace
        .write_with_verdict(&dir, "trace", &super::RunVerdict::fail(verdict))
        .and_then(|_| std::fs::write(dir.join("error.txt"), format!("{error}\n")));
    match written {
        Ok(()) => Some(dir),
        Err(e) => {
            eprintln!(
                "grpc-chaos: could not write the trace to {}: {e}",
                dir.display()
            );
            None
        }
    }
}

/// Says on stderr where a panic's trace was written (`dir`), and how to
/// reproduce the run: the panic's own message names neither.
fn announce(trace: &Trace, dir: &Path) {
    eprintln!(
        "grpc-chaos: trace written to {} (reproduce with {})",
        dir.display(),
        trace.replay_env()
    );
}

/// A run of `seed` passed in this thread's test: removes the failure
/// artifact an earlier process left for that test and seed (see the
/// module's docs), unless turned off or this process wrote it.
pub(crate) fn passed(seed: u64) {
    if turned_off() {
        return;
    }
    let test = test_dir();
    let dir = test.join(seed.to_string());
    let ours = WRITTEN
        .lock()
        .is_ok_and(|w| w.as_ref().is_some_and(|w| w.contains(&dir)));
    if !ours {
        clear_stale(&test, &dir);
    }
}

/// Removes the harness's files ([`FILES`]) from `dir`, then `dir` and its
/// parent `test` if that leaves them empty. Nothing else: a file the
/// harness did not write keeps its folder. Errors (nothing there, no
/// permission) leave things as they are: a stale artifact is a nuisance,
/// not a failure of the run.
pub(crate) fn clear_stale(test: &Path, dir: &Path) {
    if !dir.is_dir() {
        return;
    }
    for file in FILES {
        let path = dir.join(file);
        if path.is_file() {
            let _ = std::fs::remove_file(path);
        }
    }
    // `remove_dir` removes only an empty folder.
    if std::fs::remove_dir(dir).is_ok() {
        let _ = std::fs::remove_dir(test);
    }
}

fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|start| workspace_root(&start))
        .map_or_else(|| PathBuf::from("target"), |root| root.join("target"))
}

/// The nearest folder at or above `start` holding a `Cargo.lock`.
fn workspace_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map(Path::to_path_buf)
}

thread_local! {
    /// The trace of this thread's last run, for the panic hook.
    static LAST: RefCell<Option<Trace>> = const { RefCell::new(None) };
    /// Runs going on in this thread: a panic inside one (a client body's
    /// failed `assert!`) is the run's error, which writes its own trace.
    static RUNNING: Cell<u32> = const { Cell::new(0) };
}

/// Marks a run going on in this thread until dropped, and installs the
/// panic hook. The last trace is forgotten: a panic from here on is not
/// about it.
pub(crate) fn running() -> Running {
    static HOOK: Once = Once::new();
    HOOK.call_once(install_hook);
    LAST.with(|last| last.borrow_mut().take());
    RUNNING.with(|n| n.set(n.get() + 1));
    Running(())
}

/// A run in progress (see [`running`]).
pub(crate) struct Running(());

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Keeps a clone of `trace` (its events are shared, not copied) as this
/// thread's last run, until the next run or the end of the thread.
pub(crate) fn remember(trace: &Trace) {
    LAST.with(|last| *last.borrow_mut() = Some(trace.clone()));
}

/// Forgets this thread's last run: what comes next is not about it (a
/// sweep's next seed).
pub(crate) fn forget() {
    LAST.with(|last| last.borrow_mut().take());
}

fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if RUNNING.with(Cell::get) > 0 {
            return;
        }
        // `try_borrow`: a panic while the cell is borrowed must not panic
        // again in the hook.
        let _ = LAST.try_with(|last| {
            let Ok(last) = last.try_borrow() else { return };
            let Some(trace) = last.as_ref() else { return };
            if trace.written.load(Ordering::Relaxed) {
                // Written with a run's error or an assertion's violation:
                // named by its message, unless the test never showed it
                // (`assert!(err.is_timeout())` panics without it).
                let dir = test_dir().join(trace.seed().to_string());
                if !was_shown(&dir) {
                    shown(&dir);
                    announce(trace, &dir);
                }
                return;
            }
            let message = crate::units::panic_message(info.payload());
            let why = match info.location() {
                Some(at) => format!("panicked at {at}: {message}"),
                None => format!("panicked: {message}"),
            };
            if let Some(dir) = write_with(trace, &why) {
                announce(trace, &dir);
            }
        });
    }));
}

#[cfg(test)]
mod tests {
    use super::{clear_stale, FILES};
    use std::path::PathBuf;

    /// A fresh folder under the system's temp dir, unique to this test.
    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "grpc-chaos-artifacts-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn write(dir: &std::path::Path, names: &[&str]) {
        std::fs::create_dir_all(dir).expect("folder");
        for name in names {
            std::fs::write(dir.join(name), "x").expect("file");
        }
    }

    #[test]
    fn a_stale_artifact_goes_with_its_empty_folders() {
        let root = temp("stale");
        let test = root.join("my_test");
        let (seed, other) = (test.join("7"), test.join("8"));
        write(&seed, &FILES);
        write(&other, &FILES);
        clear_stale(&test, &seed);
        assert!(!seed.exists(), "the seed's folder is gone");
        // Another seed's failure stays, and so does the test's folder.
        assert!(other.join("error.txt").is_file());
        clear_stale(&test, &other);
        assert!(!test.exists(), "left empty, the test's folder goes too");
        assert!(root.is_dir(), "nothing above it is touched");
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_file_the_harness_did_not_write_keeps_its_folder() {
        let root = temp("user");
        let test = root.join("my_test");
        let seed = test.join("7");
        write(&seed, &FILES);
        write(&seed, &["notes.md"]);
        std::fs::create_dir_all(seed.join("screens")).expect("sub-folder");
        clear_stale(&test, &seed);
        for file in FILES {
            assert!(!seed.join(file).exists(), "{file}");
        }
        assert!(seed.join("notes.md").is_file(), "the user's file stays");
        assert!(seed.join("screens").is_dir(), "and the user's folder");
        // Nothing there at all: nothing happens.
        clear_stale(&test, &test.join("9"));
        assert!(seed.is_dir());
        let _ = std::fs::remove_dir_all(root);
    }
}
