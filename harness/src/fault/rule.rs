//! The frame-rule trait ([`FrameRule`]), its verdict and the view of a frame it gets.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::error::{Error, Kind};
use crate::recorder::event::{Fate, FrameDetail, FrameFlags};
use crate::wire::frame::FRAME_HEADER_LEN;
use crate::wire::{Direction, FrameType};

/// What the network does with one frame. Times are *simulated*.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// No opinion: the next matching rule is asked; when none acts, the
    /// frame goes on as written.
    Pass,
    /// Removed from the byte stream; the trace marks it `[dropped]`.
    Drop,
    /// Kept back for this long from now; every later byte in the same
    /// direction waits behind it (TCP keeps order). Trace: `[held until
    /// <t>]`, then `released after <d>`.
    Delay(Duration),
    /// Kept back until this instant (since the start of the run); an
    /// instant already past lets the frame go now. Later bytes wait
    /// behind it.
    HoldUntil(Duration),
    /// Kept back until the named hold is released, by
    /// [`Fault::release`](crate::Fault::release) or by a host's code
    /// calling [`Host::release`](crate::Host::release); a hold already
    /// released lets the frame go now. Later bytes wait behind it. A
    /// rule that returns this should name the hold in
    /// [`FrameRule::hold_name`], or a `Fault::release` of it is rejected
    /// as freeing nothing.
    Hold(Arc<str>),
    /// The receiver gets these octets instead of the frame: zero or more
    /// whole frames, header included (build them with
    /// `wire::encode`, feature `unstable-codec`, or edit
    /// [`FrameView::bytes`]). They go where the frame would have gone,
    /// waiting behind what waits ahead of it. The trace keeps both
    /// sides: the frame as sent, marked `[replaced: …]` with how many
    /// octets differ, then each frame that arrived instead, marked
    /// `[arrived instead]` (decoded on its own, like an injected frame:
    /// a HEADERS block that refers to the connection's HPACK dynamic
    /// table shows as invalid there). The tap's own view of the
    /// connection (SETTINGS in force, HPACK state) follows the frame as
    /// the sender wrote it. In place of a connection preface's SETTINGS
    /// (RFC 9113 §3.4), a first frame that is not a SETTINGS is marked
    /// `invalid: the first frame, not the preface's SETTINGS (RFC 9113
    /// §3.4)`; when nothing takes its place, the replaced frame's fate
    /// carries the rule instead (see
    /// [`FrameFate::fate_invalid`](crate::recorder::event::FrameFate::fate_invalid)).
    Replace(Bytes),
}

