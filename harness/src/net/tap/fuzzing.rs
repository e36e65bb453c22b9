//! The wire tap under arbitrary input, for the `tap` fuzz target
//! (`fuzz/fuzz_targets/tap.rs`) and its regression tests: both directions
//! of one connection fed arbitrary octets, under frame rules the input
//! chooses (built-ins and a rule of the test's own returning every
//! [`Verdict`]), with the simulated clock moved and holds released in
//! between, then drained to the end or cut off by a gone socket.
//!
//! Driven like the proptests (`proptests.rs`): `DirectionTap::on_bytes`
//! called directly, no runtime, the writer task's draining
//! (`writer::write_due`) done here in a few lines. After every step it
//! checks what the tap promises:
//!
//! - every octet written is on the wire, queued, pending (the start of a
//!   frame still coming), in a frame recorded as dropped, or in a frame
//!   recorded as replaced (counted by what arrived instead);
//! - what leaves is the sender's stream in order: each queued piece ends
//!   no earlier than the one before, and is the sender's own octets at
//!   that place unless a rule replaced a frame there;
//! - one `Frame` event per frame a rule was asked about, and a rule gets
//!   every frame's octets (9 + its length);
//! - at the end, with every hold released and the clock past every
//!   delay: nothing queued, nothing still waiting in the connection's
//!   state, a `FrameReleased` for each frame recorded as kept back;
//!   with the socket gone instead: the frames recorded as undelivered
//!   are exactly those not on the wire.
//!
//! A broken promise panics, with what broke; so does the tap itself.

#![cfg(any(test, fuzzing))]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::{lock_conn, DirectionTap, Out, SharedConn, TapEnv};
use crate::fault::FramePlan;
use crate::fault::{Fault, FaultKind, FrameRule, FrameView, Verdict};
use crate::recorder::event::{EventKind, Fate};
use crate::wire::{encode, frame::PREFACE, Direction, FrameType};

const C2S: Direction = Direction::ClientToServer;
const S2C: Direction = Direction::ServerToClient;
/// The two holds the rules may name.
const HOLDS: [&str; 2] = ["a", "b"];
/// Past every delay and every `hold_until` the input can ask for.
const THE_END: Duration = Duration::from_secs(3600);

/// What a run did, for the tests to check that an input reached what it
/// was made for.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Per side (client→server, server→client): each frame's recorded fate.
    pub(crate) fates: [Vec<Fate>; 2],
    /// Per side: `FrameReleased` events.
    pub(crate) released: [usize; 2],
    /// Per side: frames recorded as undelivered.
    pub(crate) undelivered: [usize; 2],
}

/// Runs the tap on `data` and checks its promises; panics on a broken one.
pub(crate) fn run(data: &[u8]) -> Summary {
    let mut input = Input(data);
    let flags = input.byte();
    let mut fuzz = TapFuzz::new(&mut input);
    // A valid start on request, so that most inputs reach the frame rules.
    if flags & 1 != 0 {
        let mut start = PREFACE.to_vec();
        start.extend(encode::settings(&[]));
        fuzz.write(C2S, &start);
    }
    if flags & 2 != 0 {
        fuzz.write(S2C, &encode::settings(&[]));
    }
    while !input.0.is_empty() {
        let op = input.byte();
        match op & 3 {
            0 | 1 => {
                let n = usize::from(input.byte());
                let bytes = input.take(n);
                fuzz.write(if op & 1 == 0 { C2S } else { S2C }, bytes);
            }
            2 => fuzz.advance(ms(u64::from(input.byte()) * 2)),
            _ => fuzz.release(HOLDS[usize::from(op >> 2) % HOLDS.len()]),
        }
        fuzz.check();
    }
    if flags & 4 != 0 {
        fuzz.socket_gone();
    } else {
        fuzz.run_out();
    }
    fuzz.summary()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn side(direction: Direction) -> usize {
    usize::from(direction == S2C)
}

/// The input, read from the front; past its end it reads zeros.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }
}

/// What a frame rule of the test's own returns, in turn, frame after
/// frame; it names its hold, so that a release frees it.
struct Script {
    verdicts: Vec<u8>,
    next: usize,
    hold: Arc<str>,
    junk: Vec<u8>,
}

