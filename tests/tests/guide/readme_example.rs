//! The guide's first example (`harness/src/guide/own_services.md`), as a
//! user would paste it into `tests/chaos.rs`, on the bundled reference
//! services; `the_guide_shows_this_file` keeps the page and this file the
//! same. (The README's example is the example crate's,
//! `examples/tests/shop/deadline.rs`.)

use grpc_chaos::{spec_code, Fault, Sim};
use grpc_chaos_scenarios::services::pb::{scoreboard_client::ScoreboardClient, Rally};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use std::time::Duration;

#[test]
fn store_slowness_cancels_the_whole_chain() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::from_millis(120)).into_server(),
        )
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .delay(Duration::from_secs(2)),
    );
    sim.client("player", |player| async move {
        let mut req = tonic::Request::new(Rally::default());
        req.set_timeout(Duration::from_millis(500));
        let err = ScoreboardClient::new(player.channel("gateway"))
            .hit(req)
            .await
            .unwrap_err();
        assert_eq!(spec_code(&err), tonic::Code::DeadlineExceeded);
        Ok(())
    });
    let trace = sim.run()?;
    trace.assert_deadline_propagated(["player", "gateway", "store"])?;
    trace.assert_no_orphan_work()?;
    insta::assert_snapshot!(trace.render());
    Ok(())
}

#[test]
fn the_guide_shows_this_file() {
    let example = grpc_chaos_tests::readme_example(include_str!("readme_example.rs"));
    assert!(
        include_str!("../../../harness/src/guide/own_services.md").contains(example),
        "harness/src/guide/own_services.md's example differs from tests/tests/guide/readme_example.rs"
    );
}

/// The README stays a front page (#29): at most 200 lines, one Rust
/// example of at most 40, and the two commands as CI runs them; the
/// guides are the harness's `guide` pages.
#[test]
fn the_readme_is_a_front_page() {
    let readme = include_str!("../../../README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; move text into harness/src/guide/"
    );
    let examples: Vec<usize> = readme
        .split("```rust")
        .skip(1)
        .map(|block| block.split("\n```").next().unwrap_or(block).lines().count())
        .collect();
    assert_eq!(examples.len(), 1, "README.md's Rust examples: {examples:?}");
    assert!(
        examples[0] <= 40,
        "README.md's example has {} lines",
        examples[0]
    );
    for command in [
        "cargo run --release --bin grpc-chaos -- run --all",
        "cargo test --workspace",
    ] {
        assert!(readme.contains(&format!("\n{command}\n")), "{command}");
    }
    assert!(readme.contains("grpc_chaos::guide"));
}

/// The guide module holds pages only: each line of its `mod.rs` is a
/// comment, a page's `#[doc = include_str!(..)]` or the empty module it
/// documents, so it adds no item to the crate.
#[test]
fn the_guide_is_documentation_only() {
    let module = include_str!("../../../harness/src/guide/mod.rs");
    for line in module.lines().map(str::trim) {
        let page = line.starts_with("#[doc = include_str!(\"") && line.ends_with(".md\")]");
        let empty_mod = line.starts_with("pub mod ") && line.ends_with(" {}");
        assert!(
            line.is_empty() || line.starts_with("//!") || page || empty_mod,
            "harness/src/guide/mod.rs: {line}"
        );
    }
}
