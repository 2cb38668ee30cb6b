//! LLM judgments in `judgments.yaml` and what a suite takes from them, on the small `bad_input`
//! suite (documents alpha, beta, gamma, epsilon; T1 expects alpha, T2 beta, T3 gamma 2 and
//! beta 1). Properties checked:
//! - a suite loaded the default way (`Suite::load`, people's grades only) ignores every LLM
//!   grade: its tasks' judgments are those of a file without them, and the counts say how many
//!   LLM grades were left out;
//! - loaded with `Selection::All`, LLM grades of documents nobody judged are merged, and one of
//!   a document `suite.yaml` judges is not: the suite file's grade wins and the conflict is
//!   listed with both places;
//! - the pairs agreement is measured on are those a person and an LLM both graded, whichever
//!   the selection;
//! - the reports `ranklab run` writes are byte for byte those of the suite without the LLM
//!   grades (the default report is unchanged by LLM grades), but for the Markdown's added
//!   "LLM judgments" section, which says the tables use people's grades only, and the
//!   header's sentence saying what every table rests on (5 by people, 0 by an LLM, 2 left out);
//! - `--judgments all` merges the LLM's grade of a document nobody judged into the qrels
//!   (T1 gamma 2), never over a person's, and the section says the tables use both.

mod common;
use common::ranklab;

use ranklab::judgments::Selection;
use ranklab::suite::Suite;

const HUMAN: &str = "  - { task: \"T1\", document: \"beta\", grade: 0, judge: \"Ada\", at: \"2026-12-02T10:00:00Z\", surfaced_by: [] }\n";
const LLM: &str = "  - { task: \"T1\", document: \"gamma\", grade: 2, judge: \"llm:smollm2-135m-instruct@0123456789ab\", at: \"2026-12-02T10:00:00Z\", expected: 1.8, surfaced_by: [] }\n  - { task: \"T2\", document: \"alpha\", grade: 1, judge: \"llm:smollm2-135m-instruct@0123456789ab\", at: \"2026-12-02T10:00:00Z\", expected: 1.1, surfaced_by: [] }\n  - { task: \"T1\", document: \"alpha\", grade: 0, judge: \"llm:smollm2-135m-instruct@0123456789ab\", at: \"2026-12-02T10:00:00Z\", expected: 0.3, surfaced_by: [] }\n";

fn write(dir: &std::path::Path, with_llm: bool) {
    let body = format!(
        "suite: p\njudgments:\n{HUMAN}{}",
        if with_llm { LLM } else { "" }
    );
    std::fs::write(dir.join("tasks/p/judgments.yaml"), body).unwrap();
}

fn grades(s: &Suite) -> Vec<(String, String, i32)> {
    s.tasks
        .iter()
        .flat_map(|t| {
            t.expected
                .iter()
                .map(|(d, g)| (t.id.clone(), d.clone(), *g))
        })
        .collect()
}

#[test]
fn the_default_load_ignores_llm_grades() {
    let tmp = common::fixture_copy("bad_input");
    let suite = tmp.path().join("tasks/p");
    write(tmp.path(), false);
    let without = Suite::load(&suite).unwrap();
    write(tmp.path(), true);
    let with = Suite::load(&suite).unwrap();
    assert_eq!(grades(&with), grades(&without));
    let c = with.judgment_counts();
    // suite.yaml: 4 grades; judgments.yaml: Ada's 1. LLM: 2 of unjudged documents left out.
    assert_eq!((c.human, c.llm, c.llm_left_out), (5, 0, 2));
    assert_eq!(with.judgments.as_ref().unwrap().judgments.len(), 1);

    let all = Suite::load_selected(&suite, Selection::All).unwrap();
    let t1 = &all.tasks[0].expected;
    assert_eq!(t1.get("gamma"), Some(&2));
    assert_eq!(t1.get("alpha"), Some(&1), "suite.yaml's grade wins");
    assert_eq!(all.tasks[1].expected.get("alpha"), Some(&1));
    let c = all.judgment_counts();
    assert_eq!((c.human, c.llm, c.llm_left_out), (5, 2, 0));
    let j = all.judgments.as_ref().unwrap();
    assert_eq!(j.conflicts.len(), 1);
    assert_eq!(j.conflicts[0].llm.document, "alpha");
    assert_eq!(j.conflicts[0].llm.line, 6);
    assert!(
        j.conflicts[0].human_at.ends_with("suite.yaml:5"),
        "{:?}",
        j.conflicts[0]
    );
    assert_eq!(
        j.llm_grades.len(),
        1,
        "the overruled grade is kept for agreement"
    );

    // Agreement stands on the pairs both graded: T1 alpha (suite.yaml 1, LLM 0) only — the
    // LLM's gamma and T2 alpha have no person's grade. The same under either selection.
    for s in [&with, &all] {
        let pairs = s.agreement_pairs();
        let got: Vec<(&str, &str, &str, u8, u8)> = pairs
            .iter()
            .flat_map(|(judge, v)| {
                v.iter().map(move |p| {
                    (
                        judge.as_str(),
                        p.task.as_str(),
                        p.document.as_str(),
                        p.grades.human,
                        p.grades.llm,
                    )
                })
            })
            .collect();
        assert_eq!(
            got,
            [(
                "llm:smollm2-135m-instruct@0123456789ab",
                "T1",
                "alpha",
                1,
                0
            )]
        );
    }
}

