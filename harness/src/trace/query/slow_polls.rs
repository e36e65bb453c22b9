//! The warnings a run prints on stderr for its slow polls
//! ([`super::Trace::slow_polls`]): words made here, like every word of the
//! trace, but never part of a render or an export (wall time is not
//! reproducible).

use std::time::Duration;

use super::Trace;
use crate::recorder::{Polled, SlowPoll};
use crate::units::fmt_duration;

/// At most this many slow polls are printed one by one; the rest are
/// counted.
const SHOWN: usize = 10;

/// Prints the trace's slow polls on stderr, over `threshold`: straight to
/// the process's stderr, past libtest's capture (which `eprintln!` goes
/// through), so a test that passes still shows them.
pub(crate) fn warn(trace: &Trace, threshold: Duration) {
    let polls = trace.slow_polls();
    if polls.is_empty() {
        return;
    }
    let text = format!("{}\n", warning(polls, threshold));
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

/// The whole warning: one line per slow poll (the first [`SHOWN`]), a
/// count of the rest, and what to do.
fn warning(polls: &[SlowPoll], threshold: Duration) -> String {
    let mut out = String::new();
    for poll in polls.iter().take(SHOWN) {
        out.push_str(&line(poll, threshold));
        out.push('\n');
    }
    if polls.len() > SHOWN {
        out.push_str(&format!(
            "grpc-chaos: warning: … and {} more slow polls (Trace::slow_polls)\n",
            polls.len() - SHOWN
        ));
    }
    out.push_str(
        "grpc-chaos: a poll that blocks its thread (std::thread::sleep, a blocking lock, heavy \
         CPU) takes no simulated time, so the trace cannot show it; in production it stalls every \
         task of its tokio worker. Move the work to tokio::task::spawn_blocking, or raise the \
         threshold (SimBuilder::slow_poll_threshold, CHAOS_SLOW_POLL_MS; 0 turns this off).",
    );
    out
}

/// `grpc-chaos: warning: handler h1 /tt.v1.Store/Save on host `store` held
/// its thread for 100.2ms (wall) in one poll of its future, at 2ms
/// simulated (over the 50ms threshold)`.
fn line(poll: &SlowPoll, threshold: Duration) -> String {
    let what = match poll.polled {
        Polled::Handler => "its future",
        Polled::Body => "its response body",
    };
    format!(
        "grpc-chaos: warning: handler {} {} on host `{}` held its thread for {} (wall) in one \
         poll of {what}, at {} simulated (over the {} threshold)",
        poll.run,
        poll.path,
        poll.host,
        fmt_duration(poll.wall),
        fmt_duration(poll.at),
        fmt_duration(threshold)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::event::{HostName, RunId};

    fn poll(n: u32, polled: Polled) -> SlowPoll {
        SlowPoll {
            host: HostName::new("store"),
            run: RunId(n),
            path: "/tt.v1.Store/Save".to_owned(),
            polled,
            wall: Duration::from_micros(100_250),
            at: Duration::from_millis(2),
        }
    }

    #[test]
    fn a_slow_poll_is_named_by_host_run_method_and_both_clocks() {
        let text = warning(&[poll(1, Polled::Body)], Duration::from_millis(20));
        assert!(
            text.starts_with(
                "grpc-chaos: warning: handler h1 /tt.v1.Store/Save on host `store` held its \
                 thread for 100.25ms (wall) in one poll of its response body, at 2ms simulated \
                 (over the 20ms threshold)\n"
            ),
            "{text}"
        );
        assert!(text.contains("spawn_blocking"), "{text}");
    }

    #[test]
    fn past_ten_slow_polls_the_rest_are_counted() {
        let polls: Vec<_> = (1..=12).map(|n| poll(n, Polled::Handler)).collect();
        let text = warning(&polls, Duration::from_millis(20));
        assert_eq!(text.matches("held its thread").count(), 10, "{text}");
        assert!(text.contains("handler h10 "), "{text}");
        assert!(!text.contains("handler h11 "), "{text}");
        assert!(text.contains("… and 2 more slow polls"), "{text}");
    }
}
