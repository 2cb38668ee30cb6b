//! Exact cosine search over section vectors; a document scores by its best section.
//!
//! Every section of every document is embedded (through the [`EmbeddingCache`]) and kept in one
//! contiguous, row-major f32 matrix of L2-normalized rows, grouped by document. A search scores
//! every row with a dot product (the query is normalized too, so this is the cosine), keeps per
//! document the maximum and the section that gave it (the first such section on a tie), and
//! returns the top `depth` documents in the one total order of [`crate::ranking`]. No
//! approximation: the result equals a full sort of every document's best-section cosine.

use super::{CacheStats, Embedder, EmbeddingCache};
use crate::corpus::Corpus;
use crate::ranking::{cmp_hits, sort_hits, top_k, Hit};
use crate::Result;

mod shared;

/// Section vectors of one corpus.
#[derive(Debug, Clone)]
pub struct DenseIndex {
    dim: usize,
    /// rows x dim, row-major.
    matrix: Vec<f32>,
    /// Rows of document d: `doc_rows[d]..doc_rows[d + 1]`; row r is section `r - doc_rows[d]`.
    doc_rows: Vec<usize>,
    doc_ids: Vec<String>,
    /// Document ordinal -> its rank among `doc_ids` in byte order (the id tie-break as an
    /// integer comparison).
    id_rank: Vec<u32>,
    identity: String,
    /// Scores computed once for a set of queries, shared with sub-corpora (`shared.rs`).
    shared: Option<shared::Shared>,
}

/// Queries scored together in one pass over the matrix by [`DenseIndex::search_many`]: each
/// row is read from memory once per block instead of once per query.
const QUERY_BLOCK: usize = 8;

impl DenseIndex {
    /// Embeds every section of `corpus` (`Document::section_text`) through `cache`.
    pub fn build(
        corpus: &Corpus,
        embedder: &mut dyn Embedder,
        cache: &EmbeddingCache,
    ) -> Result<(DenseIndex, CacheStats)> {
        DenseIndex::build_with_progress(corpus, embedder, cache, &mut |_, _| {})
    }

