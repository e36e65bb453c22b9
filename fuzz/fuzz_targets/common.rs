//! What every target shares.

/// libfuzzer-sys aborts on every panic, even one caught: the decoder
/// catches the panics its HPACK library raises on crafted blocks
/// (`wire/hpack.rs`, "The fence") and reports them as decoding errors, by
/// design. A quiet hook lets those be; a panic that escapes the decoder
/// still unwinds into `fuzz_target!`, which aborts, so it is still a crash.
///
/// Quiet, a crash says nothing of its panic: with `FUZZ_SHOW_PANICS` set
/// (`ci/fuzz.sh` sets it when it runs a failing input again), every panic
/// is printed with where it happened, the contained ones too; the last
/// one before the abort is the crash.
pub fn contained_panics_are_not_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("FUZZ_SHOW_PANICS").is_some() {
            std::panic::set_hook(Box::new(|info| eprintln!("fuzz target: {info}")));
        } else {
            std::panic::set_hook(Box::new(|_| {}));
        }
    });
}