impl FrameRule for Script {
    fn on_frame(&mut self, frame: &FrameView<'_>) -> Verdict {
        let Some(&v) = self.verdicts.get(self.next % self.verdicts.len().max(1)) else {
            return Verdict::Pass;
        };
        self.next += 1;
        let arg = v >> 3;
        match v & 7 {
            0 => Verdict::Pass,
            1 => Verdict::Drop,
            2 => Verdict::Delay(ms(u64::from(arg) * 5)),
            3 => Verdict::HoldUntil(ms(u64::from(arg) * 5)),
            4 => Verdict::Hold(self.hold.clone()),
            5 => Verdict::Replace(Bytes::new()),
            6 => {
                // The frame with one octet flipped, or cut short.
                let mut bytes = frame.bytes().to_vec();
                let at = usize::from(arg) % bytes.len().max(1);
                if arg & 1 == 0 {
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= 0xff;
                    }
                } else {
                    bytes.truncate(at);
                }
                Verdict::Replace(bytes.into())
            }
            _ => {
                // Whole frames, or octets that are not frames at all.
                let mut bytes = if arg & 1 == 0 {
                    encode::ping(arg & 2 != 0, [arg; 8])
                } else {
                    self.junk.clone()
                };
                if arg & 4 != 0 {
                    bytes.extend_from_slice(frame.bytes());
                }
                Verdict::Replace(bytes.into())
            }
        }
    }

    fn hold_name(&self) -> Option<&str> {
        Some(&self.hold)
    }
}

/// The frames each direction's rules were asked about: their octets'
/// length, and the payload length the header gives.
type Seen = Arc<Mutex<[Vec<(usize, u32)>; 2]>>;

/// Up to 4 frame faults from the input, behind an observer that passes
/// every frame and notes its length.
fn faults(input: &mut Input<'_>, seen: &Seen) -> Vec<Fault> {
    let observer = {
        let seen = Arc::clone(seen);
        Fault::frames().rule(move |f: &FrameView<'_>| {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen[side(f.direction())].push((f.bytes().len(), f.len()));
            Verdict::Pass
        })
    };
    let mut faults = vec![observer];
    for _ in 0..input.byte() % 5 {
        let (filter, arg, action) = (input.byte(), input.byte(), input.byte());
        let mut f = Fault::frames();
        if filter & 0xf < 10 {
            f = f.kind(FrameType::from(filter & 0xf));
        }
        match (filter >> 4) & 3 {
            1 => f = f.from("player"),
            2 => f = f.from("store"),
            _ => {}
        }
        if filter & 0x40 != 0 {
            f = f.nth(u32::from(arg % 4) + 1);
        }
        if filter & 0x80 != 0 {
            f = f.ack(arg & 0x10 != 0);
        }
        let hold = HOLDS[usize::from(action >> 7)];
        let wait = ms(u64::from(arg) * 5);
        faults.push(match action & 7 {
            0 => f.drop(),
            1 => f.delay(wait),
            2 => f.hold_until(wait),
            3 => f.hold(hold),
            _ => {
                let n = usize::from((action >> 3) & 7) + 1;
                f.rule(Script {
                    verdicts: input.take(n).to_vec(),
                    next: 0,
                    hold: hold.into(),
                    junk: input.take(usize::from(arg % 24)).to_vec(),
                })
            }
        });
    }
    faults
}

/// Both directions of connection 1 between client `player` and server
/// `store`, and what went through each.
struct TapFuzz {
    env: TapEnv,
    conn: SharedConn,
    taps: [DirectionTap; 2],
    queues: [VecDeque<Out>; 2],
    /// What each sender wrote.
    written: [Vec<u8>; 2],
    /// Octets on the wire, and where the last piece ended in the
    /// sender's stream.
    left: [(u64, u64); 2],
    /// `FrameReleased` events owed: kept-back pieces that left.
    kept_left: [usize; 2],
    seen: Seen,
    /// The events recorded so far, as far as the checks need them.
    summary: Summary,
}

impl TapFuzz {
    fn new(input: &mut Input<'_>) -> Self {
        let seen = Seen::default();
        let mut frame = Vec::new();
        for f in faults(input, &seen) {
            if let FaultKind::Frame(r) = f.0 {
                frame.push(r);
            }
        }
        let env = TapEnv {
            recorder: Arc::default(),
            frames: Arc::new(FramePlan::new(frame, Vec::new())),
            links: Arc::default(),
            problems: Arc::default(),
            wire_tap: true,
            show_credentials: false,
        };
        let conn = SharedConn::default();
        let tap = |direction, from: &str, to: &str| {
            let (from, to) = (from.into(), to.into());
            DirectionTap::new(env.clone(), 1, direction, from, to, conn.clone())
        };
        let taps = [tap(C2S, "player", "store"), tap(S2C, "store", "player")];
        env.recorder.set_driver_clock(Duration::ZERO);
        Self {
            env,
            conn,
            taps,
            queues: Default::default(),
            written: Default::default(),
            left: Default::default(),
            kept_left: Default::default(),
            seen,
            summary: Summary::default(),
        }
    }

    fn write(&mut self, direction: Direction, bytes: &[u8]) {
        let s = side(direction);
        self.written[s].extend_from_slice(bytes);
        self.taps[s].on_bytes(Bytes::copy_from_slice(bytes), &mut self.queues[s]);
        self.drain();
    }

