//! One dense scoring pass shared by nested corpora (the sizes of a corpus-size curve).
//!
//! A cosine does not depend on the other documents of the corpus, so every query's
//! best-section cosine with every document of the largest corpus, computed once
//! ([`DenseIndex::share_scores`]), is also each smaller corpus's: an index of a smaller corpus
//! cut from the largest ([`DenseIndex::subset`]) copies its rows (no vector-cache lookups) and
//! answers [`DenseIndex::search_many`] by gathering its documents' scores from the shared table
//! and taking the same top k (`ranking::top_k_scored`) as a search would. Guarantee: the same
//! hits, bit for bit and in the same order, as the index's own search (the table holds the
//! values `score_block` computes, which are the same `dot` of the same two vectors); a query the
//! table does not hold (compared by the bits of its vector) is searched as usual.

use std::collections::HashMap;
use std::sync::Arc;

use super::DenseIndex;
use crate::corpus::Corpus;
use crate::ranking::{top_k_scored, Hit};

/// Marks a document without sections in [`ScoreTable::sections`]: it has no score.
const NO_SECTION: u32 = u32::MAX;

/// Every query's best-section cosine with every document of one index.
#[derive(Clone)]
pub(super) struct ScoreTable {
    /// Documents of the index it was computed on (the row length).
    docs: usize,
    /// queries x docs, row-major.
    scores: Vec<f32>,
    /// The best section of each (query, document), or [`NO_SECTION`].
    sections: Vec<u32>,
    /// A query vector's bits -> its row.
    rows: HashMap<Vec<u32>, usize>,
}

/// An index's view of a shared table: the table and, per document of the index, its column.
#[derive(Clone)]
pub(super) struct Shared {
    table: Arc<ScoreTable>,
    columns: Vec<u32>,
    /// The index's `id_rank` inverted (rank -> document), for [`top_k_scored`].
    by_rank: Vec<u32>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Shared {{ queries: {}, documents: {} }}",
            self.table.rows.len(),
            self.columns.len()
        )
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

impl DenseIndex {
    /// Scores every query of `queries` against every document, once, and keeps the table so
    /// that [`DenseIndex::search_many`] of these queries (here and in every
    /// [`DenseIndex::subset`]) gathers instead of scoring again.
    pub fn share_scores(&mut self, queries: &[Vec<f32>]) {
        use rayon::prelude::*;
        let docs = self.doc_ids.len();
        let blocks: Vec<Vec<Vec<Hit>>> = queries
            .par_chunks(super::QUERY_BLOCK)
            .map(|block| self.score_block(block))
            .collect();
        let mut scores = vec![0f32; queries.len() * docs];
        let mut sections = vec![NO_SECTION; queries.len() * docs];
        for (q, hits) in blocks.into_iter().flatten().enumerate() {
            for h in hits {
                scores[q * docs + h.doc] = h.score;
                sections[q * docs + h.doc] = h.section as u32;
            }
        }
        let mut rows = HashMap::with_capacity(queries.len());
        for (q, v) in queries.iter().enumerate() {
            rows.entry(bits(v)).or_insert(q);
        }
        let table = ScoreTable {
            docs,
            scores,
            sections,
            rows,
        };
        self.shared = Some(Shared {
            table: Arc::new(table),
            columns: (0..docs as u32).collect(),
            by_rank: crate::ranking::by_rank(&self.id_rank),
        });
    }

    /// The index of `corpus`, a sub-corpus of this index's (every document present here by
    /// id, with as many sections): its rows copied from this index (the same vectors the cache
    /// would give for the same texts) and this index's shared scores, if any. None when a
    /// document of `corpus` is not here or has another number of sections (then build it).
    pub fn subset(&self, corpus: &Corpus) -> Option<DenseIndex> {
        let here: HashMap<&str, usize> = self
            .doc_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let mut matrix = Vec::new();
        let mut doc_rows = Vec::with_capacity(corpus.len() + 1);
        doc_rows.push(0);
        let mut columns = Vec::with_capacity(corpus.len());
        for d in &corpus.docs {
            let i = *here.get(d.id.as_str())?;
            let (start, end) = (self.doc_rows[i], self.doc_rows[i + 1]);
            if end - start != d.sections.len() {
                return None;
            }
            matrix.extend_from_slice(&self.matrix[start * self.dim..end * self.dim]);
            doc_rows.push(doc_rows.last().expect("non-empty") + (end - start));
            columns.push(self.shared.as_ref().map_or(0, |s| s.columns[i]));
        }
        let doc_ids: Vec<String> = corpus.docs.iter().map(|d| d.id.clone()).collect();
        let id_rank = crate::corpus::id_ranks(doc_ids.iter().map(String::as_str));
        Some(DenseIndex {
            dim: self.dim,
            matrix,
            doc_rows,
            doc_ids,
            identity: self.identity.clone(),
            shared: self.shared.as_ref().map(|s| Shared {
                table: Arc::clone(&s.table),
                columns,
                by_rank: crate::ranking::by_rank(&id_rank),
            }),
            id_rank,
        })
    }

