//! The one-way flow, checked: no module imports from a module above it in
//! DESIGN's order. Reads every file under `src/`, finds each path it names
//! (`use crate::…`, `super::…`, a child module's `name::…`, inline or in a
//! `use` group; comments and string literals skipped), resolves it to the
//! deepest module of this crate it reaches, and fails on every path that
//! reaches a module ranked above the file's own. `ci/check.sh` runs it
//! first (`cargo test -p grpc-chaos --lib -- flow_check`).
//!
//! The ranks, top first: an import may stay in its rank or go down, and a
//! module may always name its own submodules (a folder's `mod.rs` is its
//! box's front). Every rank is a whole folder: no file is ranked apart
//! from the folder it sits in.
//!
//! | rank | box | modules |
//! |---|---|---|
//! | 0 | world, and what runs a sim | the crate root, `sim`, `check` (determinism, sweeps, `check_keepalive`, `check_middlebox`), `explore`, this check |
//! | 1 | wiring and the layers on it | `net`, `server` (with the handler layer, `server::handler`), `client`, `balance`, `retry` |
//! | 2 | wire tap, and the TLS under it | `net::tap`, `tls` |
//! | 3 | faults and policies | `fault` (the handler faults the handler layer applies among them), `policy` |
//! | 4 | the error every box above reports with (it carries a run's trace) | `error` |
//! | 5 | the trace's front: the assertions that judge it, the failure artifacts they write | `trace` |
//! | 6 | renderers, and every word the trace prints | `trace::render` |
//! | 7 | the trace's value and the queries over it | `trace::query` |
//! | 8 | recorder | `recorder` |
//! | 9 | leaves | `units`, `env`, `wire`, `spec`, `deadline`, `guide` (documentation only: it imports nothing) |
//!
//! The recorder sits below the trace in import terms: every box writes
//! into it and the trace is read from its events, so each of them names
//! the recorder's types and the recorder names none of theirs. The handler
//! layer (`server::handler`) is a tower layer on the server side, as in
//! DESIGN; the handler faults it applies (`fault::handler_rule`) are
//! faults, a rank below it.

use std::collections::BTreeSet;
use std::path::Path;

/// Longest-prefix ranks (see the module docs).
const RANKS: &[(&str, u8)] = &[
    ("", 0),
    ("sim", 0),
    ("check", 0),
    ("explore", 0),
    ("flow_check", 0),
    ("net", 1),
    ("server", 1),
    ("client", 1),
    ("balance", 1),
    ("retry", 1),
    ("net::tap", 2),
    ("tls", 2),
    ("fault", 3),
    ("policy", 3),
    ("error", 4),
    ("trace", 5),
    ("trace::render", 6),
    ("trace::query", 7),
    ("recorder", 8),
    ("units", 9),
    ("env", 9),
    ("wire", 9),
    ("spec", 9),
    ("deadline", 9),
    ("guide", 9),
];

/// The rank of module `m` (`net::tap::ends`); `None` for a top-level
/// module the table does not list, which is itself a failure.
fn rank(m: &[String]) -> Option<u8> {
    let joined = m.join("::");
    RANKS
        .iter()
        .filter(|(p, _)| p.is_empty() || joined == *p || joined.starts_with(&format!("{p}::")))
        .max_by_key(|(p, _)| p.len())
        .filter(|(p, _)| !p.is_empty() || m.is_empty())
        .map(|(_, r)| *r)
}

/// The module a file under `src/` is: `net/tap/mod.rs` is `net::tap`.
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `src` with comments and the insides of string and char literals blanked
/// out, so that a doc link or a message naming `crate::sim` is not an
/// import.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(b.len(), |n| i + n + 2);
            i = end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            let end = rest[body..]
                .find(&close)
                .map_or(b.len(), |n| i + body + n + close.len());
            out.push_str("\"\"");
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = rest[1..].find('\'').map(|n| n + 1);
            match close {
                Some(n) if n <= 12 && !rest[1..n].contains(char::is_whitespace) => {
                    out.push_str("' '");
                    i += n + 1;
                }
                _ => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path (as its segments) starting at byte `at` of `code`: one for a
/// plain path, one per leaf of a `{…}` group.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut i = at;
    let b = code.as_bytes();
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i] as char) {
            i += 1;
        }
        if i == start {
            break;
        }
        segments.push(code[start..i].to_owned());
        if code[i..].starts_with("::") {
            i += 2;
            if code[i..].starts_with('{') {
                // `sim::{self, …}` names `sim` itself: `self` resolves to
                // the prefix.
                let mut all = Vec::new();
                for item in group(code, i) {
                    for mut p in paths_at(&item, 0) {
                        let mut full = segments.clone();
                        full.append(&mut p);
                        all.push(full);
                    }
                }
                return all;
            }
        } else {
            break;
        }
    }
    vec![segments]
}

