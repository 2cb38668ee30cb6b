//! The grades of `judgments.yaml` merged into a suite's tasks, and which of them (people's only,
//! or LLMs' too) a suite takes.

use std::path::Path;

use anyhow::{bail, Result};

use crate::judgments::Judgments;

use super::{JudgmentCounts, Selection, Suite, Task};

impl Suite {
    /// How many of the tasks' judgments are people's and how many an LLM's (for a report's
    /// "N human / M LLM judgments"), and how many LLM grades the selection left out.
    pub fn judgment_counts(&self) -> JudgmentCounts {
        let total: usize = self.tasks.iter().map(|t| t.expected.len()).sum();
        let (llm, left_out) = self.judgments.as_ref().map_or((0, 0), |j| {
            (
                j.judgments.iter().filter(|g| g.is_llm()).count(),
                j.unselected.len(),
            )
        });
        JudgmentCounts {
            human: total - llm,
            llm,
            llm_left_out: left_out,
        }
    }

    /// The same suite with its judgments selected as `selection` says: LLM grades of
    /// `judgments.yaml` merged into the tasks ([`Selection::All`]) or left out
    /// ([`Selection::Human`]), exactly as loading it with that selection would (the judgments in
    /// file order). Nothing is read again.
    pub fn reselect(&self, selection: Selection) -> Suite {
        let mut out = self.clone();
        let Some(j) = out.judgments.as_mut() else {
            return out;
        };
        match selection {
            Selection::All => {
                for g in std::mem::take(&mut j.unselected) {
                    if let Some(t) = out.tasks.iter_mut().find(|t| t.id == g.task) {
                        t.expected.insert(g.document.clone(), g.grade);
                    }
                    j.judgments.push(g);
                }
                j.judgments.sort_by_key(|g| g.line);
            }
            Selection::Human => {
                let (llm, human): (Vec<_>, Vec<_>) = std::mem::take(&mut j.judgments)
                    .into_iter()
                    .partition(crate::judgments::Judgment::is_llm);
                for g in &llm {
                    if let Some(t) = out.tasks.iter_mut().find(|t| t.id == g.task) {
                        t.expected.remove(&g.document);
                    }
                }
                j.judgments = human;
                j.unselected.extend(llm);
            }
        }
        out
    }
}

/// Merges `judgments.yaml` into the tasks: each judgment names a task of the suite; a human
/// one, a document the suite file does not judge already. An LLM grade of a document the suite
/// file judges is a conflict the suite file wins (listed, kept beside for agreement); LLM
/// grades are merged only when `selection` is [`Selection::All`]. Returns what was merged.
pub(crate) fn merge_judgments(
    tasks: &mut [Task],
    mut j: Judgments,
    selection: Selection,
    suite_path: &Path,
) -> Result<Judgments> {
    let (mut keep, mut overruled) = (Vec::new(), Vec::new());
    for g in std::mem::take(&mut j.judgments) {
        let in_suite = tasks
            .iter()
            .find(|t| t.id == g.task)
            .and_then(|t| Some((t.line, *t.expected.get(&g.document)?)));
        match in_suite {
            Some((line, grade)) if g.is_llm() => overruled.push((g, line, grade)),
            _ => keep.push(g),
        }
    }
    j.judgments = keep;
    for (g, line, grade) in overruled {
        j.conflicts.push(crate::judgments::Conflict {
            llm: g.clone(),
            human_grade: grade,
            human_at: format!("{}:{line}", suite_path.display()),
        });
        j.set(g, true);
    }
    let j = j.select(selection);
    for g in &j.judgments {
        let at = format!("{}:{}", j.path.display(), g.line);
        let Some(t) = tasks.iter_mut().find(|t| t.id == g.task) else {
            bail!(
                "{at}: unknown task {:?}; it is not in {} (remove the judgment, or restore the task{})",
                g.task,
                suite_path.display(),
                ranklab_engine::suggest::did_you_mean(&g.task, tasks.iter().map(|t| t.id.as_str()))
            );
        };
        if t.expected.contains_key(&g.document) {
            bail!(
                "{at}: task {:?}, document {:?} is already judged in {} (task at line {}); a document has one judgment: remove one of the two",
                g.task,
                g.document,
                suite_path.display(),
                t.line
            );
        }
        t.expected.insert(g.document.clone(), g.grade);
    }
    Ok(j)
}
