//! The renderers, and every word the trace prints: the text rows and the
//! summary, the page, JSON, Perfetto, Mermaid, the files a trace is
//! written to, and what a client that never finished waits on. They read
//! the trace's value and queries (`super::query`) and nothing above.

pub(crate) mod act_words;
mod files;
mod fold;
mod html;
mod json;
mod mermaid;
mod options;
mod perfetto;
pub(super) mod rows;
mod summary;
mod waits;
pub(super) mod words;

use super::query::{
    backoff, chance, hedges, views, wire_calls, CallEnd, RunEnd, Stall, StallEnd, Trace, Window,
};

pub use files::TraceFiles;
pub use mermaid::MermaidOf;
pub use options::{MaskMetadata, RenderOptions};
pub use summary::RunVerdict;
pub(crate) use waits::open_calls;
pub use words::{finding, PEER_STRING_LIMIT};
