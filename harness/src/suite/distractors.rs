//! Corpora of growing size for a corpus-size curve: a suite's corpus joined by distractors
//! (`distractors:` of an experiments file), or a BEIR collection's judged documents with a
//! sample of the others (`ranklab beir --corpus-sizes`).
//!
//! Both draw from a pool in one seeded order and take a prefix of it per size, so each size's
//! draw contains every smaller size's: the documents of a small point are a subset of a large
//! point's, and their vectors and scores are computed once. The order is a Fisher–Yates shuffle
//! of the pool sorted by id (byte order), driven by ChaCha8 keyed by the seed (the statistics'
//! stream `Distractors`), so it depends on the pool's ids and the seed alone, not on file order.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::{Corpus, Document};
use serde::Deserialize;

use crate::stats::{Source, Stream};

/// Seed of the draw when `distractors:` names none.
pub const DEFAULT_SEED: u64 = 42;

/// `distractors: { from, sizes, seed }` of an experiments file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Distractors {
    /// The pool: a BEIR-layout folder (corpus.jsonl) or a folder of Markdown records, relative
    /// to the experiments file; it may begin with `${NAME}`, an environment variable (a pool
    /// that lives outside the project, such as the shared data).
    pub from: PathBuf,
    /// How many distractors join the suite's corpus at each point, strictly increasing (0: the
    /// suite's corpus alone).
    pub sizes: Vec<usize>,
    /// Seed of the draw.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_seed() -> u64 {
    DEFAULT_SEED
}

/// Sizes are strictly increasing and not empty; otherwise the reason, for a message.
pub fn check_sizes(sizes: &[usize]) -> std::result::Result<(), String> {
    if sizes.is_empty() {
        return Err("no sizes; list at least one, e.g. [0, 500, 2000]".to_string());
    }
    if let Some(w) = sizes.windows(2).find(|w| w[1] <= w[0]) {
        return Err(format!(
            "sizes must be strictly increasing (each size's draw contains the smaller's), but {} comes after {}",
            w[1], w[0]
        ));
    }
    Ok(())
}

impl Distractors {
    /// Checks the block of the experiments file `path` (text `text`) at load: sizes strictly
    /// increasing. The pool (`from`) is checked and read only when the curve is drawn, so a
    /// command that does not draw it (the gate, a copy of the suite elsewhere) does not need it.
    pub(crate) fn check(&self, path: &Path, text: &str) -> Result<()> {
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with("distractors:"))
            .map_or(1, |i| i + 1);
        if let Err(why) = check_sizes(&self.sizes) {
            bail!("{}:{line}: distractors: {why}", path.display());
        }
        Ok(())
    }

    /// `from` with its `${NAME}` variables expanded, resolved against the directory of the
    /// experiments file `path`; `Ok(None)` when a variable it names is not set, so that the
    /// pool is not on this machine (see [`Distractors::unset`]).
    pub fn pool_path(&self, path: &Path) -> Result<Option<PathBuf>> {
        let from = self.from.to_string_lossy();
        if !self.unset(path)?.is_empty() {
            return Ok(None);
        }
        let from = crate::engine_spec::expand_env(&from)
            .with_context(|| format!("{}: distractors: from", path.display()))?;
        Ok(Some(path.parent().unwrap_or(Path::new(".")).join(from)))
    }

    /// The environment variables `from` names that are not set (an error for an unclosed
    /// `${`).
    pub fn unset(&self, path: &Path) -> Result<Vec<String>> {
        let refs = crate::engine_spec::env_refs(&self.from.to_string_lossy())
            .with_context(|| format!("{}: distractors: from", path.display()))?;
        Ok(refs
            .into_iter()
            .filter(|name| std::env::var_os(name).is_none())
            .collect())
    }
}

/// Indices of `ids` in the seeded draw order (see the module's documentation).
pub fn draw_order(ids: &[&str], seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| ids[a].as_bytes().cmp(ids[b].as_bytes()));
    let mut rng = Source::new(seed, Stream::Distractors);
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// A suite's corpus and its distractor pool, drawn.
pub struct Pool {
    /// Where the pool was read.
    pub path: PathBuf,
    /// `from` as written in the experiments file.
    pub written: String,
    /// The pool's documents in draw order.
    pub drawn: Vec<Document>,
    /// The seed of the draw.
    pub seed: u64,
}

