//! The gRPC message framing inside DATA payloads (`PROTOCOL-HTTP2.md`,
//! "Length-Prefixed-Message"): a 1-octet Compressed-Flag, a 4-octet
//! big-endian Message-Length, then the message. Messages and frames need
//! not line up: a header may be split across DATA frames, a frame may carry
//! several messages.

/// One message header, as read from the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageHeader {
    /// The Compressed-Flag octet (0: identity, 1: compressed with the
    /// stream's `grpc-encoding`; other values break the spec).
    pub flag: u8,
    /// Message-Length, octets.
    pub len: u32,
}

/// What [`Framing::feed_bodies`] reports, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessagePart {
    /// Octets of a message body: their range in the data fed.
    Body(std::ops::Range<usize>),
    /// A message is whole (its last octet, or for an empty one its
    /// header, was in the data fed).
    Whole(MessageHeader),
}

/// Follows the framing of one direction of one stream.
#[derive(Debug, Clone, Default)]
pub struct Framing {
    header: [u8; 5],
    have: usize,
    /// Octets of the current message still to come (0 between messages).
    remaining: u64,
    current: Option<MessageHeader>,
}

impl Framing {
    /// Feeds the next `data` octets; returns the headers that start in
    /// (or complete in) them, in order, each with the offset in `data` of
    /// the first octet of its header.
    pub fn feed(&mut self, data: &[u8]) -> Vec<(usize, MessageHeader)> {
        let mut found = Vec::new();
        let complete = |start, header| found.push((start, header));
        self.walk(data, |_, _| {}, complete, |_| {}, |_| {});
        found
    }

    /// Feeds the next `data` octets like [`Framing::feed`], calling `part`
    /// with each run of message-body octets in `data` and each message as
    /// it becomes whole (an empty one at its header), in order. Collects
    /// nothing itself.
    pub fn feed_bodies(&mut self, data: &[u8], mut part: impl FnMut(MessagePart)) {
        // One closure for both: the caller's state is borrowed once.
        let part = std::cell::RefCell::new(&mut part);
        self.walk(
            data,
            |_, _| {},
            |_, _| {},
            |range| (part.borrow_mut())(MessagePart::Body(range)),
            |header| (part.borrow_mut())(MessagePart::Whole(header)),
        );
    }

    /// Feeds the next `data` octets like [`Framing::feed`], and returns the
    /// Compressed-Flag octet of the first message whose 5-octet prefix
    /// *begins* in them (its first octet is the flag, so a prefix split
    /// across frames belongs to the frame that holds the flag). Collects
    /// nothing else, so it does not allocate.
    pub fn feed_first_flag(&mut self, data: &[u8]) -> Option<u8> {
        let mut first = None;
        let begins = |_, flag| first = first.or(Some(flag));
        self.walk(data, begins, |_, _| {}, |_| {}, |_| {});
        first
    }

    /// The one walk over the framing: `begins(offset, flag)` for each
    /// prefix whose first octet is in `data`, `complete(start, header)`
    /// for each prefix whose last octet is (`start` is where its part in
    /// `data` begins: 0 for one split across calls), `body(range)` for
    /// each run of body octets, `whole(header)` as each message is whole.
    fn walk(
        &mut self,
        mut data: &[u8],
        mut begins: impl FnMut(usize, u8),
        mut complete: impl FnMut(usize, MessageHeader),
        mut body: impl FnMut(std::ops::Range<usize>),
        mut whole: impl FnMut(MessageHeader),
    ) {
        let mut offset = 0;
        while !data.is_empty() {
            if self.remaining > 0 {
                let take = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.remaining -= take as u64;
                data = &data[take..];
                body(offset..offset + take);
                offset += take;
                if self.remaining == 0 {
                    if let Some(header) = self.current.take() {
                        whole(header);
                    }
                }
                continue;
            }
            if self.have == 0 {
                begins(offset, data[0]);
            }
            let start = offset;
            let take = (5 - self.have).min(data.len());
            self.header[self.have..self.have + take].copy_from_slice(&data[..take]);
            self.have += take;
            data = &data[take..];
            offset += take;
            if self.have == 5 {
                self.have = 0;
                let [flag, a, b, c, d] = self.header;
                let header = MessageHeader {
                    flag,
                    len: u32::from_be_bytes([a, b, c, d]),
                };
                self.remaining = u64::from(header.len);
                self.current = (header.len > 0).then_some(header);
                complete(start, header);
                if header.len == 0 {
                    whole(header);
                }
            }
        }
    }