/// The top-level items of the `{…}` group opening at byte `at`.
fn group(code: &str, at: usize) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for c in code[at..].chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.push(std::mem::take(&mut cur));
                    break;
                }
            }
            ',' if depth == 1 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every module of the crate `path` (from `module`'s file) reaches, as
/// the deepest one it names; `None` for a path that names no module of the
/// crate (a local item, `std::…`).
fn resolve(
    module: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("super") => {
            base = module.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some(_) => {
            // A child module of this one, named without `self::`.
            let mut child = module.to_vec();
            child.push(path[0].clone());
            if !modules.contains(&child) {
                return None;
            }
            base = module.to_vec();
        }
        None => return None,
    }
    for seg in rest {
        let mut next = base.clone();
        next.push(seg.clone());
        if modules.contains(&next) {
            base = next;
        } else {
            break;
        }
    }
    Some(base)
}

/// The upward imports among `files` (path under `src/`, source), one line
/// each: `net/tap/mod.rs: net::tap (rank 2) imports sim (rank 0)`.
fn violations(files: &[(String, String)]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut found = BTreeSet::new();
    // Folder → folder, for imports between top-level folders.
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, src) in files {
        let file_module = module_of(path);
        let module = &file_module;
        let Some(own) = rank(module) else {
            found.insert(format!(
                "{path}: module `{}` has no rank in flow_check::RANKS",
                module.join("::")
            ));
            continue;
        };
        let code = code_only(src);
        let b = code.as_bytes();
        // Inline modules (`mod tests { use super::*; }`): their names, and
        // the brace depth inside each.
        let (mut inline, mut depth, mut opening): (Vec<(String, usize)>, usize, Option<String>) =
            (Vec::new(), 0, None);
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'{' {
                depth += 1;
                if let Some(name) = opening.take() {
                    inline.push((name, depth));
                }
                i += 1;
                continue;
            }
            if b[i] == b'}' {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
                continue;
            }
            if b[i] == b';' {
                opening = None;
            }
            let boundary = i == 0 || !is_ident(b[i - 1] as char) && b[i - 1] != b':';
            if boundary && is_ident(b[i] as char) {
                let mut j = i;
                while j < b.len() && is_ident(b[j] as char) {
                    j += 1;
                }
                if &code[i..j] == "mod" {
                    let name: String = code[j..]
                        .trim_start()
                        .chars()
                        .take_while(|c| is_ident(*c))
                        .collect();
                    if !name.is_empty() {
                        opening = Some(name);
                    }
                }
                let mut module = module.clone();
                module.extend(inline.iter().map(|(n, _)| n.clone()));
                // `pub(in crate::trace)` is a visibility, not an import:
                // it widens an item for the modules below the path.
                let visibility = code[..i].trim_end().ends_with("(in");
                if code[j..].starts_with("::") && !visibility {
                    for p in paths_at(&code, i) {
                        let Some(target) = resolve(&module, &p, &modules) else {
                            continue;
                        };
                        if let (Some(from), Some(to)) = (file_module.first(), target.first()) {
                            if from != to {
                                edges.insert((from.clone(), to.clone()));
                            }
                        }
                        let own_part = target.starts_with(&file_module);
                        if let Some(theirs) = rank(&target) {
                            if theirs < own && !own_part {
                                found.insert(format!(
                                    "{path}: {} (rank {own}) imports {} (rank {theirs}) via `{}`",
                                    display(&module),
                                    display(&target),
                                    p.join("::")
                                ));
                            }
                        }
                    }
                }
                i = j;
            } else {
                i += 1;
            }
        }
    }
    found.extend(circles(&edges));
    found.into_iter().collect()
}

/// Every circle of imports across top-level folders (`net → server →
/// net`), each named once from its smallest folder: folders of one rank
/// may import each other one way, never both.
fn circles(edges: &BTreeSet<(String, String)>) -> Vec<String> {
    let next = |from: &str| -> Vec<&str> {
        edges
            .iter()
            .filter(|(f, _)| f == from)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    let mut out = BTreeSet::new();
    let starts: BTreeSet<&str> = edges.iter().map(|(f, _)| f.as_str()).collect();
    for start in starts {
        // Depth-first over simple paths from `start`, back to `start`.
        let mut stack: Vec<Vec<&str>> = vec![vec![start]];
        while let Some(path) = stack.pop() {
            let last = path[path.len() - 1];
            for to in next(last) {
                if to == start && path.iter().all(|f| *f >= start) {
                    out.insert(format!(
                        "circle of imports across folders: {} → {start}",
                        path.join(" → ")
                    ));
                } else if !path.contains(&to) && to > start {
                    let mut longer = path.clone();
                    longer.push(to);
                    stack.push(longer);
                }
            }
        }
    }
    out.into_iter().collect()
}

fn display(m: &[String]) -> String {
    if m.is_empty() {
        "the crate root".to_owned()
    } else {
        m.join("::")
    }
}

fn read_tree(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a readable entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src/");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((
                rel,
                std::fs::read_to_string(&p).expect("a readable source file"),
            ));
        }
    }
}

