//! Flow-control stalls (RFC 9113 §6.9), derived from the recorded frames:
//! [`Trace::stalls`]. The rule is documented on [`Stall`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use super::Trace;
use crate::recorder::event::{EventKind, Fate, FrameDetail};
use crate::units::fmt_duration;
use crate::wire::SettingId;

/// The initial size of every flow-control window, octets (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;

/// A stream whose sender had no flow-control window left, found by
/// [`Trace::stalls`].
///
/// **The rule.** A stream is *stalled* from the DATA frame that left its
/// sender with no window (the stream's or the connection's) while the
/// stream stays open in that direction, until the receiver's credit opens
/// the window again ([`StallEnd::Reopened`]), the stream closes
/// ([`StallEnd::Closed`]: END_STREAM, RST_STREAM), or the run ends
/// ([`StallEnd::Open`]). A stall starts only at a DATA frame that used up
/// the window, so a stream that simply has nothing to send is never
/// reported.
///
/// **The windows** are replayed from the recorded frames as the *sender*
/// sees them (RFC 9113 §6.9):
/// - every window starts at 65,535 octets (§6.9.2);
/// - SETTINGS_INITIAL_WINDOW_SIZE from the receiver moves the window of
///   every open stream by the difference (§6.9.2), never the connection's;
/// - a DATA frame spends its octets from both the stream's and the
///   connection's window (§6.9.1);
/// - a WINDOW_UPDATE from the receiver gives its increment back to the
///   stream, or on stream 0 to the connection (§6.9).
///
/// **Timing.** A frame from the receiver counts when it *left* the
/// receiver: a frame a fault dropped never counts; a frame kept back counts
/// when it was released; and, because the wire tap keeps TCP order, a frame
/// written behind a kept-back frame counts no earlier than that frame's
/// release. Link latency is not subtracted, so the replayed window is never
/// smaller than the sender's real one: a stall found is real, and it ends
/// (`until`) when the credit left the receiver, one link latency before the
/// sender can use it. A very short stall may be missed. Flow control counts
/// the whole DATA payload, padding included; the trace keeps the data
/// octets without padding, which errs the same (harmless) way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stall {
    /// The connection (`c1` is 1).
    pub conn: u32,
    /// The stream id.
    pub stream: u32,
    /// The host whose DATA was blocked.
    pub sender: String,
    /// The host whose window it was (it grants credit with WINDOW_UPDATE).
    pub receiver: String,
    /// When the sender's DATA used up the window, *simulated* time since the
    /// start of the run.
    pub since: Duration,
    /// When the stall ended (see [`Stall::end`]), *simulated* time since the
    /// start of the run; the end of the run for a stall still open then.
    pub until: Duration,
    /// How it ended.
    pub end: StallEnd,
    /// Which window ran out.
    pub window: Window,
    /// DATA octets the sender had sent on the stream when it stalled.
    pub sent: u64,
    /// WINDOW_UPDATEs for this stream or its connection that the receiver
    /// wrote and a frame fault kept back during the stall.
    pub held_updates: usize,
    /// For a *starved* stream (see below): the other streams of the
    /// connection that held its window when the starvation began, with the
    /// DATA octets each had sent and not yet had back, by stream id; empty
    /// for a stall of the stream's own sending.
    ///
    /// **Starved.** A stream is starved when it is open in the sender's
    /// direction (its HEADERS sent, no END_STREAM yet), its own window is
    /// open, and it sends nothing because *other* streams used up the
    /// connection window (RFC 9113 §6.9.1: DATA needs both windows). It is
    /// reported from the later of its opening and the connection window
    /// running out, until credit reopens the connection window, if the
    /// stream then sends DATA (it had something to send); a starvation
    /// still going when the run ended is reported too ([`StallEnd::Open`]),
    /// though the stream may have had nothing to send, and so is one still
    /// going when RST_STREAM (from either side, a client's cancel
    /// included) closes the stream, or ended by credit at that very
    /// instant ([`StallEnd::Closed`]: h2 writes a cancelled stream's
    /// connection credit just before the RST_STREAM). One that ends with
    /// the sender's END_STREAM without DATA is not: it needed no window.
    /// The
    /// octets a stream holds are its DATA minus the connection credit, the
    /// credit given back in the order the DATA was sent (as a receiver
    /// that reads in order does).
    pub held_by: Vec<(u32, u64)>,
}

/// How a [`Stall`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallEnd {
    /// The receiver's credit (WINDOW_UPDATE, or a larger
    /// `INITIAL_WINDOW_SIZE`) left the receiver and opened the window.
    Reopened,
    /// The stream closed first (END_STREAM from the sender, or RST_STREAM
    /// from either side).
    Closed,
    /// Still stalled when the run ended.
    Open,
}

/// The flow-control window that ran out (RFC 9113 §6.9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The stream's own window.
    Stream,
    /// The connection's window, shared by all its streams.
    Connection,
}

impl Stall {
    /// How long the sender had no window, *simulated* time.
    pub fn duration(&self) -> Duration {
        self.until.saturating_sub(self.since)
    }
}

