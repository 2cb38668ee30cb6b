//! The snippet of a document for a query: about [`WIDTH`] characters of its text around the
//! first word that matches a query term, cut at word boundaries, as pieces that alternate plain
//! and marked text (plain first). The page renders the marked pieces in `<mark>` elements with
//! `textContent`, so a snippet can hold any text safely.
//!
//! A word (a maximal run of alphanumeric characters) matches a term when, lowercased, it equals
//! the term or, for terms of 4 characters or more, starts with it (`deploy` marks `deploying`).
//! Terms are the query's words, lowercased, without a short list of function words.

/// Characters of text a snippet shows (the ellipses aside).
pub const WIDTH: usize = 200;
/// Characters kept before the first match.
const LEAD: usize = 60;

const STOP: [&str; 32] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "my", "of", "on", "or", "our", "the", "this", "to", "we", "what", "when", "which",
    "who", "why", "with",
];

/// The query's terms: its words lowercased, function words left out, each once (first
/// occurrence order).
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words(query) {
        let w: String = query[w.0..w.1].to_lowercase();
        if !STOP.contains(&w.as_str()) && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Byte ranges of the words of `s` (maximal runs of alphanumeric characters).
fn words(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                out.push((b, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, s.len()));
    }
    out
}

fn matches(word: &str, terms: &[String]) -> bool {
    let w = word.to_lowercase();
    terms
        .iter()
        .any(|t| w == *t || (t.chars().count() >= 4 && w.starts_with(t.as_str())))
}

/// The snippet of `text` for `terms` (see the module documentation): plain and marked pieces
/// alternating, plain first. Whitespace runs become one space.
pub fn snippet(text: &str, terms: &[String]) -> Vec<String> {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let ws = words(&flat);
    let hit = ws.iter().position(|&(a, b)| matches(&flat[a..b], terms));
    // The window's first word: LEAD characters before the first match, at a word start.
    let first_char = |byte: usize| flat[..byte].chars().count();
    let start_word = match hit {
        Some(h) => {
            let at = first_char(ws[h].0);
            ws.iter()
                .position(|&(a, _)| first_char(a) + LEAD >= at)
                .unwrap_or(h)
        }
        None => 0,
    };
    let start = if start_word == 0 { 0 } else { ws[start_word].0 };
    let chars0 = first_char(start);
    // The window's last word: the last that ends within WIDTH characters of the start.
    let end = ws[start_word.min(ws.len())..]
        .iter()
        .take_while(|&&(_, b)| first_char(b) - chars0 <= WIDTH)
        .last()
        .map_or_else(
            || {
                flat[start..]
                    .char_indices()
                    .nth(WIDTH)
                    .map_or(flat.len(), |(i, _)| start + i)
            },
            |&(_, b)| b,
        );
    let end = if ws.last().is_some_and(|&(_, b)| b == end) {
        flat.len()
    } else {
        end
    };
    let mut pieces = vec![String::new()];
    if start > 0 {
        pieces[0].push('…');
    }
    let mut at = start;
    for &(a, b) in ws.iter().filter(|&&(a, b)| a >= start && b <= end) {
        if matches(&flat[a..b], terms) {
            pieces
                .last_mut()
                .expect("never empty")
                .push_str(&flat[at..a]);
            pieces.push(flat[a..b].to_string());
            pieces.push(String::new());
            at = b;
        }
    }
    let last = pieces.last_mut().expect("never empty");
    last.push_str(&flat[at..end]);
    if end < flat.len() {
        last.push('…');
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_function_words_and_repeats() {
        assert_eq!(
            terms("How do I deploy a service to the GCP service"),
            ["deploy", "service", "gcp"]
        );
    }

    /// Hand-made: the marked pieces are the words equal to a term or extending a term of 4+
    /// characters; `deployed`'s prefix `dep` is no term.
    #[test]
    fn marks_whole_words_equal_to_or_extending_a_term() {
        let t = terms("deploy GCP");
        let s = snippet("We  deploying to gcp, not Gcpx; deployed.", &t);
        assert_eq!(
            s,
            [
                "We ",
                "deploying",
                " to ",
                "gcp",
                ", not Gcpx; ",
                "deployed",
                "."
            ]
        );
    }

    /// A match far into a long text: the window starts at most LEAD characters before it, at a
    /// word start, and is cut at a word end with ellipses on both sides.
    #[test]
    fn a_late_match_is_windowed_at_word_boundaries() {
        let text = format!("{} exodus {}", "alpha ".repeat(40), "omega ".repeat(60));
        let s = snippet(&text, &terms("exodus"));
        assert_eq!(s.len(), 3);
        assert!(s[0].starts_with("…alpha "), "{s:?}");
        assert!(s[0].chars().count() <= LEAD + 2, "{s:?}");
        assert_eq!(s[1], "exodus");
        assert!(s[2].ends_with("omega…"), "{s:?}");
        let shown: usize = s.iter().map(|p| p.chars().count()).sum();
        assert!(shown <= WIDTH + 2, "{shown}");
    }

    #[test]
    fn no_match_shows_the_start_and_empty_text_one_empty_piece() {
        let s = snippet("short text", &terms("nothing"));
        assert_eq!(s, ["short text"]);
        assert_eq!(snippet("", &terms("x")), [""]);
    }
}
