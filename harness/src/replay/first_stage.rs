//! The first stage of each task: the BM25, dense, fused or external list every configuration
//! derives its ranking from, each distinct list computed once per task.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Context, Result};
use ranklab_engine::dense::{embed_query, query_text};
use ranklab_engine::lexical::{Analyzer, LexicalIndex};
use ranklab_engine::policy::Wiring;
use ranklab_engine::ranking::{check_finite, Hit};

use super::prefetch::prefetch;
use super::shortlists::ShortlistKey;
use super::{features, ConfigRun, Ranked, Replayer};
use crate::suite::fusion::{fuse, FusionSpec};
use crate::suite::{Configuration, Experiments, Retriever, Suite};

/// Cache key of a first-stage list (per task).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum ListKey {
    Bm25 {
        k1: u32,
        b: u32,
        analyzer: Analyzer,
    },
    Dense {
        model: String,
    },
    Fusion {
        model: String,
        k1: u32,
        b: u32,
        analyzer: Analyzer,
        rrf_k: u32,
        depth: usize,
        /// `FusionSpec::key`: `rrf` or the weighted fusion's normalization and weights.
        fusion: String,
    },
    External {
        configuration: String,
    },
    /// A learned configuration's ranking (names are unique in a replay).
    Learned {
        configuration: String,
    },
}

/// An external engine names documents, not sections: the passage the cross-encoder scores is
/// each document's best BM25 section for the query (ranklab's English analyzer, default k1
/// and b), as it is for ranklab's own lists; section 0 when the query matches none of it.
pub fn best_sections(engine: &Replayer<'_>, query: &str, hits: &mut [Hit]) -> Result<()> {
    let corpus = engine.corpus;
    let built;
    let index = match &engine.lexical {
        Some(index) => index,
        None => {
            built = LexicalIndex::build(corpus)?;
            &built
        }
    };
    let best: HashMap<usize, usize> = index
        .search(corpus, query, corpus.len(), Default::default())?
        .into_iter()
        .map(|h| (h.doc, h.section))
        .collect();
    for h in hits {
        h.section = best.get(&h.doc).copied().unwrap_or(0);
    }
    Ok(())
}

pub(super) fn list_key(c: &Configuration) -> ListKey {
    let p = c.bm25();
    let (k1, b) = (p.k1.to_bits(), p.b.to_bits());
    match c.retriever {
        Retriever::Bm25 => ListKey::Bm25 {
            k1,
            b,
            analyzer: p.analyzer,
        },
        Retriever::Dense => ListKey::Dense {
            model: c.embedder().unwrap_or_default().to_string(),
        },
        Retriever::Fusion => ListKey::Fusion {
            model: c.embedder().unwrap_or_default().to_string(),
            k1,
            b,
            analyzer: p.analyzer,
            rrf_k: c.rrf().k.to_bits(),
            depth: c.depth(),
            fusion: c.fusion.as_ref().map_or_else(|| "rrf".into(), |f| f.key()),
        },
        Retriever::External => ListKey::External {
            configuration: c.name.clone(),
        },
        Retriever::Learned => ListKey::Learned {
            configuration: c.name.clone(),
        },
    }
}

/// The first-stage lists of one task, each computed once at `max_depth`.
struct TaskLists<'e, 'c> {
    engine: &'e Replayer<'c>,
    query: String,
    max_depth: usize,
    lists: HashMap<ListKey, Vec<Hit>>,
    /// Lists computed ahead for every task at once (see [`prefetch`]), not yet checked.
    ready: HashMap<ListKey, Vec<Hit>>,
    query_vecs: HashMap<String, Vec<f32>>,
}

impl TaskLists<'_, '_> {
    fn get(&mut self, c: &Configuration) -> Result<Vec<Hit>> {
        let key = list_key(c);
        if let Some(l) = self.lists.get(&key) {
            return Ok(l.iter().take(c.depth()).cloned().collect());
        }
        let corpus = self.engine.corpus;
        let list = match c.retriever {
            _ if self.ready.contains_key(&key) => self.ready.remove(&key).expect("present"),
            Retriever::Bm25 => {
                let p = c.bm25();
                let index = match p.analyzer {
                    Analyzer::Lucene => self.engine.lexical_lucene.as_ref(),
                    Analyzer::English => self.engine.lexical.as_ref(),
                }
                .expect("built when a configuration uses it");
                index.search(corpus, &self.query, self.max_depth, p)?
            }
            Retriever::Dense => {
                let v = self.query_vec(c.embedder().unwrap_or_default())?;
                self.engine
                    .dense(c.embedder().unwrap_or_default())
                    .index
                    .search(&v, self.max_depth)
            }
            Retriever::Fusion => {
                let lex = self.get(&Configuration {
                    retriever: Retriever::Bm25,
                    depth: Some(self.max_depth),
                    ..c.clone()
                })?;
                let sem = self.get(&Configuration {
                    retriever: Retriever::Dense,
                    depth: Some(self.max_depth),
                    ..c.clone()
                })?;
                let mut fused = fuse(c.fusion.as_ref(), c.rrf(), &lex, &sem, corpus.id_rank());
                fused.truncate(self.max_depth);
                fused
            }
            Retriever::Learned => self.learned(c)?,
            Retriever::External => unreachable!("external lists come from crate::external"),
        };
        check_finite(&self.query, &list, |d| corpus.id(d))?;
        let out = list.iter().take(c.depth()).cloned().collect();
        self.lists.insert(key, list);
        Ok(out)
    }