/// Frame rules: the extension point of the wire tap, in the shape of
/// turmoil-net's packet `Rule` (`crates/turmoil-net/src/rule.rs`: a trait
/// with one method that sees a packet and returns a verdict, and a blanket
/// impl so that a closure is a rule).
///
/// A rule sees one HTTP/2 frame as its sender wrote it ([`FrameView`]) and
/// says what the network does with it ([`Verdict`]). Register it with
/// [`FrameFault::rule`](super::FrameFault::rule): the filter in front of it
/// ([`Fault::frames`](super::Fault::frames) and its narrowing methods)
/// decides which frames it is asked about, so a rule only looks at what
/// it is for. The built-in actions ([`FrameFault::drop`](super::FrameFault::drop),
/// [`delay`](super::FrameFault::delay), [`hold_until`](super::FrameFault::hold_until),
/// [`hold`](super::FrameFault::hold)) are rules too, each with its own
/// check and its own words in the trace.
///
/// # Order
/// For each frame the tap asks the frame faults in the order they were
/// added; the first whose filter matches and whose rule returns something
/// other than [`Verdict::Pass`] decides, and the later ones are not asked.
/// A built-in action never passes, so the first built-in whose filter
/// matches decides, as it always did.
///
/// # Cost
/// A rule runs in the wire tap, on every frame its filter matches, on the
/// simulated host's thread. The tap allocates nothing for a frame a rule
/// passes; keep `on_frame` cheap (no allocation unless it acts), and keep
/// any state in the rule itself (`&mut self`: one rule instance sees every
/// matching frame of the run, in the order the tap sees them, which is
/// deterministic for a seed).
///
/// ```
/// use grpc_chaos::fault::{FrameView, Verdict};
/// use grpc_chaos::wire::FrameType;
/// use grpc_chaos::Fault;
/// // Flip the last octet of the first DATA frame the player sends.
/// let mut done = false;
/// let corrupt = Fault::frames()
///     .from("player")
///     .kind(FrameType::Data)
///     .rule(move |frame: &FrameView<'_>| {
///         if done || frame.payload().is_empty() {
///             return Verdict::Pass;
///         }
///         done = true;
///         let mut bytes = frame.bytes().to_vec();
///         if let Some(last) = bytes.last_mut() {
///             *last ^= 0xff;
///         }
///         Verdict::Replace(bytes.into())
///     });
/// # let _ = corrupt;
/// ```
///
/// A frame fault's action: sees a frame its filter matched, says what
/// happens to it. A closure `FnMut(&FrameView<'_>) -> Verdict` is a rule.
///
/// Implement it on a type of your own to give the rule words in the trace
/// ([`FrameRule::describe`]) or a check before the run
/// ([`FrameRule::check`]). A panic inside a rule fails the run (the tap's
/// task reports it as a harness panic).
pub trait FrameRule: Send + 'static {
    /// What happens to `frame`. Called once per frame the rule's filter
    /// matches, in the order the tap sees them.
    fn on_frame(&mut self, frame: &FrameView<'_>) -> Verdict;

    /// The rule in the trace's words, for the `fault never fired` line at
    /// the end of a run where it never acted (`drop`, `delay by 2s`).
    /// Default: `a rule of the test's own`.
    fn describe(&self) -> String {
        "a rule of the test's own".to_owned()
    }

    /// Checks the rule before the run starts: return an error made by
    /// [`RunCheck::misconfigured`] or [`RunCheck::after_end`] for a rule
    /// that cannot work in this run ([`Sim::run`](crate::Sim::run) then
    /// fails with it). Default: no check.
    ///
    /// # Errors
    /// What to change, as an [`Error`] that
    /// [`is_misconfigured`](Error::is_misconfigured).
    fn check(&self, run: &RunCheck<'_>) -> Result<(), Error> {
        // No check: replacing this body with `Ok(())` is an equivalent
        // mutant (`let _ = run;` only names the argument).
        let _ = run;
        Ok(())
    }

    /// The named hold this rule's [`Verdict::Hold`] uses, if any, so that
    /// a release of that name is known to free something. Default: none.
    fn hold_name(&self) -> Option<&str> {
        None
    }
}

/// A closure is a rule (turmoil-net's blanket impl).
impl<F> FrameRule for F
where
    F: FnMut(&FrameView<'_>) -> Verdict + Send + 'static,
{
    fn on_frame(&mut self, frame: &FrameView<'_>) -> Verdict {
        self(frame)
    }
}

/// One frame as its sender wrote it, as a rule or a connection policy sees
/// it: a borrowed view, valid during the call.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<'a> {
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) direction: Direction,
    pub(crate) conn: u32,
    pub(crate) frame: FrameType,
    pub(crate) flags: FrameFlags,
    pub(crate) stream: u32,
    pub(crate) len: u32,
    pub(crate) detail: &'a FrameDetail,
    pub(crate) bytes: &'a [u8],
    pub(crate) now: Duration,
    pub(crate) fate: Fate,
}

