//! Frame faults: rules the wire tap applies to HTTP/2 frames as they leave
//! a host, and frames it injects.
//!
//! TCP is a byte stream, so a frame kept back keeps back every later byte in
//! the same direction of the same connection: a delayed PING ACK also
//! delays the DATA behind it. The tap keeps that true (it releases bytes in
//! order), and the trace shows when each kept-back frame finally left. A
//! frame still kept back when the run ends never left: the end of the trace
//! says so, one `FrameNeverLeft` event per frame.
//!
//! Injected frames go in at a time ([`InjectAt::at`]) or right after a
//! frame a filter matches ([`InjectAt::after`]); held frames leave at a
//! time ([`FrameFault::hold_until`]) or at a named release
//! ([`FrameFault::hold`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::sync::{Mutex, MutexGuard};

use super::builtin::{DelayFrame, DropFrame, HoldNamed, HoldUntil};
use super::rule::{FrameRule, FrameView, RunCheck, Verdict};
use super::{Fault, FaultKind};
use crate::error::{Error, Kind};
use crate::wire::{encode, ErrorCode, FrameType, SettingId};

/// Which frames a frame fault matches. Build with [`Fault::frames`], narrow
/// with the methods below, then pick an action: [`FrameFault::drop`],
/// [`FrameFault::delay`], [`FrameFault::hold_until`], [`FrameFault::hold`];
/// or use it as the trigger of an injection ([`InjectAt::after`]).
#[derive(Debug, Clone, Default)]
#[must_use = "pick an action (drop, delay, hold_until, hold) to get a Fault"]
pub struct FrameFault {
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) kind: Option<FrameType>,
    pub(crate) ack: Option<bool>,
    pub(crate) stream: Option<u32>,
    pub(crate) nth: Option<u32>,
    pub(crate) window: Option<(Duration, Duration)>,
}

/// A frame fault as added to the sim: its filter and its rule; clones
/// share the rule and the match counters.
#[derive(Clone)]
pub(crate) struct RuleEntry {
    pub(crate) filter: FrameFault,
    rule: Arc<Mutex<dyn FrameRule>>,
    /// The rule's [`FrameRule::hold_name`], read once.
    hold: Option<Arc<str>>,
    matched: Arc<AtomicU32>,
    fired: Arc<AtomicU32>,
}

impl std::fmt::Debug for RuleEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What the tap knows about a frame when it asks the filters.
pub(crate) struct FrameInfo<'a> {
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) kind: FrameType,
    pub(crate) ack: bool,
    pub(crate) stream: u32,
    pub(crate) at: Duration,
}

