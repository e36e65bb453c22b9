//! What every target shares.

/// libfuzzer-sys aborts on every panic, even one caught: the decoder
/// catches the panics its HPACK library raises on crafted blocks
/// (`wire/hpack.rs`, "The fence") and reports them as decoding errors, by
/// design. A quiet hook lets those be; a panic that escapes the decoder
/// still unwinds into `fuzz_target!`, which aborts, so it is still a crash.
pub fn contained_panics_are_not_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}
