//! Training data for fine-tuning a cross-encoder on a suite's own tasks, without leaks (issue 27,
//! item 3): the tasks split into folds by a seeded shuffle; each fold's tasks are the ones its
//! model will rerank, and its training pairs come from the other folds' tasks only.
//!
//! Per task: a **positive** for each document judged relevant (grade ≥ 1), its passage the one
//! the caller chose (the best-matching section); **hard negatives**: the first stage's
//! top-ranked documents not judged relevant, `negatives` per positive, in rank order — never a
//! document the task judges relevant, whatever its grade.

use std::collections::BTreeMap;

use ranklab_engine::rerank::finetune::{epoch_order, Pair};

/// One task as training data sees it.
#[derive(Debug, Clone)]
pub struct TaskData {
    /// The task's id.
    pub id: String,
    /// Its query.
    pub query: String,
    /// Its judgments: document id → grade.
    pub judged: BTreeMap<String, i32>,
    /// The first stage's list, best first: (document id, the passage it would be scored on).
    pub ranked: Vec<(String, String)>,
    /// The passage of each relevant document (its best-matching section), by id.
    pub positives: BTreeMap<String, String>,
}

/// One fold: the tasks its model reranks and the pairs it trains on.
#[derive(Debug, Clone, PartialEq)]
pub struct Fold {
    /// Indices (into the tasks) of the tasks held out: reranked by this fold's model.
    pub held_out: Vec<usize>,
    /// The training pairs, from the other folds' tasks.
    pub pairs: Vec<Pair>,
    /// Of those, positives.
    pub positives: usize,
    /// Merges whose pairs are among them.
    pub merges: usize,
}

/// The pairs of one task: its positives, then `negatives` hard negatives per positive.
pub fn task_pairs(t: &TaskData, negatives: usize) -> Vec<Pair> {
    let relevant = |id: &str| t.judged.get(id).is_some_and(|&g| g >= 1);
    let mut out: Vec<Pair> = t
        .positives
        .iter()
        .filter(|(id, _)| relevant(id))
        .map(|(_, passage)| Pair {
            query: t.query.clone(),
            passage: passage.clone(),
            label: 1.0,
        })
        .collect();
    let wanted = out.len() * negatives;
    out.extend(
        t.ranked
            .iter()
            .filter(|(id, _)| !relevant(id))
            .take(wanted)
            .map(|(_, passage)| Pair {
                query: t.query.clone(),
                passage: passage.clone(),
                label: 0.0,
            }),
    );
    out
}

/// The tasks split into `folds` folds by a seeded shuffle (task `order[i]` goes to fold
/// `i mod folds`), each with the pairs of every task outside it.
pub fn folds(tasks: &[TaskData], folds: usize, negatives: usize, seed: u64) -> Vec<Fold> {
    folds_with_merges(tasks, &[], folds, negatives, seed)
}

