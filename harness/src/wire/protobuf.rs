//! Whether octets parse as a protobuf message at all: as prost 0.14 parses
//! a message whose every field is unknown (`impl Message for ()` in
//! `types.rs`: `decode_key`, then `skip_field` by the wire type, in
//! `encoding.rs`; `decode_varint` in `encoding/varint.rs`). A message that
//! does not parse so fails prost's decoding for every message type: a known
//! field of the right wire type takes the same octets as the skip, and one
//! of another wire type fails by itself. Used to tell a response tonic-prost
//! refused from one a caller stopped after (`client/body.rs`).
//!
//! prost's recursion limit on nested groups (100) is not applied: a build
//! with its `no-recursion-limit` feature has none, so such a message is
//! taken to parse (the answer errs towards "parses").

/// Whether `bytes` parse as a protobuf message with every field unknown.
pub(crate) fn parses(mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let Some((tag, wire)) = key(&mut bytes) else {
            return false;
        };
        if !skip(wire, tag, &mut bytes) {
            return false;
        }
    }
    true
}

/// `decode_key`: a varint of at most `u32::MAX`, wire type 0–5, tag ≥ 1.
fn key(bytes: &mut &[u8]) -> Option<(u32, u64)> {
    let key = varint(bytes)?;
    let key = u32::try_from(key).ok()?;
    let (tag, wire) = (key >> 3, u64::from(key & 0x07));
    (tag >= 1 && wire <= 5).then_some((tag, wire))
}

/// `skip_field`: past one field of wire type `wire`, a group up to its
/// matching end.
fn skip(wire: u64, tag: u32, bytes: &mut &[u8]) -> bool {
    let len = match wire {
        0 => return varint(bytes).is_some(),
        1 => 8,
        2 => match varint(bytes) {
            Some(len) => len,
            None => return false,
        },
        3 => loop {
            let Some((inner_tag, inner_wire)) = key(bytes) else {
                return false;
            };
            if inner_wire == 4 {
                if inner_tag != tag {
                    return false;
                }
                break 0;
            }
            if !skip(inner_wire, inner_tag, bytes) {
                return false;
            }
        },
        5 => 4,
        // An end of group with no group open.
        _ => return false,
    };
    match usize::try_from(len) {
        Ok(len) if len <= bytes.len() => {
            *bytes = &bytes[len..];
            true
        }
        _ => false,
    }
}

/// `decode_varint`: at most 10 octets, the last below 0x80, a tenth one
/// below 0x02 (no overflow of `u64`).
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (count, &byte) in bytes.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7F) << (count * 7);
        if byte < 0x80 {
            if count == 9 && byte >= 0x02 {
                return None;
            }
            *bytes = &bytes[count + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parses;
    use proptest::prelude::*;

    fn prost_parses(bytes: &[u8]) -> bool {
        <() as prost::Message>::decode(bytes).is_ok()
    }

    #[test]
    fn what_parses_and_what_does_not() {
        for (bytes, ok) in [
            (&[][..], true),
            (&[0x08, 0x01], true),                   // field 1, varint 1
            (&[0x08, 0xfe], false),                  // the varint never ends
            (&[0x0a, 0x02, 0x61], false),            // 2 octets said, 1 there
            (&[0x0a, 0x01, 0x61], true),             // field 1, "a"
            (&[0x00, 0x01], false),                  // tag 0
            (&[0x0e], false),                        // wire type 6
            (&[0x0b, 0x08, 0x01, 0x0c], true),       // group 1 { 1: 1 }
            (&[0x0b, 0x08, 0x01, 0x14], false),      // group 1 ended as 2
            (&[0x0c], false),                        // an end of no group
            (&[0x0d, 0, 0, 0], false),               // fixed32, 3 octets
            (&[0x09, 0, 0, 0, 0, 0, 0, 0, 0], true), // fixed64
        ] {
            assert_eq!(parses(bytes), ok, "{bytes:x?}");
            assert_eq!(prost_parses(bytes), ok, "prost, {bytes:x?}");
        }
        // A tenth varint octet of 2 overflows u64; of 1 it does not.
        let mut max = vec![0x08];
        max.extend([0xff; 9]);
        assert!(parses(&[max.as_slice(), &[0x01]].concat()));
        assert!(!parses(&[max.as_slice(), &[0x02]].concat()));
    }

    proptest! {
        /// The same answer as prost's own decoding, on any octets, and on
        /// octets made mostly of field keys.
        #[test]
        fn agrees_with_prost(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(parses(&bytes), prost_parses(&bytes));
        }

        #[test]
        fn agrees_with_prost_on_keyed_octets(
            parts in proptest::collection::vec((1u32..20, 0u8..8, any::<u8>()), 0..12)
        ) {
            let mut bytes = Vec::new();
            for (tag, wire, value) in parts {
                bytes.push(u8::try_from((tag << 3) & 0xff).unwrap_or(0x08) | wire);
                bytes.push(value % 4);
            }
            prop_assert_eq!(parses(&bytes), prost_parses(&bytes));
        }
    }
}