impl Pool {
    /// Reads the pool of `spec` (of the experiments file `experiments`) at `path` (its
    /// [`Distractors::pool_path`]), checks that no pool id is one of `corpus`'s and that the
    /// largest size fits the pool, and draws its order.
    pub fn load(
        spec: &Distractors,
        experiments: &Path,
        path: PathBuf,
        corpus: &Corpus,
    ) -> Result<Pool> {
        let is_corpus = path.join("corpus.jsonl").is_file()
            || std::fs::read_dir(&path).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().extension().is_some_and(|x| x == "md"))
            });
        if !is_corpus {
            bail!(
                "{}: distractors: from {} is not a corpus: expected a BEIR folder with corpus.jsonl or a folder of .md records (the path is relative to the experiments file)",
                experiments.display(),
                path.display()
            );
        }
        let pool = Corpus::load(&path).with_context(|| {
            format!(
                "{}: distractors: reading the pool {}",
                experiments.display(),
                path.display()
            )
        })?;
        if let Some(d) = pool.docs.iter().find(|d| corpus.get(&d.id).is_some()) {
            bail!(
                "{}: distractors: the pool {} has a document with id {:?} ({}), which is also a document of the suite's corpus ({}); a distractor must be a document that is not the answer: use a pool without the suite's records",
                experiments.display(),
                path.display(),
                d.id,
                d.source.display(),
                corpus.get(&d.id).map_or_else(String::new, |s| s.source.display().to_string())
            );
        }
        let largest = *spec.sizes.last().unwrap_or(&0);
        if largest > pool.len() {
            bail!(
                "{}: distractors: size {largest} is larger than the pool {} ({} documents); lower it or name a larger pool",
                experiments.display(),
                path.display(),
                pool.len()
            );
        }
        let ids: Vec<&str> = pool.docs.iter().map(|d| d.id.as_str()).collect();
        let order = draw_order(&ids, spec.seed);
        let mut docs: Vec<Option<Document>> = pool.docs.into_iter().map(Some).collect();
        let drawn = order
            .into_iter()
            .map(|i| docs[i].take().expect("each index drawn once"))
            .collect();
        Ok(Pool {
            path,
            written: spec.from.to_string_lossy().into_owned(),
            drawn,
            seed: spec.seed,
        })
    }

    /// The suite's corpus joined by the first `size` documents of the draw (after the suite's
    /// own, in draw order).
    pub fn joined(&self, corpus: &Corpus, size: usize) -> Result<Corpus> {
        let mut docs = corpus.docs.clone();
        docs.extend(self.drawn[..size].iter().cloned());
        Ok(Corpus::new(corpus.root.clone(), docs)?)
    }
}

/// A BEIR collection's corpus cut to `size` documents: every document in `keep` (the judged
/// ones), then the others in the seeded draw order until `size`; documents keep the corpus's
/// order, so `size` = the corpus's length gives the corpus itself.
pub fn sample(corpus: &Corpus, keep: &HashSet<&str>, size: usize, seed: u64) -> Result<Corpus> {
    let kept = corpus
        .docs
        .iter()
        .filter(|d| keep.contains(d.id.as_str()))
        .count();
    if size < kept || size > corpus.len() {
        bail!(
            "corpus size {size}: must be between the {kept} judged documents, which every size keeps, and the corpus's {} documents",
            corpus.len()
        );
    }
    let others: Vec<usize> = (0..corpus.len())
        .filter(|&i| !keep.contains(corpus.docs[i].id.as_str()))
        .collect();
    let ids: Vec<&str> = others.iter().map(|&i| corpus.docs[i].id.as_str()).collect();
    let mut chosen = vec![false; corpus.len()];
    for &i in &draw_order(&ids, seed)[..size - kept] {
        chosen[others[i]] = true;
    }
    Ok(corpus.subset(|i| chosen[i] || keep.contains(corpus.docs[i].id.as_str()))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_must_increase_strictly() {
        assert!(check_sizes(&[0, 100, 500]).is_ok());
        assert!(check_sizes(&[300, 100])
            .unwrap_err()
            .contains("100 comes after 300"));
        assert!(check_sizes(&[100, 100]).is_err());
        assert!(check_sizes(&[]).is_err());
    }

    #[test]
    fn the_draw_is_a_permutation_fixed_by_ids_and_seed() {
        let ids = ["d", "a", "c", "b", "e"];
        let order = draw_order(&ids, 7);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
        // The same ids in another file order draw the same ids.
        let shuffled = ["b", "e", "a", "d", "c"];
        let again: Vec<&str> = draw_order(&shuffled, 7)
            .iter()
            .map(|&i| shuffled[i])
            .collect();
        let first: Vec<&str> = order.iter().map(|&i| ids[i]).collect();
        assert_eq!(again, first);
        assert_ne!(
            draw_order(&ids, 8)
                .iter()
                .map(|&i| ids[i])
                .collect::<Vec<_>>(),
            first,
            "another seed, another order (for these five ids)"
        );
    }
}
