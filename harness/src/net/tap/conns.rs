//! Connection ids: both ends of a simulated TCP connection must agree on its
//! id (`c1, c2, …`, in order of first appearance), whichever end sees it
//! first. Next to the id, the registry keeps the state both ends' writer
//! tasks share (connection policies, `net/tap/policy.rs`; SETTINGS in
//! flight, injections and kept-back frames, `net/tap/pair.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Policies, Reset, TapPair, Written};
use crate::wire::Direction;

/// A connection's (client address, server address).
type Pair = (SocketAddr, SocketAddr);

/// State shared by both ends of one connection. Hosts run one at a time on
/// the test's thread, so the lock is never contended.
#[derive(Default)]
pub(crate) struct ConnState {
    /// Connection policies (keepalive enforcement among them), when the
    /// server host has any.
    pub(crate) policies: Option<Policies>,
    /// What the two directions' taps tell each other.
    pub(crate) tap: TapPair,
    /// Set when a partition's `reset_after` resets the connection.
    pub(crate) reset: Arc<Reset>,
    /// Whether the client end is the harness's own (a channel's dial, or
    /// [`Host::raw_connect`](crate::Host::raw_connect)): its writes pass
    /// the tap at the sender. Unset, the client is a raw
    /// `turmoil::net::TcpStream`, and the server end records what it reads
    /// (`net/tap/raw.rs`).
    pub(crate) dialled: bool,
    /// Per end (indexed by the direction it writes): it reset the
    /// connection, closing with the peer's bytes unread (`net/tap/ends.rs`).
    pub(crate) reset_by: [bool; 2],
    /// Per end: its reset, for its writer task to record
    /// (`net/tap/ends.rs`).
    pub(crate) reset_note: [Option<crate::recorder::event::EventKind>; 2],
    /// Bytes each direction's writer put on the wire.
    pub(crate) written: Arc<Written>,
}

/// One connection, shared by its two ends.
pub(crate) type SharedConn = Arc<Mutex<ConnState>>;

/// Locks a connection's state; a panic while holding the lock leaves a
/// usable state, so poisoning is ignored.
pub(crate) fn lock(conn: &SharedConn) -> MutexGuard<'_, ConnState> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// The last id given out, and every connection by its address pair.
type Table = (u32, HashMap<Pair, (u32, SharedConn)>);

/// Maps a connection's address pair to its id and shared state.
#[derive(Default)]
pub(crate) struct Registry {
    ids: Mutex<Table>,
}

impl Registry {
    /// The id and shared state of the connection from `client` to `server`;
    /// the id is assigned, and `init` makes the state from it, when this is
    /// the first end to see it. Ephemeral ports are not reused within a run, so
    /// the pair is unique.
    pub(crate) fn open(
        &self,
        client: SocketAddr,
        server: SocketAddr,
        init: impl FnOnce(u32) -> ConnState,
    ) -> (u32, SharedConn) {
        let mut guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let (next, ids) = &mut *guard;
        let (id, state) = ids.entry((client, server)).or_insert_with(|| {
            *next += 1;
            (*next, Arc::new(Mutex::new(init(*next))))
        });
        (*id, state.clone())
    }

    /// Notes that a segment from `src` to `dst` was lost (a black hole
    /// swallowed it on the wire): that direction of its connection delivers
    /// nothing more. Unknown pairs (a SYN's, a dropped connection's) are
    /// ignored.
    pub(crate) fn lost_on_the_wire(&self, src: SocketAddr, dst: SocketAddr) {
        let guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let found = match guard.1.get(&(src, dst)) {
            Some((_, state)) => Some((state.clone(), Direction::ClientToServer)),
            None => guard
                .1
                .get(&(dst, src))
                .map(|(_, state)| (state.clone(), Direction::ServerToClient)),
        };
        drop(guard);
        if let Some((state, direction)) = found {
            lock(&state).tap.broke(direction);
        }
    }

    /// Every connection seen so far, by id.
    pub(crate) fn all(&self) -> Vec<(u32, SharedConn)> {
        let guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<(u32, SharedConn)> = guard.1.values().cloned().collect();
        all.sort_by_key(|(id, _)| *id);
        all
    }
}
