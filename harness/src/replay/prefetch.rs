//! The first-stage lists of every task computed ahead, for all tasks at once on rayon's pool.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::embed_query;
use ranklab_engine::lexical::{Analyzer, Bm25Params};
use ranklab_engine::ranking::Hit;

use super::first_stage::{list_key, ListKey};
use super::Replayer;
use crate::suite::fusion::fuse;
use crate::suite::{Configuration, Experiments, Retriever, Suite};

/// The BM25, dense and fused lists (at `max_depth`) of every task that ranklab's own
/// configurations need, computed for all tasks at once on rayon's pool: BM25 and fusion one task
/// per job, dense in blocks of queries per pass over the vectors ([`DenseIndex::search_many`]).
/// The same hits as [`TaskLists::get`] computes one task at a time; they are checked
/// (non-finite scores) when a task takes them. Query vectors come from the cache (a miss is embedded here, in
/// task order).
pub(super) fn prefetch(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> Result<Vec<HashMap<ListKey, Vec<Hit>>>> {
    let mut out: Vec<HashMap<ListKey, Vec<Hit>>> = vec![HashMap::new(); suite.tasks.len()];
    let (bm25, dense) = prefetched_lists(ex, external, max_depth);
    prefetch_bm25(engine, suite, bm25, max_depth, &mut out)?;
    prefetch_dense(engine, suite, dense, max_depth, &mut out)?;
    prefetch_fused(engine.corpus, ex, external, max_depth, &mut out);
    Ok(out)
}

/// The first stages [`prefetch`] computes: the BM25 lists (by key, with their parameters) and
/// the dense models (by model id, with the first configuration that uses each) of ranklab's
/// own configurations, fusion's included.
fn prefetched_lists<'x>(
    ex: &'x Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> (BTreeMap<ListKey, Bm25Params>, BTreeMap<String, &'x str>) {
    let mut bm25: BTreeMap<ListKey, Bm25Params> = BTreeMap::new();
    let mut dense: BTreeMap<String, &str> = BTreeMap::new();
    for (ci, c) in ex.configurations.iter().enumerate() {
        if external.contains_key(&ci) {
            continue;
        }
        if matches!(
            c.retriever,
            Retriever::Bm25 | Retriever::Fusion | Retriever::Learned
        ) {
            let lexical = Configuration {
                retriever: Retriever::Bm25,
                depth: Some(max_depth),
                ..c.clone()
            };
            bm25.entry(list_key(&lexical)).or_insert(c.bm25());
        }
        if matches!(
            c.retriever,
            Retriever::Dense | Retriever::Fusion | Retriever::Learned
        ) {
            let model = c.embedder().unwrap_or_default().to_string();
            dense.entry(model).or_insert(&c.name);
        }
    }
    (bm25, dense)
}

/// Every task's BM25 list for each key of `bm25`, one task per job.
fn prefetch_bm25(
    engine: &Replayer,
    suite: &Suite,
    bm25: BTreeMap<ListKey, Bm25Params>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) -> Result<()> {
    use rayon::prelude::*;
    for (key, p) in bm25 {
        let index = match p.analyzer {
            Analyzer::Lucene => engine.lexical_lucene.as_ref(),
            Analyzer::English => engine.lexical.as_ref(),
        }
        .expect("built when a configuration uses it");
        let lists = suite
            .tasks
            .par_iter()
            .map(|t| {
                index
                    .search(engine.corpus, &t.query, max_depth, p)
                    .with_context(|| format!("BM25 search of task {}", t.id))
            })
            .collect::<Result<Vec<_>>>()?;
        for (m, l) in out.iter_mut().zip(lists) {
            m.insert(key.clone(), l);
        }
    }
    Ok(())
}

/// Every task's dense list for each model of `dense` (model id -> the configuration named in
/// an error), the query vectors embedded in task order, searched in blocks of queries.
fn prefetch_dense(
    engine: &Replayer,
    suite: &Suite,
    dense: BTreeMap<String, &str>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) -> Result<()> {
    for (model, config) in dense {
        let d = engine.dense(&model);
        let mut vecs = Vec::with_capacity(suite.tasks.len());
        for t in &suite.tasks {
            vecs.push(
                embed_query(&mut *d.embedder.borrow_mut(), &d.cache, &t.query)
                    .with_context(|| format!("first stage of task {} under {config:?}", t.id))?,
            );
        }
        let key = ListKey::Dense {
            model: model.clone(),
        };
        for (m, l) in out.iter_mut().zip(d.index.search_many(&vecs, max_depth)) {
            m.insert(key.clone(), l);
        }
    }
    Ok(())
}

/// Fused lists, one task per job, from the lists in `out`, fused as `TaskLists::get` fuses
/// them. A task whose lists hold a non-finite score is left to `get`, which reports it.
fn prefetch_fused(
    corpus: &Corpus,
    ex: &Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) {
    use rayon::prelude::*;
    let mut fused_keys = BTreeSet::new();
    for (ci, c) in ex.configurations.iter().enumerate() {
        if external.contains_key(&ci) || c.retriever != Retriever::Fusion {
            continue;
        }
        let key = list_key(c);
        if !fused_keys.insert(key.clone()) {
            continue;
        }
        let of = |retriever| {
            list_key(&Configuration {
                retriever,
                depth: Some(max_depth),
                ..c.clone()
            })
        };
        let (lex_key, sem_key) = (of(Retriever::Bm25), of(Retriever::Dense));
        let id_rank = corpus.id_rank();
        let fused: Vec<Option<Vec<Hit>>> = out
            .par_iter()
            .map(|m| {
                let (lex, sem) = (m.get(&lex_key)?, m.get(&sem_key)?);
                let finite = |l: &[Hit]| l.iter().all(|h| h.score.is_finite());
                if !finite(lex) || !finite(sem) {
                    return None;
                }
                let mut f = fuse(c.fusion.as_ref(), c.rrf(), lex, sem, id_rank);
                f.truncate(max_depth);
                Some(f)
            })
            .collect();
        for (m, f) in out.iter_mut().zip(fused) {
            if let Some(f) = f {
                m.insert(key.clone(), f);
            }
        }
    }
}
