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

#[cfg(test)]
mod tests {
    //! Each built-in's verdict, words and check, at the boundaries.

    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::{DelayFrame, DropFrame, HoldNamed, HoldUntil};
    use crate::error::Error;
    use crate::fault::rule::{FrameRule, FrameView, RunCheck, Verdict};
    use crate::recorder::event::{Fate, FrameDetail, FrameFlags};
    use crate::wire::{Direction, FrameType};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// What `rule` says of a PING, and its check in a run of 1 s.
    fn verdict_and_check(mut rule: impl FrameRule) -> (Verdict, Result<(), Error>) {
        let detail = FrameDetail::Empty;
        let frame = FrameView {
            from: "player",
            to: "store",
            direction: Direction::ClientToServer,
            conn: 1,
            frame: FrameType::Ping,
            flags: FrameFlags::default(),
            stream: 0,
            len: 8,
            detail: &detail,
            bytes: &[],
            now: ms(5),
            fate: Fate::Passed,
        };
        let hosts = BTreeSet::from(["player", "store"]);
        let unknown = |_: &str, _: String| unreachable!("no host named");
        let run = RunCheck {
            duration: ms(1000),
            hosts: &hosts,
            unknown: &unknown,
        };
        (rule.on_frame(&frame), rule.check(&run))
    }

    #[test]
    fn drop_drops_and_says_so() {
        let (verdict, check) = verdict_and_check(DropFrame);
        assert_eq!(verdict, Verdict::Drop);
        assert!(check.is_ok());
        assert_eq!(DropFrame.describe(), "drop");
        assert_eq!(DropFrame.hold_name(), None);
    }

    #[test]
    fn delay_keeps_back_for_its_time_and_no_longer_than_the_run() {
        let (verdict, check) = verdict_and_check(DelayFrame(ms(1000)));
        assert_eq!(verdict, Verdict::Delay(ms(1000)));
        assert!(check.is_ok(), "as long as the run: {check:?}");
        let (_, check) = verdict_and_check(DelayFrame(ms(1001)));
        let err = check.expect_err("longer than the run");
        assert!(err.is_misconfigured(), "{err}");
        assert!(
            err.to_string().contains("frame fault delay 1001ms"),
            "{err}"
        );
        assert_eq!(DelayFrame(ms(2500)).describe(), "delay by 2500ms");
    }

    #[test]
    fn hold_until_keeps_back_until_an_instant_inside_the_run() {
        let (verdict, check) = verdict_and_check(HoldUntil(ms(500)));
        assert_eq!(verdict, Verdict::HoldUntil(ms(500)));
        assert!(check.is_ok(), "inside the run: {check:?}");
        let (_, check) = verdict_and_check(HoldUntil(ms(1000)));
        assert!(check.is_ok(), "at the run's end: {check:?}");
        let (_, check) = verdict_and_check(HoldUntil(ms(1001)));
        let err = check.expect_err("after the end");
        assert!(err.to_string().contains("hold_until"), "{err}");
        assert_eq!(HoldUntil(ms(1500)).describe(), "hold until 1500ms");
    }

    #[test]
    fn a_named_hold_names_itself() {
        let rule = HoldNamed("gate".into());
        assert_eq!(rule.hold_name(), Some("gate"));
        assert_eq!(rule.describe(), "hold until release \"gate\"");
        let (verdict, check) = verdict_and_check(rule);
        assert_eq!(verdict, Verdict::Hold("gate".into()));
        assert!(check.is_ok());
    }
}
