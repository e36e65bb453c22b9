//! A row's text with its ids (`r1`, `h1`, `c1`, `s3`) as links to their
//! filters. Which ids a row links comes from its event's data (the
//! timeline passes the ids its event holds, `keys::Keys::named`); the text
//! only says where they stand. Nothing inside a quoted string (a
//! grpc-message, a hold's name) is linked, and `sN` only right after its
//! `cN`.

use std::collections::BTreeSet;

use super::Page;

/// Writes `text`, escaped, with each id of `known` it says a link to
/// `#only-<id>`.
pub(super) fn linked(page: &mut Page, text: &str, known: &BTreeSet<String>) {
    let mut quoted = false;
    let mut conn: Option<&str> = None;
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            page.markup(" ");
        }
        if quoted {
            page.text(word);
            quoted ^= quotes(word) % 2 == 1;
            conn = None;
            continue;
        }
        let start = word.len() - word.trim_start_matches(['(', '[']).len();
        let core = word[start..].trim_end_matches([',', ')', ':', ';', ']']);
        let end = start + core.len();
        let key = id_key(core, conn);
        conn = is_id(core, 'c').then_some(core);
        match key.filter(|k| known.contains(k)) {
            Some(key) => {
                page.text(&word[..start])
                    .markup("<a href=\"#only-")
                    .attr(&key)
                    .markup("\">")
                    .text(core)
                    .markup("</a>")
                    .text(&word[end..]);
            }
            None => {
                page.text(word);
            }
        }
        quoted ^= quotes(word) % 2 == 1;
    }
}

/// The filter key a word names, if it is an id: `r1`, `h1`, `c1` as they
/// are, `s3` as `c1s3` after `c1`.
fn id_key(word: &str, conn: Option<&str>) -> Option<String> {
    if is_id(word, 'r') || is_id(word, 'h') || is_id(word, 'c') {
        return Some(word.to_owned());
    }
    if is_id(word, 's') {
        return conn.map(|c| format!("{c}{word}"));
    }
    None
}

fn is_id(word: &str, prefix: char) -> bool {
    word.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Double quotes in `word` that open or close a string: the text render
/// quotes with `{:?}`, which escapes the ones inside as `\"`.
fn quotes(word: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in word.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => n += 1,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{linked, Page};

    fn link(text: &str) -> String {
        let known: BTreeSet<String> = ["r1", "h1", "c1", "c1s3"].map(String::from).into();
        let mut page = Page(String::new());
        linked(&mut page, text, &known);
        page.0
    }

    #[test]
    fn ids_link_to_their_filters_and_nothing_quoted_does() {
        assert_eq!(
            link("r2 call /a.B/C grpc-timeout=380ms (from h1)"),
            "r2 call /a.B/C grpc-timeout=380ms (from <a href=\"#only-h1\">h1</a>)"
        );
        assert_eq!(
            link("c1 s3 RST_STREAM CANCEL"),
            "<a href=\"#only-c1\">c1</a> <a href=\"#only-c1s3\">s3</a> RST_STREAM CANCEL"
        );
        assert_eq!(
            link("r1 call /a ended UNKNOWN \"see r1 \\\" h1\" after h1"),
            "<a href=\"#only-r1\">r1</a> call /a ended UNKNOWN \"see r1 \\\" h1\" after \
             <a href=\"#only-h1\">h1</a>"
        );
        assert_eq!(
            link("s3 alone, c2 s3"),
            "s3 alone, c2 s3",
            "no c1 before it"
        );
        assert_eq!(link("<r1>"), "&lt;r1&gt;");
    }
}
