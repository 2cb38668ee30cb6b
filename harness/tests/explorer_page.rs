//! The ranking explorer page (`reports/<suite>/<experiment>.html`) of a suite whose record
//! carries HTML payloads in its title and body. Properties:
//! - hostile text never appears raw: the page has exactly the two `<script` elements it
//!   writes, its JSON block holds no `<` at all, and no payload string occurs anywhere in the
//!   file (oracle: a plain scan of the bytes, and serde_json reading the block back);
//! - the escaping loses nothing: the title read back from the JSON block is the payload exactly;
//! - no remote reference: no `src=`/`href=` to `//` or `http(s):`, and the CSP meta forbids
//!   other sources;
//! - a rerun on the same inputs writes the same bytes.
//!
//! Fixture: the bad_input suite `p` (3 tasks, bm25 and the current wiring over bm25: no model),
//! its record epsilon and paired file removed, alpha's title and body given the payloads of
//! the acceptance check.

use std::path::Path;
use std::process::Command;

mod common;

const TITLE: &str =
    "Webhook replay <script>document.title=\"pwned\"</script><img src=x onerror=alert(1)>";
const LINK: &str = "See <a href=\"javascript:alert(2)\">this</a> and </script><!-- too.";

fn run(dir: &Path) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["run", "tasks/p", "--reports", "reports"])
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(dir.join("reports/p/e.html")).expect("reports/p/e.html written beside e.md")
}

fn hostile_suite() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("bad_input"), dir.path());
    std::fs::remove_file(dir.path().join("corpus/epsilon.md")).unwrap();
    std::fs::remove_file(dir.path().join("tasks/p/paired.yaml")).unwrap();
    let alpha = dir.path().join("corpus/alpha.md");
    let text = std::fs::read_to_string(&alpha).unwrap();
    let yaml_title = TITLE.replace('"', "\\\"");
    let text = text.replacen(
        "title: Idempotency keys for payment capture",
        &format!("title: \"{yaml_title}\""),
        1,
    ) + "\n"
        + LINK
        + "\n";
    std::fs::write(&alpha, text).unwrap();
    dir
}

/// The text between `<script type="application/json" id="data">` and the next `</script>`.
fn json_block(page: &str) -> &str {
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = page.find(open).expect("the data block") + open.len();
    let end = start + page[start..].find("</script>").expect("its end");
    &page[start..end]
}

#[test]
fn hostile_record_text_is_escaped_and_the_page_reruns_byte_identical() {
    let dir = hostile_suite();
    let first = run(dir.path());
    let second = run(dir.path());
    assert!(first == second, "the page differs between two runs");
    let page = String::from_utf8(first).unwrap();

    for raw in [
        "<script>document",
        "<img",
        "href=\"javascript:",
        "<a href",
        "</script><!--",
    ] {
        assert!(!page.contains(raw), "raw payload {raw:?} in the page");
    }
    assert_eq!(
        page.matches("<script").count(),
        2,
        "the page's own two script elements, no other"
    );
    let block = json_block(&page);
    assert!(!block.contains('<') && !block.contains('>') && !block.contains('&'));
    let data: serde_json::Value = serde_json::from_str(block).expect("the block is JSON");
    assert_eq!(
        data["docs"]["alpha"]["title"], TITLE,
        "the title survives escaping"
    );
    let with_snippet = data["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["snippets"]["alpha"].is_array())
        .count();
    assert!(with_snippet > 0, "alpha has a snippet in some task");
    // The escaped title appears in the no-JavaScript summary only as text.
    assert!(!page.contains("pwned\"</script>"));

    let remote = regex_free_remote(&page);
    assert!(remote.is_none(), "remote reference: {remote:?}");
    assert!(page.contains(
        "content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
    ));
}

/// The first `src=` or `href=` whose value starts with `//`, `http:` or `https:`.
fn regex_free_remote(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    for attr in ["src=", "href="] {
        for (i, _) in lower.match_indices(attr) {
            let rest = lower[i + attr.len()..].trim_start_matches(['"', '\'']);
            if rest.starts_with("//") || rest.starts_with("http:") || rest.starts_with("https:") {
                return Some(lower[i..(i + 40).min(lower.len())].to_string());
            }
        }
    }
    None
}

fn compare_html(out: &Path, corpus: Option<&str>) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.current_dir(&root)
        .args(["compare", "--qrels", "reports/brain/qrels.txt", "--html"])
        .arg(out);
    if let Some(c) = corpus {
        cmd.args(["--corpus", c, "--queries", "tasks/brain"]);
    }
    cmd.args([
        "reports/brain/runs/legacy.trec",
        "reports/brain/runs/current.trec",
    ])
    .output()
    .unwrap()
}

/// `compare --html` over the committed brain runs: the same bytes twice; without `--corpus` a
/// page of ids; a corpus that is not there is an error (exit 2) naming it, and no page.
#[test]
fn compare_html_reruns_byte_identical_and_a_missing_corpus_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.html"), dir.path().join("b.html"));
    for out in [&a, &b] {
        let o = compare_html(out, Some("corpora/brain"));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let page = std::fs::read_to_string(&a).unwrap();
    assert!(
        page == std::fs::read_to_string(&b).unwrap(),
        "two runs differ"
    );
    // B01's query (tasks/brain/suite.yaml) and aar-gcp-exodus's title (its record).
    assert!(page.contains("GCP exodus") && page.contains("After-action report"));

    let ids_only = dir.path().join("ids.html");
    let o = compare_html(&ids_only, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&ids_only)
        .unwrap()
        .contains("aar-gcp-exodus"));

    let missing = dir.path().join("missing.html");
    let o = compare_html(&missing, Some("corpora/no-such-corpus"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("corpora/no-such-corpus"));
    assert!(!missing.exists(), "a page was written despite the error");
}
