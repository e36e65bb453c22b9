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

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Once;

use super::Trace;

/// Environment variable that turns failure artifacts off when set to `0`.
pub const ARTIFACTS_ENV: &str = "GRPC_CHAOS_ARTIFACTS";

/// Writes `trace` as a failure artifact, with `error.txt` holding `why`
/// (what failed), and says where on stderr. Returns the folder, or `None`
/// when turned off or the write failed.
pub(crate) fn write_with(trace: &Trace, why: &str) -> Option<PathBuf> {
    if std::env::var(ARTIFACTS_ENV).is_ok_and(|v| v.trim() == "0") {
        return None;
    }
    trace.written.store(true, Ordering::Relaxed);
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .replace("::", "__");
    let dir = target_dir()
        .join("grpc-chaos")
        .join(test)
        .join(trace.seed().to_string());
    let written = trace
        .write_with_verdict(&dir, "trace", &super::RunVerdict::fail(why))
        .and_then(|_| std::fs::write(dir.join("error.txt"), format!("{why}\n")));
    match written {
        Ok(()) => {
            eprintln!(
                "grpc-chaos: trace written to {} (reproduce with {})",
                dir.display(),
                trace.replay_env()
            );
            Some(dir)
        }
        Err(e) => {
            eprintln!(
                "grpc-chaos: could not write the trace to {}: {e}",
                dir.display()
            );
            None
        }
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
                return;
            }
            let message = crate::units::panic_message(info.payload());
            let why = match info.location() {
                Some(at) => format!("panicked at {at}: {message}"),
                None => format!("panicked: {message}"),
            };
            write_with(trace, &why);
        });
    }));
}
