//! The text timeline: what users snapshot. Byte-stable for a seed: no
//! ports, no wall clock, ids in order of appearance, strings escaped.
//! Which events show and what each says is decided in `rows`.

use std::fmt::Write as _;

use super::rows::{rows, COLUMNS};
use super::Trace;

/// What the text and HTML renders show.
///
/// The default shows calls, handler runs, faults, INFO and higher logs, and
/// HTTP/2 frames except connection noise (SETTINGS ACKs and WINDOW_UPDATEs
/// under 65,535 octets) that no fault touched, so that snapshots change
/// only when behaviour does; runs of DATA frames on one stream are folded
/// into one line. [`RenderOptions::everything`] shows every event, one
/// line each; [`RenderOptions::rpc_only`] leaves frames out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Show `DEBUG`/`TRACE` events captured from user code. Default: false.
    pub debug_logs: bool,
    /// Show HTTP/2 frames at all. Default: true.
    pub frames: bool,
    /// Show connection noise frames no fault touched, and connection
    /// closes ([`EventKind::ConnClosed`](crate::EventKind::ConnClosed)). Default: false.
    pub noise: bool,
    /// Fold each run of plain DATA frames (same sender, connection and
    /// stream, one after another among the shown rows, passed untouched,
    /// without END_STREAM) into one line: `c1 s1 DATA ×126 1377768 bytes
    /// (last at 50.000)`, at the first frame's time. Default: true.
    pub fold_data: bool,
    /// Show every connection attempt and its outcome
    /// ([`EventKind::ConnectStarted`](crate::EventKind::ConnectStarted),
    /// `Connected`, `ConnectFailed`, `ConnectAbandoned`). Without it only
    /// the attempts that waited for a partition or a pause are shown (with
    /// why, and when the channel came back). Default: false; true in
    /// [`RenderOptions::everything`].
    pub connections: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            debug_logs: false,
            frames: true,
            noise: false,
            fold_data: true,
            connections: false,
        }
    }
}

impl RenderOptions {
    /// Every event.
    pub fn everything() -> Self {
        Self {
            debug_logs: true,
            frames: true,
            noise: true,
            fold_data: false,
            connections: true,
        }
    }

    /// Calls, handler runs, faults and logs: no HTTP/2 frames.
    pub fn rpc_only() -> Self {
        Self {
            frames: false,
            ..Self::default()
        }
    }
}

impl Trace {
    /// The text timeline with the default [`RenderOptions`]:
    ///
    /// ```text
    ///      t(ms)  where            event
    ///      0.000  player→gateway   r1 call /tt.v1.Scoreboard/Hit grpc-timeout=500ms
    ///      1.000  gateway          h1 handler /tt.v1.Scoreboard/Hit started (r1 from player, grpc-timeout=500ms, #1)
    /// ```
    pub fn render(&self) -> String {
        self.render_with(&RenderOptions::default())
    }

    /// The text timeline with explicit options.
    pub fn render_with(&self, options: &RenderOptions) -> String {
        let [t, place, event] = COLUMNS;
        let mut out = format!("{t:>10}  {place:<20} {event}\n");
        for row in rows(&self.events, options, self.ended) {
            let _ = writeln!(out, "{:>10}  {:<20} {}", row.ms, row.place, row.text);
        }
        out
    }
}