    fn advance(&mut self, by: Duration) {
        let now = self.env.recorder.now();
        self.env.recorder.set_driver_clock(now + by);
        self.drain();
    }

    /// What a timed `Fault::release` does to the tap: the hold's frames
    /// may leave and their writers wake (a name no rule holds under is
    /// the run's misconfiguration, of no interest here).
    fn release_hold(&self, hold: &str) {
        let what = format!("release({hold:?})");
        if self.env.frames.release(&what, hold).is_ok() {
            self.env.frames.wake_released();
        }
    }

    fn release(&mut self, hold: &str) {
        self.release_hold(hold);
        self.drain();
    }

    /// What the writer task does when it wakes: every due piece leaves,
    /// in order, up to the first that is not due.
    fn drain(&mut self) {
        let now = self.env.recorder.now();
        for s in 0..2 {
            let (tap, queue) = (&mut self.taps[s], &mut self.queues[s]);
            while queue.front().is_some_and(|o| tap.is_due(o, || now)) {
                let Some(item) = queue.pop_front() else { break };
                if let Some(kept) = &item.kept {
                    tap.record_release(kept);
                    self.kept_left[s] += 1;
                }
                self.left[s].0 += item.bytes.len() as u64;
                self.left[s].1 = item.end;
                tap.wrote(&item);
            }
        }
    }

    fn summary(mut self) -> Summary {
        self.take_events();
        self.summary
    }

    /// Moves the events recorded since the last call into `summary`.
    /// Taken, not copied: a copy of every event at every step was most
    /// of a fuzz execution's time.
    fn take_events(&mut self) {
        for e in self.env.recorder.take_events() {
            let Some(s) = (0..2).find(|&s| self.taps[s].from() == e.host) else {
                continue;
            };
            let summary = &mut self.summary;
            match e.kind {
                EventKind::Frame { fate, .. } => summary.fates[s].push(fate.get()),
                EventKind::FrameReleased { .. } => summary.released[s] += 1,
                EventKind::FramesUndelivered { frames, more, .. } => {
                    summary.undelivered[s] += frames.len() + more as usize;
                }
                _ => {}
            }
        }
    }

    /// The promises that hold after every step.
    fn check(&mut self) {
        self.take_events();
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for s in 0..2 {
            // No injections here: every Frame event is a frame written.
            let (seen, fates) = (&seen[s], &self.summary.fates[s]);
            assert_eq!(
                seen.len(),
                fates.len(),
                "side {s}: one Frame event per frame"
            );
            // Octets accounted for, as a signed sum: taken off what was written.
            let mut gone: i128 = 0;
            let mut replaced = 0;
            for (&(octets, len), fate) in seen.iter().zip(fates) {
                assert_eq!(
                    octets as u64,
                    u64::from(len) + 9,
                    "side {s}: a rule gets the whole frame"
                );
                match fate {
                    Fate::Dropped => gone += octets as i128,
                    Fate::Replaced { arrived, .. } => {
                        gone += octets as i128 - i128::from(*arrived);
                        replaced += 1;
                    }
                    _ => {}
                }
            }
            let tap = &self.taps[s];
            let queued: usize = self.queues[s].iter().map(|o| o.bytes.len()).sum();
            let accounted = i128::from(self.left[s].0) + queued as i128 + tap.pending.len() as i128;
            assert_eq!(
                accounted + gone,
                self.written[s].len() as i128,
                "side {s}: octets on the wire + queued + pending + dropped + replaced = written"
            );
            assert_eq!(
                tap.base + tap.pending.len() as u64,
                self.written[s].len() as u64,
                "side {s}: pending ends where the writes end"
            );
            // In order, and the sender's own octets but where replaced.
            let mut end = self.left[s].1;
            let mut foreign = 0;
            for o in &self.queues[s] {
                assert!(o.end >= end, "side {s}: a piece goes back in the stream");
                assert!(
                    o.end <= tap.base,
                    "side {s}: a piece ends past what was taken"
                );
                end = o.end;
                let at = usize::try_from(o.end).unwrap_or(usize::MAX);
                let own = at
                    .checked_sub(o.bytes.len())
                    .and_then(|start| self.written[s].get(start..at));
                if own != Some(&o.bytes[..]) {
                    foreign += 1;
                }
            }
            assert!(
                foreign <= replaced,
                "side {s}: {foreign} pieces not the sender's octets"
            );
        }
    }

