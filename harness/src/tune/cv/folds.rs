//! Task folds: which tasks each fold holds out, and which it trains on.
//!
//! The tasks are shuffled with the seed (`ranklab_engine::rerank::finetune::epoch_order`, the
//! shuffle fine-tuning's folds use) and task `order[i]` goes to fold `i mod folds`: every task
//! is held out by exactly one fold, and a fold trains on every task it does not hold out, never
//! on one it does. Task indices inside a fold are ascending.

use ranklab_engine::rerank::finetune::epoch_order;

/// One fold: the tasks it scores (held out) and the tasks it chooses on (train).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fold {
    /// Task indices held out, ascending.
    pub held_out: Vec<usize>,
    /// Task indices trained on, ascending: every other task.
    pub train: Vec<usize>,
}

/// `n` tasks split into `folds` folds (clamped to 1..=n) by a shuffle seeded with `seed`.
pub(crate) fn split(n: usize, folds: usize, seed: u64) -> Vec<Fold> {
    let folds = folds.clamp(1, n.max(1));
    let order = epoch_order(n, seed, 0);
    let mut held: Vec<Vec<usize>> = vec![Vec::new(); folds];
    for (i, &t) in order.iter().enumerate() {
        held[i % folds].push(t);
    }
    held.into_iter()
        .map(|mut held_out| {
            held_out.sort_unstable();
            let train = (0..n)
                .filter(|t| held_out.binary_search(t).is_err())
                .collect();
            Fold { held_out, train }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: set arithmetic on the indices, independent of how `split` builds the folds.
    #[test]
    fn no_fold_trains_on_a_task_it_holds_out_and_held_out_lists_partition_the_tasks() {
        for (n, k, seed) in [(35, 5, 42), (300, 5, 42), (7, 3, 1), (10, 10, 9)] {
            let folds = split(n, k, seed);
            assert_eq!(folds.len(), k);
            let mut all: Vec<usize> = folds.iter().flat_map(|f| f.held_out.clone()).collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..n).collect::<Vec<_>>(),
                "held-out lists partition 0..{n}"
            );
            for f in &folds {
                for t in &f.train {
                    assert!(!f.held_out.contains(t), "fold trains on held-out task {t}");
                }
                assert_eq!(f.train.len() + f.held_out.len(), n);
                // Sizes differ by at most one.
                assert!(f.held_out.len() == n / k || f.held_out.len() == n / k + 1);
            }
        }
    }

    #[test]
    fn the_seed_decides_the_split_and_the_same_seed_repeats_it() {
        assert_eq!(split(35, 5, 42), split(35, 5, 42));
        assert_ne!(split(35, 5, 42), split(35, 5, 43));
    }
}
