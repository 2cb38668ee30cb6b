//! Lexical retrieval: BM25 over sections, on a tantivy inverted index.
//!
//! Analysis (tantivy's chain): simple tokenizer, long tokens removed, lower-casing, Lucene's
//! English stop words (the 33-word list Anserini uses), Snowball English stemming. Each section
//! is indexed as one field holding the document title, the section heading and the section body
//! (for BEIR documents: title and text, Anserini's "flat" indexing).
//!
//! Scoring: tantivy fixes BM25 at k1 = 1.2, b = 0.75; ranklab needs the parameters in the
//! configuration (Anserini's k1 = 0.9, b = 0.4 are the default, the settings the published
//! SciFact figure uses), so the score is computed here from tantivy's postings and field norms
//! with Lucene's formula: `idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))` with
//! `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`, summed over query terms (a repeated query term
//! counts each time). Every section containing at least one query term is scored exactly (no
//! pruning). A document's score is the maximum over its sections; the order is the total order of
//! [`crate::ranking`].
//!
//! The index is built once per corpus, in memory, and reused by every task and configuration;
//! [`LexicalIndex::cached`] keeps the built index of a large corpus in the cache directory
//! (`lexical/cache.rs`) so that a later process loads it instead of indexing again.
//! [`LexicalIndex::restricted`] searches part of the corpus (a corpus cut from it by
//! `Corpus::subset`) as an index of that part would, without building one: each term's
//! document frequency counted among the part's sections, the part's section count and average
//! length from each section's token count.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{DocSet, Index, InvertedIndexReader, Searcher, TantivyDocument, Term, TERMINATED};

use crate::corpus::Corpus;
use crate::ranking::{sort_hits, top_k_scored, Hit};
use crate::Result;

mod cache;
mod lucene;
pub use cache::{IndexCache, CACHED_MIN_SECTIONS};
pub use lucene::{lucene_norm, lucene_terms, porter_stem, Analyzer};

/// Lucene's English stop words (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), as Anserini uses.
pub const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

const ANALYZER: &str = "ranklab_en";

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalization.
    pub b: f32,
    /// The analyzer of the index searched (default: tantivy's English chain).
    #[serde(default)]
    pub analyzer: Analyzer,
}

impl Default for Bm25Params {
    /// Anserini's defaults: k1 = 0.9, b = 0.4.
    fn default() -> Self {
        Bm25Params {
            k1: 0.9,
            b: 0.4,
            analyzer: Analyzer::English,
        }
    }
}

/// The English analyzer used for sections and queries.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|s| s.to_string()),
        ))
        .filter(Stemmer::new(tantivy::tokenizer::Language::English))
        .build()
}

/// A BM25 index over a corpus's sections.
pub struct LexicalIndex {
    /// The one searcher over the committed index (its segments never change after the build).
    searcher: Searcher,
    text: tantivy::schema::Field,
    /// Global section number -> (document, section within document). In a restriction
    /// ([`LexicalIndex::restricted`]) the document is the restricted corpus's, and a section
    /// outside it maps to `(usize::MAX, 0)`.
    sections: Vec<(usize, usize)>,
    /// Per document of the corpus searched, the global number of its first section (a
    /// document's sections are numbered consecutively).
    doc_first: Vec<u32>,
    /// In a restriction: which sections (by global number) it searches. None: every one.
    member: Option<Vec<bool>>,
    /// Each section's number of tokens (by global number), counted from the postings on the
    /// first restriction and shared by every index restricted from this one; None when they do
    /// not add up to tantivy's own totals (then nothing is restricted).
    tokens: Arc<OnceLock<Option<Vec<u32>>>>,
    /// Each term's postings as a restriction walked them (every section's, in walk order), kept
    /// for the other restrictions of the same index: a corpus-size curve's smaller sizes
    /// decode each query term once, not once per size. Shared by every index restricted from
    /// this one; an unrestricted search never reads it.
    walked: Arc<std::sync::Mutex<HashMap<String, Arc<[Posting]>>>>,
    analyzer: Analyzer,
    /// Per segment (in the searcher's order): tantivy doc id -> global section number.
    segment_sections: Vec<Vec<u32>>,
    /// Document ordinal -> its position among the corpus's ids in byte order, so the total
    /// order's id tie-break is an integer comparison.
    id_rank: Vec<u32>,
    /// Its inverse: rank -> document ordinal.
    by_rank: Vec<u32>,
    num_docs: u64,
    avg_len: f32,
}