/// A query as compared for leaks: lowercase, words separated by one space.
fn normalized(q: &str) -> String {
    q.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`folds`], with the pairs of `merges` (a suite's merges as tasks) added to every fold's
/// training, except a merge whose query is one of that fold's held-out tasks' (compared
/// lowercase, whitespace collapsed).
pub fn folds_with_merges(
    tasks: &[TaskData],
    merges: &[TaskData],
    folds: usize,
    negatives: usize,
    seed: u64,
) -> Vec<Fold> {
    let mut out = task_folds(tasks, folds, negatives, seed);
    let merge_pairs: Vec<Vec<Pair>> = merges.iter().map(|m| task_pairs(m, negatives)).collect();
    for f in &mut out {
        let held: std::collections::HashSet<String> = f
            .held_out
            .iter()
            .map(|&i| normalized(&tasks[i].query))
            .collect();
        for (m, pairs) in merges.iter().zip(&merge_pairs) {
            if !held.contains(&normalized(&m.query)) {
                f.pairs.extend(pairs.iter().cloned());
                f.merges += 1;
            }
        }
        f.positives = f.pairs.iter().filter(|p| p.label > 0.5).count();
    }
    out
}

fn task_folds(tasks: &[TaskData], folds: usize, negatives: usize, seed: u64) -> Vec<Fold> {
    let folds = folds.clamp(1, tasks.len().max(1));
    let order = epoch_order(tasks.len(), seed, 0);
    let mut held: Vec<Vec<usize>> = vec![Vec::new(); folds];
    for (i, &t) in order.iter().enumerate() {
        held[i % folds].push(t);
    }
    let per_task: Vec<Vec<Pair>> = tasks.iter().map(|t| task_pairs(t, negatives)).collect();
    held.into_iter()
        .map(|mut held_out| {
            held_out.sort_unstable();
            let pairs: Vec<Pair> = (0..tasks.len())
                .filter(|i| !held_out.contains(i))
                .flat_map(|i| per_task[i].iter().cloned())
                .collect();
            let positives = pairs.iter().filter(|p| p.label > 0.5).count();
            Fold {
                held_out,
                pairs,
                positives,
                merges: 0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(i: usize) -> TaskData {
        let id = format!("T{i}");
        TaskData {
            query: format!("query of {id}"),
            judged: BTreeMap::from([(format!("rel{i}"), 2), (format!("zero{i}"), 0)]),
            ranked: (0..6)
                .map(|r| (format!("d{i}-{r}"), format!("passage {i}-{r}")))
                .chain([(format!("rel{i}"), format!("relevant passage {i}"))])
                .collect(),
            positives: BTreeMap::from([(format!("rel{i}"), format!("relevant passage {i}"))]),
            id,
        }
    }

    #[test]
    fn no_fold_trains_on_a_task_it_reranks_the_leak_test() {
        let tasks: Vec<TaskData> = (0..12).map(task).collect();
        let f = folds(&tasks, 5, 3, 42);
        assert_eq!(f.len(), 5);
        let mut all: Vec<usize> = f.iter().flat_map(|x| x.held_out.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..12).collect::<Vec<_>>(), "every task held out once");
        for fold in &f {
            for &t in &fold.held_out {
                let q = &tasks[t].query;
                assert!(
                    fold.pairs.iter().all(|p| &p.query != q),
                    "fold {:?} trains on {q}",
                    fold.held_out
                );
            }
            // Every other task's pairs are there: 1 positive + 3 negatives each.
            assert_eq!(fold.pairs.len(), (12 - fold.held_out.len()) * 4);
            assert_eq!(fold.positives, 12 - fold.held_out.len());
        }
        assert_ne!(folds(&tasks, 5, 3, 7), f, "another seed, other folds");
    }

    #[test]
    fn merges_train_every_fold_but_the_one_holding_their_query_the_leak_test() {
        let tasks: Vec<TaskData> = (0..10).map(task).collect();
        // Merge 0 repeats task 3's query (other case and spacing); merge 1 is a query no task has.
        let mut m0 = task(100);
        m0.query = format!("  QUERY of   {} ", tasks[3].id);
        let m1 = task(101);
        let merges = [m0.clone(), m1.clone()];
        let f = folds_with_merges(&tasks, &merges, 5, 1, 42);
        let plain = folds(&tasks, 5, 1, 42);
        for (fold, plain) in f.iter().zip(&plain) {
            assert_eq!(
                fold.held_out, plain.held_out,
                "merges do not move the split"
            );
            let has = |m: &TaskData| fold.pairs.iter().any(|p| p.query == m.query);
            assert!(has(&m1), "merge 1 is in every fold's training");
            assert_eq!(has(&m0), !fold.held_out.contains(&3), "{:?}", fold.held_out);
            assert_eq!(fold.merges, 1 + usize::from(has(&m0)));
            assert_eq!(fold.pairs.len(), plain.pairs.len() + 2 * fold.merges);
            for &t in &fold.held_out {
                assert!(fold.pairs.iter().all(|p| p.query != tasks[t].query));
            }
        }
    }

    #[test]
    fn a_negative_is_never_a_relevant_document_and_a_zero_grade_may_be_one() {
        let mut t = task(1);
        // The relevant document ranks first: it must be skipped as a negative.
        t.ranked
            .insert(0, ("rel1".into(), "relevant passage 1".into()));
        t.ranked
            .insert(1, ("zero1".into(), "judged not relevant".into()));
        let pairs = task_pairs(&t, 3);
        let negatives: Vec<&str> = pairs
            .iter()
            .filter(|p| p.label == 0.0)
            .map(|p| p.passage.as_str())
            .collect();
        assert_eq!(
            negatives,
            vec!["judged not relevant", "passage 1-0", "passage 1-1"]
        );
        assert_eq!(pairs.iter().filter(|p| p.label == 1.0).count(), 1);
    }
}
