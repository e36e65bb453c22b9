//! The reference services of seed 000: a Scoreboard gateway in front of a
//! Store, and an Inventory, generated from `proto/tt.proto`.
//!
//! Their code lives in the grpc-chaos package (`harness/reference/`), so
//! that the guide's examples, which use them, run as doctests from the
//! published package alone; this module mounts it.

include!("../../../harness/reference/services.rs");

#[cfg(test)]
mod tests {
    /// The checked-in generated code (`harness/reference/tt_v1.rs`) is
    /// what this crate's build script makes of `proto/tt.proto` today: a
    /// change to the proto fails here until the file is copied again (the
    /// message says how).
    #[test]
    fn the_checked_in_code_is_what_the_proto_generates() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/tt.v1.rs"));
        let checked_in = include_str!("../../../harness/reference/tt_v1.rs");
        assert!(
            generated == checked_in,
            "harness/reference/tt_v1.rs differs from what proto/tt.proto generates; \
             copy it again: cp {}/tt.v1.rs harness/reference/tt_v1.rs",
            env!("OUT_DIR")
        );
    }
}