    /// Whether the octets so far end inside a message: inside its header
    /// or its body (a body cut there is one tonic's decoder refuses).
    pub fn ends_inside(&self) -> bool {
        self.have > 0 || self.current.is_some()
    }

    /// The message whose header was read and whose octets have not all
    /// come yet, with how many of them have.
    pub fn inside(&self) -> Option<(MessageHeader, u64)> {
        self.current
            .map(|h| (h, u64::from(h.len).saturating_sub(self.remaining)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_split_across_frames_are_found_once() {
        let mut f = Framing::default();
        assert!(f.feed(&[0, 0, 0]).is_empty());
        let found = f.feed(&[0, 3, 7, 8]);
        assert_eq!(found, vec![(0, MessageHeader { flag: 0, len: 3 })]);
        assert_eq!(f.inside().map(|(h, got)| (h.len, got)), Some((3, 2)));
        let found = f.feed(&[9, 1, 0, 0, 0, 0]);
        assert_eq!(found, vec![(1, MessageHeader { flag: 1, len: 0 })]);
        assert_eq!(f.inside(), None, "both messages are whole");
    }

    /// Body octets come as ranges of each call's data, and each message
    /// is whole once its last octet (an empty one: its header) is fed.
    #[test]
    fn bodies_come_by_range_and_messages_whole_in_order() {
        let mut f = Framing::default();
        let mut seen = Vec::new();
        let mut feed = |f: &mut Framing, data: &[u8]| {
            let mut out: Vec<String> = Vec::new();
            f.feed_bodies(data, |part| {
                out.push(match part {
                    MessagePart::Body(r) => format!("{r:?}"),
                    MessagePart::Whole(h) => format!("whole {}", h.len),
                });
            });
            seen.push(out);
        };
        feed(&mut f, &[0, 0, 0, 0, 2, 7]);
        feed(&mut f, &[8, 0, 0, 0, 0, 0, 0, 0, 0]);
        feed(&mut f, &[0, 1, 9]);
        assert_eq!(
            seen,
            [
                vec!["5..6".to_owned()],
                vec!["0..1".into(), "whole 2".into(), "whole 0".into()],
                vec!["2..3".into(), "whole 1".into()],
            ]
        );
    }

    #[test]
    fn the_flag_belongs_to_the_frame_that_holds_it() {
        let mut f = Framing::default();
        assert_eq!(
            f.feed_first_flag(&[1, 0]),
            Some(1),
            "the prefix begins here"
        );
        assert_eq!(f.feed_first_flag(&[0, 0, 2, 7]), None, "it ends here");
        assert_eq!(f.feed_first_flag(&[8, 0, 0]), Some(0), "the next begins");
        assert_eq!(f.feed_first_flag(&[0, 0, 0]), None);
    }

    #[test]
    fn a_body_cut_inside_a_message_is_told_from_one_cut_between() {
        let mut m = Framing::default();
        m.feed(&[0, 0, 0, 0, 2, 8]);
        assert!(m.ends_inside(), "one octet of two");
        m.feed(&[7]);
        assert!(!m.ends_inside(), "whole");
        m.feed(&[0, 0]);
        assert!(m.ends_inside(), "inside the next header");
        m.feed(&[0, 0, 0]);
        assert!(!m.ends_inside(), "an empty message is whole at its header");
        // Split anywhere, the same answer.
        let mut split = Framing::default();
        for b in [0u8, 0, 0, 1, 0, 9, 9] {
            split.feed(&[b]);
        }
        assert!(split.ends_inside(), "256-octet message, 2 seen");
    }
}
