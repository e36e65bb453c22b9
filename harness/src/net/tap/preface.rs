//! RFC 9113 §3.4: each endpoint's connection preface ends with (client) or
//! is (server) a SETTINGS frame, which MUST be the first frame it sends. A
//! frame rule that drops that SETTINGS, or puts frames in its place that do
//! not start with a SETTINGS, leaves the receiver a preface that breaks the
//! rule. h2 0.4.20 does not check it — its server reads the 24-octet magic
//! (`server.rs`, `ReadPreface`) and then takes any frame, and its client
//! takes any first frame (code; seen in `tests/tests/wire/preface_settings.rs`)
//! — so the trace says it. What takes the SETTINGS' place counts: a
//! SETTINGS a rule put there, or one an injection it set off or a
//! connection policy sent right behind it (a proxy's own SETTINGS, as the
//! stream limit of `policy/middlebox_streams.rs` sends), keeps the preface
//! whole. Delaying the SETTINGS keeps it first: no rule is broken. A
//! frame the harness writes itself (`Fault::inject`, a policy) before the
//! sender's SETTINGS must be a SETTINGS too, and nothing may go before a
//! client's magic.

use super::{policy::Asked, DirectionTap};
use crate::fault::Injection;
use crate::recorder::event::{Fate, FrameFate};
use crate::wire::{frame::PREFACE, Detail, Direction, Frame, FrameType};

/// The rule broken when no SETTINGS takes the preface SETTINGS' place:
/// shown in the fate's brackets (`[dropped, invalid: …]`).
pub(super) const WITHOUT: &str = "a connection preface without its SETTINGS (RFC 9113 §3.4)";

/// The rule the first frame a rule put in the preface SETTINGS' place
/// breaks, when it is not a SETTINGS.
pub(super) const IN_PLACE: &str = "the first frame, not the preface's SETTINGS (RFC 9113 §3.4)";

/// The rule a frame the harness writes (injected, or sent by a policy)
/// before the client's 24-octet magic breaks: the magic MUST come first.
pub(super) const BEFORE_MAGIC: &str = "sent before the client's connection preface (RFC 9113 §3.4)";

/// What a frame the harness writes first into a direction goes before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Before {
    /// The client's magic: any frame breaks the preface.
    Magic,
    /// The sender's preface SETTINGS: only a SETTINGS without ACK may
    /// stand first.
    Settings,
}

/// The rule a frame the harness writes first breaks, with `broken` (the
/// rule its own decode found, if any).
pub(super) fn before(frame: &Frame, what: Before, broken: Option<String>) -> Option<String> {
    match what {
        Before::Settings => in_place(frame, broken),
        Before::Magic => Some(match broken {
            Some(own) => format!("{own}; {BEFORE_MAGIC}"),
            None => BEFORE_MAGIC.to_owned(),
        }),
    }
}

/// Whether `frame`, written into `direction`, is the SETTINGS of its
/// sender's connection preface: a SETTINGS without ACK that is the first
/// frame of the direction (after the 24-octet magic from a client).
pub(super) fn is_preface_settings(frame: &Frame, direction: Direction) -> bool {
    let first = match direction {
        Direction::ClientToServer => PREFACE.len() as u64,
        Direction::ServerToClient => 0,
    };
    frame.ty == FrameType::Settings && frame.offset == first && is_settings(frame)
}

/// A SETTINGS without ACK: what may stand first in a preface.
fn is_settings(frame: &Frame) -> bool {
    matches!(frame.detail, Detail::Settings { ack: false, .. })
}

/// Whether `fate` takes a frame out of its place (dropped, swallowed or
/// replaced): only then may a preface lack its SETTINGS.
fn removes(fate: Fate) -> bool {
    matches!(
        fate,
        Fate::Dropped | Fate::Swallowed | Fate::Replaced { .. }
    )
}

/// The recorded fate of a preface SETTINGS whose fate is `fate`, given the
/// frames a rule put in its place (`arrived`, when it replaced it) and the
/// first frame queued right behind it (`behind`, asked for only when the
/// frame is taken out with nothing in its place): with [`WITHOUT`] when no
/// SETTINGS stands in its place. A replacement that starts with another
/// frame is flagged on that frame instead ([`in_place`]).
pub(super) fn fate(
    fate: Fate,
    arrived: Option<&[(Frame, Option<String>)]>,
    behind: impl FnOnce() -> Option<Frame>,
) -> FrameFate {
    if !removes(fate) || arrived.is_some_and(|a| !a.is_empty()) {
        return fate.into();
    }
    match behind() {
        Some(first) if is_settings(&first) => fate.into(),
        _ => FrameFate::fate_breaking(fate, WITHOUT),
    }
}

impl DirectionTap {
    /// [`fate`] of a preface SETTINGS: what is queued right behind it is
    /// the first of the injections it set off into this direction
    /// (`fired`) and the frames policies sent behind it (`asked`), decoded
    /// only for a SETTINGS taken out of its place.
    pub(super) fn preface_fate(
        &self,
        fate: Fate,
        arrived: Option<&[(Frame, Option<String>)]>,
        fired: &[Injection],
        asked: Option<&Asked>,
    ) -> FrameFate {
        self::fate(fate, arrived, || self.first_behind(fired, asked))
    }

