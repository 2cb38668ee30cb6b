//! Scratch: writes plots and the section for a visual check (deleted before hand-off).
use std::path::{Path, PathBuf};
use ranklab::replay::{replay, Engine};
use ranklab::report::{plots, stats_section, table, MeasureSet};
use ranklab::suite::{Experiments, Suite};

#[test]
fn scratch() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ex_path = Path::new("/tmp/scratch-ex.yaml");
    std::fs::write(ex_path, "experiment: bm25-params\nbaseline: anserini\nconfigurations:\n  - name: anserini\n    retriever: bm25\n  - name: robertson-k1.2-b0.75\n    retriever: bm25\n    bm25: { k1: 1.2, b: 0.75 }\n  - name: no-length-norm\n    retriever: bm25\n    bm25: { k1: 2.0, b: 0.0 }\n  - name: k1-0.1\n    retriever: bm25\n    bm25: { k1: 0.1, b: 0.4 }\n").unwrap();
    let suite = Suite::load(&root.join("tasks/docir/suite.yaml")).unwrap();
    let ex = Experiments::load(ex_path).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let engine = Engine::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let set = MeasureSet::Suite;
    let s = stats_section::section(&corpus, &suite, &ex, &r, &set).unwrap();
    let mut m = ranklab::report::metrics_table(&corpus, &suite, &ex, &r, &set).unwrap();
    for c in s.columns { m.with_column(c).unwrap(); }
    println!("{}\n{}\n\n{}\n", table::markdown(&m).unwrap(), s.reading, s.method);
    println!("{}", table::markdown(&s.table).unwrap());
    let p = plots::render(&corpus, &suite, &ex, &r, &set, "bm25-params").unwrap();
    std::fs::create_dir_all("/tmp/plots").unwrap();
    for (f, b) in &p.files { std::fs::write(Path::new("/tmp/plots").join(f), b).unwrap(); }
    println!("{}", p.markdown);
}

#[test]
fn scratch_scifact() {
    use std::collections::BTreeMap;
    use ranklab::suite::{Configuration, Retriever, Task, Wiring};
    use ranklab_engine::corpus::beir;
    let dir = Path::new("/work/shared/data/scifact");
    let coll = beir::load_collection(dir, "test").unwrap();
    let mut expected: BTreeMap<&str, BTreeMap<String, i32>> = BTreeMap::new();
    for j in &coll.qrels { expected.entry(j.query.as_str()).or_default().insert(j.doc.clone(), j.grade); }
    let tasks: Vec<Task> = coll.queries.iter().map(|q| Task { id: q.id.clone(), query: q.text.clone(), expected: expected.get(q.id.as_str()).cloned().unwrap_or_default(), k: 10, note: None, line: 0 }).collect();
    let suite = Suite { name: "scifact".into(), description: String::new(), path: dir.join("qrels/test.tsv"), corpus_path: dir.join("corpus.jsonl"), k: 10, tasks };
    let base = Configuration { name: "bm25".into(), retriever: Retriever::Bm25, embedder: None, bm25: None, rrf_k: None, depth: Some(100), rerank: None, wiring: Wiring::None, practice: None };
    let dense = Configuration { name: "dense".into(), retriever: Retriever::Dense, ..base.clone() };
    let ex = Experiments { experiment: "scifact".into(), baseline: Some("bm25".into()), description: None, configurations: vec![base, dense], path: dir.to_path_buf() };
    let engine = Engine::build(&coll.corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let set = MeasureSet::Fixed(ranklab::cmd::beir::measures());
    let t = std::time::Instant::now();
    let s = stats_section::section(&coll.corpus, &suite, &ex, &r, &set).unwrap();
    eprintln!("section {:?}", t.elapsed());
    let mut m = ranklab::report::metrics_table(&coll.corpus, &suite, &ex, &r, &set).unwrap();
    for c in s.columns { m.with_column(c).unwrap(); }
    println!("{}\n{}\n\n{}\n", table::markdown(&m).unwrap(), s.reading, s.method);
    let t = std::time::Instant::now();
    let p = plots::render(&coll.corpus, &suite, &ex, &r, &set, "scifact").unwrap();
    eprintln!("plots {:?}", t.elapsed());
    for (f, b) in &p.files { std::fs::write(Path::new("/tmp/plots").join(f), b).unwrap(); }
}
