//! Connection ids: both ends of a simulated TCP connection must agree on its
//! id (`c1, c2, …`, in order of first appearance), whichever end sees it
//! first.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;

/// A connection's (client address, server address).
type Pair = (SocketAddr, SocketAddr);

/// Maps a connection's address pair to its id.
#[derive(Default)]
pub(crate) struct Registry {
    ids: Mutex<(u32, HashMap<Pair, u32>)>,
}

impl Registry {
    /// The id of the connection from `client` to `server`, assigned on first
    /// sight. Ephemeral ports are not reused within a run, so the pair is
    /// unique.
    pub(crate) fn id(&self, client: SocketAddr, server: SocketAddr) -> u32 {
        let mut guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let (next, ids) = &mut *guard;
        *ids.entry((client, server)).or_insert_with(|| {
            *next += 1;
            *next
        })
    }
}