    /// `retriever: learned`: the union of the BM25 and bi-encoder lists at `c`'s depth, ranked
    /// by its model on the features `ranklab tune` trained it on ([`features::task_rows`]).
    fn learned(&mut self, c: &Configuration) -> Result<Vec<Hit>> {
        let model = c.learned.as_ref().expect("read with the experiments file");
        if !crate::suite::learned::model_features(model).is_empty() {
            // Ranked after the rerank stages, over its companions' runs (`learned_models`).
            return Ok(Vec::new());
        }
        let part = |retriever| Configuration {
            retriever,
            ..c.clone()
        };
        let ranked = |hits: Vec<Hit>| -> Vec<Ranked> {
            hits.into_iter()
                .map(|h| Ranked {
                    doc: h.doc,
                    score: h.score,
                    section: h.section,
                    rerank_score: None,
                })
                .collect()
        };
        let lex = ranked(self.get(&part(Retriever::Bm25))?);
        let sem = ranked(self.get(&part(Retriever::Dense))?);
        let corpus = self.engine.corpus;
        let rows = features::task_rows(
            &model.features,
            &lex,
            &sem,
            corpus,
            c.depth(),
            &BTreeMap::new(),
            features::newest(corpus),
        );
        Ok(features::rank(model, &rows, c.depth(), corpus))
    }

    fn query_vec(&mut self, model: &str) -> Result<Vec<f32>> {
        if let Some(v) = self.query_vecs.get(model) {
            return Ok(v.clone());
        }
        let d = self.engine.dense(model);
        let v = embed_query(&mut *d.embedder.borrow_mut(), &d.cache, &self.query)?;
        self.query_vecs.insert(model.to_string(), v.clone());
        Ok(v)
    }
}

/// The first-stage list of `query` under `c` (a ranklab first stage, not an external engine),
/// at `c`'s depth: what a task's list would be for that query (fine-tuning's merges).
pub(crate) fn first_stage_of(
    engine: &Replayer,
    c: &Configuration,
    query: &str,
) -> Result<Vec<Hit>> {
    let mut lists = TaskLists {
        engine,
        query: query.to_string(),
        max_depth: c.depth(),
        lists: HashMap::new(),
        ready: HashMap::new(),
        query_vecs: HashMap::new(),
    };
    lists.get(c)
}

/// Per task, per configuration: the first-stage hits that go through ranklab's stages, and the
/// hits of an external engine outside the corpus, which skip them and stay below.
pub(super) type FirstStage = Vec<Vec<(Vec<Hit>, Vec<Hit>)>>;

/// Every query vector in one call (`--cluster`), so the cluster gets them as shards, not one by
/// one.
pub(super) fn embed_all_queries(engine: &Replayer, suite: &Suite, ex: &Experiments) -> Result<()> {
    let used: BTreeSet<&str> = ex
        .configurations
        .iter()
        .filter_map(|c| c.embedder())
        .collect();
    for id in used {
        let d = engine.dense(id);
        let texts: Vec<String> = suite
            .tasks
            .iter()
            .map(|t| query_text(&*d.embedder.borrow(), &t.query))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        d.cache
            .embed(&mut *d.embedder.borrow_mut(), &refs)
            .with_context(|| format!("{id}: the query vectors"))?;
    }
    Ok(())
}

