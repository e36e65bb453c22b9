//! [`HeaderFields`]: a recorded HEADERS block's fields, shared between the
//! frames that repeat them, and between blocks that differ in one short
//! value (a request's call id).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::fields::{intern, is_custom_metadata, FieldName, ShownHeader};
use crate::wire::BlockKind;

/// Every field of one field block, in wire order, names and values as
/// decoded (`date` masked with [`DATE_MASK`](crate::wire::DATE_MASK),
/// `grpc-message` as sent, `-bin` values as the base64 sent). The JSON
/// export carries every field; a render shows the ones that matter (see
/// [`RenderOptions`](crate::trace::RenderOptions)).
///
/// Shared, not copied: a `HeaderFields` is one pointer (8 bytes) and a
/// clone is a reference count. It points at a small node (40 bytes with
/// its reference counts) that holds the block's field list, itself
/// shared, and at most one value of the block's own: one field's value,
/// of at most 13 bytes, kept inline in place of the list's. The wire tap
/// hands the same block to every frame of a connection direction that
/// carries the same fields (a server's response headers and
/// `grpc-status: 0` trailers are identical call after call), and a block
/// that differs from one it recorded lately in a single such value (the
/// harness's `x-grpc-chaos-call` id, new on every request) shares that
/// block's list and keeps only the value: a unary call's request block
/// costs the log the 40-byte node. Every field reads back as decoded, in
/// wire order, whichever way it is stored. Equality compares the kind and
/// the fields, never the sharing.
#[derive(Clone)]
pub struct HeaderFields(Arc<Block>);

/// What a [`HeaderFields`] points at.
#[derive(Clone)]
struct Block {
    /// The fields, shared with other blocks that differ in one value.
    list: Arc<FieldList>,
    /// The value this block has in place of the list's, if any.
    own: Option<OwnValue>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldList {
    kind: BlockKind,
    fields: Box<[(FieldName, Box<str>)]>,
}

/// The most bytes a value of a block's own can have: what fits inline
/// beside the list's pointer in a 24-byte [`Block`] (a call id is at most
/// 10 digits).
const OWN_VALUE_MAX: usize = 13;

/// One field's value kept inline, in place of the list's: `index` into
/// the list, then the value's UTF-8 bytes.
#[derive(Clone, Copy)]
struct OwnValue {
    index: u8,
    len: u8,
    bytes: [u8; OWN_VALUE_MAX],
}

impl OwnValue {
    /// `value` for field `index`, if both fit.
    fn new(index: usize, value: &str) -> Option<Self> {
        let index = u8::try_from(index).ok()?;
        let len = value.len();
        if len > OWN_VALUE_MAX {
            return None;
        }
        let mut bytes = [0; OWN_VALUE_MAX];
        bytes[..len].copy_from_slice(value.as_bytes());
        Some(Self {
            index,
            len: len as u8,
            bytes,
        })
    }

    fn index(&self) -> usize {
        usize::from(self.index)
    }

    fn as_str(&self) -> &str {
        // Never fails: the bytes are a whole `&str`, copied in `new`.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// How a [`HeaderFields`] compares with a decoded block
/// ([`HeaderFields::likeness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Likeness {
    /// The same kind and fields.
    Same,
    /// The same kind and names, and the values of all but the field at
    /// this index.
    OneValue(usize),
    /// Anything else.
    Other,
}

/// `HeaderFields { kind: Request, fields: [..] }`, as before it was shared.
impl std::fmt::Debug for HeaderFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct All<'a>(&'a HeaderFields);
        impl std::fmt::Debug for All<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_list().entries(self.0.all()).finish()
            }
        }
        f.debug_struct("HeaderFields")
            .field("kind", &self.kind())
            .field("fields", &All(self))
            .finish()
    }
}

impl PartialEq for HeaderFields {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.kind() == other.kind()
                && self.len() == other.len()
                && self.all().eq(other.all()))
    }
}

impl Eq for HeaderFields {}

