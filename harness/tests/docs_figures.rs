//! Figures the README and the guides quote from reports cannot drift from them (issue 43, item 2).
//! Reports are re-rendered; prose quoting them by hand went stale (docir's corpus-size gap, the
//! SciFact table, "T28: 3 -> 7"). Properties checked:
//!
//! - every 3- or 4-decimal figure in the prose of the front-door pages (README.md, docs/beir.md,
//!   docs/reports.md, bench/scifact-finetune/README.md) is in a committed report under
//!   `reports/` or in the shared data's README, rounded to 3 decimals or not; code blocks,
//!   indented lines and lines that name their source (a link, or "published") are left out;
//! - a block (from the line after the marker to the next blank line) marked
//!   `<!-- figures: REPORT... -->` in README.md, docs/*.md or bench/*/README.md quotes only the
//!   figures of the reports it names (a parenthesis saying "published" is left out), and every
//!   quoted sentence (in double quotes, fragments split at "…", or a `>` block quote) is in one of
//!   those reports word for word;
//! - the pages that quote reports keep their markers (a marker removed is a check removed).
//!
//! The oracle is the committed report files themselves, read as text; the checker is tested on
//! a made-up page and report (a drifted figure and a drifted sentence are found).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The figures of `text`: a digit, a point and 3 or 4 digits, not part of a longer number.
fn figures(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        let starts = b[i].is_ascii_digit()
            && b.get(i + 1) == Some(&b'.')
            && (i == 0 || !(b[i - 1].is_ascii_digit() || b[i - 1] == b'.'));
        if starts {
            let decimals = b[i + 2..].iter().take_while(|c| c.is_ascii_digit()).count();
            if (3..=4).contains(&decimals) {
                out.push(text[i..i + 2 + decimals].to_string());
            }
            i += 2 + decimals.max(1);
        } else {
            i += 1;
        }
    }
    out
}

/// Each figure as written and rounded to 3 decimals.
fn with_roundings(found: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for f in found {
        let x: f64 = f.parse().expect("a figure parses");
        set.insert(format!("{x:.3}"));
        set.insert(f);
    }
    set
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn reports_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            reports_under(&path, out);
        } else if ["md", "json", "csv", "svg", "txt"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

/// Every figure of every committed report, and of the shared data's README.
fn committed_figures() -> BTreeSet<String> {
    let mut files = Vec::new();
    reports_under(&root().join("reports"), &mut files);
    let shared = std::env::var_os("RANKLAB_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data"));
    files.push(shared.join("README.md"));
    with_roundings(files.iter().flat_map(|p| figures(&read(p))))
}

/// Lines outside fenced code blocks, not indented as code, naming no source.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let lower = line.to_lowercase();
        if fenced
            || line.starts_with("    ")
            || lower.contains("http")
            || lower.contains("published")
        {
            continue;
        }
        out.push(line);
    }
    out
}

/// A block marked `<!-- figures: ... -->`: the reports it names, its line number, its text.
struct Marked {
    reports: Vec<String>,
    line: usize,
    text: String,
}

fn marked_blocks(page: &str) -> Vec<Marked> {
    let lines: Vec<&str> = page.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix("<!-- figures:") else {
            continue;
        };
        let names = rest.trim_end_matches("-->").split_whitespace();
        let block = lines[i + 1..].iter().take_while(|l| !l.trim().is_empty());
        out.push(Marked {
            reports: names.map(str::to_string).collect(),
            line: i + 1,
            text: block.copied().collect::<Vec<_>>().join("\n"),
        });
    }
    out
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text without its parentheses that say "published" (figures from elsewhere, sourced).
fn without_published(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let Some(len) = rest[open..].find(')') else {
            break;
        };
        let inner = &rest[open..open + len + 1];
        out.push_str(&rest[..open]);
        if !inner.to_lowercase().contains("published") {
            out.push_str(inner);
        }
        rest = &rest[open + len + 1..];
    }
    out.push_str(rest);
    out
}

/// The sentences a block quotes: `>` lines as one quote, and each fragment (split at "…") of
/// text in double quotes, 12 characters or more once trimmed.
fn quotes(block: &str) -> Vec<String> {
    let quoted: Vec<&str> = block
        .lines()
        .filter_map(|l| l.strip_prefix('>'))
        .map(str::trim)
        .collect();
    let mut out = Vec::new();
    if !quoted.is_empty() {
        out.push(squash(&quoted.join(" ")));
    }
    let flat = squash(block);
    for (i, part) in flat.split('"').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        for frag in part.split('…') {
            let frag = frag.trim_matches(|c: char| " ().,;:".contains(c));
            if frag.chars().count() >= 12 {
                out.push(frag.to_string());
            }
        }
    }
    out
}

