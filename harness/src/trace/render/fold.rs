//! Folding runs of DATA frames into one row: a 3 MiB message is ~200 DATA
//! frames of 16 KiB, and a snapshot of them says no more than one line
//! with the count, the bytes and when the last one went.

use std::time::Duration;

use crate::recorder::event::{Event, EventKind, Fate, FrameDetail};

/// What makes two DATA frames one run: same sender, receiver, connection
/// and stream.
#[derive(PartialEq, Eq)]
struct Key<'a> {
    from: &'a str,
    to: &'a str,
    conn: u32,
    stream: u32,
}

/// A plain DATA frame's run key and payload octets: passed untouched by
/// the fault engine, without END_STREAM, and not starting a compressed
/// message (a fault, the end of a stream or a compressed flag is worth its
/// own line).
fn plain_data(e: &Event) -> Option<(Key<'_>, u64)> {
    let EventKind::Frame {
        conn,
        to,
        stream,
        flags,
        detail: FrameDetail::Data {
            len,
            compressed_flag,
        },
        fate,
        ..
    } = &e.kind
    else {
        return None;
    };
    if *fate != Fate::Passed || flags.end_stream() || compressed_flag.is_some_and(|f| f != 0) {
        return None;
    }
    let bytes = u64::from(*len);
    let key = Key {
        from: &e.host,
        to,
        conn: *conn,
        stream: *stream,
    };
    Some((key, bytes))
}

/// A run of two or more plain DATA frames, as the shown events list has it.
pub(crate) struct DataRun {
    /// How many shown events it takes (its frames).
    pub(crate) frames: usize,
    /// Their payload octets, summed.
    pub(crate) bytes: u64,
    /// When the last of them was written (*simulated*).
    pub(crate) last: Duration,
}

/// The run of plain DATA frames that starts `shown`, if it has two or
/// more frames. Other events between them (shown ones) end a run.
pub(crate) fn data_run(shown: &[&Event]) -> Option<DataRun> {
    let (key, mut bytes) = plain_data(shown.first()?)?;
    let mut frames = 1;
    for e in &shown[1..] {
        match plain_data(e) {
            Some((k, b)) if k == key => {
                frames += 1;
                bytes += b;
            }
            _ => break,
        }
    }
    (frames > 1).then(|| DataRun {
        frames,
        bytes,
        last: shown[frames - 1].at(),
    })
}

/// The folded row's text: `c1 s1 DATA ×126 1377768 bytes (last at 50.000)`.
pub(crate) fn text(first: &Event, run: &DataRun) -> String {
    let (conn, stream) = match &first.kind {
        EventKind::Frame { conn, stream, .. } => (*conn, *stream),
        _ => (0, 0),
    };
    format!(
        "c{conn} s{stream} DATA ×{} {} bytes (last at {})",
        run.frames,
        run.bytes,
        super::rows::fmt_ms(run.last)
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::recorder::event::{Event, EventKind, Fate, FrameDetail, FrameFlags};
    use crate::trace::query::Trace;
    use crate::trace::render::RenderOptions;
    use crate::wire::FrameType;

    /// A DATA frame of `len` octets (`END_STREAM` when `len` is 0), or a
    /// WINDOW_UPDATE of `-len`.
    fn frame(at_ms: u64, from: &str, to: &str, stream: u32, len: i64, fate: Fate) -> Event {
        let (frame, flags, detail) = match u32::try_from(len) {
            Ok(len) => (
                FrameType::Data,
                FrameFlags::NONE.with(FrameFlags::END_STREAM, len == 0),
                FrameDetail::Data {
                    len,
                    compressed_flag: None,
                },
            ),
            Err(_) => (
                FrameType::WindowUpdate,
                FrameFlags::NONE,
                FrameDetail::WindowUpdate {
                    increment: len.unsigned_abs() as u32,
                },
            ),
        };
        Event::new(
            Duration::from_millis(at_ms),
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
        )
    }

    fn trace() -> Trace {
        let (g, p) = ("gateway", "player");
        let events = vec![
            frame(2, g, p, 1, 16384, Fate::Passed),
            frame(2, g, p, 1, 36, Fate::Passed),
            frame(3, g, p, 1, 10, Fate::Passed),
            frame(3, g, p, 3, 5, Fate::Passed),
            frame(3, g, p, 3, 6, Fate::Passed),
            frame(4, g, p, 3, 8, Fate::Dropped),
            frame(5, p, g, 1, -70000, Fate::Passed),
            frame(6, g, p, 1, 7, Fate::Passed),
            frame(7, g, p, 1, 0, Fate::Passed),
        ];
        Trace::new(
            1,
            vec![g.into(), p.into()],
            events,
            Duration::from_millis(8),
        )
    }

    #[test]
    fn runs_of_plain_data_fold_and_every_other_line_stays() {
        let render = trace().render();
        let body: Vec<&str> = render.lines().skip(1).map(str::trim_end).collect();
        assert_eq!(
            body,
            [
                "     2.000  gateway→player       c1 s1 DATA ×3 16430 bytes (last at 3.000)",
                "     3.000  gateway→player       c1 s3 DATA ×2 11 bytes (last at 3.000)",
                "     4.000  gateway→player       c1 s3 DATA 8 bytes [dropped]",
                "     5.000  player→gateway       c1 s1 WINDOW_UPDATE +70000",
                "     6.000  gateway→player       c1 s1 DATA 7 bytes",
                "     7.000  gateway→player       c1 s1 DATA 0 bytes END_STREAM",
            ]
        );
    }

    #[test]
    fn everything_shows_every_frame_and_folding_can_be_turned_off() {
        let trace = trace();
        assert_eq!(
            trace
                .render_with(&RenderOptions::everything())
                .lines()
                .count(),
            10
        );
        let unfolded = RenderOptions {
            fold_data: false,
            ..RenderOptions::default()
        };
        assert_eq!(trace.render_with(&unfolded).lines().count(), 10);
        assert!(trace
            .render_html()
            .contains("DATA ×3 16430 bytes (last at 3.000)"));
    }
}