impl RuleEntry {
    fn new(filter: FrameFault, rule: impl FrameRule) -> Self {
        let hold = rule.hold_name().map(Arc::from);
        Self {
            filter,
            rule: Arc::new(Mutex::new(rule)),
            hold,
            matched: Arc::default(),
            fired: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, dyn FrameRule + 'static> {
        // A rule that panicked fails the run anyway; its state is still
        // readable for the end-of-run report.
        self.rule.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the rule does with `view`, if its filter matches it (counting
    /// the match for `nth`) and the rule acts; `None` to ask the next.
    pub(crate) fn verdict(&self, info: &FrameInfo<'_>, view: &FrameView<'_>) -> Option<Verdict> {
        let r = &self.filter;
        if !r.matches(info) {
            return None;
        }
        let n = self.matched.fetch_add(1, Ordering::Relaxed) + 1;
        if r.nth.is_some_and(|want| want != n) {
            return None;
        }
        let verdict = self.lock().on_frame(view);
        if verdict == Verdict::Pass {
            return None;
        }
        self.fired.fetch_add(1, Ordering::Relaxed);
        Some(verdict)
    }

    /// Whether the rule ever acted on a frame.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed) > 0
    }

    /// The named hold the rule uses, if any.
    pub(crate) fn hold_name(&self) -> Option<&str> {
        self.hold.as_deref()
    }

    /// The filter's and the rule's own checks.
    pub(crate) fn check(&self, run: &RunCheck<'_>) -> Result<(), Error> {
        self.filter.check("a frame fault", "frame fault", run)?;
        self.lock().check(run)
    }

    /// The rule in the trace's words, for the "never fired" report.
    pub(crate) fn describe(&self) -> String {
        format!(
            "frame fault: {} {}",
            self.lock().describe(),
            self.filter.describe()
        )
    }
}

impl FrameFault {
    /// Whether `f` meets every condition but [`FrameFault::nth`], which
    /// the caller counts (over the run for a rule, per connection for a
    /// trigger).
    pub(crate) fn matches(&self, f: &FrameInfo<'_>) -> bool {
        self.from.as_deref().is_none_or(|h| h == f.from)
            && self.to.as_deref().is_none_or(|h| h == f.to)
            && self.kind.is_none_or(|k| k == f.kind)
            && self.ack.is_none_or(|a| a == f.ack)
            && self.stream.is_none_or(|s| s == f.stream)
            && self.window.is_none_or(|(a, b)| a <= f.at && f.at < b)
    }

    /// The filter in the trace's words: `HEADERS from player on stream 3`.
    pub(crate) fn describe(&self) -> String {
        let mut text = match (self.kind, self.ack) {
            (Some(k), Some(true)) => format!("{k} ACK"),
            (Some(k), Some(false)) => format!("{k} without ACK"),
            (Some(k), None) => k.to_string(),
            (None, Some(true)) => "a frame with ACK".to_owned(),
            (None, Some(false)) => "a frame without ACK".to_owned(),
            (None, None) => "any frame".to_owned(),
        };
        if let Some(h) = &self.from {
            text += &format!(" from {h}");
        }
        if let Some(h) = &self.to {
            text += &format!(" to {h}");
        }
        if let Some(s) = self.stream {
            text += &format!(" on stream {s}");
        }
        if let Some(n) = self.nth {
            text += &format!(", match #{n}");
        }
        if let Some((a, b)) = self.window {
            let fmt = crate::units::fmt_duration;
            text += &format!(", written in [{}, {})", fmt(a), fmt(b));
        }
        text
    }

    /// Only frames written by host `host`.
    pub fn from(mut self, host: impl Into<String>) -> Self {
        self.from = Some(host.into());
        self
    }

    /// Only frames written to host `host`.
    pub fn to(mut self, host: impl Into<String>) -> Self {
        self.to = Some(host.into());
        self
    }

    /// Only frames of this type (`FrameType::Ping`, `FrameType::WindowUpdate` …).
    pub fn kind(mut self, kind: FrameType) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Only frames whose ACK flag is `ack` (PING and SETTINGS; other frames
    /// have no ACK flag and match `ack(false)`).
    pub fn ack(mut self, ack: bool) -> Self {
        self.ack = Some(ack);
        self
    }

    /// Only frames of stream `id` (0: connection-level frames).
    pub fn stream(mut self, id: u32) -> Self {
        self.stream = Some(id);
        self
    }

    /// Only the `n`-th frame (1-based) that the other conditions match,
    /// counted over the whole run for a rule, and on each connection for the
    /// trigger of an injection ([`InjectAt::after`]).
    pub fn nth(mut self, n: u32) -> Self {
        self.nth = Some(n);
        self
    }

    /// Only frames written in `[from, until)`, *simulated* time.
    pub fn during(mut self, from: Duration, until: Duration) -> Self {
        self.window = Some((from, until));
        self
    }

    /// Removes matching frames from the byte stream. Dropping frames the
    /// peer's HTTP/2 state depends on (HEADERS, SETTINGS) makes the peer see
    /// a protocol error, as it would on a real network that lost them.
    /// Dropping a connection preface's SETTINGS (the first frame of either
    /// end) breaks RFC 9113 §3.4, which h2 does not check (it takes the
    /// next frame as the first, measured): the trace marks the frame
    /// `[dropped, invalid: a connection preface without its SETTINGS (RFC
    /// 9113 §3.4)]`.
    pub fn drop(self) -> Fault {
        self.rule(DropFrame)
    }

    /// Keeps matching frames back for `delay` (*simulated* time); later bytes
    /// in the same direction wait behind them. A delay longer than the run's
    /// duration is an error from [`Sim::run`](crate::Sim::run): use
    /// [`FrameFault::hold`] to keep frames back for good.
    pub fn delay(self, delay: Duration) -> Fault {
        self.rule(DelayFrame(delay))
    }

    /// Keeps matching frames back until `at` (*simulated* time since the
    /// start of the run); later bytes in the same direction wait behind
    /// them. A frame written after `at` passes.
    pub fn hold_until(self, at: Duration) -> Fault {
        self.rule(HoldUntil(at))
    }

    /// Keeps matching frames back until `name` is released: by
    /// [`Fault::release`]`(name).at(t)`, or by a host's code calling
    /// [`Host::release`](crate::Host::release)`(name)`. Later bytes in the
    /// same direction wait behind them. Every connection holding frames
    /// for `name` sends them at the release's *simulated* instant (turmoil
    /// runs hosts in turn, so a release by a host that runs after the
    /// holding one in a step reaches it one tick later); frames written
    /// after the release pass. One release frees every hold of that name.
    ///
    /// The trace shows a held frame as `[held until released]`
    /// ([`Fate::Held`](crate::recorder::event::Fate::Held)), then `released
    /// after <kept>` when it leaves; one never released is reported at the
    /// end of the run as
    /// [`EventKind::FrameNeverLeft`](crate::recorder::event::EventKind::FrameNeverLeft).
    pub fn hold(self, name: impl Into<String>) -> Fault {
        let name: String = name.into();
        self.rule(HoldNamed(name.into()))
    }

    /// Lets `rule` decide what happens to the frames this filter matches
    /// (see [`FrameRule`]: a closure `FnMut(&FrameView<'_>) -> Verdict` is
    /// one). The rule is asked about every matching frame ([`FrameFault::nth`]:
    /// only the n-th); one that returns [`Verdict::Pass`] leaves the frame
    /// to the frame faults added after it. The rule's
    /// [`check`](FrameRule::check) runs when the run starts; a rule that
    /// never acted is reported at the end of the trace with its
    /// [`describe`](FrameRule::describe) words.
    ///
    /// ```
    /// use grpc_chaos::fault::{FrameView, Verdict};
    /// use grpc_chaos::wire::FrameType;
    /// use grpc_chaos::Fault;
    /// // Lose every other PING the player sends.
    /// let mut n = 0u32;
    /// let fault = Fault::frames().from("player").kind(FrameType::Ping).ack(false).rule(
    ///     move |_: &FrameView<'_>| {
    ///         n += 1;
    ///         if n % 2 == 0 { Verdict::Drop } else { Verdict::Pass }
    ///     },
    /// );
    /// # let _ = fault;
    /// ```
    pub fn rule(self, rule: impl FrameRule) -> Fault {
        Fault(FaultKind::Frame(RuleEntry::new(self, rule)))
    }

    /// The filter's own checks: known hosts, a window inside the run, an
    /// `nth` that can match. `what` names it in an unknown-host error (`a
    /// frame fault`), `short` in the others (`frame fault`).
    pub(crate) fn check(&self, what: &str, short: &str, run: &RunCheck<'_>) -> Result<(), Error> {
        for host in self.from.iter().chain(&self.to) {
            if !run.is_host(host) {
                return Err(run.unknown_host(host, what));
            }
        }
        run.window(short, self.window)?;
        super::rule::check_nth(short, self.nth)
    }
}

/// A frame the tap writes into a connection at a time or after a frame,
/// as if `from` had sent it. Build with [`Fault::inject`].
#[derive(Debug, Clone)]
#[must_use = "pick a frame (goaway, rst_stream, ping, settings) and call .at(time) or .after(frames)"]
pub struct Inject {
    from: String,
    to: String,
}

/// An injection waiting for its trigger; finish it with [`InjectAt::at`]
/// or [`InjectAt::after`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) or .after(frames) to get a Fault"]
pub struct InjectAt {
    from: String,
    to: String,
    frame: InjectedFrame,
}

#[derive(Debug, Clone)]
pub(crate) struct InjectedFrame {
    pub(crate) bytes: Vec<u8>,
}

/// What sets an injection off.
#[derive(Debug, Clone)]
pub(crate) enum When {
    /// At this *simulated* time, on every connection then open.
    At(Duration),
    /// Once per connection, right after the first frame (or the `nth`)
    /// this filter matches on it, in either direction.
    After(FrameFault),
}

/// An injection as added to the sim.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) when: When,
    pub(crate) frame: InjectedFrame,
    fired: Arc<AtomicU32>,
}

impl Injection {
    /// Notes that the frame went into a connection.
    pub(crate) fn mark_fired(&self) {
        self.fired.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the frame went into any connection.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed) > 0
    }

    /// The injection in the trace's words, for the "never fired" report.
    pub(crate) fn describe(&self, ended: Duration) -> String {
        let (from, to) = (&self.from, &self.to);
        let fmt = crate::units::fmt_duration;
        match &self.when {
            When::At(at) if *at > ended => format!(
                "frame injected from {from} to {to} at {}: the run ended at {}, before it was due",
                fmt(*at),
                fmt(ended),
            ),
            When::At(at) => format!(
                "frame injected from {from} to {to} at {}: no connection from {from} to {to} was open then",
                fmt(*at),
            ),
            When::After(filter) => format!(
                "frame injected from {from} to {to} after {}: no such frame was written on a connection between {from} and {to}",
                filter.describe()
            ),
        }
    }

    /// The time of an `.at` injection.
    pub(crate) fn at(&self) -> Option<Duration> {
        match self.when {
            When::At(at) => Some(at),
            When::After(_) => None,
        }
    }

    /// The trigger of an `.after` injection.
    pub(crate) fn trigger(&self) -> Option<&FrameFault> {
        match &self.when {
            When::After(filter) => Some(filter),
            When::At(_) => None,
        }
    }
}

impl Inject {
    pub(crate) fn new(from: String, to: String) -> Self {
        Self { from, to }
    }

