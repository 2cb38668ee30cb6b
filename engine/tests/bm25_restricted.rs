//! Property: an index restricted to part of its corpus (`LexicalIndex::restricted`, what each
//! smaller size of a corpus-size curve searches) finds what an index built from that part
//! finds: the same documents, in the same order, with the same scores to the bit and the same
//! best sections, for any BM25 parameters, either analyzer, and a restriction of a
//! restriction.
//!
//! The oracle is tantivy's own index of the part (`LexicalIndex::build_with` over the subset
//! corpus): its document frequencies, section count and token total come from tantivy's
//! statistics of that index, not from the restricted index's counting over the larger
//! postings. Section lengths vary (1–12 words from a vocabulary of different word lengths,
//! repeats), so a wrong average length or document frequency changes scores.

use std::path::Path;

use proptest::prelude::*;
use ranklab_engine::corpus::markdown::parse_record;
use ranklab_engine::corpus::Corpus;
use ranklab_engine::lexical::{Analyzer, Bm25Params, LexicalIndex};

const WORDS: [&str; 9] = [
    "ledger",
    "webhook",
    "refund",
    "retry",
    "payout",
    "secret",
    "idempotency",
    "key",
    "settles",
];

fn corpus(docs: &[Vec<Vec<usize>>]) -> Corpus {
    let records = docs
        .iter()
        .enumerate()
        .map(|(i, sections)| {
            let mut body = String::new();
            for (s, words) in sections.iter().enumerate() {
                body.push_str(&format!("## S{s}\n"));
                for &w in words {
                    body.push_str(WORDS[w]);
                    body.push(' ');
                }
                body.push('\n');
            }
            let id = format!("d{i:02}");
            let text = format!("---\nid: {id}\ntitle: t\n---\n{body}");
            parse_record(Path::new(&format!("{id}.md")), text.as_bytes()).expect("record")
        })
        .collect();
    Corpus::new("prop", records).expect("corpus")
}

/// (id, score bits, section) of each hit.
fn hits(
    idx: &LexicalIndex,
    c: &Corpus,
    q: &str,
    depth: usize,
    p: Bm25Params,
) -> Vec<(String, u32, usize)> {
    idx.search(c, q, depth, p)
        .unwrap()
        .into_iter()
        .map(|h| (c.id(h.doc).to_string(), h.score.to_bits(), h.section))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn restricted_index_searches_as_the_subsets_own_index(
        docs in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(0usize..WORDS.len(), 1..12), 1..4),
            2..24,
        ),
        keep in prop::collection::vec(0u8..3, 24),
        query in prop::collection::vec(0usize..WORDS.len(), 1..5),
        depth in 1usize..30,
        k1 in 0.1f32..2.0,
        b in 0.0f32..1.0,
        lucene in any::<bool>(),
    ) {
        let analyzer = if lucene { Analyzer::Lucene } else { Analyzer::English };
        let p = Bm25Params { k1, b, analyzer };
        let full = corpus(&docs);
        // Two nested parts: keep[i] >= 1 in the larger, keep[i] == 2 in the smaller (the
        // first document always kept, so neither is empty).
        let larger = full.subset(|i| i == 0 || keep[i] >= 1).unwrap();
        let smaller = larger
            .subset(|i| i == 0 || keep[full.index_of(larger.id(i)).unwrap()] == 2)
            .unwrap();
        let q: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
        let q = q.join(" ");
        let idx = LexicalIndex::build_with(&full, analyzer).unwrap();
        let on_larger = idx.restricted(&full, &larger).expect("cut from the same corpus");
        let on_smaller = on_larger.restricted(&larger, &smaller).expect("cut from the same corpus");
        // The smaller searched first: the postings it walks are kept for the larger (which
        // shares them), so a kept list cut to the smaller's sections would lose the larger's.
        for (part, restricted) in [(&smaller, &on_smaller), (&larger, &on_larger)] {
            let own = LexicalIndex::build_with(part, analyzer).unwrap();
            prop_assert_eq!(restricted.num_sections(), own.num_sections());
            prop_assert_eq!(hits(restricted, part, &q, depth, p), hits(&own, part, &q, depth, p));
        }
    }
}

/// A corpus with the same documents that was not cut from the index's corpus is refused (its
/// documents cannot be told to be the same ones without comparing every text), as is a
/// restriction to a document the index does not search.
#[test]
fn restriction_refuses_documents_it_cannot_vouch_for() {
    let docs = vec![vec![vec![0, 1]], vec![vec![2]], vec![vec![3, 3, 4]]];
    let full = corpus(&docs);
    let idx = LexicalIndex::build(&full).unwrap();
    let same_docs = corpus(&docs);
    assert!(idx.restricted(&full, &same_docs).is_none());
    let part = full.subset(|i| i != 1).unwrap();
    let on_part = idx
        .restricted(&full, &part)
        .expect("cut from the same corpus");
    assert!(on_part.restricted(&part, &full).is_none());
    assert!(idx.restricted(&full, &full).is_some());
}