impl<'a> FrameView<'a> {
    /// The host that wrote the frame.
    pub fn from(&self) -> &'a str {
        self.from
    }

    /// The host the frame is written to.
    pub fn to(&self) -> &'a str {
        self.to
    }

    /// Which way it goes: from the dialling client host to the server
    /// host, or back.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The connection's id, as the trace numbers it (`1` for `c1`).
    pub fn conn(&self) -> u32 {
        self.conn
    }

    /// The frame type (RFC 9113 §6).
    pub fn frame_type(&self) -> FrameType {
        self.frame
    }

    /// The flags the trace keeps (`END_STREAM`, `END_HEADERS`, `ACK`).
    pub fn flags(&self) -> FrameFlags {
        self.flags
    }

    /// Whether the ACK flag is set (PING and SETTINGS only).
    pub fn ack(&self) -> bool {
        self.flags.ack()
    }

    /// The stream id (0: the connection).
    pub fn stream(&self) -> u32 {
        self.stream
    }

    /// The payload length from the frame header, in octets, padding
    /// included (RFC 9113 §4.1), without the 9-octet header.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The decoded payload, as the trace records it.
    pub fn detail(&self) -> &'a FrameDetail {
        self.detail
    }

    /// The frame's octets on the wire, header included. Empty where the
    /// tap does not keep a direction's bytes: for a connection policy, on a
    /// direction it said it does not alter
    /// ([`ConnectionPolicy::alters`](crate::policy::ConnectionPolicy::alters))
    /// in a run without frame faults. Rules always get them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The payload's octets (what follows the 9-octet header), padding
    /// included; empty when [`FrameView::bytes`] is.
    pub fn payload(&self) -> &'a [u8] {
        self.bytes.get(FRAME_HEADER_LEN..).unwrap_or_default()
    }

    /// When the frame was written: *simulated* time since the start of
    /// the run.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// What the frame faults did with it. A rule always sees
    /// [`Fate::Passed`]; a connection policy sees the frame after the
    /// rules (a frame they dropped never reaches the receiver).
    pub fn fate(&self) -> Fate {
        self.fate
    }
}

/// What a rule's [`FrameRule::check`] may look at, and how it reports a
/// problem.
pub struct RunCheck<'a> {
    pub(crate) duration: Duration,
    pub(crate) hosts: &'a BTreeSet<&'a str>,
    /// Makes the error for an unknown host (or a replica set's name).
    pub(crate) unknown: &'a dyn Fn(&str, String) -> Error,
}

impl std::fmt::Debug for RunCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunCheck")
            .field("duration", &self.duration)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// The longest single wait (tick, latency, delay) a run takes: one
/// simulated year. Sim time is added to `Instant`s, which overflow near
/// `Duration::MAX`; a run's *duration* may still be `Duration::MAX`
/// ("until the clients are done").
pub(crate) const LONGEST_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

impl RunCheck<'_> {
    /// The run's duration, *simulated* time.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Whether `name` is a host of the run (server or client).
    pub fn is_host(&self, name: &str) -> bool {
        self.hosts.contains(name)
    }

    /// A misconfiguration: `what` says what is wrong and what to change.
    pub fn misconfigured(&self, what: impl Into<String>) -> Error {
        Error::new(Kind::Misconfigured(what.into()))
    }

    /// A fault named `fault` set for `at` (*simulated* time since the
    /// start), after the end of the run.
    pub fn after_end(&self, fault: impl Into<String>, at: Duration) -> Error {
        Error::new(Kind::FaultAfterEnd {
            fault: fault.into(),
            at,
            duration: self.duration,
        })
    }

    /// The error for `host`, which no host of the run has as its name;
    /// `context` says who named it (`a frame fault`).
    pub(crate) fn unknown_host(&self, host: &str, context: &str) -> Error {
        (self.unknown)(host, context.to_owned())
    }

    /// `what`'s `during(from, until)` window, if any, is not empty and
    /// starts within the run.
    pub(crate) fn window(
        &self,
        what: &str,
        window: Option<(Duration, Duration)>,
    ) -> Result<(), Error> {
        check_window(what, window, self.duration)
    }

    /// A wait of `wait` named `what` (`frame fault delay`): no longer than
    /// a year, nor than the run.
    pub(crate) fn wait(&self, what: &str, wait: Duration) -> Result<(), Error> {
        let fmt = crate::units::fmt_duration;
        if wait > LONGEST_WAIT {
            return Err(self.misconfigured(format!(
                "{what} {} is longer than the longest single wait a run simulates (365 days); lower it \
                 (a partition or a hold keeps messages back for good)",
                fmt(wait)
            )));
        }
        if wait > self.duration {
            return Err(self.misconfigured(format!(
                "{what} {} is longer than the run ({}): nothing it touches would arrive in time; \
                 use a partition or a hold for that, or raise SimBuilder::duration",
                fmt(wait),
                fmt(self.duration)
            )));
        }
        Ok(())
    }
}

