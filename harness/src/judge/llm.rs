//! `ranklab judge --llm`: grade the pooled documents of a suite with an LLM instead of serving
//! the page, and write the grades to `judgments.yaml` with their provenance.
//!
//! The pairs ([`work_list`]): every document of `pool.yaml` the suite file does not judge (the
//! ones a person graded in `judgments.yaml` included: their LLM grade goes beside, for
//! agreement), and with `--also-judged` every (task, document) a person judged, so that the
//! agreement has pairs to stand on. The passage is what the judging page shows first: the
//! document's title and the section that matches the query best, cut to its first 2,048
//! characters (and the query to 512), the cuts of an endpoint rerank stage: every grader, in
//! process or behind an endpoint, reads the same text.
//!
//! Each pair is graded with the [`GradePrompt`] by a [`Grader`] ([`grade_all`]); the judge is
//! `llm:<model>@<prompt hash, 12 hex digits>`, the grade the argmax and `expected` the expected
//! grade. Every pair is graded before anything is written, then all are written as one step
//! under the file's lock ([`crate::judgments::record_all`]): a pair without a readable grade
//! is an error naming it, and nothing is written. A person's grade is never overwritten.
//!
//! The graders ([`grader_for`]): the in-process model (SmolLM2 through candle,
//! [`ranklab_engine::rerank::LlmGrader`]) and an OpenAI-compatible endpoint
//! ([`super::endpoint::EndpointGrader`]). Grades go through the grade cache
//! ([`ranklab_engine::rerank::GradeCache`], keyed by the grader's identity), so grading the same
//! pairs again does no model work and gives the same bits.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ranklab_engine::models::remote::Offload;
use ranklab_engine::models::{ModelKind, ModelStore};
use ranklab_engine::rerank::grade::{GradePrompt, Grader};
use ranklab_engine::rerank::{GradeCache, LlmGrader};

use super::{sections, PoolFile};
use crate::external::rerank::{head, DEFAULT_PASSAGE_CHARS, DEFAULT_QUERY_CHARS};
use crate::judgments::Selection;
use crate::judgments::{llm_judge, record_all, Judgment, Placed};
use crate::suite::Suite;
use ranklab_engine::corpus::Corpus;

/// Where the grades come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A model run in-process (an id of `ranklab models list`).
    InProcess {
        /// The model id.
        model: String,
    },
    /// An OpenAI-compatible server.
    Endpoint {
        /// Its base URL.
        url: String,
        /// The model name it serves.
        model: String,
        /// Which API: `completions` (ChatML prompt) or `chat`.
        api: crate::suite::LlmApi,
        /// Read the grade from the answer's text when no log-probabilities come back.
        parse_text: bool,
        /// How many of the answer token's most likely alternatives to ask for.
        top_logprobs: u32,
        /// The total deadline of one attempt of a request, in milliseconds.
        timeout_ms: u64,
        /// How many times a failed request is tried again.
        retries: u32,
    },
}

impl Source {
    /// The model's name as the judge shows it.
    pub(crate) fn model(&self) -> &str {
        match self {
            Source::InProcess { model } | Source::Endpoint { model, .. } => model,
        }
    }
}

/// One pair to grade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Work {
    /// Task id.
    pub(crate) task: String,
    /// The task's query.
    pub(crate) query: String,
    /// Document id.
    pub(crate) document: String,
    /// The passage shown to the model: title, then the best-matching section.
    pub(crate) passage: String,
    /// Configurations that surfaced it (from the pool; empty for a judged pair).
    pub(crate) surfaced_by: Vec<String>,
}

/// What `ranklab judge` grades: the suite at `path` (people's grades only) and its corpus; or,
/// when `path` is a BEIR collection's directory, the collection's suite (qrels of `split`)
/// with its judging folder under the tree of BEIR reports `reports`
/// ([`crate::suite::beir::load_judged`]) and its corpus.
pub(crate) fn load_for_judging(
    path: &Path,
    split: &str,
    reports: &Path,
) -> Result<(Suite, Corpus)> {
    if crate::suite::beir::is_collection(path) {
        let (coll, suite) =
            crate::suite::beir::load_judged(path, split, reports, Selection::Human)?;
        return Ok((suite, coll.corpus));
    }
    let suite = Suite::load(path)?;
    let corpus = suite.load_corpus()?;
    Ok((suite, corpus))
}