    fn frame(self, bytes: Vec<u8>) -> InjectAt {
        InjectAt {
            from: self.from,
            to: self.to,
            frame: InjectedFrame { bytes },
        }
    }

    /// GOAWAY (RFC 9113 §6.8) with `code`, `last_stream_id` and `debug`
    /// data.
    pub fn goaway(self, code: ErrorCode, last_stream_id: u32, debug: &[u8]) -> InjectAt {
        self.frame(encode::goaway(last_stream_id, code, debug))
    }

    /// RST_STREAM (RFC 9113 §6.4) on stream `stream` with `code`. Stream 0
    /// is sent as given: the receiver must treat it as a connection error
    /// (h2 answers GOAWAY(PROTOCOL_ERROR)), and the trace shows it as
    /// `RST_STREAM CANCEL, invalid: RST_STREAM on stream 0 (RFC 9113 §6.4)
    /// [injected]`.
    pub fn rst_stream(self, stream: u32, code: ErrorCode) -> InjectAt {
        self.frame(encode::rst_stream(stream, code))
    }

    /// PING (RFC 9113 §6.7) with the given opaque data.
    pub fn ping(self, ack: bool, opaque: [u8; 8]) -> InjectAt {
        self.frame(encode::ping(ack, opaque))
    }

    /// SETTINGS (RFC 9113 §6.5) with `values` in order (the receiver applies
    /// them in order, the last of a duplicated id wins, §6.5.3); at most
    /// 2,730 values (`wire::encode::MAX_SETTINGS`), more are left out. Values
    /// are sent as given, out of range ones included (§6.5.2: the receiver
    /// then fails the connection with PROTOCOL_ERROR or FLOW_CONTROL_ERROR).
    ///
    /// The receiver's HTTP/2 stack applies it and acks it (§6.5.3). The
    /// tap counts the injected frame among `from`'s SETTINGS, so a
    /// `MAX_FRAME_SIZE` in it becomes the limit the tap checks `to`'s frames
    /// against once `to` acks it. `from`'s own stack never sent it, so that
    /// ACK is one it did not expect: h2 answers GOAWAY(PROTOCOL_ERROR)
    /// ("received unexpected settings ack"). To keep the lie hidden, drop
    /// the ACK with a frame fault on `to`'s SETTINGS ACKs (`.nth(2)` when
    /// the injection follows `from`'s first SETTINGS).
    pub fn settings(self, values: &[(SettingId, u32)]) -> InjectAt {
        self.frame(encode::settings(values))
    }