/// `what`'s `during(from, until)` window, if any, is not empty and starts
/// within a run of `duration`.
pub(crate) fn check_window(
    what: &str,
    window: Option<(Duration, Duration)>,
    duration: Duration,
) -> Result<(), Error> {
    let Some((from, until)) = window else {
        return Ok(());
    };
    let fmt = crate::units::fmt_duration;
    if from >= until {
        return Err(Error::new(Kind::Misconfigured(format!(
            "{what} window [{}, {}) is empty; `during(from, until)` needs from < until",
            fmt(from),
            fmt(until)
        ))));
    }
    if from > duration {
        return Err(Error::new(Kind::FaultAfterEnd {
            fault: format!("{what} window"),
            at: from,
            duration,
        }));
    }
    Ok(())
}

/// `nth(0)` would never match: frames are counted from 1.
pub(crate) fn check_nth(what: &str, nth: Option<u32>) -> Result<(), Error> {
    if nth == Some(0) {
        return Err(Error::new(Kind::Misconfigured(format!(
            "{what} with nth(0) never matches: frames are counted from 1"
        ))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! What a rule sees ([`FrameView`]), what a rule that says nothing more
    //! gets by default, and the checks a rule's [`FrameRule::check`] uses,
    //! at their boundaries.

    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::{check_nth, check_window, FrameRule, FrameView, RunCheck, Verdict, LONGEST_WAIT};
    use crate::error::{Error, Kind};
    use crate::recorder::event::{Fate, FrameDetail, FrameFlags};
    use crate::wire::{Direction, FrameType};

    const NS: Duration = Duration::from_nanos(1);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A HEADERS frame of 3 payload octets on stream 5 of connection 7,
    /// server to client, as the tap would show it.
    const HEADERS: [u8; 12] = [0, 0, 3, 1, 4, 0, 0, 0, 5, 0xaa, 0xbb, 0xcc];

    fn view<'a>(detail: &'a FrameDetail, bytes: &'a [u8], flags: FrameFlags) -> FrameView<'a> {
        FrameView {
            from: "store",
            to: "player",
            direction: Direction::ServerToClient,
            conn: 7,
            frame: FrameType::Headers,
            flags,
            stream: 5,
            len: u32::try_from(bytes.len().saturating_sub(9)).unwrap_or(0),
            detail,
            bytes,
            now: ms(42),
            fate: Fate::Dropped,
        }
    }

    #[test]
    fn a_view_shows_the_frame_as_the_tap_saw_it() {
        let detail = FrameDetail::Data {
            len: 3,
            compressed_flag: None,
        };
        let v = view(&detail, &HEADERS, FrameFlags::END_HEADERS);
        assert_eq!((v.from(), v.to()), ("store", "player"));
        assert_eq!(v.direction(), Direction::ServerToClient);
        assert_eq!((v.conn(), v.stream()), (7, 5));
        assert_eq!(v.frame_type(), FrameType::Headers);
        assert_eq!(v.flags(), FrameFlags::END_HEADERS);
        assert!(!v.ack());
        assert_eq!((v.len(), v.is_empty()), (3, false));
        assert_eq!(v.detail(), &detail);
        assert_eq!(v.bytes(), &HEADERS[..]);
        assert_eq!(v.payload(), &[0xaa, 0xbb, 0xcc]);
        assert_eq!(v.now(), ms(42));
        assert_eq!(v.fate(), Fate::Dropped);
    }

    #[test]
    fn an_empty_ack_has_no_payload() {
        let detail = FrameDetail::Empty;
        let v = view(&detail, &HEADERS[..9], FrameFlags::ACK);
        assert!(v.ack());
        assert_eq!((v.len(), v.is_empty()), (0, true));
        assert!(v.payload().is_empty());
        // Where the tap keeps no octets (a policy's view), none either.
        let v = view(&detail, &[], FrameFlags::ACK);
        assert!(v.bytes().is_empty() && v.payload().is_empty());
    }

    /// A rule that only says what it does.
    struct Bare;

    impl FrameRule for Bare {
        fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
            Verdict::Pass
        }
    }

    /// `f` with a run of `duration` between hosts `player` and `store`;
    /// an unknown host's error names it and who asked.
    fn with_run<R>(duration: Duration, f: impl FnOnce(&RunCheck<'_>) -> R) -> R {
        let hosts = BTreeSet::from(["player", "store"]);
        let unknown = |host: &str, context: String| {
            Error::new(Kind::Misconfigured(format!("{context} names {host}")))
        };
        f(&RunCheck {
            duration,
            hosts: &hosts,
            unknown: &unknown,
        })
    }

    #[test]
    fn a_rule_of_its_own_has_default_words_no_check_and_no_hold() {
        assert_eq!(Bare.describe(), "a rule of the test's own");
        assert_eq!(Bare.hold_name(), None);
        assert!(with_run(ms(10), |run| Bare.check(run)).is_ok());
        // A closure is a rule: its verdict is the closure's.
        let mut closure = |f: &FrameView<'_>| Verdict::Delay(f.now());
        let detail = FrameDetail::Empty;
        let v = view(&detail, &HEADERS, FrameFlags::default());
        assert_eq!(
            FrameRule::on_frame(&mut closure, &v),
            Verdict::Delay(ms(42))
        );
    }

    #[test]
    fn a_run_check_knows_the_run() {
        with_run(ms(1500), |run| {
            assert_eq!(run.duration(), ms(1500));
            assert!(run.is_host("store") && !run.is_host("stor"));
            let debug = format!("{run:?}");
            assert!(
                debug.contains("1.5s") && debug.contains("\"store\""),
                "{debug}"
            );
            let e = run.misconfigured("lower it");
            assert!(e.is_misconfigured() && e.to_string() == "lower it", "{e}");
            let e = run.after_end("my fault", ms(2000));
            assert!(e.is_misconfigured(), "{e}");
            assert!(
                e.to_string()
                    .starts_with("my fault at 2000ms is after the end of the run (1500ms)"),
                "{e}"
            );
            let e = run.unknown_host("stor", "a frame fault");
            assert_eq!(e.to_string(), "a frame fault names stor");
        });
    }

    #[test]
    fn the_longest_wait_is_a_year_whatever_the_run() {
        assert_eq!(LONGEST_WAIT, Duration::from_secs(31_536_000));
        with_run(Duration::MAX, |run| {
            assert!(run.wait("delay", ms(1)).is_ok());
            assert!(run.wait("delay", LONGEST_WAIT).is_ok());
            let e = run
                .wait("delay", LONGEST_WAIT + NS)
                .expect_err("over a year");
            assert!(
                e.is_misconfigured() && e.to_string().contains("(365 days)"),
                "{e}"
            );
        });
    }

    #[test]
    fn a_wait_is_no_longer_than_the_run() {
        with_run(ms(1000), |run| {
            assert!(run.wait("frame fault delay", ms(500)).is_ok());
            assert!(run.wait("frame fault delay", ms(1000)).is_ok());
            let e = run
                .wait("frame fault delay", ms(1000) + NS)
                .expect_err("past the end");
            assert!(
                e.to_string().contains("longer than the run (1000ms)"),
                "{e}"
            );
        });
    }

    #[test]
    fn a_window_is_not_empty_and_starts_within_the_run() {
        let run = ms(1000);
        assert!(check_window("w", None, run).is_ok());
        assert!(check_window("w", Some((ms(10), ms(20))), run).is_ok());
        let e = check_window("w", Some((ms(20), ms(20))), run).expect_err("empty");
        assert!(e.to_string().contains("is empty"), "{e}");
        assert!(check_window("w", Some((ms(30), ms(20))), run).is_err());
        assert!(check_window("w", Some((ms(1000), ms(2000))), run).is_ok());
        let e = check_window("w", Some((ms(1000) + NS, ms(2000))), run).expect_err("late");
        assert!(e.to_string().starts_with("w window at"), "{e}");
        with_run(run, |r| {
            assert!(r.window("w", Some((ms(5), ms(5)))).is_err());
            assert!(r.window("w", Some((ms(5), ms(6)))).is_ok());
        });
    }

    #[test]
    fn frames_are_counted_from_one() {
        assert!(check_nth("f", None).is_ok());
        assert!(check_nth("f", Some(1)).is_ok());
        let e = check_nth("f", Some(0)).expect_err("nth(0)");
        assert!(
            e.is_misconfigured() && e.to_string().contains("nth(0)"),
            "{e}"
        );
    }
}
