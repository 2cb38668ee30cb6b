//! The TREC files of a report: each configuration's run and the suite's qrels.

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use crate::replay::ConfigRun;
use crate::suite::Suite;

/// The TREC run of one configuration.
///
/// The score column is the ranking's score. trec_eval reorders a run by score descending, then
/// docno descending; where our ranking broke a tie some other way (the current wiring's recency
/// tie-break) the written score is lowered by one ulp below the previous line's, so the file
/// reads back in exactly the replay's order. The ranks in the file are the replay's ranks.
pub fn run_file(corpus: &Corpus, suite: &Suite, run: &ConfigRun) -> String {
    let lines: usize = run.per_task.iter().map(Vec::len).sum();
    let mut s = String::with_capacity(lines * 48);
    for (task, ranked) in suite.tasks.iter().zip(&run.per_task) {
        let mut prev: Option<(f32, &str)> = None;
        for (i, r) in ranked.iter().enumerate() {
            let id = corpus.id(r.doc);
            let mut score = r.score;
            if let Some((p, pid)) = prev {
                let reads_back_in_order =
                    score < p || (score == p && id.as_bytes() < pid.as_bytes());
                if !reads_back_in_order {
                    score = p.next_down();
                }
            }
            prev = Some((score, id));
            crate::trec::push_run_line(&mut s, &task.id, id, i + 1, score, &run.config.name);
        }
    }
    s
}

/// The suite's judgments in TREC qrels format.
pub fn qrels_file(suite: &Suite) -> Result<String> {
    let rows: Vec<(String, String, i32)> = suite
        .tasks
        .iter()
        .flat_map(|t| {
            t.expected
                .iter()
                .map(|(d, g)| (t.id.clone(), d.clone(), *g))
        })
        .collect();
    let mut buf = Vec::new();
    crate::trec::write_qrels(&mut buf, &rows)?;
    Ok(String::from_utf8(buf)?)
}