    /// An empty SETTINGS with the ACK flag (RFC 9113 §6.5.3), acking a
    /// SETTINGS frame `from`'s stack never acked: when `to` had none
    /// waiting for an ACK, its stack sees a protocol error (h2 sends
    /// GOAWAY(PROTOCOL_ERROR)). The tap does not count it as `from` having
    /// applied `to`'s settings; `from`'s own ACK still does.
    pub fn settings_ack(self) -> InjectAt {
        self.frame(encode::settings_ack())
    }
}

impl InjectAt {
    /// Writes the frame at `at` (*simulated* time since the start of the
    /// run) on every open connection from `from` to `to`, between two whole
    /// frames of that direction. A time after the end of the run is an
    /// error from [`Sim::run`](crate::Sim::run).
    pub fn at(self, at: Duration) -> Fault {
        self.when(When::At(at))
    }

    /// Writes the frame on each connection between `from` and `to` as soon
    /// as a frame matching `trigger` was written on it, in either
    /// direction; once per connection. [`FrameFault::nth`] counts the
    /// matches on that connection; [`FrameFault::during`] is *simulated*
    /// time. Only frames the hosts' HTTP/2 stacks write count (not
    /// injected ones), whatever the frame faults then do with them.
    ///
    /// In the trigger's direction the frame goes right after the
    /// triggering frame in the byte stream (behind it, if that frame is
    /// kept back). In the other direction the writer of `from` → `to` is
    /// woken at once and puts it between two whole frames: at the same
    /// *simulated* instant, or one tick later when `from`'s host already
    /// ran in this step (turmoil runs hosts in turn).
    ///
    /// A trigger that names a host other than `from` and `to`, or an
    /// unknown one, is an error from [`Sim::run`](crate::Sim::run); an
    /// injection that never fired is reported at the end of the trace.
    ///
    /// ```
    /// use grpc_chaos::Fault;
    /// use grpc_chaos::wire::{ErrorCode, FrameType};
    /// // The store goes away as soon as the player opens stream 3.
    /// let fault = Fault::inject("store", "player")
    ///     .goaway(ErrorCode::NoError, 1, b"")
    ///     .after(Fault::frames().from("player").kind(FrameType::Headers).stream(3));
    /// # let _ = fault;
    /// ```
    pub fn after(self, trigger: FrameFault) -> Fault {
        self.when(When::After(trigger))
    }

