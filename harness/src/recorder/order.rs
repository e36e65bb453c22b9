//! The log's order within one instant: each handler's end after the frames
//! its host wrote at that instant.
//!
//! The handler layer records a run's end (`HandlerFinished`,
//! `HandlerRejected`) when the response's last part leaves the handler (its
//! trailers, or its trailers-only headers); hyper hands it to h2, and the
//! wire tap records the frames when the connection task writes them, later
//! in the same tick. A render that said "finished" before the HEADERS and
//! DATA the handler produced would put the effect before its cause. Frames
//! of other streams written at that instant move ahead of it too (the tap
//! does not know which stream a run is on); nothing moves across instants.

use super::event::{Event, EventKind};

/// Moves each handler end to just after the last frame its host wrote
/// later at the same instant; ends behind the same frame keep their order,
/// and everything else keeps its order. `events` must be sorted by time.
///
/// Linear in the number of events: one pass per instant, and a permutation
/// applied by swaps. (Moving each end on its own, with a scan and a
/// rotation, cost the square of an instant's events: 1,000 streams ending
/// at one instant spent 6% of the streams bench there.)
pub(crate) fn after_its_frames(events: &mut [Event]) {
    let mut start = 0;
    while start < events.len() {
        let at = events[start].at();
        let len = events[start..].iter().take_while(|e| e.at() == at).count();
        let instant = &mut events[start..start + len];
        if instant.iter().any(is_end) {
            reorder_instant(instant);
        }
        start += len;
    }
}

fn is_end(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::HandlerFinished(_) | EventKind::HandlerRejected(_)
    )
}

/// One instant's events (see [`after_its_frames`]).
fn reorder_instant(instant: &mut [Event]) {
    let moves = anchors(instant);
    if moves.is_empty() {
        return;
    }
    // The new order, as positions in the old: every event that stays, in
    // order, and right after each anchoring frame the ends it anchors.
    let mut moving = vec![false; instant.len()];
    for &(_, end) in &moves {
        moving[end] = true;
    }
    let mut behind = moves.iter().peekable();
    let mut order = Vec::with_capacity(instant.len());
    for (p, &moves_away) in moving.iter().enumerate() {
        if moves_away {
            continue;
        }
        order.push(p);
        while let Some(&(_, end)) = behind.next_if(|&&(anchor, _)| anchor == p) {
            order.push(end);
        }
    }
    permute(instant, &order);
}

/// `(anchor, end)` for each end that moves: the position of the last frame
/// its host wrote after it in the instant, and its own; sorted by anchor,
/// ends of one anchor in their order.
fn anchors(instant: &[Event]) -> Vec<(usize, usize)> {
    // The last frame of each host, found from the back; an instant has
    // events of a few hosts only.
    let mut last_frame: Vec<(super::HostName, usize)> = Vec::new();
    let mut moves = Vec::new();
    for (p, e) in instant.iter().enumerate().rev() {
        if matches!(e.kind, EventKind::Frame { .. }) {
            if !last_frame.iter().any(|(h, _)| *h == e.host) {
                last_frame.push((e.host, p));
            }
        } else if is_end(e) {
            if let Some(&(_, anchor)) = last_frame.iter().find(|(h, _)| *h == e.host) {
                moves.push((anchor, p));
            }
        }
    }
    // Found back to front: reversed, then stably by anchor.
    moves.reverse();
    moves.sort_by_key(|&(anchor, _)| anchor);
    moves
}