#[test]
fn no_module_imports_from_a_module_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&root, &root, &mut files);
    assert!(files.len() > 50, "read {} files", files.len());
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "upward imports (see harness/src/flow_check.rs for the ranks):\n{}",
        found.join("\n")
    );
}

fn tree(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
        .collect()
}

#[test]
fn an_upward_import_fails_in_every_spelling() {
    let base = [
        (
            "lib.rs",
            "mod sim; mod net; mod trace; mod recorder; mod units;",
        ),
        ("sim/mod.rs", "pub(crate) struct Shared;"),
        ("net/mod.rs", "mod tap;"),
        ("trace/mod.rs", ""),
        ("recorder/mod.rs", ""),
        ("units.rs", ""),
    ];
    let with = |path: &'static str, src: &'static str| {
        let mut files = tree(&base);
        files.retain(|(p, _)| p != path);
        files.push((path.to_owned(), src.to_owned()));
        violations(&files)
    };
    // (file, source, the module above it that it reaches)
    let spellings = [
        ("net/tap/mod.rs", "use crate::sim::Shared;", "sim"),
        (
            "net/tap/mod.rs",
            "use crate::{recorder::X, sim::Shared};",
            "sim",
        ),
        (
            "net/tap/mod.rs",
            "use crate::{recorder::{X, Y}, sim::{self, Shared}};",
            "sim",
        ),
        (
            "net/tap/mod.rs",
            "fn f() { let _ = crate::sim::Shared; }",
            "sim",
        ),
        ("net/tap/mod.rs", "use super::Wiring;", "net"),
        ("net/tap/mod.rs", "use super::super::sim::Shared;", "sim"),
        (
            "net/tap/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::sim::Shared;\n}",
            "sim",
        ),
        (
            "recorder/mod.rs",
            "fn f(t: &crate::trace::Trace) {}",
            "trace",
        ),
        ("units.rs", "use crate::recorder::Recorder;", "recorder"),
    ];
    for (path, src, above) in spellings {
        let found = with(path, src);
        assert!(!found.is_empty(), "{path}: {src}");
        let reaches = format!(" imports {above} ");
        assert!(found.iter().all(|v| v.contains(&reaches)), "{found:?}");
    }
    // An inline module's `super` is the file's own module, not its parent.
    let inline = "#[cfg(test)]\nmod tests {\n    use super::*;\n}\nfn g() { super::x(); }";
    assert_eq!(
        with("units.rs", inline).len(),
        1,
        "only g's super:: is the root"
    );
    // Downward, in its own box, in a comment, a string or a doc link: fine.
    let fine = [
        (
            "net/tap/mod.rs",
            "use crate::recorder::Recorder; use crate::units::fmt;",
        ),
        ("net/mod.rs", "use tap::TapEnv; use crate::net::tap::X;"),
        (
            "net/tap/mod.rs",
            "// use crate::sim::Shared;\n/// [`Sim`](crate::sim::Sim)",
        ),
        (
            "net/tap/mod.rs",
            "const S: &str = \"crate::sim::Shared\"; fn f<'a>(c: char) { c == ':'; }",
        ),
        ("sim/mod.rs", "use crate::{net::X, trace::Y, recorder::Z};"),
        ("net/tap/mod.rs", "pub(in crate::sim) struct Shown;"),
    ];
    for (path, src) in fine {
        assert_eq!(with(path, src), Vec::<String>::new(), "{path}: {src}");
    }
    // A new top-level module must be given a rank.
    assert_eq!(with("shiny.rs", "").len(), 1);
}

#[test]
fn a_circle_across_folders_fails_and_one_way_passes() {
    let files = |server_src: &'static str| {
        tree(&[
            ("lib.rs", "mod net; mod server; mod units;"),
            (
                "net/mod.rs",
                "use crate::server::Incoming; pub(crate) struct Wiring;",
            ),
            ("server/mod.rs", server_src),
            ("units.rs", ""),
        ])
    };
    assert_eq!(
        violations(&files(
            "use crate::net::Wiring; pub(crate) struct Incoming;"
        )),
        ["circle of imports across folders: net → server → net"]
    );
    assert!(violations(&files("use crate::units::X; pub(crate) struct Incoming;")).is_empty());
}