    /// Every hold released, the clock past every wait: everything leaves.
    fn run_out(&mut self) {
        for hold in HOLDS {
            self.release_hold(hold);
        }
        self.env.recorder.set_driver_clock(THE_END);
        self.drain();
        self.check();
        for s in 0..2 {
            self.taps[s].finish();
            assert!(self.queues[s].is_empty(), "side {s}: a piece never left");
        }
        self.take_events();
        for s in 0..2 {
            let kept = self.summary.fates[s]
                .iter()
                .filter(|f| {
                    matches!(
                        f,
                        Fate::Delayed { .. } | Fate::Held | Fate::Behind { .. } | Fate::BehindHeld
                    )
                })
                .count();
            let released = self.summary.released[s];
            assert_eq!(
                released, self.kept_left[s],
                "side {s}: one release per kept piece"
            );
            // A replaced frame may wait too: it is kept without a fate
            // that says so (the fate says it was replaced).
            assert!(
                released >= kept,
                "side {s}: {kept} kept back, {released} released"
            );
        }
        let waiting = lock_conn(&self.conn).tap.still_waiting().count();
        assert_eq!(waiting, 0, "frames still waiting after all left");
    }

    /// The socket is gone with pieces still queued: the frames not on the
    /// wire are recorded as undelivered, and only those.
    fn socket_gone(&mut self) {
        for s in 0..2 {
            let owed: Vec<u64> = self.taps[s]
                .in_flight
                .frames()
                .map(|&(end, ..)| end)
                .collect();
            let on_wire = self.left[s].1;
            assert!(
                owed.iter().all(|&end| end > on_wire),
                "side {s}: a frame on the wire is still owed"
            );
            self.taps[s].record_undelivered();
            self.take_events();
            let recorded = self.summary.undelivered[s];
            assert_eq!(recorded, owed.len(), "side {s}: undelivered frames");
            let queued_frames = self.queues[s].iter().filter(|o| o.end > on_wire).count();
            assert!(
                owed.len() <= queued_frames,
                "side {s}: {} owed, {queued_frames} queued pieces",
                owed.len()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::run;
    use crate::recorder::event::Fate;
    use crate::wire::testing::{unhex, H2_C2S, H2_S2C};

    /// Input ops writing `bytes` on side `op` (0: client→server, 1: back),
    /// 255 octets per write.
    fn writes(op: u8, bytes: &[u8]) -> Vec<u8> {
        let mut ops = Vec::new();
        for chunk in bytes.chunks(255) {
            ops.extend([op, chunk.len() as u8]);
            ops.extend_from_slice(chunk);
        }
        ops
    }

    /// Flags, then two rules: PINGs delayed by 40 ms; every other frame
    /// asked of a rule of the test's own that passes one and replaces the
    /// next with its octets, the third flipped.
    fn two_rules(flags: u8) -> Vec<u8> {
        let script = 4 | (1 << 3);
        vec![flags, 2, 0x06, 8, 1, 0x0a, 0, script, 0, 6 | (2 << 3)]
    }

    #[test]
    fn empty_and_short_inputs() {
        // Flags 1 and 2 write a valid start: one SETTINGS frame a side.
        let none = || [vec![], vec![]];
        let settings = || [vec![Fate::Passed], vec![Fate::Passed]];
        for (data, fates) in [
            (&[][..], none()),
            (&[0], none()),
            (&[0xf8; 40], none()),
            (&[7], settings()),
            (&[3, 0], settings()),
        ] {
            assert_eq!(run(data).fates, fates, "{data:?}");
        }
    }

    #[test]
    fn a_recorded_exchange_under_a_delay_and_replacements() {
        let mut data = two_rules(0);
        data.extend(writes(0, &unhex(H2_C2S)));
        data.extend(writes(1, &unhex(H2_S2C)));
        let summary = run(&data);
        for (s, fates) in summary.fates.iter().enumerate() {
            assert!(fates.len() >= 10, "side {s}: {fates:?}");
            let delayed = fates
                .iter()
                .filter(|f| matches!(f, Fate::Delayed { .. }))
                .count();
            let replaced = fates
                .iter()
                .filter(|f| matches!(f, Fate::Replaced { .. }))
                .count();
            assert!(delayed >= 1, "side {s}: {fates:?}");
            assert!(replaced >= 4, "side {s}: {fates:?}");
            assert!(summary.released[s] >= delayed, "side {s}: {summary:?}");
        }
    }

    #[test]
    fn a_gone_socket_owes_the_delayed_frames() {
        let mut data = two_rules(4);
        data.extend(writes(0, &unhex(H2_C2S)));
        let summary = run(&data);
        // The client's first PING and every frame behind it never left.
        let waiting = summary.fates[0]
            .iter()
            .skip_while(|f| !matches!(f, Fate::Delayed { .. }))
            .count();
        assert!(waiting >= 2, "{summary:?}");
        assert_eq!(summary.undelivered[0], waiting, "{summary:?}");
        assert_eq!(summary.released, [0, 0]);
    }
}
