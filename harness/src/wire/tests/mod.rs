//! Unit tests, one file per story: the preface and connection frames,
//! field blocks and padding, malformed input, encoder round trips, and a
//! recorded h2 exchange.

mod blocks;
mod connection;
mod encode;
mod hpack;
mod malformed;
mod recorded;

/// What every test file uses.
mod prelude {
    pub(super) use std::time::Duration;

    pub(super) use crate::wire::frame::{flags, FrameType as T, PREFACE};
    pub(super) use crate::wire::testing::{
        brief, decode, frames, headers, malformed, render, unhex, Wire, H2_C2S, H2_S2C,
    };
    pub(super) use crate::wire::Direction::{ClientToServer as C2S, ServerToClient as S2C};
    pub(super) use crate::wire::*;

    pub(super) fn only_frame(events: &[Event], ty: FrameType) -> &Frame {
        let found: Vec<_> = frames(events).into_iter().filter(|f| f.ty == ty).collect();
        assert_eq!(found.len(), 1, "{:#?}", render(events));
        found[0]
    }

    pub(super) fn blocks(events: &[Event]) -> Vec<&HeaderBlock> {
        frames(events)
            .into_iter()
            .filter_map(|f| match &f.detail {
                Detail::Headers { block, .. } => Some(&**block),
                _ => None,
            })
            .collect()
    }
}
