//! Which kind of field block a HEADERS frame carries, from what came before
//! on its stream in this direction (RFC 9113 §8.1; gRPC `PROTOCOL-HTTP2.md`).

use std::collections::BTreeSet;

use super::block::BlockKind;
use super::Direction;

/// Most server→client streams remembered as "response headers sent, stream
/// still open". Streams the client reset are never closed in this direction,
/// so the set is capped; the oldest (lowest) ids are forgotten first.
const MAX_TRACKED_STREAMS: usize = 65_536;

/// Per-direction stream memory needed to classify blocks, bounded in size.
pub(crate) struct StreamKinds {
    direction: Direction,
    /// Client→server: highest stream id that has carried a block. Clients
    /// open streams in increasing order (§5.1.1), so a block on a higher id
    /// is a request and one on a lower or equal id is a trailer.
    highest_opened: u32,
    /// Server→client: streams with response headers sent and no end yet.
    responding: BTreeSet<u32>,
}

impl StreamKinds {
    pub(crate) fn new(direction: Direction) -> Self {
        Self {
            direction,
            highest_opened: 0,
            responding: BTreeSet::new(),
        }
    }

    /// Classifies a complete block on `stream_id`; `end_stream` is the
    /// HEADERS frame's flag, `has_grpc_status` whether the block carries
    /// `grpc-status`.
    pub(crate) fn classify(
        &mut self,
        stream_id: u32,
        end_stream: bool,
        has_grpc_status: bool,
    ) -> BlockKind {
        match self.direction {
            Direction::ClientToServer => {
                if stream_id > self.highest_opened {
                    self.highest_opened = stream_id;
                    BlockKind::Request
                } else {
                    BlockKind::Trailers
                }
            }
            Direction::ServerToClient => {
                if self.responding.contains(&stream_id) {
                    if end_stream {
                        self.responding.remove(&stream_id);
                    }
                    BlockKind::Trailers
                } else if end_stream && has_grpc_status {
                    BlockKind::TrailersOnly
                } else {
                    if !end_stream {
                        self.responding.insert(stream_id);
                        if self.responding.len() > MAX_TRACKED_STREAMS {
                            self.responding.pop_first();
                        }
                    }
                    BlockKind::Response
                }
            }
        }
    }

    /// The stream ended in this direction (a block with END_STREAM has
    /// already been classified as its end).
    pub(crate) fn ended(&mut self, stream_id: u32) {
        self.responding.remove(&stream_id);
    }
}
