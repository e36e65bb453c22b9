//! The built-in frame actions as [`FrameRule`]s: each says what it does to
//! a frame, checks itself before the run, and names itself in the trace.

use std::sync::Arc;
use std::time::Duration;

use super::rule::{FrameRule, FrameView, RunCheck, Verdict};
use crate::error::Error;
use crate::units::fmt_duration;

/// [`FrameFault::drop`](super::FrameFault::drop).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DropFrame;

impl FrameRule for DropFrame {
    fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
        Verdict::Drop
    }

    fn describe(&self) -> String {
        "drop".to_owned()
    }
}

/// [`FrameFault::delay`](super::FrameFault::delay).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DelayFrame(pub(crate) Duration);

impl FrameRule for DelayFrame {
    fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
        Verdict::Delay(self.0)
    }

    fn describe(&self) -> String {
        format!("delay by {}", fmt_duration(self.0))
    }

    /// No longer than a year, nor than the run: a frame kept back past
    /// the end never arrives (a hold says so on purpose).
    fn check(&self, run: &RunCheck<'_>) -> Result<(), Error> {
        run.wait("frame fault delay", self.0)
    }
}

/// [`FrameFault::hold_until`](super::FrameFault::hold_until).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HoldUntil(pub(crate) Duration);

impl FrameRule for HoldUntil {
    fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
        Verdict::HoldUntil(self.0)
    }

    fn describe(&self) -> String {
        format!("hold until {}", fmt_duration(self.0))
    }

    /// The instant is inside the run.
    fn check(&self, run: &RunCheck<'_>) -> Result<(), Error> {
        if self.0 > run.duration() {
            return Err(run.after_end("frame fault hold_until", self.0));
        }
        Ok(())
    }
}

/// [`FrameFault::hold`](super::FrameFault::hold).
#[derive(Debug, Clone)]
pub(crate) struct HoldNamed(pub(crate) Arc<str>);

impl FrameRule for HoldNamed {
    fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
        // An `Arc` clone: no allocation per frame.
        Verdict::Hold(self.0.clone())
    }

    fn describe(&self) -> String {
        format!("hold until release {:?}", &*self.0)
    }

    fn hold_name(&self) -> Option<&str> {
        Some(&self.0)
    }
}
