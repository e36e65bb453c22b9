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
///
/// A HEADERS row shows what the block is (`POST /tt.v1.Store/Save`,
/// `:status=200`, `trailers`), then in wire order the fields that matter,
/// as sent: the gRPC fields (`grpc-timeout`, `grpc-status`,
/// `grpc-message`, `grpc-encoding`, `grpc-accept-encoding`, gRFC A6's
/// `grpc-retry-pushback-ms` and `grpc-previous-rpc-attempts`),
/// `content-type` only when it is not `application/grpc`, and the
/// application's own metadata always (`authorization=token`; a `-bin`
/// value by its length, `trace-bin=<16 bytes>`, never its octets; see
/// [`is_custom_metadata`](crate::recorder::event::is_custom_metadata)).
/// What every tonic call carries (`:scheme`, `:authority`, `te: trailers`,
/// `user-agent`, `content-type: application/grpc`, hyper's `date`, the
/// harness's `x-grpc-chaos-call`) is left out, so a row stays short;
/// [`RenderOptions::all_headers`] shows every field, and
/// [`RenderOptions::mask_metadata`] hides metadata values. Values are cut
/// at [`PEER_STRING_LIMIT`](crate::trace::render::PEER_STRING_LIMIT) octets; the
/// JSON ([`Trace::to_json`]) keeps every field of every block, whole.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Show `DEBUG`/`TRACE` events captured from user code. Default: false.
    pub debug_logs: bool,
    /// Show HTTP/2 frames at all. Default: true.
    pub frames: bool,
    /// Show connection noise frames no fault touched, and connection
    /// closes ([`EventKind::ConnClosed`](crate::recorder::event::EventKind::ConnClosed)). Default: false.
    pub noise: bool,
    /// Fold each run of plain DATA frames (same sender, connection and
    /// stream, one after another among the shown rows, passed untouched,
    /// without END_STREAM) into one line: `c1 s1 DATA ×126 1377768 bytes
    /// (last at 50.000)`, at the first frame's time. Default: true.
    pub fold_data: bool,
    /// Show every connection attempt and its outcome
    /// ([`EventKind::ConnectStarted`](crate::recorder::event::EventKind::ConnectStarted),
    /// `Connected`, `ConnectFailed`, `ConnectAbandoned`). Without it only
    /// the attempts that waited for a partition or a pause are shown (with
    /// why, and when the channel came back). Default: false; true in
    /// [`RenderOptions::everything`].
    pub connections: bool,
    /// Show every field of each HEADERS block as sent, in wire order
    /// (`:scheme=http :authority=store:50051 content-type=application/grpc
    /// te=trailers user-agent=tonic/0.14.9 …`), not only the ones that
    /// matter. Default: false; false in [`RenderOptions::everything`] too
    /// (it shows every *event*; this makes each HEADERS row long).
    pub all_headers: bool,
    /// Which metadata values a HEADERS row masks (`authorization=<masked>`):
    /// none, every key, or the keys listed. Only the application's own
    /// metadata is masked, in every row and in the HTML page; the JSON and
    /// the typed events keep the values. Default: [`MaskMetadata::None`].
    pub mask_metadata: MaskMetadata,
}

/// Which metadata values the text and HTML renders mask
/// ([`RenderOptions::mask_metadata`]): a masked value prints as
/// `<masked>`, the key stays.
///
/// ```
/// use grpc_chaos::trace::{MaskMetadata, RenderOptions};
/// let mut options = RenderOptions::default();
/// options.mask_metadata = MaskMetadata::Keys(vec!["authorization".into()]);
/// assert!(options.mask_metadata.masks("authorization"));
/// assert!(!options.mask_metadata.masks("tenant"));
/// assert!(MaskMetadata::All.masks("tenant"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaskMetadata {
    /// Every value shown (`-bin` values by their length).
    #[default]
    None,
    /// Every metadata value masked.
    All,
    /// The values of these keys masked, compared as sent (lower case:
    /// HTTP/2 field names are, RFC 9113 §8.2.1).
    Keys(Vec<String>),
}

impl MaskMetadata {
    /// Whether the value of metadata key `key` is masked.
    pub fn masks(&self, key: &str) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Keys(keys) => keys.iter().any(|k| k == key),
        }
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            debug_logs: false,
            frames: true,
            noise: false,
            fold_data: true,
            connections: false,
            all_headers: false,
            mask_metadata: MaskMetadata::None,
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
            all_headers: false,
            mask_metadata: MaskMetadata::None,
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
