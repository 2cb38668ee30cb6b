//! The ranking explorer: one self-contained HTML page per report (`<experiment>.html` beside the
//! Markdown, and `ranklab compare --html`) that shows, task by task, two configurations' lists
//! side by side: rank, score, judgment mark, movement between the lists, the record's title,
//! lifecycle and date, and a snippet with the query's terms marked.
//!
//! Guarantees:
//! - **Nothing remote.** The page's CSS and JavaScript are inline (`explorer/explorer.css`,
//!   `explorer/explorer.js`, compiled in), and a Content-Security-Policy meta forbids every
//!   other load ([`CSP`]).
//! - **Safe by construction.** The data is one JSON block in `<script type="application/json">`
//!   with `<`, `>` and `&` written as `\u003c`, `\u003e`, `\u0026` ([`json_block`]), so no record
//!   text can close the block or open a comment; the script renders every string with
//!   `textContent` (never `innerHTML`); the summary shown without JavaScript is HTML-escaped
//!   ([`escape_html`]).
//! - **Byte-identical on a rerun.** No date, timing or path of the machine; maps are ordered
//!   (`BTreeMap`), lists in their ranking order.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;

pub mod compare;
pub mod runs;
pub mod snippet;
pub mod suite;

/// How deep each list is shown: the task's k and beyond it, to this rank.
pub const SHOWN_DEPTH: usize = 20;

/// The page's Content-Security-Policy: inline style and script, `data:` images, nothing else.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const CSS: &str = include_str!("explorer.css");
const JS: &str = include_str!("explorer.js");

/// Everything one page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    /// The page's title (`brain — wiring`).
    pub title: String,
    /// Plain-text paragraphs under the title (the decision, where the data came from).
    pub notes: Vec<String>,
    /// The report's measures (`recall@5`, `MRR`, ...): the Δ columns.
    pub measures: Vec<String>,
    /// Index of the baseline in `configs` (the left list by default).
    pub baseline: usize,
    /// The configurations (or runs), in the report's order.
    pub configs: Vec<String>,
    /// The tasks, in the report's order.
    pub tasks: Vec<PageTask>,
    /// What the page says about each document shown, by id.
    pub docs: BTreeMap<String, DocInfo>,
    /// `[config][task]`: one side of the comparison.
    pub runs: Vec<Vec<Side>>,
}

/// One task of the page.
#[derive(Debug, Clone, Serialize)]
pub struct PageTask {
    /// Task (query) id.
    pub id: String,
    /// The query text (None: the runs' collection has no query text).
    pub query: Option<String>,
    /// The task's cutoff.
    pub k: usize,
    /// The judged documents and their grades (>= 1 relevant), by id.
    pub judged: BTreeMap<String, i32>,
    /// Per document shown for this task, its snippet: plain and marked pieces alternating,
    /// plain first ([`snippet::snippet`]).
    pub snippets: BTreeMap<String, Vec<String>>,
}

/// What the page says about one document.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DocInfo {
    /// The record's title (empty when it has none).
    pub title: String,
    /// Its lifecycle (`active`, `superseded`, `deprecated`), when the corpus has front matter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<String>,
    /// Its `updated_at`, ISO date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// One configuration's answer to one task.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// The report's measures for this task (`Page::measures` order).
    pub values: Vec<f64>,
    /// 1-based rank of the first relevant document over the whole list (None: not retrieved).
    pub first: Option<usize>,
    /// The top of the list to [`SHOWN_DEPTH`]: `(document id, score)`.
    pub hits: Vec<(String, f64)>,
}

impl Page {
    /// Adds, for every task, the snippet of each document shown in any list or judged, taken
    /// from `text(task index, document id)` (None: no text, no snippet).
    pub fn add_snippets(&mut self, text: impl Fn(usize, &str) -> Option<String>) {
        for (t, task) in self.tasks.iter_mut().enumerate() {
            let terms = snippet::terms(task.query.as_deref().unwrap_or(""));
            let shown = self
                .runs
                .iter()
                .flat_map(|run| run[t].hits.iter().map(|(d, _)| d.as_str()))
                .chain(task.judged.keys().map(String::as_str));
            for id in shown {
                if task.snippets.contains_key(id) {
                    continue;
                }
                if let Some(body) = text(t, id) {
                    task.snippets
                        .insert(id.to_string(), snippet::snippet(&body, &terms));
                }
            }
        }
    }

