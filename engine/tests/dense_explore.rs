use std::collections::HashMap;
use std::time::Instant;
use ranklab_engine::corpus::beir;
use ranklab_engine::dense::{embed_query, DenseIndex, EmbeddingCache, FastembedEmbedder, Embedder};
use ranklab_engine::models::ModelStore;

fn ndcg10(ranked: &[String], rel: &HashMap<String, i32>) -> f64 {
    let dcg: f64 = ranked.iter().take(10).enumerate().map(|(i, d)| *rel.get(d).unwrap_or(&0) as f64 / ((i + 2) as f64).log2()).sum();
    let mut ideal: Vec<i32> = rel.values().copied().filter(|g| *g > 0).collect();
    ideal.sort_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, g)| *g as f64 / ((i + 2) as f64).log2()).sum();
    if idcg == 0.0 { 0.0 } else { dcg / idcg }
}

#[test]
fn explore() {
    let c = beir::load_collection(std::path::Path::new("/work/shared/data/scifact"), "test").unwrap();
    let mut e = FastembedEmbedder::open("bge-small-en-v1.5").unwrap();
    let store = ModelStore::open_default().unwrap();
    let cache = EmbeddingCache::open(&store.embeddings_dir(), &e).unwrap();
    let t = Instant::now();
    let (ix, stats) = DenseIndex::build(&c.corpus, &mut e, &cache).unwrap();
    let el = t.elapsed().as_secs_f64();
    eprintln!("build: {} sections in {el:.1}s ({:.1}/s computed) stats {stats}", ix.sections(), stats.misses as f64 / el);
    let mut qrels: HashMap<String, HashMap<String, i32>> = HashMap::new();
    for j in &c.qrels { qrels.entry(j.query.clone()).or_default().insert(j.doc.clone(), j.grade); }
    for instr in [true, false] {
        let mut total = 0.0;
        let t = Instant::now();
        let mut search_time = 0.0;
        for q in &c.queries {
            let v = if instr { embed_query(&mut e, &cache, &q.text).unwrap() } else { e.embed(&[&q.text]).unwrap().pop().unwrap() };
            let ts = Instant::now();
            let hits = ix.search(&v, 100);
            search_time += ts.elapsed().as_secs_f64();
            let ids: Vec<String> = hits.iter().map(|h| c.corpus.docs[h.doc].id.clone()).collect();
            total += ndcg10(&ids, &qrels[&q.id]);
        }
        eprintln!("instruction {instr}: nDCG@10 {:.4} over {} queries; {:.1}s total, search {:.2} ms/query", total / c.queries.len() as f64, c.queries.len(), t.elapsed().as_secs_f64(), search_time * 1000.0 / c.queries.len() as f64);
    }
}
