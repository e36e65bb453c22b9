//! The fence around the HPACK library: cut-off and crafted representations
//! are errors, never panics; pathological blocks cost bounded work; the
//! dynamic table starts at 4,096 octets like the peer's.

use crate::wire::block::BlockKind;
use crate::wire::hpack::FieldDecoder;

fn decoder() -> FieldDecoder {
    FieldDecoder::new(1 << 20, 1 << 20)
}

fn decode(d: &mut FieldDecoder, block: &[u8]) -> Result<Vec<(String, String)>, String> {
    d.decode(block, BlockKind::Request)
        .map(|(b, _)| b.all().to_vec())
}

/// Whether decoding `block` left the dynamic table as it was.
fn neutral(d: &mut FieldDecoder, block: &[u8]) -> bool {
    d.decode(block, BlockKind::Request)
        .unwrap_or_else(|e| panic!("{block:02x?}: {e}"))
        .1
}

/// A literal without indexing and a new name (RFC 7541 §6.2.2).
fn literal_plain(name: &str, value: &str) -> Vec<u8> {
    let mut b = literal_indexed(name, value);
    b[0] = 0x00;
    b
}

/// A literal with incremental indexing and a new name (RFC 7541 §6.2.1),
/// raw (not Huffman) strings of under 127 octets.
fn literal_indexed(name: &str, value: &str) -> Vec<u8> {
    let mut b = vec![0x40, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.push(value.len() as u8);
    b.extend_from_slice(value.as_bytes());
    b
}

#[test]
fn a_representation_cut_off_by_the_block_end_is_an_error() {
    let whole = literal_indexed("grpc-timeout", "500m");
    for cut in 1..whole.len() {
        let err = decode(&mut decoder(), &whole[..cut]).expect_err("cut-off block");
        assert!(err.starts_with("HPACK decoding failed"), "cut {cut}: {err}");
    }
    assert_eq!(
        decode(&mut decoder(), &whole),
        Ok(vec![("grpc-timeout".to_owned(), "500m".to_owned())])
    );
}

#[test]
fn a_multi_octet_integer_cut_off_is_an_error() {
    // Indexed field whose index continues past the end of the block.
    for block in [&[0xff][..], &[0xff, 0x80], &[0xff, 0x80, 0x80]] {
        assert!(decode(&mut decoder(), block).is_err(), "{block:02x?}");
    }
}

#[test]
fn a_name_that_swallows_the_rest_of_the_block_is_an_error() {
    // Name length 12 where 12 octets remain (counting the padding the fence
    // adds): the value would start past the end.
    let mut block = vec![0x40, 4 + 8];
    block.extend_from_slice(b"abcd");
    assert!(decode(&mut decoder(), &block).is_err());
}

#[test]
fn size_updates_open_a_block_and_nowhere_else() {
    // Size update to 0 alone, then to 4,096 before a field: both fine.
    assert_eq!(decode(&mut decoder(), &[0x20]), Ok(vec![]));
    let mut d = decoder();
    assert_eq!(
        decode(&mut d, &[0x3f, 0xe1, 0x1f, 0x82]),
        Ok(vec![(":method".to_owned(), "GET".to_owned())])
    );
    // After a field (RFC 7541 §4.2).
    let err = decode(&mut decoder(), &[0x82, 0x20]).expect_err("late update");
    assert!(err.contains("size update after a field"), "{err}");
}

#[test]
fn the_dynamic_table_starts_at_4096_octets() {
    // Two entries of 1 + 2,100 + 32 octets fit in 4,096 only one at a time:
    // the first is evicted when the second arrives, so index 63 is empty.
    let value = "v".repeat(2_100);
    let mut d = decoder();
    let mut block = Vec::new();
    for name in ["a", "b"] {
        block.extend_from_slice(&[0x40, 1, name.as_bytes()[0]]);
        // Length 2,100 as a 7-bit-prefix integer: 127, then 1,973 in
        // 7-bit groups, low group first (RFC 7541 §5.1).
        block.extend_from_slice(&[0x7f, 0x80 | (1_973 & 0x7f) as u8, (1_973 >> 7) as u8]);
        block.extend_from_slice(value.as_bytes());
    }
    assert_eq!(decode(&mut d, &block).map(|f| f.len()), Ok(2));
    let newest = decode(&mut d, &[0x80 | 62]).map(|f| f[0].0.clone());
    assert_eq!(newest, Ok("b".to_owned()));
    assert!(
        decode(&mut d, &[0x80 | 63]).is_err(),
        "entry `a` was evicted"
    );
}

#[test]
fn a_block_of_very_many_fields_is_refused_instead_of_stalling() {
    // 2,000 one-octet fields decode; a 1 MiB block of them exceeds the
    // budget of moved octets and is an error, reached after a few dozen
    // fields rather than a million.
    let small = vec![0x82; 2_000];
    assert_eq!(decode(&mut decoder(), &small).map(|f| f.len()), Ok(2_000));
    let huge = vec![0x82; 1 << 20];
    let err = decode(&mut decoder(), &huge).expect_err("over budget");
    assert!(err.contains("too many fields"), "{err}");
}

#[test]
fn only_blocks_that_leave_the_table_alone_are_neutral() {
    let mut d = decoder();
    // Static-table entries (RFC 7541 Appendix A: 2 is `:method GET`) and
    // literals without indexing or never indexed touch no table.
    assert!(neutral(&mut d, &[0x82]));
    assert!(neutral(&mut d, &literal_plain("x-id", "7")));
    let mut never = literal_plain("x-id", "7");
    never[0] = 0x10;
    assert!(neutral(&mut d, &never));
    // An insertion, or a size update (even to the same size), does.
    assert!(!neutral(&mut d, &literal_indexed("x-id", "7")));
    assert!(!neutral(&mut d, &[0x3f, 0xe1, 0x1f]));
    // The entry inserted above, referred to (62 = first dynamic entry):
    // neutral again.
    assert!(neutral(&mut d, &[0xbe]));
}

/// What the decoder remembers is handed back only while the table is as it
/// was: the same octets after an insertion name a different entry.
#[test]
fn a_remembered_block_is_recalled_only_while_the_table_is_unchanged() {
    let mut d = decoder();
    let first = literal_indexed("x-id", "1");
    let _ = decode(&mut d, &first);
    // 0xbe: the newest dynamic entry, now `x-id: 1`.
    let (block, neutral) = d.decode(&[0xbe], BlockKind::Request).expect("decodes");
    assert!(neutral);
    let block = std::sync::Arc::new(block);
    d.remember(&[0xbe], &block);
    let again = d
        .recall(&[0xbe])
        .expect("recalled while the table is unchanged");
    assert!(std::sync::Arc::ptr_eq(again, &block));
    assert!(d.recall(&[0xbf]).is_none(), "other octets are not recalled");
    // After `x-id: 2` is inserted, 0xbe names it: recalling the old block
    // would be wrong.
    let _ = decode(&mut d, &literal_indexed("x-id", "2"));
    assert!(d.recall(&[0xbe]).is_none());
    assert_eq!(
        decode(&mut d, &[0xbe]),
        Ok(vec![("x-id".to_owned(), "2".to_owned())])
    );
}

/// One representation of a random block: references to the first few
/// dynamic entries (which may not exist yet: then the block is an error,
/// decoded both ways alike), and insertions of many different values, so
/// that the same octets often name a different entry later.
fn representation() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let names = ["x-id", "grpc-status", "content-type"];
    prop_oneof![
        1 => (1u8..62).prop_map(|i| vec![0x80 | i]),
        3 => (62u8..66).prop_map(|i| vec![0x80 | i]),
        2 => (0usize..3, 0u32..50)
            .prop_map(move |(n, v)| literal_indexed(names[n], &v.to_string())),
        1 => (0usize..3, 0u32..50).prop_map(move |(n, v)| literal_plain(names[n], &v.to_string())),
    ]
}