impl HeaderFields {
    /// A block of `kind` with `fields` in wire order; a name is a
    /// [`ShownHeader`] or a string (`"authorization"`).
    ///
    /// ```
    /// use grpc_chaos::recorder::event::{HeaderFields, ShownHeader};
    /// use grpc_chaos::wire::BlockKind;
    /// let block = HeaderFields::new(
    ///     BlockKind::Request,
    ///     [(ShownHeader::Method, "POST"), (ShownHeader::Path, "/tt.v1.Store/Save")],
    /// );
    /// assert_eq!(block.get(ShownHeader::Path), Some("/tt.v1.Store/Save"));
    /// let with_metadata = HeaderFields::new(BlockKind::Request, [("tenant", "blue")]);
    /// assert_eq!(with_metadata.field("tenant"), Some("blue"));
    /// ```
    pub fn new<N: AsRef<str>, V: Into<Box<str>>>(
        kind: BlockKind,
        fields: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        let list = FieldList {
            kind,
            fields: fields
                .into_iter()
                .map(|(n, v)| (intern(n.as_ref()), v.into()))
                .collect(),
        };
        Self(Arc::new(Block {
            list: Arc::new(list),
            own: None,
        }))
    }

    /// A block with `self`'s kind and fields, except that field `index`
    /// (0-based, in wire order) has `value`, sharing `self`'s field list;
    /// `None` when the list cannot be shared so: `index` is past the last
    /// field, `value` is longer than 13 bytes, or `self` already holds a
    /// value of its own for another field. The sharing is not visible in
    /// what the block reads back (see [`HeaderFields`]).
    ///
    /// ```
    /// use grpc_chaos::recorder::event::HeaderFields;
    /// use grpc_chaos::wire::BlockKind;
    /// let first = HeaderFields::new(BlockKind::Request, [(":path", "/a.B/C"), ("x-id", "1")]);
    /// let second = first.with_value(1, "2").expect("a short value");
    /// assert_eq!(second.field("x-id"), Some("2"));
    /// assert_eq!(second, HeaderFields::new(BlockKind::Request, [(":path", "/a.B/C"), ("x-id", "2")]));
    /// assert!(first.with_value(2, "2").is_none(), "no third field");
    /// assert!(second.with_value(0, "/a.B/D").is_none(), "a second value of its own");
    /// ```
    pub fn with_value(&self, index: usize, value: &str) -> Option<Self> {
        let list = &self.0.list;
        let listed = &list.fields.get(index)?.1;
        if self.0.own.is_some_and(|own| own.index() != index) {
            return None;
        }
        let own = match **listed == *value {
            true => None,
            false => Some(OwnValue::new(index, value)?),
        };
        Some(Self(Arc::new(Block {
            list: Arc::clone(list),
            own,
        })))
    }