/// One posting as [`walk`] gives it: (global section number, term frequency, field norm).
type Posting = (u32, f32, f32);

/// Scores of the sections one query matches: arrays indexed by the global section number, and
/// the list of matched sections (in first-match order).
struct SectionScores {
    score: Vec<f32>,
    matched: Vec<u32>,
}

impl LexicalIndex {
    /// Indexes every section of `corpus` with the English analyzer.
    pub fn build(corpus: &Corpus) -> Result<Self> {
        Self::build_with(corpus, Analyzer::English)
    }

    /// Indexes every section of `corpus` with `analyzer` (queries are analyzed the same way).
    pub fn build_with(corpus: &Corpus, analyzer: Analyzer) -> Result<Self> {
        let index = Self::build_index(corpus, analyzer)?;
        Self::from_index(corpus, &index, analyzer)
    }

    /// The schema: one text field (the section's title, heading and body) and the section's
    /// global number as a fast field.
    fn schema() -> Schema {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs)
            .set_fieldnorms(true);
        schema.add_text_field(
            "text",
            TextOptions::default().set_indexing_options(indexing),
        );
        schema.add_u64_field("sec", INDEXED | FAST);
        schema.build()
    }

    /// The committed tantivy index of every section of `corpus`, in memory.
    fn build_index(corpus: &Corpus, analyzer: Analyzer) -> Result<Index> {
        let schema = Self::schema();
        let text = schema.get_field("text")?;
        let sec = schema.get_field("sec")?;
        let index = Index::create(
            tantivy::directory::RamDirectory::create(),
            schema,
            tantivy::IndexSettings::default(),
        )?;
        index
            .tokenizers()
            .register(ANALYZER, analyzer.text_analyzer());
        let mut writer = index.writer_with_num_threads(1, 100_000_000)?;
        let mut n = 0u64;
        for doc in &corpus.docs {
            for s in 0..doc.sections.len() {
                let mut td = TantivyDocument::default();
                td.add_text(text, doc.section_text(s));
                td.add_u64(sec, n);
                writer.add_document(td)?;
                n += 1;
            }
        }
        writer.commit()?;
        Ok(index)
    }

    /// The searchable index over `index` (built from `corpus` with `analyzer`, here or in an
    /// earlier process). Checks that it holds every section of `corpus` exactly once.
    fn from_index(corpus: &Corpus, index: &Index, analyzer: Analyzer) -> Result<Self> {
        let text = index.schema().get_field("text")?;
        let sections: Vec<(usize, usize)> = corpus
            .docs
            .iter()
            .enumerate()
            .flat_map(|(d, doc)| (0..doc.sections.len()).map(move |s| (d, s)))
            .collect();
        let broken = |why: String| crate::Error::Index(tantivy::TantivyError::InvalidArgument(why));
        let reader = index
            .reader_builder()
            .reload_policy(tantivy::ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        let mut tokens = 0u64;
        let mut segment_sections = Vec::new();
        let mut seen = vec![false; sections.len()];
        for seg in searcher.segment_readers() {
            tokens += seg.inverted_index(text)?.total_num_tokens();
            let col = seg.fast_fields().u64("sec")?;
            let mut map = Vec::with_capacity(seg.max_doc() as usize);
            for d in 0..seg.max_doc() {
                let g = col
                    .first(d)
                    .ok_or_else(|| broken(format!("tantivy doc {d} has no section number")))?;
                match seen.get_mut(g as usize) {
                    Some(s @ false) => *s = true,
                    _ => {
                        return Err(broken(format!(
                            "section number {g} repeated or beyond the corpus's {} sections",
                            sections.len()
                        )))
                    }
                }
                map.push(g as u32);
            }
            segment_sections.push(map);
        }
        let num_docs = searcher.num_docs();
        if num_docs != sections.len() as u64 || seen.iter().any(|s| !s) {
            return Err(broken(format!(
                "{num_docs} sections indexed, the corpus has {}",
                sections.len()
            )));
        }
        let avg_len = if num_docs == 0 {
            0.0
        } else {
            tokens as f32 / num_docs as f32
        };
        let mut doc_first = Vec::with_capacity(corpus.docs.len());
        let mut first = 0u32;
        for doc in &corpus.docs {
            doc_first.push(first);
            first += doc.sections.len() as u32;
        }
        Ok(LexicalIndex {
            searcher,
            text,
            sections,
            doc_first,
            member: None,
            tokens: Arc::default(),
            walked: Arc::default(),
            analyzer,
            segment_sections,
            id_rank: corpus.id_rank().to_vec(),
            by_rank: crate::ranking::by_rank(corpus.id_rank()),
            num_docs,
            avg_len,
        })
    }

    /// The terms of `query` under this index's analyzer, in order, repeats kept.
    pub fn terms(&self, query: &str) -> Vec<String> {
        match self.analyzer {
            Analyzer::English => Self::query_terms(query),
            Analyzer::Lucene => lucene_terms(query),
        }
    }

    /// The analyzer this index was built with.
    pub fn analyzer(&self) -> Analyzer {
        self.analyzer
    }

    /// The analyzed terms of `query` under the English analyzer, in order, repeats kept.
    pub fn query_terms(query: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut stream = a.token_stream(query);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    /// Accumulates the BM25 score of every section matching `query` into an array indexed by
    /// the global section number. Terms are visited in byte order, so each section's sum is
    /// added up in one fixed order (same bits on every run). A restriction counts each term's
    /// document frequency among its own sections, and scores only those.
    fn accumulate(&self, query: &str, params: Bm25Params) -> Result<SectionScores> {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for t in self.terms(query) {
            *counts.entry(t).or_default() += 1;
        }
        let n = self.num_docs as f32;
        let mut score = vec![0f32; self.sections.len()];
        let mut seen = vec![false; self.sections.len()];
        let mut matched = Vec::new();
        let segments = self.segments()?;
        let mut add = |global: usize, tf: f32, dl: f32, weight: f32| {
            let norm = params.k1 * (1.0 - params.b + params.b * dl / self.avg_len);
            if !seen[global] {
                seen[global] = true;
                matched.push(global as u32);
            }
            score[global] += weight * tf / (tf + norm);
        };
        let idf = |df: u32| (1.0 + (n - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
        // A restriction's postings of one term (global section, tf, field norm), its own.
        let mut own: Vec<(usize, f32, f32)> = Vec::new();
        for (t, qtf) in &counts {
            let term = Term::from_field_text(self.text, t);
            match &self.member {
                None => {
                    let df = self.searcher.doc_freq(&term)? as u32;
                    if df == 0 {
                        continue;
                    }
                    let weight = *qtf as f32 * idf(df);
                    walk(&segments, &term, |global, tf, dl| {
                        add(global, tf, dl, weight)
                    })?;
                }
                Some(member) => {
                    own.clear();
                    let known = self.walked.lock().expect("not poisoned").get(t).cloned();
                    let postings = match known {
                        Some(p) => p,
                        None => {
                            let mut all: Vec<Posting> = Vec::new();
                            walk(&segments, &term, |global, tf, dl| {
                                all.push((global as u32, tf, dl))
                            })?;
                            let all: Arc<[Posting]> = all.into();
                            let mut walked = self.walked.lock().expect("not poisoned");
                            Arc::clone(walked.entry(t.clone()).or_insert(all))
                        }
                    };
                    own.extend(
                        postings
                            .iter()
                            .filter(|p| member[p.0 as usize])
                            .map(|&(g, tf, dl)| (g as usize, tf, dl)),
                    );
                    if own.is_empty() {
                        continue;
                    }
                    let weight = *qtf as f32 * idf(own.len() as u32);
                    for &(global, tf, dl) in &own {
                        add(global, tf, dl, weight);
                    }
                }
            }
        }
        Ok(SectionScores { score, matched })
    }

    /// Each segment's postings and field norms of the text field, with its doc id -> global
    /// section number map, in the searcher's order.
    fn segments(&self) -> Result<Vec<Segment<'_>>> {
        let mut out = Vec::with_capacity(self.segment_sections.len());
        for (seg, map) in self
            .searcher
            .segment_readers()
            .iter()
            .zip(&self.segment_sections)
        {
            out.push((
                seg.inverted_index(self.text)?,
                seg.get_fieldnorms_reader(self.text)?,
                map.as_slice(),
            ));
        }
        Ok(out)
    }

    /// This index searching only `subset`'s documents, as an index built from `subset` would,
    /// bit for bit: each term's document frequency, the number of sections and their average
    /// length are `subset`'s, counted from this index's postings (each section's number of
    /// tokens is the sum of its terms' frequencies, checked against tantivy's totals), and the
    /// hits name `subset`'s documents. No index is built or loaded: what a corpus-size curve
    /// does at each smaller size. `corpus` is the corpus this index searches. None when a
    /// document of `subset` is not one of `corpus`'s ([`Corpus::same_document`]: both cut from
    /// one corpus by [`Corpus::subset`]) or not searched here, or when the counts do not add up.
    pub fn restricted(&self, corpus: &Corpus, subset: &Corpus) -> Option<LexicalIndex> {
        let tokens = self.section_tokens()?;
        let mut member = vec![false; self.sections.len()];
        let mut sections = vec![(usize::MAX, 0); self.sections.len()];
        let mut doc_first = Vec::with_capacity(subset.len());
        let (mut n, mut total) = (0u64, 0u64);
        for (d, doc) in subset.docs.iter().enumerate() {
            let here = corpus.index_of(&doc.id)?;
            if !subset.same_document(d, corpus, here) {
                return None;
            }
            let first = *self.doc_first.get(here)? as usize;
            for s in 0..doc.sections.len() {
                let g = first + s;
                if self.member.as_ref().is_some_and(|m| !m[g]) || self.sections[g].0 != here {
                    return None;
                }
                member[g] = true;
                sections[g] = (d, s);
                total += u64::from(tokens[g]);
                n += 1;
            }
            doc_first.push(first as u32);
        }
        Some(LexicalIndex {
            searcher: self.searcher.clone(),
            text: self.text,
            sections,
            doc_first,
            member: Some(member),
            tokens: Arc::clone(&self.tokens),
            walked: Arc::clone(&self.walked),
            analyzer: self.analyzer,
            segment_sections: self.segment_sections.clone(),
            id_rank: subset.id_rank().to_vec(),
            by_rank: crate::ranking::by_rank(subset.id_rank()),
            num_docs: n,
            avg_len: if n == 0 { 0.0 } else { total as f32 / n as f32 },
        })
    }

    /// Each section's number of tokens (by global number), counted on first use (see
    /// [`LexicalIndex::restricted`]); None when the counts do not add up.
    pub(crate) fn section_tokens(&self) -> Option<&[u32]> {
        self.tokens.get_or_init(|| self.count_tokens()).as_deref()
    }

    /// Takes `tokens` as each section's number of tokens (a cache file's, see `cache.rs`) after
    /// checking them against tantivy's totals: one count per section, adding up to the field's
    /// tokens in every segment. Why not, otherwise.
    pub(crate) fn set_section_tokens(&self, tokens: Vec<u32>) -> std::result::Result<(), String> {
        if tokens.len() != self.sections.len() {
            return Err(format!(
                "{} section token counts for {} sections",
                tokens.len(),
                self.sections.len()
            ));
        }
        let segments = self.segments().map_err(|e| e.to_string())?;
        for (inv, _, map) in &segments {
            let sum: u64 = map.iter().map(|&g| u64::from(tokens[g as usize])).sum();
            if sum != inv.total_num_tokens() {
                return Err(format!(
                    "the section token counts add up to {sum}, the index holds {} tokens",
                    inv.total_num_tokens()
                ));
            }
        }
        let _ = self.tokens.set(Some(tokens));
        Ok(())
    }

    /// Each section's number of tokens (by global number): the sum of the frequencies of every
    /// term of the text field in it. None unless each segment's sum is tantivy's own count of
    /// the field's tokens (which the average length uses), and a postings list that cannot be
    /// read gives None too.
    fn count_tokens(&self) -> Option<Vec<u32>> {
        let mut tokens = vec![0u32; self.sections.len()];
        for (inv, _, map) in self.segments().ok()? {
            let mut stream = inv.terms().stream().ok()?;
            let mut total = 0u64;
            while stream.advance() {
                let mut postings = inv
                    .read_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqs)
                    .ok()?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let tf = tantivy::postings::Postings::term_freq(&postings);
                    tokens[map[doc as usize] as usize] += tf;
                    total += u64::from(tf);
                    doc = postings.advance();
                }
            }
            if total != inv.total_num_tokens() {
                return None;
            }
        }
        Some(tokens)
    }

    /// BM25 scores of every section matching `query`: (global section number, score), best
    /// first, ties by lower section number.
    pub fn score_sections(&self, query: &str, params: Bm25Params) -> Result<Vec<(usize, f32)>> {
        let s = self.accumulate(query, params)?;
        let mut out: Vec<(usize, f32)> = s
            .matched
            .iter()
            .map(|&g| (g as usize, s.score[g as usize]))
            .collect();
        out.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// The top `depth` documents for `query`, each scored by its best section (ties: the lower
    /// section), in the total order of [`crate::ranking`].
    ///
    /// No full sort: section scores sit in arrays indexed by the section number, each
    /// document's best in arrays indexed by the document ordinal, and [`top_k_scored`] takes the
    /// top `depth` (integer keys, select then sort). The id tie-break compares each document's
    /// rank among the ids in byte order (computed once at build time), which is the same order
    /// as comparing the ids. `corpus` must be the corpus the index was built from.
    pub fn search(
        &self,
        corpus: &Corpus,
        query: &str,
        depth: usize,
        params: Bm25Params,
    ) -> Result<Vec<Hit>> {
        debug_assert_eq!(corpus.docs.len(), self.id_rank.len());
        let s = self.accumulate(query, params)?;
        let mut best: Vec<Option<(f32, usize)>> = vec![None; self.id_rank.len()];
        let mut docs: Vec<usize> = Vec::new();
        for &g in &s.matched {
            let (doc, section) = self.sections[g as usize];
            let score = s.score[g as usize];
            match &mut best[doc] {
                slot @ None => {
                    *slot = Some((score, section));
                    docs.push(doc);
                }
                Some((b, sec)) => {
                    if score > *b || (score == *b && section < *sec) {
                        *b = score;
                        *sec = section;
                    }
                }
            }
        }
        let scored = docs
            .iter()
            .map(|&doc| (doc, best[doc].expect("set when pushed").0));
        Ok(top_k_scored(scored, depth, &self.id_rank, &self.by_rank)
            .into_iter()
            .map(|(doc, score)| Hit {
                doc,
                score,
                section: best[doc].expect("set when pushed").1,
            })
            .collect())
    }

    /// The previous search, kept as the reference the property test and the criterion bench
    /// compare [`LexicalIndex::search`] with: every matching section sorted, every document's
    /// best kept in a hash map, every document sorted by the total order with string ids, then
    /// truncated to `depth`.
    #[doc(hidden)]
    pub fn search_by_full_sort(
        &self,
        corpus: &Corpus,
        query: &str,
        depth: usize,
        params: Bm25Params,
    ) -> Result<Vec<Hit>> {
        let mut best: HashMap<usize, Hit> = HashMap::new();
        for (global, score) in self.score_sections(query, params)? {
            let (doc, section) = self.sections[global];
            let e = best.entry(doc).or_insert(Hit {
                doc,
                score,
                section,
            });
            // Sections arrive best first, so the first seen is the best (ties: lower section).
            if score > e.score {
                *e = Hit {
                    doc,
                    score,
                    section,
                };
            }
        }
        let mut hits: Vec<Hit> = best.into_values().collect();
        sort_hits(&mut hits, |d| corpus.id(d));
        hits.truncate(depth);
        Ok(hits)
    }

    /// Number of indexed sections.
    pub fn num_sections(&self) -> usize {
        self.num_docs as usize
    }
}

/// A segment's postings and field norms of the text field, and its doc id -> global section
/// number map.
type Segment<'a> = (Arc<InvertedIndexReader>, FieldNormReader, &'a [u32]);