    /// Per configuration, the mean of each measure over the tasks.
    fn means(&self) -> Vec<Vec<f64>> {
        self.runs
            .iter()
            .map(|run| {
                (0..self.measures.len())
                    .map(|m| {
                        let sum: f64 = run.iter().map(|s| s.values[m]).sum();
                        sum / run.len().max(1) as f64
                    })
                    .collect()
            })
            .collect()
    }
}

/// `s` with `&`, `<`, `>`, `"` and `'` escaped, for HTML text and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `page` as JSON safe inside a `<script>` element: `<`, `>` and `&` (which occur only inside
/// JSON strings) are written as `\u003c`, `\u003e`, `\u0026`, which JSON.parse reads back.
pub fn json_block(page: &Page) -> Result<String> {
    let json = serde_json::to_string(page)?;
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // Line separators are valid in JSON strings but not in older script parsers.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// A score as the page's tables show it.
fn number(x: f64) -> String {
    format!("{x:.3}")
}

/// The whole page.
pub fn render(page: &Page) -> Result<String> {
    let mut h = String::with_capacity(64 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    writeln!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
    )?;
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    writeln!(
        h,
        "<title>{} — ranking explorer</title>",
        escape_html(&page.title)
    )?;
    writeln!(h, "<style>\n{CSS}</style>\n</head>\n<body>")?;
    writeln!(h, "<header><h1>{}</h1>", escape_html(&page.title))?;
    for n in &page.notes {
        writeln!(h, "<p>{}</p>", escape_html(n))?;
    }
    h.push_str("</header>\n");
    summary(&mut h, page)?;
    static_tasks(&mut h, page)?;
    h.push_str("<noscript><p class=\"note\">The side-by-side lists need JavaScript; the tables above are the summary.</p></noscript>\n");
    h.push_str("<main id=\"app\" hidden></main>\n");
    writeln!(
        h,
        "<script type=\"application/json\" id=\"data\">{}</script>",
        json_block(page)?
    )?;
    writeln!(h, "<script>\n{JS}</script>\n</body>\n</html>")?;
    Ok(h)
}

/// The means table (configuration x measure), readable without JavaScript.
fn summary(h: &mut String, page: &Page) -> Result<()> {
    h.push_str("<section id=\"summary\"><h2>Means over tasks</h2>\n<table class=\"means\"><thead><tr><th>configuration</th>");
    for m in &page.measures {
        write!(h, "<th>{}</th>", escape_html(m))?;
    }
    h.push_str("</tr></thead><tbody>\n");
    for (c, means) in page.means().iter().enumerate() {
        let mark = if c == page.baseline {
            " (baseline)"
        } else {
            ""
        };
        write!(h, "<tr><td>{}{mark}</td>", escape_html(&page.configs[c]))?;
        for v in means {
            write!(h, "<td>{}</td>", number(*v))?;
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
    Ok(())
}

/// The per-task table without JavaScript: id, query, k and the first relevant rank under each
/// configuration (`-`: not retrieved). The script hides it and shows its own.
fn static_tasks(h: &mut String, page: &Page) -> Result<()> {
    h.push_str("<section id=\"static-tasks\"><h2>First relevant rank, per task</h2>\n<table><thead><tr><th>task</th><th>query</th><th>k</th>");
    for c in &page.configs {
        write!(h, "<th>{}</th>", escape_html(c))?;
    }
    h.push_str("</tr></thead><tbody>\n");
    for (t, task) in page.tasks.iter().enumerate() {
        write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            escape_html(&task.id),
            escape_html(task.query.as_deref().unwrap_or("")),
            task.k
        )?;
        for run in &page.runs {
            match run[t].first {
                Some(r) => write!(h, "<td>{r}</td>")?,
                None => h.push_str("<td>-</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
    Ok(())
}