    /// The first frame queued right behind the frame being handled: from
    /// an injection it set off into this direction, else from a policy.
    fn first_behind(&self, fired: &[Injection], asked: Option<&Asked>) -> Option<Frame> {
        let injected = fired
            .iter()
            .filter(|i| *i.from == *self.from)
            .map(|i| i.frame.bytes.as_slice());
        let sent = asked.and_then(Asked::first_here).map(|b| &b[..]);
        injected
            .chain(sent)
            .find_map(|bytes| self.decode_alone(bytes).into_iter().next())
            .map(|(frame, _)| frame)
    }
}

/// The rule `first` (the first frame in the preface SETTINGS' place)
/// breaks, `broken` being the rule its own decode found, if any: both,
/// when it is not a SETTINGS without ACK.
pub(super) fn in_place(first: &Frame, broken: Option<String>) -> Option<String> {
    if is_settings(first) {
        return broken;
    }
    Some(match broken {
        Some(own) => format!("{own}; {IN_PLACE}"),
        None => IN_PLACE.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{encode, Decoder};

    /// The frames of `bytes` (after the preface, from a client), as the
    /// tap's decoder reads them.
    fn frames(direction: Direction, bytes: &[u8]) -> Vec<Frame> {
        let mut events = Vec::new();
        Decoder::new(direction).feed(bytes, &mut events);
        events
            .into_iter()
            .filter_map(|e| match e {
                crate::wire::Event::Frame(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// `bytes`' frame as the second of the server's, behind its SETTINGS
    /// (the decoder takes no other first frame), moved to `offset`.
    fn second(bytes: &[u8], offset: u64) -> Frame {
        let both = [encode::settings(&[]), bytes.to_vec()].concat();
        let mut frame = frames(Direction::ServerToClient, &both).remove(1);
        frame.offset = offset;
        frame
    }

    #[test]
    fn only_the_first_settings_of_a_direction_is_the_prefaces() {
        let settings = encode::settings(&[]);
        let server = [settings.clone(), settings.clone()].concat();
        let got = frames(Direction::ServerToClient, &server);
        let first: Vec<bool> = got
            .iter()
            .map(|f| is_preface_settings(f, Direction::ServerToClient))
            .collect();
        assert_eq!(first, [true, false]);
        let client = [PREFACE.as_slice(), &settings, &settings].concat();
        let got = frames(Direction::ClientToServer, &client);
        let first: Vec<bool> = got
            .iter()
            .map(|f| is_preface_settings(f, Direction::ClientToServer))
            .collect();
        assert_eq!(first, [true, false]);
        // A SETTINGS ACK first is not a preface's SETTINGS.
        let ack = second(&encode::settings_ack(), 0);
        assert!(!is_preface_settings(&ack, Direction::ServerToClient));
    }

    #[test]
    fn taken_out_with_no_settings_in_its_place_breaks_the_preface() {
        let settings = second(&encode::settings(&[]), 9);
        let ping = second(&encode::ping(false, [1; 8]), 9);
        let replaced = Fate::Replaced {
            differing: 3,
            first_differing: Some(0),
            arrived: 0,
        };
        for taken in [Fate::Dropped, Fate::Swallowed, replaced] {
            assert_eq!(fate(taken, None, || None).fate_invalid(), Some(WITHOUT));
            assert_eq!(
                fate(taken, Some(&[]), || None).fate_invalid(),
                Some(WITHOUT)
            );
            // Another frame behind it does not stand in for the SETTINGS.
            assert_eq!(
                fate(taken, None, || Some(ping.clone())).fate_invalid(),
                Some(WITHOUT)
            );
            // A SETTINGS behind it (an injection, a proxy's own) does.
            assert_eq!(
                fate(taken, None, || Some(settings.clone())).fate_invalid(),
                None
            );
        }
        // A replacement with frames: those carry the rule (`in_place`).
        let arrived = [(ping.clone(), None)];
        assert_eq!(fate(replaced, Some(&arrived), || None).fate_invalid(), None);
        let delayed = Fate::Delayed {
            until: std::time::Duration::from_millis(5),
        };
        assert_eq!(fate(delayed, None, || None).fate_invalid(), None);
        assert_eq!(fate(Fate::Passed, None, || None).fate_invalid(), None);
    }

    #[test]
    fn nothing_the_harness_writes_goes_before_a_clients_magic() {
        let settings = second(&encode::settings(&[]), 0);
        let ping = second(&encode::ping(false, [1; 8]), 0);
        assert_eq!(
            before(&settings, Before::Magic, None).as_deref(),
            Some(BEFORE_MAGIC)
        );
        assert_eq!(
            before(&ping, Before::Magic, Some("own".into())),
            Some(format!("own; {BEFORE_MAGIC}"))
        );
        // Before the SETTINGS, a SETTINGS may stand first; a PING may not.
        assert_eq!(before(&settings, Before::Settings, None), None);
        assert_eq!(
            before(&ping, Before::Settings, None).as_deref(),
            Some(IN_PLACE)
        );
    }

    #[test]
    fn a_frame_in_its_place_must_be_a_settings() {
        let ping = second(&encode::ping(false, [1; 8]), 0);
        assert_eq!(in_place(&ping, None).as_deref(), Some(IN_PLACE));
        assert_eq!(
            in_place(&ping, Some("own".into())),
            Some(format!("own; {IN_PLACE}"))
        );
        let settings = second(&encode::settings(&[]), 0);
        assert_eq!(in_place(&settings, None), None);
        let ack = second(&encode::settings_ack(), 0);
        assert_eq!(in_place(&ack, None).as_deref(), Some(IN_PLACE));
    }
}
