//! The ColBERT reranker's token-vector cache: a second scorer over the same cache directory
//! gives the same scores bit for bit without creating an ONNX session or encoding a text, and a
//! new query over cached passages encodes that query only. Also the scores of the models.md
//! Berlin example against the values the Python probe of notes/issue26.md §1.6 printed for the
//! 384-d states (28.081 / 26.838 / 24.829, onnxruntime 1.32.0), within 1e-3.
//! Fetches the model on first use.

use ranklab_engine::models;
use ranklab_engine::rerank::{ColbertReranker, CrossEncoder};

const QUERY: &str = "How many people live in Berlin?";
const PASSAGES: [&str; 3] = [
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany.",
    "New York City is famous for the Metropolitan Museum of Art.",
];

#[test]
fn a_warm_token_cache_scores_the_same_bits_without_the_model() {
    let dir = models::ensure_model("answerai-colbert-small-v1").unwrap_or_else(|e| panic!("{e}"));
    let tmp = tempfile::tempdir().unwrap();

    let cold_scores = {
        let mut cold = ColbertReranker::load(&dir, Some(1))
            .unwrap()
            .with_token_cache(tmp.path())
            .unwrap();
        let scores = cold.score(QUERY, &PASSAGES).unwrap();
        assert_eq!(cold.encoded(), 4, "one query and three passages encoded");
        assert!(cold.sessions_loaded());
        let st = cold.token_stats().unwrap();
        assert_eq!((st.hits, st.misses), (0, 4));
        scores
    }; // dropped: the cache file is written

    for (got, want) in cold_scores.iter().zip([28.081f32, 26.838, 24.829]) {
        assert!((got - want).abs() < 1e-3, "{cold_scores:?}");
    }

    let mut warm = ColbertReranker::load(&dir, Some(1))
        .unwrap()
        .with_token_cache(tmp.path())
        .unwrap();
    let warm_scores = warm.score(QUERY, &PASSAGES).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&warm_scores), bits(&cold_scores));
    assert_eq!(warm.encoded(), 0);
    assert!(!warm.sessions_loaded(), "no session for cached texts");
    let st = warm.token_stats().unwrap();
    assert_eq!((st.hits, st.misses), (4, 0));

    warm.score("What is the capital of Germany?", &PASSAGES)
        .unwrap();
    assert_eq!(warm.encoded(), 1, "only the new query is encoded");
}