/// Rearranges `items` so that position `t` holds what was at `order[t]`
/// (`order` a permutation of the positions), by swaps.
fn permute<T>(items: &mut [T], order: &[usize]) {
    // dest[s]: where the item now at `s` must go.
    let mut dest = vec![0; order.len()];
    for (t, &s) in order.iter().enumerate() {
        dest[s] = t;
    }
    for s in 0..items.len() {
        while dest[s] != s {
            let d = dest[s];
            items.swap(s, d);
            dest.swap(s, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::event::{Fate, FrameDetail, FrameFlags, HandlerFinished, RunId};
    use crate::recorder::HostName;
    use crate::wire::FrameType;
    use proptest::prelude::*;
    use std::time::Duration;

    /// The rule as first written: each end, from the last back, rotated to
    /// just after the last frame of its host at its instant. Quadratic in
    /// an instant's events; the reference the linear pass must match.
    fn reference(events: &mut [Event]) {
        for i in (0..events.len()).rev() {
            if !is_end(&events[i]) {
                continue;
            }
            let (at, host) = (events[i].at(), events[i].host);
            let last = events[i + 1..]
                .iter()
                .take_while(|e| e.at() == at)
                .enumerate()
                .filter(|(_, e)| e.host == host && matches!(e.kind, EventKind::Frame { .. }))
                .map(|(k, _)| i + 1 + k)
                .last();
            if let Some(j) = last {
                events[i..=j].rotate_left(1);
            }
        }
    }

    /// An event of `kind` 0 (frame), 1 (handler end) or 2 (anything else),
    /// at `ms`, on host `h{host}`; `tag` tells equal-looking events apart.
    fn event(kind: u8, ms: u64, host: u8, tag: u32) -> Event {
        let host = HostName::new(&format!("h{host}"));
        let at = Duration::from_millis(ms);
        let kind = match kind {
            0 => EventKind::Frame {
                conn: 1,
                to: "peer".into(),
                stream: tag,
                frame: FrameType::Data,
                flags: FrameFlags::NONE,
                detail: FrameDetail::Data {
                    len: 1,
                    compressed_flag: None,
                },
                fate: Fate::Passed.into(),
                noise: false,
            },
            1 => EventKind::HandlerFinished(Box::new(HandlerFinished {
                run: RunId(tag),
                path: "/p.S/M".into(),
                code: "OK",
                message: String::new(),
                ran: Duration::ZERO,
            })),
            _ => EventKind::ConnClosed {
                conn: tag,
                to: "peer".into(),
            },
        };
        Event::new(at, host, kind)
    }

    /// The tag [`event`] gave an event.
    fn tag(e: &Event) -> u32 {
        match &e.kind {
            EventKind::Frame { stream, .. } => *stream,
            EventKind::HandlerFinished(f) => f.run.0,
            EventKind::ConnClosed { conn, .. } => *conn,
            _ => unreachable!("only these kinds are made here"),
        }
    }

    /// What tells the events apart: time, host and tag.
    fn shape(events: &[Event]) -> Vec<(Duration, String, u32)> {
        events
            .iter()
            .map(|e| (e.at(), e.host.to_string(), tag(e)))
            .collect()
    }

    #[test]
    fn ends_move_behind_their_hosts_last_frame_in_order() {
        // h1 end(1), h1 end(2), h1 frame, h2 other, h1 frame, then a later
        // instant: both ends go behind the second frame, in order.
        let mut events = vec![
            event(1, 2, 1, 1),
            event(1, 2, 1, 2),
            event(0, 2, 1, 10),
            event(2, 2, 2, 20),
            event(0, 2, 1, 11),
            event(0, 3, 1, 12),
        ];
        let mut expected = events.clone();
        reference(&mut expected);
        after_its_frames(&mut events);
        assert_eq!(shape(&events), shape(&expected));
        let tags: Vec<u32> = events.iter().map(tag).collect();
        assert_eq!(tags, [10, 20, 11, 1, 2, 12]);
    }

    proptest! {
        /// Any log, sorted by time: the linear pass puts every event where
        /// the reference puts it.
        #[test]
        fn matches_the_reference(
            raw in proptest::collection::vec((0u8..3, 0u64..4, 0u8..3), 0..60)
        ) {
            let mut events: Vec<Event> = raw
                .iter()
                .enumerate()
                .map(|(i, &(kind, ms, host))| event(kind, ms, host, i as u32))
                .collect();
            events.sort_by_key(|e| e.at());
            let mut expected = events.clone();
            reference(&mut expected);
            after_its_frames(&mut events);
            prop_assert_eq!(shape(&events), shape(&expected));
        }
    }
}