/// Calls `f(global section, tf, field norm)` for each posting of `term`, segment by segment.
fn walk(segments: &[Segment<'_>], term: &Term, mut f: impl FnMut(usize, f32, f32)) -> Result<()> {
    for (inv, norms, map) in segments {
        let Some(mut postings) = inv
            .read_postings(term, IndexRecordOption::WithFreqs)
            .map_err(|e| crate::Error::Index(e.into()))?
        else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            let tf = tantivy::postings::Postings::term_freq(&postings) as f32;
            f(map[doc as usize] as usize, tf, norms.fieldnorm(doc) as f32);
            doc = postings.advance();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Document, Section};

    fn doc(id: &str, body: &str) -> Document {
        crate::corpus::markdown::parse_record(
            std::path::Path::new(&format!("{id}.md")),
            format!("---\nid: {id}\ntitle: {id}\n---\n{body}\n").as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn analyzer_stems_lowercases_and_drops_stop_words() {
        assert_eq!(
            LexicalIndex::query_terms("The Retries of Payments"),
            ["retri", "payment"]
        );
    }

    #[test]
    fn best_section_wins_and_order_is_total() {
        let corpus = Corpus::new(
            "t",
            vec![
                doc("a", "## One\nledger ledger entries\n## Two\nwebhook"),
                doc("b", "## One\nwebhook signing secret"),
                doc("c", "## One\nnothing relevant"),
            ],
        )
        .unwrap();
        let idx = LexicalIndex::build(&corpus).unwrap();
        let hits = idx
            .search(&corpus, "ledger", 10, Bm25Params::default())
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!((corpus.id(hits[0].doc), hits[0].section), ("a", 0));
        let hits = idx
            .search(&corpus, "webhook", 10, Bm25Params::default())
            .unwrap();
        let ids: Vec<_> = hits.iter().map(|h| corpus.id(h.doc)).collect();
        assert_eq!(ids.len(), 2);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let _ = Section {
            heading: String::new(),
            body: String::new(),
        };
    }

    #[test]
    fn score_matches_lucene_formula_by_hand() {
        // Two one-section docs; query term in one of them once.
        let corpus = Corpus::new(
            "t",
            vec![doc("x", "alpha beta"), doc("y", "gamma delta epsilon")],
        )
        .unwrap();
        let idx = LexicalIndex::build(&corpus).unwrap();
        let hits = idx
            .search(&corpus, "alpha", 10, Bm25Params::default())
            .unwrap();
        // Section text is "x\nalpha beta" (3 tokens) and "y\ngamma delta epsilon" (4): avgdl 3.5.
        let idf = (1.0f32 + (2.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
        let expected = idf * 1.0 / (1.0 + 0.9 * (1.0 - 0.4 + 0.4 * 3.0 / 3.5));
        assert!(
            (hits[0].score - expected).abs() < 1e-6,
            "{} vs {expected}",
            hits[0].score
        );
    }
}
