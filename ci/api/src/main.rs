//! `grpc-chaos-api-listing JSON`: prints the public API in rustdoc's JSON
//! file `JSON` (one item per line, sorted, as cargo-public-api prints it),
//! then, on standard error, the counts the front of the house is held to:
//! names at the crate root and public type names that appear at more than
//! one path.

use std::collections::BTreeMap;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(json) = std::env::args().nth(1) else {
        eprintln!("usage: grpc-chaos-api-listing TARGET/doc/grpc_chaos.json");
        return ExitCode::from(2);
    };
    // Blanket and auto-trait impls (`Into<U>`, `Send`, zerocopy's casts)
    // follow from the types and change with the dependencies' versions:
    // left out, as cargo-public-api's `--omit` does.
    let api = match public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
    {
        Ok(api) => api,
        Err(e) => {
            eprintln!("{json}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let lines: Vec<String> = api.items().map(|item| item.to_string()).collect();
    for line in &lines {
        println!("{line}");
    }
    if report(&lines) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The most names the crate root may have, modules aside (#29: "a public
/// API you can hold in your head"; turmoil's and tonic's roots have 13).
const ROOT_LIMIT: usize = 12;

/// Prints the root's names and the type names at several paths, from the
/// listing's lines (`pub struct grpc_chaos::trace::Call`, …); whether
/// both are within the rules: at most [`ROOT_LIMIT`] root names, and no
/// type name at two paths (one type reached two ways, or two types with
/// one name).
fn report(lines: &[String]) -> bool {
    let mut root = Vec::new();
    let mut types: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in lines {
        let Some((kind, path)) = item(line) else { continue };
        let segments: Vec<&str> = path.split("::").collect();
        if segments.len() == 2 && kind != "mod" {
            root.push(segments[1]);
        }
        if matches!(kind, "struct" | "enum" | "trait" | "type") {
            types.entry(segments[segments.len() - 1]).or_default().push(path);
        }
    }
    root.sort_unstable();
    root.dedup();
    eprintln!("{} names at the crate root (modules aside): {}", root.len(), root.join(", "));
    let mut ok = root.len() <= ROOT_LIMIT;
    if !ok {
        eprintln!("error: more than {ROOT_LIMIT} names at the crate root; move some into a module");
    }
    for (name, mut paths) in types {
        paths.sort_unstable();
        paths.dedup();
        if paths.len() > 1 {
            eprintln!("error: type name {name} at {} paths: {}", paths.len(), paths.join(", "));
            ok = false;
        }
    }
    ok
}

/// `(kind, path)` of an item's declaration line: `pub struct a::B<T>`
/// gives `("struct", "a::B")`; methods, fields, impls and associated types
/// (whose parent is a type, not a module) give `None`.
fn item(line: &str) -> Option<(&str, &str)> {
    // Attributes such as `#[non_exhaustive]` come first.
    let line = line.rsplit_once("] ").map_or(line, |(_, rest)| rest);
    let rest = line.strip_prefix("pub ")?;
    let rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
    let (kind, rest) = rest.split_once(' ')?;
    let kinds = ["struct", "enum", "trait", "type", "fn", "const", "static", "mod", "use", "macro"];
    if !kinds.contains(&kind) {
        return None;
    }
    let end =
        rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
    let path = rest[..end].trim_end_matches(':');
    let parent = path.rsplit("::").nth(1)?;
    let in_module = parent.starts_with(|c: char| c.is_ascii_lowercase());
    (path.starts_with("grpc_chaos") && in_module).then_some((kind, path))
}