impl fmt::Display for Stall {
    /// `gateway→player c1 s1 stalled 9877ms (123ms–10000ms): stream window
    /// used up after 2097152 bytes, 1 WINDOW_UPDATE held`; a starved one:
    /// `gateway→player c1 s3 starved 195ms (5ms–200ms): other streams hold
    /// the connection window (s1 65535 bytes), s3 had sent 0 bytes`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.held_by.is_empty() {
            let held: Vec<String> = self
                .held_by
                .iter()
                .map(|(stream, octets)| format!("s{stream} {octets} bytes"))
                .collect();
            write!(
                f,
                "{}→{} c{} s{} starved {} ({}–{}): other streams hold the connection window ({}), s{} had sent {} bytes",
                self.sender,
                self.receiver,
                self.conn,
                self.stream,
                fmt_duration(self.duration()),
                fmt_duration(self.since),
                fmt_duration(self.until),
                held.join(", "),
                self.stream,
                self.sent,
            )?;
            return self.fmt_tail(f);
        }
        write!(
            f,
            "{}→{} c{} s{} stalled {} ({}–{}): {} window used up after {} bytes",
            self.sender,
            self.receiver,
            self.conn,
            self.stream,
            fmt_duration(self.duration()),
            fmt_duration(self.since),
            fmt_duration(self.until),
            match self.window {
                Window::Stream => "stream",
                Window::Connection => "connection",
            },
            self.sent,
        )?;
        self.fmt_tail(f)
    }
}

impl Stall {
    /// The held updates and how it ended, after the main words.
    fn fmt_tail(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.held_updates {
            0 => {}
            1 => f.write_str(", 1 WINDOW_UPDATE held")?,
            n => write!(f, ", {n} WINDOW_UPDATEs held")?,
        }
        match self.end {
            StallEnd::Reopened => Ok(()),
            StallEnd::Closed => f.write_str(", then the stream closed"),
            StallEnd::Open => f.write_str(", still stalled when the run ended"),
        }
    }
}

impl Trace {
    /// Every flow-control stall longer than `threshold` (*simulated* time),
    /// in order of start. A stream is stalled from the DATA frame that used
    /// up its sender's window until the receiver's credit reopens it, the
    /// stream closes, or the run ends; see [`Stall`] for the rule and its
    /// source (RFC 9113 §6.9). Stalls are found in the frames the wire tap
    /// recorded: a run with [`SimBuilder::wire_tap`](crate::SimBuilder::wire_tap)
    /// `(false)` has none, and this list is empty.
    ///
    /// ```
    /// # fn check(trace: &grpc_chaos::Trace) {
    /// use std::time::Duration;
    /// for stall in trace.stalls(Duration::from_secs(1)) {
    ///     println!("{stall}"); // gateway→player c1 s1 stalled 9877ms (…)
    /// }
    /// # }
    /// ```
    pub fn stalls(&self, threshold: Duration) -> Vec<Stall> {
        let mut found = replay(self);
        found.retain(|s| s.duration() > threshold);
        found
    }
}

/// One direction of one connection: the connection and the sending host.
type DirKey = (u32, String);

/// What one frame means to the window of one direction.
#[derive(Debug)]
enum Step {
    /// The sender wrote DATA.
    Data { stream: u32, len: i64, end: bool },
    /// The sender wrote HEADERS that leave the stream open.
    Opened { stream: u32 },
    /// The sender ended the stream with END_STREAM on HEADERS.
    Closed { stream: u32 },
    /// RST_STREAM from either side closed the stream in this direction.
    Reset { stream: u32 },
    /// The receiver's WINDOW_UPDATE reached the sender.
    Credit { stream: u32, increment: i64 },
    /// The receiver's SETTINGS_INITIAL_WINDOW_SIZE reached the sender.
    Initial { size: i64 },
}

/// A WINDOW_UPDATE a fault kept back: written, released (if ever).
struct Held {
    stream: u32,
    written: Duration,
    released: Option<Duration>,
}

#[derive(Default)]
struct Stream {
    window: i64,
    sent: u64,
    closed: bool,
    /// Its HEADERS went out in this direction (it may send DATA).
    opened: bool,
    stall: Option<(Duration, Window, u64)>,
    /// Starved since, with who held the connection window then.
    starved: Option<(Duration, Vec<(u32, u64)>)>,
    /// Starvations that ended with credit, waiting for this stream's DATA
    /// to show it had something to send.
    unproven: Vec<Stall>,
}

impl Stream {
    /// Its starvation on the connection window, if one is going, ended at
    /// `at` as `end`.
    fn end_starvation(
        &mut self,
        key: &DirKey,
        receiver: &str,
        stream: u32,
        at: Duration,
        end: StallEnd,
    ) -> Option<Stall> {
        let (since, held_by) = self.starved.take()?;
        let open = (since, Window::Connection, self.sent);
        let mut ended = stall(key, receiver, stream, open, at, end);
        ended.held_by = held_by;
        Some(ended)
    }
}

struct Dir {
    receiver: String,
    conn_window: i64,
    initial: i64,
    streams: BTreeMap<u32, Stream>,
    held: Vec<Held>,
    /// DATA octets not yet given back by connection credit, by stream, in
    /// the order sent.
    in_flight: VecDeque<(u32, i64)>,
}

impl Dir {
    fn new(receiver: &str) -> Self {
        Self {
            receiver: receiver.to_owned(),
            conn_window: DEFAULT_WINDOW,
            initial: DEFAULT_WINDOW,
            streams: BTreeMap::new(),
            held: Vec::new(),
            in_flight: VecDeque::new(),
        }
    }

    /// Gives `increment` octets of connection credit back, oldest DATA
    /// first.
    fn give_back(&mut self, mut increment: i64) {
        while increment > 0 {
            let Some(front) = self.in_flight.front_mut() else {
                return;
            };
            let take = front.1.min(increment);
            front.1 -= take;
            increment -= take;
            if front.1 == 0 {
                self.in_flight.pop_front();
            }
        }
    }