/// The pairs to grade: the pool's documents the suite file does not judge, then with
/// `also_judged` every pair a person judged that is not among them, in task order and then
/// document order.
pub(crate) fn work_list(suite: &Suite, corpus: &Corpus, also_judged: bool) -> Result<Vec<Work>> {
    let pool_path = suite.judging_dir().join("pool.yaml");
    if !pool_path.is_file() {
        bail!(
            "{}: no judging sheet; run `ranklab pool {}` first (after `ranklab run`)",
            pool_path.display(),
            suite.dir().display()
        );
    }
    let (pool, _): (PoolFile, String) = crate::suite::read_yaml(&pool_path)?;
    let in_file = |t: &str, d: &str| {
        suite
            .judgments
            .as_ref()
            .and_then(|j| j.find(t, d))
            .is_some()
    };
    let passage = |id: &str, query: &str| -> Result<String> {
        let doc = corpus.get(id).with_context(|| {
            format!(
                "{}: document {id:?} is not in the corpus {}; run `ranklab pool {}` again",
                pool_path.display(),
                suite.corpus_path.display(),
                suite.dir().display()
            )
        })?;
        let (matched, _) = sections(doc, query);
        let passage = format!("{}\n{}", doc.title, matched.body);
        Ok(head(&passage, DEFAULT_PASSAGE_CHARS).to_string())
    };
    let mut out = Vec::new();
    for pt in &pool.tasks {
        let Some(task) = suite.tasks.iter().find(|t| t.id == pt.id) else {
            bail!(
                "{}: task {:?} is not in {}; run `ranklab pool {}` again",
                pool_path.display(),
                pt.id,
                suite.path.display(),
                suite.dir().display()
            );
        };
        for d in &pt.documents {
            if task.expected.contains_key(&d.id) && !in_file(&pt.id, &d.id) {
                continue; // judged in the suite file since the pool was made
            }
            out.push(Work {
                task: task.id.clone(),
                query: head(&task.query, DEFAULT_QUERY_CHARS).to_string(),
                document: d.id.clone(),
                passage: passage(&d.id, &task.query)?,
                surfaced_by: d.configurations.clone(),
            });
        }
    }
    if also_judged {
        for t in &suite.tasks {
            for d in t.expected.keys() {
                if !out.iter().any(|w| w.task == t.id && &w.document == d) {
                    out.push(Work {
                        task: t.id.clone(),
                        query: head(&t.query, DEFAULT_QUERY_CHARS).to_string(),
                        document: d.clone(),
                        passage: passage(d, &t.query)?,
                        surfaced_by: Vec::new(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// What [`grade_all`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Summary {
    /// Grades that count (documents no person judged).
    pub(crate) counted: usize,
    /// Grades kept beside a person's, for agreement.
    pub(crate) beside: usize,
    /// Of the counted, those that replaced an earlier LLM grade.
    pub(crate) replaced: usize,
}

/// Grades every pair of `work` with `grader` (through the grade cache `cache`; None: in
/// memory only; the pairs it misses first sent to `offload`'s cluster when given) and writes
/// the grades to the suite's `judgments.yaml` as one step (`at`: the time every judgment
/// carries). Nothing is written when a pair fails.
pub(crate) fn grade_all(
    grader: &mut dyn Grader,
    cache: Option<&Path>,
    offload: Option<Offload>,
    suite: &Suite,
    work: &[Work],
    at: &str,
) -> Result<Summary> {
    let prompt = GradePrompt::default();
    let judge = llm_judge(grader.model(), prompt.short_hash());
    let mut cache = match cache {
        Some(dir) => GradeCache::open(dir, grader.identity())?,
        None => GradeCache::in_memory(grader.identity()),
    };
    if let Some(o) = offload {
        cache.set_offload(o);
    }
    let pairs: Vec<(&str, &str)> = work
        .iter()
        .map(|w| (w.query.as_str(), w.passage.as_str()))
        .collect();
    let progress = crate::progress::rate_bar(0, "grading");
    let mut shown = |done: usize, todo: usize| {
        progress.set_length(todo as u64);
        progress.set_position(done as u64);
    };
    let graded = cache.grade_all(grader, &pairs, &mut shown);
    cache.flush()?;
    progress.finish_and_clear();
    let (dists, stats) = graded.map_err(anyhow::Error::from).with_context(|| {
        format!("no grade from {judge} for every pair; nothing was written to judgments.yaml")
    })?;
    eprintln!("{judge}: {stats}");
    let mut graded = Vec::with_capacity(work.len());
    for (w, dist) in work.iter().zip(dists) {
        graded.push(Judgment {
            task: w.task.clone(),
            document: w.document.clone(),
            grade: i32::from(dist.argmax()),
            judge: judge.clone(),
            at: at.to_string(),
            expected: Some((dist.expected() * 1e4).round() / 1e4),
            surfaced_by: w.surfaced_by.clone(),
            saw_llm: None,
            line: 0,
        });
    }
    let in_suite_file = |t: &str, d: &str| {
        suite
            .tasks
            .iter()
            .any(|x| x.id == t && x.expected.contains_key(d))
            && suite
                .judgments
                .as_ref()
                .and_then(|j| j.find(t, d))
                .is_none()
    };
    let path = suite.judging_dir().join(crate::judgments::FILE);
    let (_, placed) = record_all(&path, &suite.name, graded, &in_suite_file)?;
    let mut s = Summary::default();
    for p in placed {
        match p {
            Placed::Added => s.counted += 1,
            Placed::Replaced(_) => {
                s.counted += 1;
                s.replaced += 1;
            }
            Placed::Beside => s.beside += 1,
        }
    }
    Ok(s)
}

/// The grader of `source`: the in-process model (fetched and verified if need be; an id that
/// is not an LLM is refused, naming the kinds that are) or the endpoint.
pub(crate) fn grader_for(source: &Source, store: &ModelStore) -> Result<Box<dyn Grader>> {
    match source {
        Source::InProcess { model } => {
            let described = store.describe(model)?;
            if described.kind != ModelKind::Llm {
                bail!(
                    "ranklab judge --llm {model}: {model} is a {}, not an llm; `ranklab models \
                     list` shows the llm models (kind llm); nothing was graded or written",
                    described.kind
                );
            }
            let dir = store.ensure_model(model)?;
            Ok(Box::new(LlmGrader::load(&dir)?))
        }
        Source::Endpoint {
            url,
            model,
            api,
            parse_text,
            top_logprobs,
            timeout_ms,
            retries,
        } => {
            crate::engine_spec::http::no_control(
                &format!("ranklab judge --llm-endpoint {url:?}"),
                url,
                false,
            )?;
            Ok(Box::new(super::endpoint::EndpointGrader::new(
                url,
                model,
                *api,
                *parse_text,
                *top_logprobs,
                super::endpoint::Patience {
                    timeout: Duration::from_millis(*timeout_ms),
                    retries: *retries,
                },
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ranklab_engine::rerank::grade::GradeDist;

    /// A deterministic stand-in: grade 3 when the passage contains the query's first word,
    /// else 0, with a fixed spread. Not a model; it exercises the writing path.
    struct WordGrader;

    impl Grader for WordGrader {
        fn model(&self) -> &str {
            "word-stand-in"
        }

        fn identity(&self) -> &str {
            "word-stand-in v1"
        }

        fn grade(&mut self, query: &str, passage: &str) -> ranklab_engine::Result<GradeDist> {
            let first = query.split_whitespace().next().unwrap_or("").to_lowercase();
            let hit = passage.to_lowercase().contains(&first);
            let logits = if hit {
                [0.0, 0.0, 1.0, 3.0]
            } else {
                [3.0, 1.0, 0.0, 0.0]
            };
            let tokens = ["0", "1", "2", "3"].into_iter().zip(logits);
            Ok(GradeDist::from_logits(tokens).expect("four digits"))
        }
    }

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad_input");
        for sub in ["corpus", "tasks/p"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            for e in std::fs::read_dir(fx.join(sub)).unwrap() {
                let p = e.unwrap().path();
                std::fs::copy(&p, dir.path().join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
        std::fs::write(
            dir.path().join("tasks/p/pool.yaml"),
            "suite: p\ndepth: 2\nconfigurations: [a]\ntasks:\n  - id: T1\n    query: idempotency key for a replayed capture\n    documents:\n      - { id: beta, best_rank: 1, configurations: [a] }\n      - { id: gamma, best_rank: 2, configurations: [a] }\n",
        )
        .unwrap();
        // A person graded beta already.
        std::fs::write(
            dir.path().join("tasks/p/judgments.yaml"),
            "suite: p\njudgments:\n  - { task: T1, document: beta, grade: 1, judge: Ada }\n",
        )
        .unwrap();
        dir
    }

    /// Pool: beta (a person graded it in judgments.yaml) and gamma (nobody); --also-judged adds
    /// the suite file's pairs. Written: gamma's grade counts, the others go beside, Ada's stays.
    #[test]
    fn grades_are_written_with_provenance_and_never_over_a_person() {
        let dir = fixture();
        let suite_path = dir.path().join("tasks/p");
        let (suite, corpus) = load_for_judging(&suite_path, "test", dir.path()).unwrap();
        let work = work_list(&suite, &corpus, false).unwrap();
        let ids: Vec<&str> = work.iter().map(|w| w.document.as_str()).collect();
        assert_eq!(ids, ["beta", "gamma"]);
        let all = work_list(&suite, &corpus, true).unwrap();
        // T1 alpha, T2 beta, T3 beta and gamma from suite.yaml; T1 beta already listed.
        assert_eq!(all.len(), 6);
        let s = grade_all(
            &mut WordGrader,
            None,
            None,
            &suite,
            &work,
            "2026-12-02T12:00:00Z",
        )
        .unwrap();
        assert_eq!(
            s,
            Summary {
                counted: 1,
                beside: 1,
                replaced: 0
            }
        );
        let j = crate::judgments::Judgments::load(&suite_path.join("judgments.yaml"), "p").unwrap();
        assert_eq!(j.grade_of("T1", "beta"), Some(1));
        assert_eq!(j.judgments[0].judge, "Ada");
        let g = j.find("T1", "gamma").unwrap();
        assert!(g.judge.starts_with("llm:word-stand-in@") && g.judge.len() == 18 + 12);
        assert!(g.expected.is_some());
        assert_eq!(j.llm_grades.len(), 1);
        assert_eq!(j.llm_grades[0].document, "beta");
    }

    #[test]
    fn a_model_that_is_not_an_llm_is_refused_as_a_judge() {
        let dir = tempfile::tempdir().unwrap();
        let store = ModelStore::at(dir.path());
        let e = grader_for(
            &Source::InProcess {
                model: "bge-small-en-v1.5".into(),
            },
            &store,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("not an llm"), "{e}");
    }
}
