//! Failure artifacts: when a run fails, an assertion on its trace fails, or
//! a test panics while holding a trace, the trace is written to disk so
//! nothing is lost: `<target>/grpc-chaos/<test name>/<seed>/trace.{txt,json,html}`
//! ([`Trace::write_to`]), and beside them `error.txt`, what failed, when
//! an error or a failed assertion wrote them.
//!
//! `<target>` is `CARGO_TARGET_DIR`, else the `target` folder next to the
//! nearest `Cargo.lock` above `CARGO_MANIFEST_DIR` (cargo sets both when it
//! runs tests), else `./target`. `<test name>` is the test thread's name
//! (libtest names it after the test). Set `GRPC_CHAOS_ARTIFACTS=0` to turn
//! this off.

use std::path::{Path, PathBuf};

use super::Trace;

/// Environment variable that turns failure artifacts off when set to `0`.
pub const ARTIFACTS_ENV: &str = "GRPC_CHAOS_ARTIFACTS";

/// Writes `trace` as a failure artifact and says where on stderr. Returns
/// the folder, or `None` when turned off or the write failed.
pub(crate) fn write(trace: &Trace) -> Option<PathBuf> {
    write_with(trace, None)
}

/// [`write`], plus `error.txt` holding `why` (what failed), so the folder
/// says it without the test's output.
pub(crate) fn write_with(trace: &Trace, why: Option<&str>) -> Option<PathBuf> {
    if std::env::var(ARTIFACTS_ENV).is_ok_and(|v| v.trim() == "0") {
        return None;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .replace("::", "__");
    let dir = target_dir()
        .join("grpc-chaos")
        .join(test)
        .join(trace.seed().to_string());
    let written = trace.write_to(&dir, "trace").and_then(|_| match why {
        Some(why) => std::fs::write(dir.join("error.txt"), format!("{why}\n")),
        // An earlier failure's reason must not stand beside this trace.
        None => match std::fs::remove_file(dir.join("error.txt")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    });
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

impl Drop for Trace {
    /// A test that panics (a failed `assert!` on the trace, say) while it
    /// holds a trace leaves the trace on disk.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = write(self);
        }
    }
}