    /// `search_many` from the shared table: None unless every query is in it.
    pub(super) fn search_shared(
        &self,
        queries: &[Vec<f32>],
        depth: usize,
    ) -> Option<Vec<Vec<Hit>>> {
        use rayon::prelude::*;
        let shared = self.shared.as_ref()?;
        let table = &shared.table;
        let rows: Vec<usize> = queries
            .iter()
            .map(|v| table.rows.get(&bits(v)).copied())
            .collect::<Option<_>>()?;
        Some(
            rows.par_iter()
                .map(|&row| {
                    let base = row * table.docs;
                    let at = |doc: usize| base + shared.columns[doc] as usize;
                    let scored = (0..shared.columns.len())
                        .filter(|&doc| table.sections[at(doc)] != NO_SECTION)
                        .map(|doc| (doc, table.scores[at(doc)]));
                    top_k_scored(scored, depth, &self.id_rank, &shared.by_rank)
                        .into_iter()
                        .map(|(doc, score)| Hit {
                            doc,
                            score,
                            section: table.sections[at(doc)] as usize,
                        })
                        .collect()
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    //! Properties: a sub-corpus's index cut from a larger one and answered from the larger's
    //! shared scores returns exactly (bits, order, sections) what an index built for the
    //! sub-corpus through the cache returns with its own search (the oracle: the existing
    //! scoring path, not the table); a query the table lacks is searched as usual.
    use super::*;
    use crate::corpus::markdown::parse_record;
    use crate::dense::testing::HashEmbedder;
    use crate::dense::EmbeddingCache;
    use proptest::prelude::*;

    /// A corpus of documents `d0`, `d1`, ..., each section a `## heading` with its text.
    fn corpus(docs: &[Vec<String>]) -> Corpus {
        let docs = docs
            .iter()
            .enumerate()
            .map(|(i, sections)| {
                let body: String = sections.iter().map(|s| format!("## {s}\n{s}\n")).collect();
                let text = format!("---\nid: d{i:02}\ntitle: t\n---\n{body}");
                parse_record(std::path::Path::new(&format!("d{i}.md")), text.as_bytes()).unwrap()
            })
            .collect();
        Corpus::new("t", docs).unwrap()
    }

    fn own_index(c: &Corpus, e: &mut HashEmbedder, cache: &EmbeddingCache) -> DenseIndex {
        DenseIndex::build(c, e, cache).unwrap().0
    }

    proptest! {
        #[test]
        fn a_cut_index_searches_as_its_own_index_does(
            // Few distinct words: equal sections across documents, so equal scores whose order
            // is the id tie-break.
            docs in proptest::collection::vec(
                proptest::collection::vec("[a-c]( [a-c]){0,2}", 0..3), 2..30),
            keep in proptest::collection::vec(any::<bool>(), 30),
            queries in proptest::collection::vec("[a-d]( [a-d]){0,2}", 1..12),
            depth in 0usize..40,
        ) {
            let mut e = HashEmbedder::new(16);
            let cache = EmbeddingCache::in_memory(&e);
            let large = corpus(&docs);
            // Never empty (a corpus has a document): the first document is always kept.
            let small_docs: Vec<_> = large.docs.iter().zip(&keep).enumerate()
                .filter(|(i, (_, &k))| *i == 0 || k)
                .map(|(_, (d, _))| d.clone()).collect();
            let small = Corpus::new("t", small_docs).unwrap();
            let qs: Vec<Vec<f32>> = queries.iter().map(|q| e.vector(q)).collect();
            let mut shared = own_index(&large, &mut e, &cache);
            let expected_large = shared.search_many(&qs, depth);
            shared.share_scores(&qs);
            prop_assert_eq!(shared.search_many(&qs, depth), expected_large);
            let cut = shared.subset(&small).expect("every document of the sub-corpus is there");
            prop_assert!(cut.search_shared(&qs, depth).is_some(), "answered from the table");
            let own = own_index(&small, &mut e, &cache);
            let expected = own.search_many(&qs, depth);
            let got = cut.search_many(&qs, depth);
            let bits = |l: &[Vec<Hit>]| -> Vec<Vec<(usize, u32, usize)>> {
                l.iter().map(|h| h.iter().map(|h| (h.doc, h.score.to_bits(), h.section)).collect())
                    .collect()
            };
            prop_assert_eq!(bits(&got), bits(&expected));
            // A query outside the table: searched, the same as the own index.
            let other = vec![e.vector("a b c d")];
            prop_assert!(cut.search_shared(&other, depth).is_none());
            prop_assert_eq!(bits(&cut.search_many(&other, depth)), bits(&own.search_many(&other, depth)));
            // A cut of a cut keeps the columns of the first table.
            let smaller = Corpus::new("t", small.docs.iter().step_by(2).cloned().collect()).unwrap();
            let twice = cut.subset(&smaller).unwrap();
            let own2 = own_index(&smaller, &mut e, &cache);
            prop_assert_eq!(bits(&twice.search_many(&qs, depth)), bits(&own2.search_many(&qs, depth)));
        }
    }

    #[test]
    fn a_document_missing_from_the_larger_corpus_cannot_be_cut() {
        let mut e = HashEmbedder::new(8);
        let cache = EmbeddingCache::in_memory(&e);
        let large = corpus(&[vec!["a".into()], vec!["b".into()]]);
        let other = corpus(&[vec!["a".into()], vec!["b".into()], vec!["c".into()]]);
        let ix = own_index(&large, &mut e, &cache);
        assert!(
            ix.subset(&other).is_none(),
            "d02 is not in the larger corpus"
        );
        // Same ids, another number of sections: not the same document.
        let changed = corpus(&[vec!["a".into(), "b".into()]]);
        assert!(ix.subset(&changed).is_none());
    }
}
