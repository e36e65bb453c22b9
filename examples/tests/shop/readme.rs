//! The README's example is `deadline.rs`, and the guide's first page
//! shows `build.rs`, line for line.

/// The first block after `fence` in `page`.
fn block<'a>(page: &'a str, fence: &str) -> &'a str {
    let rest = page.split(fence).nth(1).unwrap_or_else(|| panic!("no {fence:?} block"));
    rest.split("\n```").next().unwrap_or(rest)
}

#[test]
fn the_readme_shows_deadline_rs() {
    let readme = include_str!("../../../README.md");
    assert_eq!(
        block(readme, "```rust\n"),
        include_str!("deadline.rs").trim_end(),
        "README.md's example differs from examples/tests/shop/deadline.rs"
    );
}

#[test]
fn the_guide_shows_build_rs() {
    let guide = include_str!("../../../harness/src/guide/own_services.md");
    assert_eq!(
        block(guide, "```rust,ignore\n// build.rs\n"),
        include_str!("../../build.rs").trim_end(),
        "harness/src/guide/own_services.md's build.rs differs from examples/build.rs"
    );
}