    fn when(self, when: When) -> Fault {
        Fault(FaultKind::Inject(Injection {
            from: self.from,
            to: self.to,
            when,
            frame: self.frame,
            fired: Arc::default(),
        }))
    }
}

/// Checks that a release of `name` frees a hold one of `rules` uses;
/// `what` names the release in the error (`Fault::release("x")`).
///
/// # Errors
/// A misconfiguration listing the holds there are.
pub(crate) fn check_release<'a>(
    what: &str,
    name: &str,
    rules: impl IntoIterator<Item = &'a RuleEntry>,
) -> Result<(), Error> {
    let holds: std::collections::BTreeSet<&str> =
        rules.into_iter().filter_map(RuleEntry::hold_name).collect();
    if holds.contains(name) {
        return Ok(());
    }
    let known = if holds.is_empty() {
        "there is none".to_owned()
    } else {
        let quoted: Vec<String> = holds.iter().map(|h| format!("{h:?}")).collect();
        format!("holds: {}", quoted.join(", "))
    };
    Err(Error::new(Kind::Misconfigured(format!(
        "{what} frees nothing: no frame fault holds frames under that name (FrameFault::hold; {known})"
    ))))
}

#[cfg(test)]
mod tests {
    //! What a filter matches and says, how a rule entry counts matches and
    //! firings, the checks before the run, and what an injection says when
    //! it never fired.

    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::{check_release, FrameInfo, Injection, RuleEntry, When};
    use crate::error::{Error, Kind};
    use crate::fault::rule::{FrameView, RunCheck, Verdict};
    use crate::fault::{Fault, FaultKind};
    use crate::recorder::event::{Fate, FrameDetail, FrameFlags};
    use crate::wire::{Direction, ErrorCode, FrameType, SettingId};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A PING ACK from the player to the store on stream 0, written at `at`.
    fn ping_ack(at: Duration) -> FrameInfo<'static> {
        FrameInfo {
            from: "player",
            to: "store",
            kind: FrameType::Ping,
            ack: true,
            stream: 0,
            at,
        }
    }

    fn entry(fault: Fault) -> RuleEntry {
        match fault.0 {
            FaultKind::Frame(entry) => entry,
            other => panic!("not a frame fault: {other:?}"),
        }
    }

    fn injection(fault: Fault) -> Injection {
        match fault.0 {
            FaultKind::Inject(injection) => injection,
            other => panic!("not an injection: {other:?}"),
        }
    }

    /// What `entry` does with a PING ACK written at `at`.
    fn verdict(entry: &RuleEntry, at: Duration) -> Option<Verdict> {
        let detail = FrameDetail::Empty;
        let view = FrameView {
            from: "player",
            to: "store",
            direction: Direction::ClientToServer,
            conn: 1,
            frame: FrameType::Ping,
            flags: FrameFlags::ACK,
            stream: 0,
            len: 8,
            detail: &detail,
            bytes: &[],
            now: at,
            fate: Fate::Passed,
        };
        entry.verdict(&ping_ack(at), &view)
    }

    /// `f` with a run of 1 s between hosts `player` and `store`.
    fn with_run<R>(f: impl FnOnce(&RunCheck<'_>) -> R) -> R {
        let hosts = BTreeSet::from(["player", "store"]);
        let unknown = |host: &str, context: String| {
            Error::new(Kind::Misconfigured(format!("{context} names {host}")))
        };
        f(&RunCheck {
            duration: ms(1000),
            hosts: &hosts,
            unknown: &unknown,
        })
    }

    #[test]
    fn a_filter_matches_only_frames_that_meet_every_condition() {
        let f = ping_ack(ms(10));
        let all = Fault::frames()
            .from("player")
            .to("store")
            .kind(FrameType::Ping)
            .ack(true)
            .stream(0)
            .during(ms(10), ms(20));
        assert!(Fault::frames().matches(&f));
        assert!(all.matches(&f));
        // Each condition alone can refuse it.
        for other in [
            all.clone().from("store"),
            all.clone().to("player"),
            all.clone().kind(FrameType::Settings),
            all.clone().ack(false),
            all.clone().stream(1),
            all.clone().during(ms(11), ms(20)),
            all.clone().during(ms(0), ms(10)),
        ] {
            assert!(!other.matches(&f), "{}", other.describe());
        }
        // The window is [from, until).
        assert!(all.clone().during(ms(10), ms(11)).matches(&f));
        assert!(!all.clone().during(ms(9), ms(10)).matches(&f));
        assert!(all.during(ms(0), ms(11)).matches(&f));
    }

    #[test]
    fn a_filter_says_what_it_matches() {
        assert_eq!(Fault::frames().describe(), "any frame");
        assert_eq!(Fault::frames().ack(true).describe(), "a frame with ACK");
        assert_eq!(Fault::frames().ack(false).describe(), "a frame without ACK");
        let ping = Fault::frames().kind(FrameType::Ping);
        assert_eq!(ping.describe(), "PING");
        assert_eq!(ping.clone().ack(true).describe(), "PING ACK");
        assert_eq!(ping.clone().ack(false).describe(), "PING without ACK");
        let all = ping
            .from("player")
            .to("store")
            .stream(3)
            .nth(2)
            .during(ms(5), ms(1500));
        assert_eq!(
            all.describe(),
            "PING from player to store on stream 3, match #2, written in [5ms, 1500ms)"
        );
    }

    #[test]
    fn a_rule_counts_its_matches_for_nth_and_fires_only_when_it_acts() {
        // Drops the 2nd PING ACK in [0, 50ms).
        let e = entry(
            Fault::frames()
                .kind(FrameType::Ping)
                .during(ms(0), ms(50))
                .nth(2)
                .drop(),
        );
        assert!(!e.fired());
        assert_eq!(verdict(&e, ms(1)), None);
        assert!(!e.fired());
        // Outside the window: not a match, not counted.
        assert_eq!(verdict(&e, ms(60)), None);
        assert_eq!(verdict(&e, ms(2)), Some(Verdict::Drop));
        assert!(e.fired());
        assert_eq!(verdict(&e, ms(3)), None, "only the 2nd");
        // A rule that passes is not a firing; its clones share the counts.
        let mut n = 0;
        let e = entry(Fault::frames().rule(move |_: &FrameView<'_>| {
            n += 1;
            if n == 2 {
                Verdict::Delay(ms(7))
            } else {
                Verdict::Pass
            }
        }));
        let clone = e.clone();
        assert_eq!(verdict(&e, ms(1)), None);
        assert!(!clone.fired());
        assert_eq!(verdict(&clone, ms(1)), Some(Verdict::Delay(ms(7))));
        assert!(e.fired());
    }

    #[test]
    fn a_rule_entry_says_its_rule_and_its_filter() {
        let e = entry(Fault::frames().kind(FrameType::Ping).hold("pings"));
        assert_eq!(e.hold_name(), Some("pings"));
        let words = "frame fault: hold until release \"pings\" PING";
        assert_eq!(e.describe(), words);
        assert_eq!(format!("{e:?}"), words);
        let e = entry(Fault::frames().delay(ms(5)));
        assert_eq!(e.hold_name(), None);
        assert_eq!(e.describe(), "frame fault: delay by 5ms any frame");
    }

    #[test]
    fn a_frame_faults_checks_name_what_to_change() {
        with_run(|run| {
            assert!(entry(Fault::frames().from("player").to("store").drop())
                .check(run)
                .is_ok());
            let e = entry(Fault::frames().to("stor").drop()).check(run);
            assert_eq!(
                e.expect_err("unknown").to_string(),
                "a frame fault names stor"
            );
            let e = entry(Fault::frames().from("playr").drop()).check(run);
            assert_eq!(
                e.expect_err("unknown").to_string(),
                "a frame fault names playr"
            );
            let e = entry(Fault::frames().during(ms(5), ms(5)).drop()).check(run);
            assert!(e
                .expect_err("empty")
                .to_string()
                .contains("frame fault window"));
            let e = entry(Fault::frames().nth(0).drop()).check(run);
            assert!(e.expect_err("nth(0)").to_string().contains("nth(0)"));
            // The rule's own check runs too.
            let e = entry(Fault::frames().delay(ms(2000))).check(run);
            assert!(e
                .expect_err("too long")
                .to_string()
                .contains("longer than the run"));
        });
    }

    #[test]
    fn a_release_must_free_a_hold() {
        let holds = [
            entry(Fault::frames().hold("b")),
            entry(Fault::frames().drop()),
            entry(Fault::frames().hold("a")),
        ];
        assert!(check_release("Fault::release(\"a\")", "a", &holds).is_ok());
        let e = check_release("Fault::release(\"c\")", "c", &holds).expect_err("no c");
        assert!(e.is_misconfigured());
        assert_eq!(
            e.to_string(),
            "Fault::release(\"c\") frees nothing: no frame fault holds frames under that name \
             (FrameFault::hold; holds: \"a\", \"b\")"
        );
        let e = check_release("x", "c", &holds[1..2]).expect_err("none");
        assert!(
            e.to_string().ends_with("(FrameFault::hold; there is none)"),
            "{e}"
        );
    }

    #[test]
    fn an_injection_knows_its_trigger_and_whether_it_fired() {
        let at = injection(
            Fault::inject("store", "player")
                .ping(false, [1; 8])
                .at(ms(5)),
        );
        assert_eq!(at.at(), Some(ms(5)));
        assert!(at.trigger().is_none());
        assert!(!at.fired());
        at.mark_fired();
        assert!(at.fired());
        let after = injection(
            Fault::inject("store", "player")
                .settings_ack()
                .after(Fault::frames().stream(3)),
        );
        assert_eq!(after.at(), None);
        assert_eq!(after.trigger().map(|t| t.stream), Some(Some(3)));
        assert!(matches!(after.when, When::After(_)));
    }

    #[test]
    fn an_injection_that_never_fired_says_why() {
        let at = injection(Fault::inject("store", "player").settings_ack().at(ms(5)));
        assert_eq!(
            at.describe(ms(4)),
            "frame injected from store to player at 5ms: the run ended at 4ms, before it was due"
        );
        for ended in [ms(5), ms(6)] {
            assert_eq!(
                at.describe(ended),
                "frame injected from store to player at 5ms: no connection from store to player \
                 was open then"
            );
        }
        let after = injection(
            Fault::inject("store", "player")
                .settings_ack()
                .after(Fault::frames().kind(FrameType::Headers).stream(3)),
        );
        assert_eq!(
            after.describe(ms(9)),
            "frame injected from store to player after HEADERS on stream 3: no such frame was \
             written on a connection between store and player"
        );
    }

    #[test]
    fn each_injected_frame_is_the_frame_named() {
        let bytes = |f: Fault| injection(f).frame.bytes;
        let i = || Fault::inject("store", "player");
        assert_eq!(
            bytes(i().goaway(ErrorCode::NoError, 3, b"x").at(ms(1))),
            crate::wire::encode::goaway(3, ErrorCode::NoError, b"x")
        );
        assert_eq!(
            bytes(i().rst_stream(5, ErrorCode::Cancel).at(ms(1))),
            crate::wire::encode::rst_stream(5, ErrorCode::Cancel)
        );
        assert_eq!(
            bytes(i().ping(true, [2; 8]).at(ms(1))),
            crate::wire::encode::ping(true, [2; 8])
        );
        let values = [(SettingId::MaxConcurrentStreams, 1)];
        assert_eq!(
            bytes(i().settings(&values).at(ms(1))),
            crate::wire::encode::settings(&values)
        );
        assert_eq!(
            bytes(i().settings_ack().at(ms(1))),
            crate::wire::encode::settings_ack()
        );
        let inj = injection(i().settings_ack().at(ms(1)));
        assert_eq!((inj.from.as_str(), inj.to.as_str()), ("store", "player"));
    }
}