    /// Octets held per stream other than `except`, by stream id.
    fn holders(&self, except: u32) -> Vec<(u32, u64)> {
        let mut by: BTreeMap<u32, u64> = BTreeMap::new();
        for (stream, octets) in &self.in_flight {
            if *stream != except {
                *by.entry(*stream).or_default() += u64::try_from(*octets).unwrap_or(0);
            }
        }
        by.into_iter().collect()
    }

    fn stream(&mut self, id: u32) -> &mut Stream {
        let initial = self.initial;
        self.streams.entry(id).or_insert_with(|| Stream {
            window: initial,
            ..Stream::default()
        })
    }
}

/// Replays every direction's windows; returns every stall, in start order.
fn replay(trace: &Trace) -> Vec<Stall> {
    let mut dirs: HashMap<DirKey, Dir> = HashMap::new();
    let mut steps: Vec<(Duration, usize, DirKey, Step)> = Vec::new();
    let mut releases = release_times(trace);
    // When the bytes of each direction can leave, at the earliest: TCP
    // order puts every frame behind a kept-back one. `None`: never (a frame
    // ahead was kept back past the end of the run).
    let mut clock: HashMap<DirKey, Option<Duration>> = HashMap::new();
    for (i, e) in trace.events().iter().enumerate() {
        let EventKind::Frame {
            conn,
            to,
            stream,
            flags,
            detail,
            fate,
            ..
        } = &e.kind
        else {
            continue;
        };
        let me: DirKey = (*conn, e.host.to_string());
        let peer: DirKey = (*conn, to.to_string());
        dirs.entry(me.clone()).or_insert_with(|| Dir::new(to));
        dirs.entry(peer.clone())
            .or_insert_with(|| Dir::new(&e.host));
        let left = clock.entry(me.clone()).or_insert(Some(Duration::ZERO));
        let left_at = match **fate {
            // Never reaches the receiver.
            Fate::Dropped | Fate::Lost | Fate::LostBehind | Fate::Swallowed => continue,
            Fate::Delayed { .. }
            | Fate::Held
            | Fate::Behind { .. }
            | Fate::BehindHeld
            | Fate::Partitioned
            | Fate::Paused => {
                let released = releases.get_mut(&me).and_then(VecDeque::pop_front);
                *left = match (*left, released) {
                    (Some(l), Some(r)) => Some(l.max(r)),
                    _ => None,
                };
                if matches!(detail, FrameDetail::WindowUpdate { .. }) {
                    if let Some(dir) = dirs.get_mut(&peer) {
                        dir.held.push(Held {
                            stream: *stream,
                            written: e.at(),
                            released: *left,
                        });
                    }
                }
                *left
            }
            // A raw peer's frame: known only once read, so no earlier. A
            // replaced frame counts as the frame sent: the flow control of
            // what arrived instead is not followed.
            Fate::Passed | Fate::Injected | Fate::ReadAtReceiver | Fate::Replaced { .. } => {
                left.map(|l| l.max(e.at()))
            }
        };
        // The order of steps at one instant: the trace's. `seq` only
        // restates it (the sort is stable and steps are pushed in trace
        // order), so `i + 2` for `i * 2` and `seq * 1` for the reset's
        // `seq + 1` below are equivalent mutants.
        let (seq, stream) = (i * 2, *stream);
        match detail {
            FrameDetail::Data { len, .. } => {
                let (len, end) = (i64::from(*len), flags.end_stream());
                steps.push((e.at(), seq, me, Step::Data { stream, len, end }));
            }
            FrameDetail::Headers(_) if flags.end_stream() => {
                steps.push((e.at(), seq, me, Step::Closed { stream }));
            }
            FrameDetail::Headers(_) => {
                steps.push((e.at(), seq, me, Step::Opened { stream }));
            }
            FrameDetail::RstStream { .. } => {
                steps.push((e.at(), seq, me, Step::Reset { stream }));
                if let Some(at) = left_at {
                    steps.push((at, seq + 1, peer, Step::Reset { stream }));
                }
            }
            FrameDetail::WindowUpdate { increment } => {
                let increment = i64::from(*increment);
                if let Some(at) = left_at {
                    steps.push((at, seq, peer, Step::Credit { stream, increment }));
                }
            }
            FrameDetail::Settings { values } => {
                // The last one wins (RFC 9113 §6.5.3).
                let size = values
                    .iter()
                    .rev()
                    .find(|(id, _)| *id == SettingId::InitialWindowSize)
                    .map(|(_, size)| i64::from(*size));
                if let (Some(size), Some(at)) = (size, left_at) {
                    steps.push((at, seq, peer, Step::Initial { size }));
                }
            }
            _ => {}
        }
    }
    steps.sort_by_key(|(at, seq, _, _)| (*at, *seq));
    let mut stalls = Vec::new();
    for (at, _, key, step) in steps {
        if let Some(dir) = dirs.get_mut(&key) {
            apply(dir, &key, at, step, &mut stalls);
        }
    }
    for (key, dir) in &mut dirs {
        for (id, s) in &mut dir.streams {
            if let (Some((since, held_by)), false) = (s.starved.take(), s.closed) {
                let mut open = stall(
                    key,
                    &dir.receiver,
                    *id,
                    (since, Window::Connection, s.sent),
                    trace.ended_at(),
                    StallEnd::Open,
                );
                open.held_by = held_by;
                stalls.push(open);
            }
            if let Some(open) = s.stall.take() {
                stalls.push(stall(
                    key,
                    &dir.receiver,
                    *id,
                    open,
                    trace.ended_at(),
                    StallEnd::Open,
                ));
            }
        }
    }
    for s in &mut stalls {
        let key: DirKey = (s.conn, s.sender.clone());
        if let Some(dir) = dirs.get(&key) {
            s.held_updates = dir
                .held
                .iter()
                .filter(|h| h.stream == 0 || h.stream == s.stream)
                .filter(|h| h.written < s.until && h.released.is_none_or(|r| r > s.since))
                .count();
        }
    }
    stalls.sort_by(|a, b| {
        (a.since, a.conn, a.stream, &a.sender).cmp(&(b.since, b.conn, b.stream, &b.sender))
    });
    stalls
}

