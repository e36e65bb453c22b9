//! A connection policy driven the way the tap drives it — one frame or one
//! timer at a time, each call with effects of its own — for the policies'
//! unit tests (keepalive enforcement, middleboxes).

use std::time::Duration;

use super::connection::{ConnInfo, ConnectionPolicy, Effects};
use crate::fault::FrameView;
use crate::recorder::event::{Fate, FrameDetail, FrameFlags};
use crate::wire::{Direction, FrameType};

/// `policy` on connection 1, `player` → `store`, and the effects of its
/// last call.
pub(super) struct Drive<P> {
    pub(super) policy: P,
    pub(super) fx: Effects,
    /// The length every frame claims, octets.
    pub(super) len: u32,
}

impl<P: ConnectionPolicy> Drive<P> {
    /// The policy `make` builds for a connection opened at `opened_at`
    /// (*simulated*).
    pub(super) fn new(opened_at: Duration, make: impl FnOnce(&ConnInfo<'_>) -> P) -> Self {
        let info = ConnInfo {
            conn: 1,
            client: "player",
            server: "store",
            opened_at,
        };
        let policy = make(&info);
        let fx = Effects {
            name: policy.name().into(),
            ..Effects::default()
        };
        Self { policy, fx, len: 0 }
    }

    /// One frame at `at` (*simulated*); the effects of its call.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn frame(
        &mut self,
        at: Duration,
        direction: Direction,
        frame: FrameType,
        flags: FrameFlags,
        stream: u32,
        detail: &FrameDetail,
        fate: Fate,
    ) -> &Effects {
        self.fx.begin(at);
        let view = FrameView {
            from: "",
            to: "",
            direction,
            conn: 1,
            frame,
            flags,
            stream,
            len: self.len,
            detail,
            bytes: &[],
            now: at,
            fate,
        };
        self.policy.on_frame(&view, &mut self.fx);
        &self.fx
    }

    /// The timer the policy asked for, run at `at`; the effects of its call.
    pub(super) fn timer(&mut self, at: Duration) -> &Effects {
        self.fx.begin(at);
        self.policy.on_timer(&mut self.fx);
        &self.fx
    }
}
