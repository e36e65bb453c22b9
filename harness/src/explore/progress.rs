//! The progress bar an exploration draws while it runs: runs done of the
//! budget, and the invariants broken so far. Drawn with `indicatif` on
//! standard error, only when that is a terminal and the exploration does
//! not run inside a test (libtest names a test's thread after it; a bar
//! there would draw through the captured output of every other test).
//! It is never part of the trace or the report.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar, or nothing when it is not drawn.
pub(super) struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `len` schedules (`None`: not known, only a wall-time
    /// budget bounds them); `on` forces it on or off, `None` decides by
    /// the terminal.
    pub(super) fn start(on: Option<bool>, len: Option<u64>) -> Self {
        if !on.unwrap_or_else(auto) {
            return Self(None);
        }
        let (bar, template) = match len {
            Some(n) => (
                ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
                "explore [{elapsed_precise}] {wide_bar} {pos}/{len} runs, {msg}",
            ),
            None => (
                ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
                "explore [{elapsed_precise}] {spinner} {pos} runs, {msg}",
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_message(broken(0));
        Self(Some(bar))
    }

    /// One more schedule ran; `failures` invariants are broken so far.
    pub(super) fn ran(&self, failures: usize) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
            bar.set_message(broken(failures));
        }
    }

    /// Shrinking the first failure of `invariant` (its runs are not
    /// counted in the bar).
    pub(super) fn shrinking(&self, invariant: &str) {
        if let Some(bar) = &self.0 {
            bar.set_message(format!("shrinking a failure of `{invariant}`"));
        }
    }

    /// Takes the bar off the terminal.
    pub(super) fn finish(self) {
        if let Some(bar) = self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Drawn when standard error is a terminal, outside a test.
fn auto() -> bool {
    std::io::stderr().is_terminal() && !in_test()
}

/// libtest runs each test on a thread named after it; a program's own
/// main thread is `main`.
fn in_test() -> bool {
    std::thread::current().name().is_some_and(|n| n != "main")
}

fn broken(n: usize) -> String {
    match n {
        0 => "no invariant broken".to_owned(),
        1 => "1 invariant broken".to_owned(),
        n => format!("{n} invariants broken"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_a_test_no_bar_is_drawn_unless_asked_for() {
        assert!(in_test(), "libtest names this thread after the test");
        assert!(!auto());
        assert!(Progress::start(None, Some(3)).0.is_none());
        assert!(Progress::start(Some(false), Some(3)).0.is_none());
        // Forced on, it counts (and indicatif draws it only on a terminal).
        let bar = Progress::start(Some(true), Some(3));
        bar.ran(0);
        bar.ran(2);
        let inner = bar.0.as_ref().expect("forced on");
        assert_eq!(inner.position(), 2);
        assert_eq!(inner.message(), "2 invariants broken");
        bar.finish();
    }
}