/// The release time of every kept-back frame, per direction, in order (the
/// tap releases them in the order it kept them).
fn release_times(trace: &Trace) -> HashMap<DirKey, VecDeque<Duration>> {
    let mut out: HashMap<DirKey, VecDeque<Duration>> = HashMap::new();
    for e in trace.events() {
        if let EventKind::FrameReleased { conn, .. } = &e.kind {
            out.entry((*conn, e.host.to_string()))
                .or_default()
                .push_back(e.at());
        }
    }
    out
}

fn apply(dir: &mut Dir, key: &DirKey, at: Duration, step: Step, stalls: &mut Vec<Stall>) {
    apply_own(dir, key, at, step, stalls);
    starve(dir, key, at);
}

/// Starts the starvation of every open stream that other streams keep
/// from sending (see [`Stall::held_by`]), and ends them when the
/// connection window is open again.
fn starve(dir: &mut Dir, key: &DirKey, at: Duration) {
    let ids: Vec<u32> = dir.streams.keys().copied().collect();
    if dir.conn_window > 0 {
        for id in ids {
            let receiver = dir.receiver.clone();
            let s = dir.stream(id);
            if let Some((since, held_by)) = s.starved.take() {
                let mut ended = stall(
                    key,
                    &receiver,
                    id,
                    (since, Window::Connection, s.sent),
                    at,
                    StallEnd::Reopened,
                );
                ended.held_by = held_by;
                s.unproven.push(ended);
            }
        }
        return;
    }
    for id in ids {
        let held_by = dir.holders(id);
        let s = dir.stream(id);
        let waiting = s.opened && !s.closed && s.window > 0;
        if waiting && s.stall.is_none() && s.starved.is_none() && !held_by.is_empty() {
            s.starved = Some((at, held_by));
        }
    }
}

fn apply_own(dir: &mut Dir, key: &DirKey, at: Duration, step: Step, stalls: &mut Vec<Stall>) {
    let receiver = dir.receiver.clone();
    match step {
        Step::Opened { stream } => {
            dir.stream(stream).opened = true;
        }
        Step::Data { stream, len, end } => {
            let conn_window = {
                dir.conn_window -= len;
                dir.conn_window
            };
            if len > 0 {
                dir.in_flight.push_back((stream, len));
            }
            let s = dir.stream(stream);
            // It sent: the starvations before are proven (it had data).
            stalls.append(&mut s.unproven);
            stalls.extend(s.end_starvation(key, &receiver, stream, at, StallEnd::Reopened));
            if let Some(open) = s.stall.take() {
                // DATA went out, so the window was open after all.
                stalls.push(stall(key, &receiver, stream, open, at, StallEnd::Reopened));
            }
            s.window -= len;
            s.sent += u64::try_from(len).unwrap_or(0);
            if end {
                s.closed = true;
            } else if !s.closed && (s.window <= 0 || conn_window <= 0) {
                let which = if s.window <= 0 {
                    Window::Stream
                } else {
                    Window::Connection
                };
                s.stall = Some((at, which, s.sent));
            }
        }
        Step::Closed { stream } => {
            let s = dir.stream(stream);
            s.closed = true;
            // Trailers without DATA: it had nothing to send (h2 writes
            // trailers only after the stream's queued DATA), so it needed
            // no window.
            s.starved = None;
            s.unproven.clear();
            if let Some(open) = s.stall.take() {
                stalls.push(stall(key, &receiver, stream, open, at, StallEnd::Closed));
            }
        }
        Step::Reset { stream } => {
            let s = dir.stream(stream);
            s.closed = true;
            // A reset says nothing about what the stream had to send: a
            // starvation still going is reported, ended with the stream
            // (as one still going at the end of the run is). So is one the
            // credit ended at this very instant: the sender had no time to
            // use it (h2 writes a cancelled stream's connection credit in
            // the cancel's own write, WINDOW_UPDATE first; seen). One the
            // credit ended earlier with no DATA after stays unproven.
            for mut ended in s.unproven.drain(..).filter(|u| u.until == at) {
                ended.end = StallEnd::Closed;
                stalls.push(ended);
            }
            stalls.extend(s.end_starvation(key, &receiver, stream, at, StallEnd::Closed));
            if let Some(open) = s.stall.take() {
                stalls.push(stall(key, &receiver, stream, open, at, StallEnd::Closed));
            }
        }
        Step::Credit {
            stream: 0,
            increment,
        } => {
            dir.conn_window += increment;
            dir.give_back(increment);
            reopen(dir, key, at, stalls);
        }
        Step::Credit { stream, increment } => {
            let s = dir.stream(stream);
            if !s.closed {
                s.window += increment;
            }
            reopen(dir, key, at, stalls);
        }
        Step::Initial { size } => {
            let delta = size - dir.initial;
            dir.initial = size;
            for s in dir.streams.values_mut().filter(|s| !s.closed) {
                s.window += delta;
            }
            reopen(dir, key, at, stalls);
        }
    }
}

/// Ends the stalls of every stream whose window is open again.
fn reopen(dir: &mut Dir, key: &DirKey, at: Duration, stalls: &mut Vec<Stall>) {
    let conn_window = dir.conn_window;
    for (id, s) in &mut dir.streams {
        if s.stall.is_some() && s.window > 0 && conn_window > 0 {
            if let Some(open) = s.stall.take() {
                stalls.push(stall(key, &dir.receiver, *id, open, at, StallEnd::Reopened));
            }
        }
    }
}