proptest::proptest! {
    /// Recalling remembered blocks, as the frame decoder does, gives the
    /// same fields, block after block, as decoding every block.
    #[test]
    fn recalling_blocks_changes_no_result(
        pool in proptest::collection::vec(
            (proptest::option::of(0u32..5000), proptest::collection::vec(representation(), 0..4)),
            1..5,
        ),
        order in proptest::collection::vec(0usize..4, 1..24),
    ) {
        let pool: Vec<Vec<u8>> = pool
            .into_iter()
            .map(|(size, reps)| {
                // A size update may open a block (RFC 7541 §4.2).
                let mut b = match size {
                    Some(s) if s < 31 => vec![0x20 | s as u8],
                    Some(s) => {
                        let rest = s - 31;
                        vec![0x3f, 0x80 | (rest & 0x7f) as u8, (rest >> 7) as u8]
                    }
                    None => vec![],
                };
                b.extend(reps.concat());
                b
            })
            .collect();
        let (mut plain, mut recalling) = (decoder(), decoder());
        for &i in &order {
            let block = &pool[i % pool.len()];
            let expected = decode(&mut plain, block);
            let got = match recalling.recall(block) {
                Some(known) => Ok(known.all().to_vec()),
                None => recalling.decode(block, BlockKind::Request).map(|(b, neutral)| {
                    let b = std::sync::Arc::new(b);
                    if neutral {
                        recalling.remember(block, &b);
                    }
                    b.all().to_vec()
                }),
            };
            proptest::prop_assert_eq!(&got, &expected, "block {:02x?}", block);
            if expected.is_err() {
                break;
            }
        }
    }
}