/// What a marked block says that its reports do not: figures, then quotes.
fn misses(block: &Marked, reports: &[String]) -> Vec<String> {
    let known = with_roundings(reports.iter().flat_map(|r| figures(r)));
    let flat: Vec<String> = reports.iter().map(|r| squash(r)).collect();
    let mut out: Vec<String> = figures(&without_published(&block.text))
        .into_iter()
        .filter(|f| !known.contains(f))
        .map(|f| format!("figure {f}"))
        .collect();
    for q in quotes(&block.text) {
        if !flat.iter().any(|r| r.contains(&q)) {
            out.push(format!("quote \"{q}\""));
        }
    }
    out
}

/// README.md, docs/*.md and bench/*/README.md.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    for dir in ["docs", "bench"] {
        for entry in fs::read_dir(root().join(dir)).expect("a folder of the repository") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                out.push(path.join("README.md"));
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.retain(|p| p.exists());
    out.sort();
    out
}

#[test]
fn every_figure_quoted_by_the_front_door_pages_is_in_a_committed_report() {
    let known = committed_figures();
    let mut bad = Vec::new();
    for page in [
        "README.md",
        "docs/beir.md",
        "docs/reports.md",
        "bench/scifact-finetune/README.md",
    ] {
        for line in prose_lines(&read(&root().join(page))) {
            for f in figures(line).into_iter().filter(|f| !known.contains(f)) {
                bad.push(format!("{page}: {f} in \"{line}\""));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "figures in no committed report (quote the report, mark the block with <!-- figures: \
         REPORT -->, or name the source on the line):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_marked_block_quotes_only_the_reports_it_names() {
    let mut bad = Vec::new();
    for page in pages() {
        let name = page
            .strip_prefix(root())
            .unwrap_or(&page)
            .display()
            .to_string();
        for block in marked_blocks(&read(&page)) {
            assert!(
                !block.reports.is_empty() && !block.text.is_empty(),
                "{name}:{}: a figures marker names a report and precedes its block",
                block.line
            );
            let reports: Vec<String> = block
                .reports
                .iter()
                .map(|r| read(&root().join(r)))
                .collect();
            for m in misses(&block, &reports) {
                let from = block.reports.join(", ");
                bad.push(format!("{name}:{}: {m} is not in {from}", block.line));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "drifted from the reports:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_pages_that_quote_reports_keep_their_markers() {
    for (page, at_least) in [
        ("README.md", 4),
        ("docs/beir.md", 5),
        ("docs/reports.md", 2),
    ] {
        let n = marked_blocks(&read(&root().join(page))).len();
        assert!(
            n >= at_least,
            "{page}: {n} figures markers, expected {at_least} or more"
        );
    }
}

#[test]
fn the_checker_finds_a_drifted_figure_and_a_drifted_quote() {
    let report = "| bm25+ce | 0.6782 | 0.9220 |\nOn nDCG@5, the gap widens from −0.087 to −0.158.";
    let page = "intro\n\n<!-- figures: r.md -->\nbm25+ce 0.6803 (published: BEIR 0.688), recall \
                0.922, \"the gap widens from −0.075 to −0.158\"\n\nafter 0.1234\n";
    let blocks = marked_blocks(page);
    assert_eq!(blocks.len(), 1);
    assert_eq!(
        (blocks[0].line, blocks[0].reports.clone()),
        (3, vec!["r.md".to_string()])
    );
    let found = misses(&blocks[0], &[report.to_string()]);
    assert_eq!(
        found,
        vec![
            "figure 0.6803".to_string(),
            "figure 0.075".to_string(),
            "quote \"the gap widens from −0.075 to −0.158\"".to_string(),
        ]
    );
    let fixed = page.replace("0.6803", "0.6782").replace("−0.075", "−0.087");
    assert!(misses(&marked_blocks(&fixed)[0], &[report.to_string()]).is_empty());
    assert_eq!(
        figures("10.123 0.12 3.14159 0.1234,0.567 (1.2345)"),
        ["0.1234", "0.567", "1.2345"]
    );
}
