//! Where gRPC messages start inside a direction's DATA frames
//! (`PROTOCOL-HTTP2.md` Length-Prefixed-Message), so that a DATA frame can
//! say the Compressed-Flag of the message it starts: one
//! [`Framing`] follower per open stream, handed to the frame being read and
//! back once it is whole.

use std::collections::BTreeMap;

use crate::wire::grpc_frame::Framing;

/// Most streams followed at once; the oldest (lowest) ids are forgotten
/// first (a stream reset by its peer is never ended in this direction).
/// A stream's follower goes when the stream ends in this direction: at
/// END_STREAM on DATA or on its trailers, or at its RST_STREAM.
const MAX_FOLLOWED: usize = 4_096;

/// The followers of the open streams of one direction.
#[derive(Default)]
pub(super) struct Messages {
    streams: BTreeMap<u32, Framing>,
}

impl Messages {
    /// The follower for a DATA frame of `len` payload octets on `stream`
    /// (`padded`: its first octet is a Pad Length, RFC 9113 §6.1).
    pub(super) fn start(&mut self, stream: u32, len: u32, padded: bool) -> InData {
        InData {
            framing: self.streams.remove(&stream).unwrap_or_default(),
            stream,
            len,
            padded,
            pad: 0,
            first_flag: None,
        }
    }

    /// The frame is whole: keep its stream's follower unless the stream
    /// ended in this direction.
    pub(super) fn done(&mut self, data: InData, end_stream: bool) {
        if end_stream {
            return;
        }
        self.streams.insert(data.stream, data.framing);
        if self.streams.len() > MAX_FOLLOWED {
            self.streams.pop_first();
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.streams.len()
    }

    /// The stream ended in this direction: forget it.
    pub(super) fn ended(&mut self, stream: u32) {
        self.streams.remove(&stream);
    }
}

/// One DATA frame's payload as it arrives.
pub(super) struct InData {
    framing: Framing,
    stream: u32,
    len: u32,
    padded: bool,
    /// The Pad Length, once its octet arrived.
    pad: u32,
    first_flag: Option<u8>,
}

impl InData {
    /// Takes the payload octets `bytes`, the first of which is payload
    /// octet `at`; only the data between Pad Length and padding feeds the
    /// follower.
    pub(super) fn take(&mut self, at: u32, bytes: &[u8]) {
        let mut start = 0u32;
        if self.padded {
            if at == 0 {
                self.pad = bytes.first().copied().map_or(0, u32::from);
            }
            start = 1;
        }
        let end = self.len.saturating_sub(self.pad);
        let from = start.max(at);
        let to = end.min(at.saturating_add(bytes.len() as u32));
        if from >= to {
            return;
        }
        // In bounds: at <= from < to <= at + bytes.len().
        let data = &bytes[(from - at) as usize..(to - at) as usize];
        let flag = self.framing.feed_first_flag(data);
        self.first_flag = self.first_flag.or(flag);
    }

    /// The Compressed-Flag octet of the first message whose 5-octet
    /// prefix begins in this frame.
    pub(super) fn first_flag(&self) -> Option<u8> {
        self.first_flag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_frame_feeds_only_its_data() {
        let mut m = Messages::default();
        // Pad Length 2, a message prefix with flag 1 and length 0, padding
        // that looks like another prefix.
        let mut d = m.start(1, 8, true);
        d.take(0, &[2, 1, 0]);
        d.take(3, &[0, 0, 0, 9, 9]);
        assert_eq!(d.first_flag(), Some(1));
        m.done(d, false);
        // The next frame starts a fresh message: the padding was not fed.
        let mut d = m.start(1, 5, false);
        d.take(0, &[0, 0, 0, 0, 0]);
        assert_eq!(d.first_flag(), Some(0));
        m.done(d, false);
        // A frame inside a message starts none.
        let mut d = m.start(3, 6, false);
        d.take(0, &[1, 0, 0, 0, 9, 7]);
        m.done(d, false);
        let mut d = m.start(3, 3, false);
        d.take(0, &[1, 1, 1]);
        assert_eq!(d.first_flag(), None, "inside stream 3's 9-octet message");
    }
}