    /// How `self` compares with a block of `kind` with `fields` (names and
    /// values, in order): how the wire tap finds a block it can share
    /// (or share the list of) without building a new one.
    pub(crate) fn likeness<'a>(
        &self,
        kind: BlockKind,
        fields: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) -> Likeness {
        if self.kind() != kind || self.len() != fields.len() {
            return Likeness::Other;
        }
        let mut differs = None;
        for (i, ((name, value), (other_name, other_value))) in self.all().zip(fields).enumerate() {
            if name != other_name || (value != other_value && differs.replace(i).is_some()) {
                return Likeness::Other;
            }
        }
        differs.map_or(Likeness::Same, Likeness::OneValue)
    }

    /// Whether `self` and `other` are the same shared block (not only equal
    /// fields): for a measure of the log that counts a block once.
    pub fn shares_block_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The index of the field whose value `self` holds itself, in place of
    /// its shared list's (see [`HeaderFields`]), if any.
    pub(crate) fn own_field(&self) -> Option<usize> {
        self.0.own.as_ref().map(OwnValue::index)
    }

    /// Whether `self` and `other` hold their fields in one shared list
    /// (the same block, or blocks that differ in one value of their own).
    #[cfg(test)]
    pub(crate) fn shares_fields_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0.list, &other.0.list)
    }

    /// New copies of `blocks`, each distinct block ([`HeaderFields::shares_block_with`])
    /// copied once and each field list once, shared among the copies as
    /// among the originals: what a measure of the log's memory builds to
    /// count the heap its blocks take (a clone adds only a reference
    /// count). One copy per distinct block, in order of first appearance.
    ///
    /// ```
    /// use grpc_chaos::recorder::event::HeaderFields;
    /// use grpc_chaos::wire::BlockKind;
    /// let first = HeaderFields::new(BlockKind::Request, [("x-id", "1")]);
    /// let second = first.with_value(0, "2").expect("a short value");
    /// let copies = HeaderFields::copies_sharing_as([&first, &second, &first]);
    /// assert_eq!(copies, [first.clone(), second.clone()]);
    /// assert!(!copies[0].shares_block_with(&first));
    /// ```
    pub fn copies_sharing_as<'a>(blocks: impl IntoIterator<Item = &'a Self>) -> Vec<Self> {
        let mut lists: HashMap<*const FieldList, Arc<FieldList>> = HashMap::new();
        let mut seen: HashSet<*const Block> = HashSet::new();
        let mut copies = Vec::new();
        for block in blocks {
            if !seen.insert(Arc::as_ptr(&block.0)) {
                continue;
            }
            let list = lists
                .entry(Arc::as_ptr(&block.0.list))
                .or_insert_with(|| Arc::new((*block.0.list).clone()));
            copies.push(Self(Arc::new(Block {
                list: Arc::clone(list),
                own: block.0.own,
            })));
        }
        copies
    }

    /// Request, response, trailers or trailers-only.
    pub fn kind(&self) -> BlockKind {
        self.0.list.kind
    }

    /// Changes what the block counts as (an injected block decoded on its
    /// own cannot know it follows response headers).
    pub(crate) fn set_kind(&mut self, kind: BlockKind) {
        Arc::make_mut(&mut Arc::make_mut(&mut self.0).list).kind = kind;
    }

    /// How many fields the block has.
    fn len(&self) -> usize {
        self.0.list.fields.len()
    }

    /// The first value of `field`, as sent.
    pub fn get(&self, field: ShownHeader) -> Option<&str> {
        self.field(field.name())
    }

    /// The first value of the field named `name` (compared as sent), any
    /// field.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.all().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The [`ShownHeader`] fields in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (ShownHeader, &str)> + '_ {
        self.all()
            .filter_map(|(n, v)| Some((ShownHeader::from_name(n)?, v)))
    }

    /// Every field in wire order, `(name, value)`.
    pub fn all(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let own = self.0.own.as_ref();
        self.0
            .list
            .fields
            .iter()
            .enumerate()
            .map(move |(i, (n, v))| match own {
                Some(own) if own.index() == i => (&**n, own.as_str()),
                _ => (&**n, &**v),
            })
    }

    /// The application's own metadata ([`is_custom_metadata`]) in wire
    /// order, `(key, value)`; a `-bin` value as the base64 sent.
    pub fn metadata(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.all().filter(|(n, _)| is_custom_metadata(n))
    }

    /// The `:path` of a request block; `None` for responses and trailers.
    pub fn request_path(&self) -> Option<&str> {
        match self.kind() {
            BlockKind::Request => self.get(ShownHeader::Path),
            _ => None,
        }
    }

    /// The fields as JSON writes them: `[["name", "value"], …]`.
    pub(super) fn serialize_fields(&self) -> impl Serialize + '_ {
        struct Fields<'a>(&'a HeaderFields);
        impl Serialize for Fields<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.all())
            }
        }
        Fields(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str) -> [(&'static str, String); 4] {
        [
            (":method", "POST".to_owned()),
            (":path", "/tt.v1.Store/Load".to_owned()),
            ("x-grpc-chaos-call", id.to_owned()),
            ("te", "trailers".to_owned()),
        ]
    }

    /// A block that shares another's list reads back, compares, prints and
    /// serializes exactly as one built on its own.
    #[test]
    fn a_block_with_a_value_of_its_own_reads_as_one_built_whole() {
        let first = HeaderFields::new(BlockKind::Request, request("1"));
        let second = first.with_value(2, "23").expect("fits");
        let whole = HeaderFields::new(BlockKind::Request, request("23"));
        assert!(second.shares_fields_with(&first) && !second.shares_block_with(&first));
        assert_eq!(second, whole);
        assert_ne!(second, first);
        assert_eq!(
            second.all().collect::<Vec<_>>(),
            whole.all().collect::<Vec<_>>()
        );
        assert_eq!(second.field("x-grpc-chaos-call"), Some("23"));
        assert_eq!(
            first.field("x-grpc-chaos-call"),
            Some("1"),
            "the list is untouched"
        );
        assert_eq!(format!("{second:?}"), format!("{whole:?}"));
        let json =
            |b: &HeaderFields| serde_json::to_string(&b.serialize_fields()).unwrap_or_default();
        assert_eq!(json(&second), json(&whole));
        assert!(json(&second).contains(r#"["x-grpc-chaos-call","23"]"#));
        // From a block with a value of its own, the same field again: the
        // same list, the new value.
        let third = second.with_value(2, "4294967295").expect("ten digits fit");
        assert!(third.shares_fields_with(&first));
        assert_eq!(
            third,
            HeaderFields::new(BlockKind::Request, request("4294967295"))
        );
        // Back to the list's own value: nothing of its own.
        let back = third.with_value(2, "1").expect("the list's value");
        assert!(back.0.own.is_none() && back == first);
    }

    #[test]
    fn a_value_that_does_not_fit_or_a_second_one_is_refused() {
        let first = HeaderFields::new(BlockKind::Request, request("1"));
        assert!(first.with_value(2, "12345678901234").is_none(), "14 bytes");
        assert!(first.with_value(2, "1234567890123").is_some(), "13 bytes");
        assert!(first.with_value(4, "x").is_none(), "no fifth field");
        let second = first.with_value(2, "2").expect("fits");
        assert!(second.with_value(3, "x").is_none());
        // A multi-byte value is kept whole.
        let wide = first.with_value(2, "é—ü").expect("7 bytes");
        assert_eq!(wide.field("x-grpc-chaos-call"), Some("é—ü"));
    }

    #[test]
    fn likeness_finds_the_one_differing_value() {
        let first = HeaderFields::new(BlockKind::Request, request("1"));
        let like = |b: &HeaderFields, kind, f: &[(&'static str, String)]| {
            b.likeness(kind, f.iter().map(|(n, v)| (*n, v.as_str())))
        };
        assert_eq!(
            like(&first, BlockKind::Request, &request("1")),
            Likeness::Same
        );
        assert_eq!(
            like(&first, BlockKind::Request, &request("2")),
            Likeness::OneValue(2)
        );
        assert_eq!(
            like(&first, BlockKind::Trailers, &request("1")),
            Likeness::Other
        );
        let mut two = request("2");
        two[3].1 = "other".into();
        assert_eq!(like(&first, BlockKind::Request, &two), Likeness::Other);
        let mut renamed = request("1");
        renamed[3].0 = "tf";
        assert_eq!(like(&first, BlockKind::Request, &renamed), Likeness::Other);
        assert_eq!(
            like(&first, BlockKind::Request, &request("1")[..3]),
            Likeness::Other
        );
        // Against a block with a value of its own: its fields as read.
        let second = first.with_value(2, "2").expect("fits");
        assert_eq!(
            like(&second, BlockKind::Request, &request("2")),
            Likeness::Same
        );
        assert_eq!(
            like(&second, BlockKind::Request, &request("1")),
            Likeness::OneValue(2)
        );
    }

    /// The copies share as the originals do and are new allocations.
    #[test]
    fn copies_share_their_lists_as_the_originals() {
        let a = HeaderFields::new(BlockKind::Request, request("1"));
        let b = a.with_value(2, "2").expect("fits");
        let c = HeaderFields::new(BlockKind::Trailers, [("grpc-status", "0")]);
        let copies = HeaderFields::copies_sharing_as([&a, &b, &c, &b, &a]);
        assert_eq!(copies, [a.clone(), b.clone(), c.clone()]);
        assert!(copies[0].shares_fields_with(&copies[1]));
        assert!(!copies[0].shares_fields_with(&copies[2]));
        assert!(!copies[0].shares_fields_with(&a) && !copies[1].shares_block_with(&b));
    }

    /// A block is one pointer; what it points at is 24 bytes (40 with the
    /// reference counts): the log's cost of a request that shares its
    /// list.
    #[test]
    fn a_block_is_one_pointer_to_24_bytes() {
        assert_eq!(std::mem::size_of::<HeaderFields>(), 8);
        assert_eq!(std::mem::size_of::<Block>(), 24);
        assert_eq!(std::mem::size_of::<FieldList>(), 24);
    }

    #[test]
    fn set_kind_leaves_the_shared_list_alone() {
        let first = HeaderFields::new(BlockKind::Response, [("grpc-status", "0")]);
        let mut second = first.with_value(0, "14").expect("fits");
        second.set_kind(BlockKind::Trailers);
        assert_eq!(
            (first.kind(), second.kind(), second.field("grpc-status")),
            (BlockKind::Response, BlockKind::Trailers, Some("14"))
        );
    }
}