    /// [`DenseIndex::build`], calling `progress(done, to_compute)` while embedding.
    pub fn build_with_progress(
        corpus: &Corpus,
        embedder: &mut dyn Embedder,
        cache: &EmbeddingCache,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(DenseIndex, CacheStats)> {
        use rayon::prelude::*;
        let docs: Vec<(String, Vec<String>)> = corpus
            .docs
            .par_iter()
            .map(|d| {
                (
                    d.id.clone(),
                    (0..d.sections.len()).map(|i| d.section_text(i)).collect(),
                )
            })
            .collect();
        DenseIndex::from_texts(&docs, embedder, cache, progress)
    }

    /// Builds from `(doc id, section texts)` pairs, in document order.
    pub fn from_texts(
        docs: &[(String, Vec<String>)],
        embedder: &mut dyn Embedder,
        cache: &EmbeddingCache,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(DenseIndex, CacheStats)> {
        let texts: Vec<&str> = docs
            .iter()
            .flat_map(|(_, s)| s.iter().map(String::as_str))
            .collect();
        let (vectors, stats) = cache.embed_with_progress(embedder, &texts, progress)?;
        let dim = embedder.dim();
        let mut matrix = Vec::with_capacity(vectors.len() * dim);
        for v in &vectors {
            matrix.extend(normalized(v));
        }
        let mut doc_rows = Vec::with_capacity(docs.len() + 1);
        doc_rows.push(0);
        for (_, sections) in docs {
            doc_rows.push(doc_rows.last().expect("non-empty") + sections.len());
        }
        cache.flush()?;
        Ok((
            DenseIndex {
                dim,
                matrix,
                doc_rows,
                doc_ids: docs.iter().map(|(id, _)| id.clone()).collect(),
                id_rank: crate::corpus::id_ranks(docs.iter().map(|(id, _)| id.as_str())),
                identity: embedder.identity().to_string(),
                shared: None,
            },
            stats,
        ))
    }

    /// The identity of the embedder that built it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of section vectors.
    pub fn sections(&self) -> usize {
        self.matrix.len() / self.dim.max(1)
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.doc_ids.len()
    }

    /// The (normalized) vector of section `section` of document `doc`.
    pub fn vector(&self, doc: usize, section: usize) -> &[f32] {
        let r = self.doc_rows[doc] + section;
        assert!(
            r < self.doc_rows[doc + 1],
            "document {doc} has no section {section}"
        );
        &self.matrix[r * self.dim..(r + 1) * self.dim]
    }

    /// Every document's best-section cosine with `query_vec`, in document order (documents
    /// without sections are left out).
    pub fn score_all(&self, query_vec: &[f32]) -> Vec<Hit> {
        assert_eq!(
            query_vec.len(),
            self.dim,
            "query vector has the wrong dimension"
        );
        let q = normalized(query_vec);
        let mut hits = Vec::with_capacity(self.doc_ids.len());
        for doc in 0..self.doc_ids.len() {
            let (start, end) = (self.doc_rows[doc], self.doc_rows[doc + 1]);
            let mut best: Option<(f32, usize)> = None;
            for r in start..end {
                let s = dot(&q, &self.matrix[r * self.dim..(r + 1) * self.dim]);
                if best.is_none_or(|(b, _)| s > b) {
                    best = Some((s, r - start));
                }
            }
            if let Some((score, section)) = best {
                hits.push(Hit {
                    doc,
                    score,
                    section,
                });
            }
        }
        hits
    }

    /// The top `depth` documents by best-section cosine, in the total order of
    /// [`crate::ranking`] (score desc, then document id desc).
    pub fn search(&self, query_vec: &[f32], depth: usize) -> Vec<Hit> {
        top_k(self.score_all(query_vec), depth, &self.id_rank)
    }

    /// [`DenseIndex::search`] of every query, in order, the same hits bit for bit: queries are
    /// scored in blocks of `QUERY_BLOCK` per pass over the matrix (each score is the same
    /// `dot` of the same two vectors), blocks spread over rayon's pool.
    /// Queries held by a table of [`DenseIndex::share_scores`] are gathered from it instead.
    pub fn search_many(&self, query_vecs: &[Vec<f32>], depth: usize) -> Vec<Vec<Hit>> {
        use rayon::prelude::*;
        if let Some(hits) = self.search_shared(query_vecs, depth) {
            return hits;
        }
        query_vecs
            .par_chunks(QUERY_BLOCK)
            .flat_map_iter(|block| {
                self.score_block(block)
                    .into_iter()
                    .map(|hits| top_k(hits, depth, &self.id_rank))
            })
            .collect()
    }

    /// [`DenseIndex::score_all`] of each query of `block`, reading each row once.
    fn score_block(&self, block: &[Vec<f32>]) -> Vec<Vec<Hit>> {
        let qs: Vec<Vec<f32>> = block
            .iter()
            .map(|v| {
                assert_eq!(v.len(), self.dim, "query vector has the wrong dimension");
                normalized(v)
            })
            .collect();
        let mut out: Vec<Vec<Hit>> = qs
            .iter()
            .map(|_| Vec::with_capacity(self.doc_ids.len()))
            .collect();
        let mut best: Vec<(f32, usize)> = vec![(0.0, 0); qs.len()];
        for doc in 0..self.doc_ids.len() {
            let (start, end) = (self.doc_rows[doc], self.doc_rows[doc + 1]);
            if start == end {
                continue;
            }
            for r in start..end {
                let row = &self.matrix[r * self.dim..(r + 1) * self.dim];
                for (b, q) in best.iter_mut().zip(&qs) {
                    let s = dot(q, row);
                    if r == start || s > b.0 {
                        *b = (s, r - start);
                    }
                }
            }
            for (hits, &(score, section)) in out.iter_mut().zip(&best) {
                hits.push(Hit {
                    doc,
                    score,
                    section,
                });
            }
        }
        out
    }

    /// The previous search, kept as the reference the property test and the criterion bench
    /// compare [`DenseIndex::search`] with: the total order with string ids.
    #[doc(hidden)]
    pub fn search_by_string_ids(&self, query_vec: &[f32], depth: usize) -> Vec<Hit> {
        let mut hits = self.score_all(query_vec);
        let id = |d: usize| self.doc_ids[d].as_str();
        if depth < hits.len() {
            if depth == 0 {
                return Vec::new();
            }
            hits.select_nth_unstable_by(depth - 1, |a, b| {
                cmp_hits(a.score, id(a.doc), b.score, id(b.doc))
            });
            hits.truncate(depth);
        }
        sort_hits(&mut hits, id);
        hits
    }
}

/// Dot product, accumulated in eight lanes (a fixed order: the same bits on every run).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `v / |v|` (a zero vector stays zero).
pub(crate) fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter().map(|x| x / norm).collect()
    } else {
        v.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::testing::HashEmbedder;
    use proptest::prelude::*;

    fn index(docs: &[(&str, &[&str])]) -> (DenseIndex, HashEmbedder) {
        let mut e = HashEmbedder::new(32);
        let cache = EmbeddingCache::in_memory(&e);
        let docs: Vec<(String, Vec<String>)> = docs
            .iter()
            .map(|(id, s)| (id.to_string(), s.iter().map(|x| x.to_string()).collect()))
            .collect();
        let (ix, _) = DenseIndex::from_texts(&docs, &mut e, &cache, &mut |_, _| {}).unwrap();
        (ix, e)
    }

    #[test]
    fn a_document_scores_by_its_best_section() {
        let (ix, e) = index(&[
            (
                "a",
                &["payment capture idempotency", "unrelated words here"],
            ),
            (
                "b",
                &["nothing in common", "capture idempotency keys payment"],
            ),
            ("c", &["weather report"]),
        ]);
        let q = e.vector("idempotency keys payment capture");
        let hits = ix.search(&q, 3);
        assert_eq!(hits[0].doc, 1);
        assert_eq!(hits[0].section, 1);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert_eq!(hits[1].doc, 0);
        assert_eq!(hits[1].section, 0);
        assert_eq!(ix.search(&q, 1).len(), 1);
        assert!(ix.search(&q, 0).is_empty());
    }

    #[test]
    fn documents_without_sections_are_never_returned() {
        let (ix, e) = index(&[("a", &[]), ("b", &["x"])]);
        let hits = ix.search(&e.vector("x"), 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc, 1);
    }

    proptest! {
        /// Top-k equals the prefix of a plain full sort of best-section scores.
        #[test]
        fn top_k_matches_a_naive_full_sort(
            docs in proptest::collection::vec(proptest::collection::vec("[a-e]{1,2}( [a-e]{1,2}){0,3}", 0..4), 1..25),
            query in "[a-e]{1,2}( [a-e]{1,2}){0,3}",
            depth in 0usize..30,
        ) {
            let named: Vec<(String, Vec<String>)> = docs
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("d{i:02}"), s.clone()))
                .collect();
            let mut e = HashEmbedder::new(8);
            let cache = EmbeddingCache::in_memory(&e);
            let (ix, _) = DenseIndex::from_texts(&named, &mut e, &cache, &mut |_, _| {}).unwrap();
            let q = e.vector(&query);
            let got = ix.search(&q, depth);

            let mut naive: Vec<Hit> = Vec::new();
            for (d, (_, sections)) in named.iter().enumerate() {
                let mut best: Option<Hit> = None;
                for s in 0..sections.len() {
                    let score = dot(&normalized(&q), ix.vector(d, s));
                    if best.as_ref().is_none_or(|b| score > b.score) {
                        best = Some(Hit { doc: d, score, section: s });
                    }
                }
                naive.extend(best);
            }
            naive.sort_by(|a, b| cmp_hits(a.score, &named[a.doc].0, b.score, &named[b.doc].0));
            naive.truncate(depth);
            prop_assert_eq!(&got, &naive);
            prop_assert_eq!(&ix.search_by_string_ids(&q, depth), &naive);
            // Several queries in one block (and over a block's edge) give each query's hits.
            let qs: Vec<Vec<f32>> = (0..QUERY_BLOCK + 3)
                .map(|i| if i % 3 == 0 { q.clone() } else { e.vector(&format!("{query} {i}")) })
                .collect();
            let many = ix.search_many(&qs, depth);
            prop_assert_eq!(many.len(), qs.len());
            for (v, hits) in qs.iter().zip(&many) {
                prop_assert_eq!(hits, &ix.search_by_string_ids(v, depth));
            }
            prop_assert_eq!(&many[0], &naive);
        }
    }
}