fn stall(
    key: &DirKey,
    receiver: &str,
    stream: u32,
    (since, window, sent): (Duration, Window, u64),
    until: Duration,
    end: StallEnd,
) -> Stall {
    Stall {
        conn: key.0,
        stream,
        sender: key.1.clone(),
        receiver: receiver.to_owned(),
        since,
        until,
        end,
        window,
        sent,
        held_updates: 0,
        held_by: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Stall, StallEnd, Window};
    use crate::recorder::event::{
        Event, EventKind, Fate, FrameDetail, FrameFlags, HeaderFields, ShownHeader,
    };
    use crate::trace::query::Trace;
    use crate::wire::{BlockKind, ErrorCode, FrameType, SettingId};

    const S: &str = "server";
    const C: &str = "client";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Builds a trace of one connection (c1) from frames written by `S` and
    /// `C`, straight from the typed fields: no word of a render goes in, so
    /// these tests show the detector reads types, not text.
    struct Script {
        events: Vec<Event>,
    }

    impl Script {
        fn new() -> Self {
            Self { events: Vec::new() }
        }

        fn frame(
            mut self,
            at: u64,
            from: &str,
            stream: u32,
            (frame, flags, detail): (FrameType, FrameFlags, FrameDetail),
            fate: Fate,
        ) -> Self {
            let to = if from == S { C } else { S };
            self.events.push(Event::new(
                ms(at),
                from,
                EventKind::Frame {
                    conn: 1,
                    to: to.into(),
                    stream,
                    frame,
                    flags,
                    detail,
                    fate: fate.into(),
                    noise: false,
                },
            ));
            self
        }

        fn data(self, at: u64, stream: u32, len: u32) -> Self {
            self.frame(at, S, stream, data(len, false), Fate::Passed)
        }

        fn update(self, at: u64, stream: u32, increment: u32, fate: Fate) -> Self {
            let update = (
                FrameType::WindowUpdate,
                FrameFlags::NONE,
                FrameDetail::WindowUpdate { increment },
            );
            self.frame(at, C, stream, update, fate)
        }

        fn released(
            mut self,
            at: u64,
            from: &str,
            stream: u32,
            frame: FrameType,
            since: u64,
        ) -> Self {
            let to = if from == S { C } else { S };
            self.events.push(Event::new(
                ms(at),
                from,
                EventKind::FrameReleased {
                    conn: 1,
                    to: to.into(),
                    stream,
                    frame,
                    kept: ms(at - since),
                },
            ));
            self
        }

        fn trace(mut self, ended: u64) -> Trace {
            self.events.sort_by_key(|e| e.at());
            Trace::new(0, vec![C.into(), S.into()], self.events, ms(ended))
        }
    }

    fn data(len: u32, end_stream: bool) -> (FrameType, FrameFlags, FrameDetail) {
        let flags = FrameFlags::NONE.with(FrameFlags::END_STREAM, end_stream);
        (
            FrameType::Data,
            flags,
            FrameDetail::Data {
                len,
                compressed_flag: None,
            },
        )
    }

    fn headers(
        kind: BlockKind,
        field: (ShownHeader, &str),
    ) -> (FrameType, FrameFlags, FrameDetail) {
        let block = HeaderFields::new(kind, [field]);
        let flags = FrameFlags::END_HEADERS;
        (FrameType::Headers, flags, FrameDetail::Headers(block))
    }

    fn settings(values: &[(SettingId, u32)]) -> (FrameType, FrameFlags, FrameDetail) {
        let values = values.into();
        let detail = FrameDetail::Settings { values };
        (FrameType::Settings, FrameFlags::NONE, detail)
    }

    fn held(until: u64) -> Fate {
        Fate::Delayed { until: ms(until) }
    }

    /// 65,535 octets on stream 1: the default stream window, used up at
    /// 3 ms (the connection got a large window first).
    fn fill_default(script: Script) -> Script {
        fill(script.update(0, 0, 1_000_000, Fate::Passed))
    }

    fn fill(script: Script) -> Script {
        script
            .frame(
                1,
                C,
                1,
                headers(BlockKind::Request, (ShownHeader::Path, "/p")),
                Fate::Passed,
            )
            .frame(
                2,
                S,
                1,
                headers(BlockKind::Response, (ShownHeader::Status, "200")),
                Fate::Passed,
            )
            .data(2, 1, 16_384)
            .data(2, 1, 16_384)
            .data(3, 1, 16_384)
            .data(3, 1, 16_383)
    }

    #[test]
    fn held_update_stalls_the_stream_until_it_is_released() {
        let trace = fill_default(Script::new())
            .update(2, 1, 40_000, held(500))
            .released(500, C, 1, FrameType::WindowUpdate, 2)
            .data(501, 1, 100)
            .trace(600);
        let stalls = trace.stalls(ms(100));
        assert_eq!(
            stalls,
            vec![Stall {
                conn: 1,
                stream: 1,
                sender: S.into(),
                receiver: C.into(),
                since: ms(3),
                until: ms(500),
                end: StallEnd::Reopened,
                window: Window::Stream,
                sent: 65_535,
                held_updates: 1,
                held_by: Vec::new(),
            }]
        );
        assert_eq!(stalls[0].duration(), ms(497));
        assert_eq!(
            stalls[0].to_string(),
            "server→client c1 s1 stalled 497ms (3ms–500ms): stream window used up after 65535 bytes, 1 WINDOW_UPDATE held"
        );
        // The threshold is exclusive.
        assert!(trace.stalls(ms(497)).is_empty());
        assert_eq!(trace.stalls(ms(496)).len(), 1);
    }

    #[test]
    fn a_frame_behind_a_held_one_counts_at_its_release() {
        // The PING ACK is held; the WINDOW_UPDATE written after it passes
        // the rules but leaves only when the PING does (TCP order).
        let trace = fill_default(Script::new())
            .frame(
                4,
                C,
                0,
                (
                    FrameType::Ping,
                    FrameFlags::ACK,
                    FrameDetail::Ping { payload: [0; 8] },
                ),
                held(300),
            )
            .update(5, 1, 40_000, Fate::Passed)
            .released(300, C, 0, FrameType::Ping, 4)
            .trace(400);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!((stalls[0].since, stalls[0].until), (ms(3), ms(300)));
        assert_eq!(stalls[0].held_updates, 0, "the update itself was not held");
    }

    #[test]
    fn a_dropped_update_never_reopens_the_window() {
        let trace = fill_default(Script::new())
            .update(4, 1, 40_000, Fate::Dropped)
            .trace(1_000);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1);
        assert_eq!(stalls[0].end, StallEnd::Open);
        assert_eq!(stalls[0].until, ms(1_000), "the end of the run");
        assert!(stalls[0]
            .to_string()
            .ends_with("still stalled when the run ended"));
    }

    #[test]
    fn the_connection_window_can_be_the_one_that_runs_out() {
        // A 1 MiB stream window, but the connection keeps its 65,535.
        let trace = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[
                (SettingId::EnablePush, 0),
                (SettingId::InitialWindowSize, 1_048_576),
            ]),
            Fate::Passed,
        ))
        // Stream credit does not reopen a connection window at 0.
        .update(100, 1, 5_000, Fate::Passed)
        .update(200, 0, 10_000, Fate::Passed)
        .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1);
        assert_eq!(stalls[0].window, Window::Connection);
        assert_eq!(
            (stalls[0].until, stalls[0].end),
            (ms(200), StallEnd::Reopened)
        );
    }

    #[test]
    fn a_larger_initial_window_reopens_open_streams() {
        let trace = fill_default(Script::new())
            .frame(
                50,
                C,
                0,
                settings(&[(SettingId::InitialWindowSize, 131_070)]),
                Fate::Passed,
            )
            .update(50, 0, 1_000_000, Fate::Passed)
            .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!(
            (stalls[0].until, stalls[0].end),
            (ms(50), StallEnd::Reopened)
        );
    }

    /// A new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window
    /// by the difference (RFC 9113 §6.9.2): to 1 octet left after 65,534
    /// more, then 1 short.
    #[test]
    fn a_new_initial_window_adds_the_difference() {
        let trace = fill_default(Script::new())
            .frame(
                50,
                C,
                0,
                settings(&[(SettingId::InitialWindowSize, 131_070)]),
                Fate::Passed,
            )
            .data(60, 1, 65_534)
            .data(70, 1, 2)
            .trace(300);
        let stalls: Vec<_> = trace
            .stalls(Duration::ZERO)
            .iter()
            .map(|s| (s.since, s.until, s.end))
            .collect();
        assert_eq!(
            stalls,
            [
                (ms(3), ms(50), StallEnd::Reopened),
                (ms(70), ms(300), StallEnd::Open)
            ]
        );
    }

    #[test]
    fn a_reset_ends_the_stall() {
        let trace = fill_default(Script::new())
            .frame(
                70,
                C,
                1,
                (
                    FrameType::RstStream,
                    FrameFlags::NONE,
                    FrameDetail::RstStream {
                        code: ErrorCode::Cancel,
                    },
                ),
                Fate::Passed,
            )
            .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1);
        assert_eq!((stalls[0].until, stalls[0].end), (ms(70), StallEnd::Closed));
    }

    fn rst_stream() -> (FrameType, FrameFlags, FrameDetail) {
        let code = ErrorCode::Cancel;
        let detail = FrameDetail::RstStream { code };
        (FrameType::RstStream, FrameFlags::NONE, detail)
    }

    /// h2 gives a reset stream's connection credit back in the same write:
    /// RST_STREAM, then WINDOW_UPDATE on stream 0, at one instant. The
    /// trace's order decides: the stream was closed when the credit came,
    /// whatever the reset's place (odd or even) among the events.
    #[test]
    fn a_reset_then_credit_at_one_instant_ends_the_stall_as_closed() {
        for pad in [false, true] {
            let mut script = Script::new();
            if pad {
                let push = settings(&[(SettingId::EnablePush, 0)]);
                script = script.frame(0, S, 0, push, Fate::Passed);
            }
            let window = settings(&[(SettingId::InitialWindowSize, 1_048_576)]);
            let trace = fill(script.frame(0, C, 0, window, Fate::Passed))
                .frame(200, C, 1, rst_stream(), Fate::Passed)
                .update(200, 0, 10_000, Fate::Passed)
                .trace(300);
            let stalls = trace.stalls(Duration::ZERO);
            assert_eq!(stalls.len(), 1, "{stalls:?}");
            assert_eq!(stalls[0].window, Window::Connection);
            assert_eq!(
                (stalls[0].until, stalls[0].end),
                (ms(200), StallEnd::Closed),
                "pad {pad}"
            );
        }
    }

    /// A stall counts the kept-back WINDOW_UPDATEs that could have ended
    /// it: on its stream or the connection, written before it ended.
    #[test]
    fn a_stall_counts_the_held_updates_of_its_stream_and_connection_only() {
        let trace = fill_default(Script::new())
            // Released as the stall began: it kept nothing back.
            .update(1, 0, 1, held(3))
            .released(3, C, 0, FrameType::WindowUpdate, 1)
            // Another stream's: not counted.
            .update(10, 3, 1_000, held(50))
            .released(50, C, 3, FrameType::WindowUpdate, 10)
            // The connection's, written during the stall: counted.
            .update(20, 0, 1_000, held(60))
            .released(60, C, 0, FrameType::WindowUpdate, 20)
            .update(30, 0, 1_000, held(70))
            .released(70, C, 0, FrameType::WindowUpdate, 30)
            // The credit that ends the stall at 100 ms.
            .update(100, 1, 40_000, Fate::Passed)
            // Written as it ended: too late to end it.
            .update(100, 0, 1_000, held(200))
            .released(200, C, 0, FrameType::WindowUpdate, 100)
            .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!(
            (stalls[0].until, stalls[0].end),
            (ms(100), StallEnd::Reopened)
        );
        assert_eq!(stalls[0].held_updates, 2, "{stalls:?}");
    }

    #[test]
    fn a_trace_that_opens_with_a_reset_has_no_stall() {
        let trace = Script::new()
            .frame(0, C, 1, rst_stream(), Fate::Passed)
            .trace(10);
        assert!(trace.stalls(Duration::ZERO).is_empty());
    }

    /// The stall detector reads the typed fields only: trailers with
    /// END_STREAM close the stalled stream (the flag, not any text of the
    /// block), the same block without it does not.
    #[test]
    fn the_stall_detector_reads_types_not_words() {
        let trailers = |end_stream: bool| {
            let (frame, flags, detail) =
                headers(BlockKind::Trailers, (ShownHeader::GrpcStatus, "0"));
            (
                frame,
                flags.with(FrameFlags::END_STREAM, end_stream),
                detail,
            )
        };
        let closed = fill_default(Script::new())
            .frame(80, S, 1, trailers(true), Fate::Passed)
            .trace(300);
        let stalls = closed.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!((stalls[0].until, stalls[0].end), (ms(80), StallEnd::Closed));
        let open = fill_default(Script::new())
            .frame(80, S, 1, trailers(false), Fate::Passed)
            .trace(300);
        let stalls = open.stalls(Duration::ZERO);
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!((stalls[0].until, stalls[0].end), (ms(300), StallEnd::Open));
    }

    /// Stream 1 uses up the connection window (its own is 1 MiB); stream
    /// 3, opened after, sends nothing until the connection credit comes,
    /// then sends at once: it was starved, held off by stream 1's 65,535
    /// octets.
    #[test]
    fn a_stream_kept_off_by_the_connection_window_is_starved() {
        let open = || headers(BlockKind::Response, (ShownHeader::Status, "200"));
        let trace = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[(SettingId::InitialWindowSize, 1_048_576)]),
            Fate::Passed,
        ))
        .frame(
            4,
            C,
            3,
            headers(BlockKind::Request, (ShownHeader::Path, "/w")),
            Fate::Passed,
        )
        .frame(5, S, 3, open(), Fate::Passed)
        .update(200, 0, 70_000, Fate::Passed)
        .data(201, 3, 100)
        .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        let starved: Vec<&Stall> = stalls.iter().filter(|s| s.stream == 3).collect();
        assert_eq!(starved.len(), 1, "{stalls:?}");
        let s3 = starved[0];
        assert_eq!(
            (s3.since, s3.until, s3.end),
            (ms(5), ms(200), StallEnd::Reopened)
        );
        assert_eq!(s3.held_by, vec![(1, 65_535)]);
        assert_eq!(
            s3.to_string(),
            "server→client c1 s3 starved 195ms (5ms–200ms): other streams hold the connection window (s1 65535 bytes), s3 had sent 0 bytes"
        );
        // Stream 1's own stall is the connection window too, held by no one else.
        let s1: Vec<&Stall> = stalls.iter().filter(|s| s.stream == 1).collect();
        assert_eq!(s1.len(), 1, "{stalls:?}");
        assert!(s1[0].held_by.is_empty());
    }

    /// A starvation still going when the stream is reset, by the client
    /// (its cancel reaching the sender) or by the sender itself, happened:
    /// it is reported as ended with the stream, the same as one still
    /// going when the run ends; only END_STREAM without DATA shows the
    /// stream had nothing to send. h2 gives a cancelled stream's
    /// connection credit back in the cancel's own write, WINDOW_UPDATE
    /// first (seen): credit at the reset's instant came too late to use.
    #[test]
    fn a_starved_stream_reset_while_starved_is_reported() {
        for (from, until, credit) in [(C, 200, None), (S, 210, None), (C, 200, Some(200))] {
            let trace = starved_s3(credit)
                .frame(until, from, 3, rst_stream(), Fate::Passed)
                .trace(300);
            let stalls = trace.stalls(Duration::ZERO);
            let s3: Vec<&Stall> = stalls.iter().filter(|s| s.stream == 3).collect();
            let case = format!("reset by {from}, credit {credit:?}");
            assert_eq!(s3.len(), 1, "{case}: {stalls:?}");
            assert_eq!(
                (s3[0].since, s3[0].until, s3[0].end),
                (ms(5), ms(until), StallEnd::Closed),
                "{case}"
            );
            assert_eq!(s3[0].held_by, vec![(1, 65_535)]);
            assert!(
                s3[0]
                    .to_string()
                    .ends_with("s3 had sent 0 bytes, then the stream closed"),
                "{}",
                s3[0]
            );
        }
    }

    /// Credit that came before the reset, with no DATA in between, shows
    /// nothing: the stream may have had nothing to send.
    #[test]
    fn a_starvation_the_credit_ended_before_the_reset_stays_unproven() {
        let trace = starved_s3(Some(150))
            .frame(200, C, 3, rst_stream(), Fate::Passed)
            .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert!(stalls.iter().all(|s| s.stream != 3), "{stalls:?}");
    }

    /// Stream 1 uses up the connection window at 3 ms; stream 3 is
    /// answered at 5 ms and sends nothing; connection credit at `credit`.
    fn starved_s3(credit: Option<u64>) -> Script {
        let script = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[(SettingId::InitialWindowSize, 1_048_576)]),
            Fate::Passed,
        ))
        .frame(
            4,
            C,
            3,
            headers(BlockKind::Request, (ShownHeader::Path, "/w")),
            Fate::Passed,
        )
        .frame(
            5,
            S,
            3,
            headers(BlockKind::Response, (ShownHeader::Status, "200")),
            Fate::Passed,
        );
        match credit {
            Some(at) => script.update(at, 0, 70_000, Fate::Passed),
            None => script,
        }
    }

    /// Starved: a stream the server answered, with window of its own
    /// left. Not a stream whose own window is shut (s7), nor one the server
    /// has not answered (s9); an empty DATA (s3) holds no octet of the
    /// connection window.
    #[test]
    fn only_an_answered_stream_with_its_own_window_left_is_starved() {
        let request = || headers(BlockKind::Request, (ShownHeader::Path, "/w"));
        let response = || headers(BlockKind::Response, (ShownHeader::Status, "200"));
        // Streams start with no window; the client gives each but s7 some.
        let mut script = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[(SettingId::InitialWindowSize, 0)]),
            Fate::Passed,
        ))
        .update(1, 1, 1_048_576, Fate::Passed);
        for id in [3, 5, 7, 9] {
            script = script.frame(1, C, id, request(), Fate::Passed);
            if id != 7 {
                script = script.update(1, id, 1_048_576, Fate::Passed);
            }
            if id != 9 {
                script = script.frame(1, S, id, response(), Fate::Passed);
            }
        }
        // s1 uses up the connection window at 3 ms; no credit follows.
        let trace = script.data(2, 3, 0).trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        let streams: Vec<u32> = stalls.iter().map(|s| s.stream).collect();
        assert_eq!(streams, [1, 3, 5], "{stalls:?}");
        assert!(stalls.iter().all(|s| s.end == StallEnd::Open));
        for starved in &stalls[1..] {
            assert_eq!(starved.since, ms(3));
            assert_eq!(starved.held_by, vec![(1, 65_535)], "{starved:?}");
        }
    }

    /// A stream that closes without DATA needed no window: not starved.
    #[test]
    fn a_stream_with_nothing_to_send_is_not_starved() {
        let trace = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[(SettingId::InitialWindowSize, 1_048_576)]),
            Fate::Passed,
        ))
        .frame(
            5,
            S,
            3,
            headers(BlockKind::Response, (ShownHeader::Status, "200")),
            Fate::Passed,
        )
        .update(200, 0, 70_000, Fate::Passed)
        .frame(
            201,
            S,
            3,
            {
                let (frame, flags, detail) =
                    headers(BlockKind::Trailers, (ShownHeader::GrpcStatus, "0"));
                (frame, flags.with(FrameFlags::END_STREAM, true), detail)
            },
            Fate::Passed,
        )
        .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        assert!(stalls.iter().all(|s| s.stream != 3), "{stalls:?}");
    }

    #[test]
    fn a_stream_that_ends_on_its_last_octet_is_not_stalled() {
        let trace = Script::new()
            .data(1, 1, 32_768)
            .frame(1, S, 1, data(32_767, true), Fate::Passed)
            .trace(1_000);
        assert!(trace.stalls(Duration::ZERO).is_empty());
    }

    #[test]
    fn a_stream_with_window_left_is_not_stalled() {
        let trace = Script::new()
            .data(1, 1, 1_000)
            .update(2, 1, 1_000, held(900))
            .released(900, C, 1, FrameType::WindowUpdate, 2)
            .trace(1_000);
        assert!(trace.stalls(Duration::ZERO).is_empty());
    }

    /// Connection credit gives back the oldest DATA first, and only as many
    /// octets as it credits: 30,000 octets of credit free 30,000 of stream
    /// 1's first 65,535, so when stream 1 has sent 30,000 more the window
    /// is held by 35,535 + 30,000 of its octets.
    #[test]
    fn connection_credit_frees_the_oldest_data_first() {
        let open = || headers(BlockKind::Response, (ShownHeader::Status, "200"));
        let trace = fill(Script::new().frame(
            0,
            C,
            0,
            settings(&[(SettingId::InitialWindowSize, 1_048_576)]),
            Fate::Passed,
        ))
        .update(100, 0, 30_000, Fate::Passed)
        .data(101, 1, 30_000)
        .frame(
            104,
            C,
            3,
            headers(BlockKind::Request, (ShownHeader::Path, "/w")),
            Fate::Passed,
        )
        .frame(105, S, 3, open(), Fate::Passed)
        .update(200, 0, 70_000, Fate::Passed)
        .data(201, 3, 100)
        .trace(300);
        let stalls = trace.stalls(Duration::ZERO);
        let s3: Vec<&Stall> = stalls.iter().filter(|s| s.stream == 3).collect();
        assert_eq!(s3.len(), 1, "{stalls:?}");
        assert_eq!((s3[0].since, s3[0].until), (ms(105), ms(200)));
        assert_eq!(s3[0].held_by, vec![(1, 65_535)]);
    }
}