/// Step 1: every task's first-stage list under every configuration (an external engine's taken
/// out of `external`), and per task the configuration whose list each shortlist is cut from.
pub(super) fn first_stages(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    runs: &[ConfigRun],
    external: &mut HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> Result<(FirstStage, Vec<BTreeMap<ShortlistKey, usize>>)> {
    let corpus = engine.corpus;
    let pb = crate::progress::bar(suite.tasks.len() as u64, "first stage");
    let mut first_stage: FirstStage = Vec::with_capacity(suite.tasks.len());
    let mut cut_from: Vec<BTreeMap<ShortlistKey, usize>> = Vec::new();
    let mut ready = prefetch(engine, suite, ex, external, max_depth)?;
    for (ti, task) in suite.tasks.iter().enumerate() {
        let mut lists = TaskLists {
            engine,
            query: task.query.clone(),
            max_depth,
            lists: HashMap::new(),
            ready: std::mem::take(&mut ready[ti]),
            query_vecs: HashMap::new(),
        };
        let mut per_config = Vec::with_capacity(runs.len());
        let mut keys = BTreeMap::new();
        for (ci, run) in runs.iter().enumerate() {
            let c = &run.config;
            // An external list: hits outside the corpus skip ranklab's stages and stay below.
            per_config.push(match external.get_mut(&ci) {
                // A weighted fusion that weighs its engine's list and a reranker's list: the
                // shortlist's list first; the engine's list stays in `external` for step 3b
                // (`fused::fuse_rerank_lists`, which puts its hits outside the corpus below).
                Some(_) if c.fusion.as_ref().is_some_and(FusionSpec::cuts_shortlist) => (
                    lists.get(c).with_context(|| {
                        format!("first stage of task {} under {:?}", task.id, c.name)
                    })?,
                    Vec::new(),
                ),
                // A weighted fusion that weighs its engine's list: fused with BM25 and dense.
                Some(l) if c.retriever == Retriever::Fusion => {
                    let hits = std::mem::take(&mut l[ti]);
                    let mut part = |r| {
                        lists.get(&super::fused::part(c, r)).with_context(|| {
                            format!("first stage of task {} under {:?}", task.id, c.name)
                        })
                    };
                    let (lex, sem) = (part(Retriever::Bm25)?, part(Retriever::Dense)?);
                    super::fused::fuse_engine(c, [&lex, &sem], hits, corpus)
                }
                Some(l) => {
                    let hits = std::mem::take(&mut l[ti]);
                    if c.rerank.is_some() || c.wiring != Wiring::None {
                        let (mut inside, outside): (Vec<Hit>, Vec<Hit>) =
                            hits.into_iter().partition(|h| h.doc < corpus.len());
                        if c.rerank.is_some() {
                            best_sections(engine, &task.query, &mut inside)?;
                        }
                        (inside, outside)
                    } else {
                        (hits, Vec::new())
                    }
                }
                None => (
                    lists.get(c).with_context(|| {
                        format!("first stage of task {} under {:?}", task.id, c.name)
                    })?,
                    Vec::new(),
                ),
            });
            if let Some(r) = &c.rerank {
                keys.entry((r.model_key(), list_key(c))).or_insert(ci);
            }
        }
        first_stage.push(per_config);
        cut_from.push(keys);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok((first_stage, cut_from))
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use ranklab_engine::corpus::Corpus;
    use ranklab_engine::corpus::{markdown::parse_record, Document};

    fn doc(id: &str, body: &str) -> Document {
        parse_record(
            std::path::Path::new(&format!("{id}.md")),
            format!("---\nid: {id}\ntitle: {id}\n---\n{body}\n").as_bytes(),
        )
        .unwrap()
    }

    /// Hand-computed: "idempotency" occurs only in section 1 of `a` and section 2 of `b`; `c`
    /// does not hold it, so it keeps section 0. The external engine named sections 0 for all.
    #[test]
    fn an_external_hit_is_reranked_on_its_best_bm25_section() {
        let corpus = Corpus::new(
            "t",
            vec![
                doc(
                    "a",
                    "## Intro\nledger entries\n## Keys\nidempotency keys on capture",
                ),
                doc(
                    "b",
                    "## One\nwebhooks\n## Two\nrefunds\n## Three\nidempotency",
                ),
                doc("c", "## One\nnothing relevant"),
            ],
        )
        .unwrap();
        let engine = Replayer::build(&corpus, &[]).unwrap();
        let mut hits: Vec<Hit> = (0..3)
            .map(|doc| Hit {
                doc,
                score: 1.0,
                section: 0,
            })
            .collect();
        best_sections(&engine, "idempotency key", &mut hits).unwrap();
        let got: Vec<(&str, usize)> = hits.iter().map(|h| (corpus.id(h.doc), h.section)).collect();
        assert_eq!(got, [("a", 1), ("b", 2), ("c", 0)]);
        // The passage scored is that section's text.
        let passage = ranklab_engine::rerank::Candidate::of(&corpus, &hits[0]).passage;
        assert!(passage.contains("idempotency keys on capture"), "{passage}");
    }
}