/// `md` without its "## LLM judgments" section (up to the next `## ` heading), and the section.
fn split_section(md: &str) -> (String, String) {
    let Some(start) = md.find("## LLM judgments\n") else {
        return (md.to_string(), String::new());
    };
    let rest = &md[start + 3..];
    let end = rest.find("\n## ").map_or(md.len(), |e| start + 3 + e + 1);
    (
        format!("{}{}", &md[..start], &md[end..]),
        md[start..end].to_string(),
    )
}

#[test]
fn the_default_report_is_unchanged_by_llm_grades() {
    let mut trees = Vec::new();
    for with_llm in [false, true] {
        let tmp = common::fixture_copy("bad_input");
        write(tmp.path(), with_llm);
        let out = ranklab(tmp.path(), &["run", "tasks/p", "--reports", "reports"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        trees.push((common::tree(&tmp.path().join("reports")), tmp));
    }
    assert!(!trees[0].0.is_empty());
    let md = std::path::PathBuf::from("p/e.md");
    let (mut without, mut with) = (trees[0].0.clone(), trees[1].0.clone());
    let (a, b) = (without.remove(&md).unwrap(), with.remove(&md).unwrap());
    assert_eq!(
        without, with,
        "every file but the Markdown is byte for byte the same"
    );
    let (a, b) = (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
    let (b_rest, section) = split_section(&b);
    assert!(!a.contains("LLM judgments"));
    // The header says what the tables rest on; nothing else differs but the section.
    let rests = " Every table below rests on 5 judgments by people and 0 by an LLM (2 LLM grades of `tasks/p/judgments.yaml` left out: `--judgments all` takes them).";
    assert!(b_rest.contains(rests), "{b_rest}");
    assert_eq!(
        a,
        b_rest.replacen(rests, "", 1),
        "the Markdown differs only by the LLM section and the header's sentence"
    );
    assert!(
        section.contains("Judgments: 5 by people, 2 by an LLM")
            && section.contains("people's grades only (`--judgments human`, the default)"),
        "{section}"
    );
}

#[test]
fn judgments_all_merges_the_llm_grades_of_unjudged_documents_into_the_qrels() {
    let tmp = common::fixture_copy("bad_input");
    write(tmp.path(), true);
    for (dir, sel) in [("human", "human"), ("all", "all")] {
        let out = ranklab(
            tmp.path(),
            &["run", "tasks/p", "--reports", dir, "--judgments", sel],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let read = |dir: &str, f: &str| {
        std::fs::read_to_string(tmp.path().join(dir).join("p").join(f)).unwrap()
    };
    // trec_eval qrels lines: task 0 document grade.
    assert!(read("all", "qrels.txt").contains("T1 0 gamma 2"));
    assert!(!read("human", "qrels.txt").contains("T1 0 gamma"));
    assert!(
        read("all", "qrels.txt").contains("T1 0 alpha 1"),
        "the person's grade stays"
    );
    let md = read("all", "e.md");
    assert!(
        md.contains(
            "Every table below rests on 5 judgments by people and 2 by an LLM (`--judgments all`)."
        ),
        "{md}"
    );
    let (_, section) = split_section(&md);
    assert!(
        section.contains("Judgments: 5 by people, 2 by an LLM")
            && section.contains("use both (`--judgments all`)")
            && section.contains("### Agreement with people")
            && section.contains("### What the LLM's grades would change"),
        "{section}"
    );
}

/// `Suite::reselect` turns a suite loaded one way into the suite loaded the other way, as the
/// loader gives it (the oracle: `Suite::load_selected` reading the file again), both ways, on
/// the fixture and on tasks/docir (454 LLM grades, 35 judged pairs).
#[test]
fn reselecting_gives_what_loading_with_the_other_selection_gives() {
    let tmp = common::fixture_copy("bad_input");
    write(tmp.path(), true);
    let docir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks/docir");
    for path in [tmp.path().join("tasks/p"), docir] {
        let human = Suite::load_selected(&path, Selection::Human).unwrap();
        let all = Suite::load_selected(&path, Selection::All).unwrap();
        assert!(all.judgment_counts().llm > 0, "{}", path.display());
        let shown = |s: &Suite| format!("{:?}\n{:?}", s.tasks, s.judgments);
        assert_eq!(shown(&human.reselect(Selection::All)), shown(&all));
        assert_eq!(shown(&all.reselect(Selection::Human)), shown(&human));
    }
}
