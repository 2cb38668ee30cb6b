//! The ColBERT reranker's token-vector cache: a second scorer over the same cache directory
//! gives the same scores bit for bit without creating an ONNX session or encoding a text, and a
//! new query over cached passages encodes that query only. Also the scores of the models.md
//! Berlin example against Python onnxruntime 1.32.0 on the same model file
//! (`tests/colbert/reference.py`, the 384-d states), within 1e-3. The model is int8 and ONNX
//! Runtime picks its u8s8 kernel by CPU: the AVX2 kernel's 16-bit pair sums saturate, the VNNI
//! kernels' (AVX-512 VNNI, AVX-VNNI) do not, and the scores differ by up to 0.03. So there are two
//! probes, and the test takes the one of the kernel this CPU runs:
//! - VNNI: 28.081 / 26.838 / 24.829 (an AVX-512 VNNI machine, issue 26's probe);
//! - AVX2: 28.066868 / 26.810215 / 24.818962 (an AMD EPYC with AVX2 and no AVX-512, reference.py
//!   on QUERY with each of PASSAGES, 2026-12-04).
//!
//! Fetches the model on first use.

use ranklab_engine::models;
use ranklab_engine::rerank::{ColbertReranker, CrossEncoder};

const QUERY: &str = "How many people live in Berlin?";
const PASSAGES: [&str; 3] = [
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany.",
    "New York City is famous for the Metropolitan Museum of Art.",
];

/// The Python probe's scores for the u8s8 kernel ONNX Runtime runs on this CPU (see the top).
fn python_probe() -> [f32; 3] {
    match models::Int8Kernel::detect() {
        models::Int8Kernel::Vnni => [28.081, 26.838, 24.829],
        models::Int8Kernel::Avx2 => [28.066_868, 26.810_215, 24.818_962],
    }
}

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

    for (got, want) in cold_scores.iter().zip(python_probe()) {
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
