//! `ranklab judge --llm smollm2-135m-instruct` grading for real (SmolLM2 in-process through
//! candle), on the small `bad_input` suite with a hand-written pool (T1: beta, which Ada judged
//! 0 in judgments.yaml, and gamma, which nobody judged). Properties:
//! - the grades are written with their provenance: the judge is `llm:<model>@<first 12 hex
//!   digits of the grading prompt's sha256>` (the hash taken from the engine's `GradePrompt`),
//!   each grade in 0..=3 with its expected grade in [0, 3];
//! - a person's grade is never overwritten: Ada's 0 of T1 beta stays, and the LLM's grade of
//!   T1 beta goes beside it (`llm_grades:`), as do the grades of the pairs the suite file
//!   judges (`--also-judged`); only T1 gamma counts;
//! - grading is deterministic and cached: a second run over a fresh copy of the suite, with
//!   the same cache, grades no pair ("0 pairs graded, 6 from cache") and writes the same
//!   grades and expected grades; a third run with an empty grade cache grades all 6 again and
//!   gets the same bits (the cache holds what grading gives, not something else).
//!
//! The model files are copied from the default cache (fetched if absent) into a temporary one,
//! so the grade cache starts empty.

mod common;

use std::path::Path;

use ranklab_engine::rerank::grade::GradePrompt;

const POOL: &str = "suite: p\ndepth: 2\nconfigurations: [a]\ntasks:\n  - id: T1\n    query: idempotency key for a replayed capture\n    documents:\n      - { id: beta, best_rank: 1, configurations: [a] }\n      - { id: gamma, best_rank: 2, configurations: [a] }\n";

const ADA: &str =
    "suite: p\njudgments:\n  - { task: T1, document: beta, grade: 0, judge: Ada, at: \"2026-12-01T09:00:00Z\" }\n";

fn suite_copy() -> tempfile::TempDir {
    let tmp = common::fixture_copy("bad_input");
    std::fs::write(tmp.path().join("tasks/p/pool.yaml"), POOL).unwrap();
    std::fs::write(tmp.path().join("tasks/p/judgments.yaml"), ADA).unwrap();
    tmp
}

fn judge(dir: &Path, cache: &Path) -> (String, String) {
    common::ranklab_cached(
        dir,
        cache,
        &[
            "judge",
            "tasks/p",
            "--llm",
            "smollm2-135m-instruct",
            "--also-judged",
        ],
    )
}

/// (task, document, grade, expected) of every LLM judgment, counted and beside, sorted.
fn llm_grades(dir: &Path) -> Vec<(String, String, i32, String)> {
    let j = ranklab::judgments::Judgments::load(&dir.join("tasks/p/judgments.yaml"), "p").unwrap();
    let mut out: Vec<(String, String, i32, String)> = j
        .judgments
        .iter()
        .chain(&j.llm_grades)
        .filter(|g| g.is_llm())
        .map(|g| {
            (
                g.task.clone(),
                g.document.clone(),
                g.grade,
                format!("{:?}", g.expected),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn grades_are_written_beside_people_cached_and_the_same_every_time() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = common::cache_with_llm(tmp.path());

    let first = suite_copy();
    let (out, err) = judge(first.path(), &cache);
    assert!(err.contains("6 pairs graded, 0 from cache"), "{err}");
    assert!(
        out.contains("1 grades of unjudged documents") && out.contains("5 kept beside"),
        "{out}"
    );
    let j = ranklab::judgments::Judgments::load(&first.path().join("tasks/p/judgments.yaml"), "p")
        .unwrap();
    // Ada's grade is untouched and still the grade of T1 beta.
    assert_eq!(j.grade_of("T1", "beta"), Some(0));
    let ada = j.find("T1", "beta").unwrap();
    assert_eq!(
        (ada.judge.as_str(), ada.at.as_str()),
        ("Ada", "2026-12-01T09:00:00Z")
    );
    // The one counted LLM grade: T1 gamma, with the judge's provenance.
    let judge_name = format!(
        "llm:smollm2-135m-instruct@{}",
        GradePrompt::default().short_hash()
    );
    let gamma = j.find("T1", "gamma").unwrap();
    assert_eq!(gamma.judge, judge_name);
    assert!((0..=3).contains(&gamma.grade));
    let e = gamma.expected.unwrap();
    assert!((0.0..=3.0).contains(&e), "{e}");
    // Beside: T1 beta (Ada's), and the suite file's T1 alpha, T2 beta, T3 gamma, T3 beta.
    let mut beside: Vec<(&str, &str)> = j
        .llm_grades
        .iter()
        .map(|g| (g.task.as_str(), g.document.as_str()))
        .collect();
    beside.sort();
    assert_eq!(
        beside,
        [
            ("T1", "alpha"),
            ("T1", "beta"),
            ("T2", "beta"),
            ("T3", "beta"),
            ("T3", "gamma")
        ]
    );
    assert!(j.llm_grades.iter().all(|g| g.judge == judge_name));
    let grades = llm_grades(first.path());

    // Warm: every grade from the cache, the same values.
    let second = suite_copy();
    let (_, err) = judge(second.path(), &cache);
    assert!(err.contains("0 pairs graded, 6 from cache"), "{err}");
    assert_eq!(llm_grades(second.path()), grades);

    // Cold again (grade cache removed, models kept): graded anew, the same bits.
    for e in std::fs::read_dir(cache.join("scores")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "grade") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let third = suite_copy();
    let (_, err) = judge(third.path(), &cache);
    assert!(err.contains("6 pairs graded, 0 from cache"), "{err}");
    assert_eq!(llm_grades(third.path()), grades);
}
