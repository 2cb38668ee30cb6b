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
    if word.is_ascii() {
        // ASCII words compare without lowercasing a copy (terms are lowercase already).
        return terms.iter().any(|t| {
            word.eq_ignore_ascii_case(t)
                || (word.len() >= t.len()
                    && word.as_bytes()[..t.len()].eq_ignore_ascii_case(t.as_bytes())
                    && t.chars().count() >= 4)
        });
    }
    let w = word.to_lowercase();
    terms
        .iter()
        .any(|t| w == *t || (t.chars().count() >= 4 && w.starts_with(t.as_str())))
}

/// The words of `s` in order, as byte range and character range, found lazily: a snippet reads
/// only as far as its window's end, not the whole document.
struct Words<'a> {
    s: &'a str,
    chars: std::str::CharIndices<'a>,
    count: usize,
}

/// A word: byte range, then character range.
type Word = ((usize, usize), (usize, usize));

impl Iterator for Words<'_> {
    type Item = Word;
    fn next(&mut self) -> Option<Word> {
        let mut start = None;
        for (i, c) in self.chars.by_ref() {
            let n = self.count;
            self.count += 1;
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some((i, n)),
                (false, Some((b, cb))) => return Some(((b, i), (cb, n))),
                _ => {}
            }
        }
        start.map(|(b, cb)| ((b, self.s.len()), (cb, self.count)))
    }
}

/// The snippet of `text` for `terms` (see the module documentation): plain and marked pieces
/// alternating, plain first. Whitespace runs become one space.
pub fn snippet(text: &str, terms: &[String]) -> Vec<String> {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut words = Words {
        s: &flat,
        chars: flat.char_indices(),
        count: 0,
    };
    // The words read so far: up to the first match (all of them when none matches).
    let mut ws: Vec<Word> = Vec::new();
    let mut hit = None;
    for w in words.by_ref() {
        ws.push(w);
        if matches(&flat[w.0 .0..w.0 .1], terms) {
            hit = Some(ws.len() - 1);
            break;
        }
    }
    // The window's first word: LEAD characters before the first match, at a word start.
    let start_word = hit.map_or(0, |h| {
        let at = ws[h].1 .0;
        ws.iter()
            .position(|&(_, (a, _))| a + LEAD >= at)
            .unwrap_or(h)
    });
    let (start, chars0) = if start_word == 0 {
        (0, 0)
    } else {
        (ws[start_word].0 .0, ws[start_word].1 .0)
    };
    // The window's words: those that end within WIDTH characters of the start (read on
    // from the text as far as needed).
    let mut window: Vec<Word> = Vec::new();
    for w in ws.iter().copied().skip(start_word).chain(words) {
        if w.1 .1 - chars0 > WIDTH {
            break;
        }
        window.push(w);
    }
    let end = window.last().map_or_else(
        || {
            flat[start..]
                .char_indices()
                .nth(WIDTH)
                .map_or(flat.len(), |(i, _)| start + i)
        },
        |&((_, b), _)| b,
    );
    // When the window ends at the last word of the text, it runs to the text's end.
    let last_word_end = !flat[end..].chars().any(char::is_alphanumeric)
        && flat[..end]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
    let end = if last_word_end { flat.len() } else { end };
    let ws = window;
    let mut pieces = vec![String::new()];
    if start > 0 {
        pieces[0].push('…');
    }
    let mut at = start;
    for &((a, b), _) in &ws {
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

    /// The window counted in one pass equals the window counted from the text's start for every
    /// word (the plain definition, kept here as the oracle), on texts with multi-byte
    /// characters before, inside and after the match, and on capitalised non-ASCII words.
    #[test]
    fn one_pass_offsets_equal_counting_from_the_start() {
        let naive = |text: &str, terms: &[String]| -> (usize, usize) {
            let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let ws = words(&flat);
            let first_char = |byte: usize| flat[..byte].chars().count();
            let hit = ws.iter().position(|&(a, b)| {
                let w = flat[a..b].to_lowercase();
                terms
                    .iter()
                    .any(|t| w == *t || (t.chars().count() >= 4 && w.starts_with(t.as_str())))
            });
            let sw = hit.map_or(0, |h| {
                let at = first_char(ws[h].0);
                ws.iter()
                    .position(|&(a, _)| first_char(a) + LEAD >= at)
                    .unwrap_or(h)
            });
            let c0 = if sw == 0 { 0 } else { first_char(ws[sw].0) };
            let n = ws[sw.min(ws.len())..]
                .iter()
                .take_while(|&&(_, b)| first_char(b) - c0 <= WIDTH)
                .count();
            (c0, n)
        };
        let texts = [
            format!(
                "{} Ärger über café {}",
                "naïve señor ".repeat(30),
                "Æsir ørsted ".repeat(40)
            ),
            format!(
                "{}ÜBERGANG {}",
                "日本語 テキスト ".repeat(25),
                "x ".repeat(150)
            ),
            "Déploiement DEPLOYING déploy".to_string(),
        ];
        for (text, q) in texts
            .iter()
            .zip(["café ärger", "übergang", "deploy déploy"])
        {
            let t = terms(q);
            let (c0, n) = naive(text, &t);
            let got = snippet(text, &t);
            let shown: String = got.concat();
            let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let from: String = flat.chars().skip(c0).collect();
            assert!(
                shown
                    .trim_start_matches('…')
                    .starts_with(&from.chars().take(20).collect::<String>()),
                "{q}: {shown:?} does not start at char {c0}"
            );
            let marked_or_plain_words = words(shown.trim_matches('…')).len();
            assert_eq!(marked_or_plain_words, n, "{q}: {shown:?}");
        }
    }
}
