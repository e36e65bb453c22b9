//! End-to-end tests live in tests/; this library holds what several of
//! them share.

/// The example part of a test file that the README shows: what follows its
/// first blank line (the module docs), up to its
/// `#[test] fn the_readme_shows_this_file`.
///
/// # Panics
/// When `file` has no blank line.
pub fn readme_example(file: &str) -> &str {
    let (_, rest) = file
        .split_once("\n\n")
        .expect("a blank line after the module docs");
    rest.split("\n#[test]\nfn the_readme_shows_this_file")
        .next()
        .unwrap_or(rest)
        .trim_end()
}
