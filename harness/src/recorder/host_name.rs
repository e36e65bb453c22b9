//! [`HostName`]: a host's name as the event log keeps it, interned.
//!
//! Every event names a host, and most frame events two; as `String`s those
//! names were a third of a frame event's heap. A process uses a handful of
//! host names (the sim's hosts and replica sets), so each distinct name is
//! stored once for the life of the process and an event keeps a 4-byte
//! handle to it.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A host's name (or a replica set's, which is dialled like one), as an
/// event keeps it: a 4-byte `Copy` handle to the name, interned once per
/// process.
///
/// It reads as the name everywhere: it derefs to `&str`, compares with
/// `str`, `&str` and `String` (and with another `HostName`) by the name,
/// orders by the name, hashes as the name does, displays, `Debug`-prints
/// (`"store"`) and serializes as the name. So renders and JSON are the
/// same as with a `String`, and nothing can depend on which name was
/// interned first: the handle's number is never printed, ordered or
/// hashed on.
///
/// What interning costs: each distinct name is leaked once into a
/// process-wide table (its bytes, plus 24 bytes of table), and making a
/// `HostName` from a `&str` takes a lock and a hash-map lookup; reading
/// one (`Deref`) takes two atomic loads and no lock. A process that makes
/// millions of distinct host names (names generated per test, never
/// reused) keeps every one; the harness makes a handle once per host and
/// connection, not per event.
///
/// ```
/// use grpc_chaos::recorder::event::HostName;
/// let store = HostName::new("store");
/// assert_eq!(store, "store");
/// assert_eq!(store, HostName::from("store".to_string()));
/// assert!(store.starts_with("st"));
/// assert_eq!(format!("{store} {store:?}"), r#"store "store""#);
/// assert!(HostName::new("gateway") < store, "ordered by name");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HostName(u32);

impl HostName {
    /// The handle for `name`, interning it if this process has not seen it.
    pub fn new(name: &str) -> Self {
        table().intern(name)
    }

    /// The name.
    pub fn as_str(&self) -> &'static str {
        table().get(self.0)
    }
}

impl std::ops::Deref for HostName {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for HostName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for HostName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::hash::Hash for HostName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for HostName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HostName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self.0 == other.0 {
            return std::cmp::Ordering::Equal;
        }
        self.as_str().cmp(other.as_str())
    }
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for HostName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl From<&str> for HostName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<&String> for HostName {
    fn from(name: &String) -> Self {
        Self::new(name)
    }
}

impl From<String> for HostName {
    fn from(name: String) -> Self {
        Self::new(&name)
    }
}

impl From<&std::sync::Arc<str>> for HostName {
    fn from(name: &std::sync::Arc<str>) -> Self {
        Self::new(name)
    }
}

impl From<&HostName> for HostName {
    fn from(name: &HostName) -> Self {
        *name
    }
}

impl From<HostName> for String {
    fn from(name: HostName) -> Self {
        name.as_str().to_owned()
    }
}

macro_rules! eq_by_name {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for HostName {
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }
        impl PartialEq<HostName> for $t {
            fn eq(&self, other: &HostName) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}
eq_by_name!(str, &str, String, &String);

/// Slots per chunk: chunk `k` holds `2^k` names, so 32 chunks hold every
/// `u32` and none is allocated before it is needed.
const CHUNKS: usize = 32;

/// The process's names: a lock for interning, lock-free reads by handle.
struct Table {
    by_name: Mutex<HashMap<&'static str, u32>>,
    chunks: [OnceLock<Box<[OnceLock<&'static str>]>>; CHUNKS],
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table {
        by_name: Mutex::new(HashMap::new()),
        chunks: [const { OnceLock::new() }; CHUNKS],
    })
}

/// Chunk and slot of handle `id`: `id + 1 = 2^k + slot`.
fn place(id: u32) -> (usize, usize) {
    let n = u64::from(id) + 1;
    let k = 63 - n.leading_zeros() as usize;
    (k, (n - (1u64 << k)) as usize)
}

impl Table {
    fn intern(&self, name: &str) -> HostName {
        // A panic while the lock was held left the map consistent (an
        // insert is the last step); keep going.
        let mut by_name = self.by_name.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&id) = by_name.get(name) {
            return HostName(id);
        }
        let id = u32::try_from(by_name.len()).unwrap_or(u32::MAX - 1);
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let (k, slot) = place(id);
        let chunk = self.chunks[k].get_or_init(|| {
            (0..1usize << k)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        // Set before the handle is handed out, so a read always finds it.
        let _ = chunk[slot].set(name);
        by_name.insert(name, id);
        HostName(id)
    }

    fn get(&self, id: u32) -> &'static str {
        let (k, slot) = place(id);
        self.chunks[k]
            .get()
            .and_then(|chunk| chunk.get(slot))
            .and_then(OnceLock::get)
            .copied()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_and_interns_once() {
        let a = HostName::new("host-name-test-a");
        assert_eq!(a.as_str(), "host-name-test-a");
        assert_eq!(HostName::new("host-name-test-a"), a);
        assert_ne!(HostName::new("host-name-test-b"), a);
        assert_eq!(std::mem::size_of::<HostName>(), 4);
        // Many names land in later chunks and still read back.
        let names: Vec<HostName> = (0..300)
            .map(|i| HostName::new(&format!("host-name-test-{i}")))
            .collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(*n, format!("host-name-test-{i}"));
        }
    }

    #[test]
    fn order_is_by_name_whatever_was_interned_first() {
        let z = HostName::new("order-test-z");
        let a = HostName::new("order-test-a");
        assert!(a < z);
        let mut v = vec![z, a];
        v.sort();
        assert_eq!(v, ["order-test-a", "order-test-z"]);
    }

    #[test]
    fn handles_map_to_chunks_without_gaps() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(1), (1, 0));
        assert_eq!(place(2), (1, 1));
        assert_eq!(place(3), (2, 0));
        assert_eq!(place(u32::MAX - 1), (31, (1 << 31) - 1));
    }
}
