use std::time::Instant;
use ranklab_engine::dense::{Embedder, EmbedderOptions, FastembedEmbedder};
use ranklab_engine::models;

fn texts() -> Vec<String> {
    let base = ["The cat sits on the mat.", "A kitten is resting on a rug.", "Quarterly revenue grew by ten percent.",
        "Implement idempotency keys on the payment capture endpoint so that retries never double charge a customer.",
        "Berlin is the capital of Germany.", "We migrated off GCP in July after the after-action report."];
    let mut out = Vec::new();
    for i in 0..200 { let b = base[i % base.len()]; out.push(format!("{b} variant {i} {}", "lorem ipsum dolor ".repeat(i % 9))); }
    out
}

#[test]
fn explore() {
    let dir = models::ensure_model("bge-small-en-v1.5").unwrap();
    let t = texts();
    let refs: Vec<&str> = t.iter().map(|s| s.as_str()).collect();
    for threads in [Some(1), Some(2)] {
        let mut e = FastembedEmbedder::load(&dir, &EmbedderOptions { max_length: None, threads }).unwrap();
        let start = Instant::now();
        let b1 = e.embed(&refs).unwrap();
        let el = start.elapsed().as_secs_f64();
        eprintln!("threads {threads:?} batch1: {:.1}/s", refs.len() as f64 / el);
        for bs in [8usize, 32, 200] {
            let start = Instant::now();
            let bb = e.inner().embed(&refs, Some(bs)).unwrap();
            let el = start.elapsed().as_secs_f64();
            let same = b1.iter().zip(&bb).filter(|(a, b)| a == b).count();
            let mincos = b1.iter().zip(&bb).map(|(a, b)| a.iter().zip(b.iter()).map(|(x, y)| x * y).sum::<f32>()).fold(1f32, f32::min);
            eprintln!("threads {threads:?} batch{bs}: {:.1}/s identical {same}/{} mincos {mincos}", refs.len() as f64 / el, refs.len());
        }
        // equal token length bucket: same text repeated with different single word
        let eq: Vec<String> = (0..16).map(|i| format!("The {} sits on the mat.", ["cat","dog","cow","pig","hen","fox","owl","bee","ant","elk","yak","emu","ram","bat","rat","ape"][i])).collect();
        let eqr: Vec<&str> = eq.iter().map(|s| s.as_str()).collect();
        let lens: Vec<usize> = eqr.iter().map(|s| e.inner().tokenizer.encode(*s, true).unwrap().len()).collect();
        let alone = e.embed(&eqr).unwrap();
        let batched = e.inner().embed(&eqr, Some(16)).unwrap();
        let same = alone.iter().zip(&batched).filter(|(a, b)| a == b).count();
        eprintln!("equal-length bucket lens {lens:?}: identical {same}/16");
    }
    // thread-count independence
    let mut e1 = FastembedEmbedder::load(&dir, &EmbedderOptions { max_length: None, threads: Some(1) }).unwrap();
    let mut e2 = FastembedEmbedder::load(&dir, &EmbedderOptions { max_length: None, threads: Some(2) }).unwrap();
    let a = e1.embed(&refs[..50]).unwrap();
    let b = e2.embed(&refs[..50]).unwrap();
    eprintln!("threads1 vs threads2 identical {}/50", a.iter().zip(&b).filter(|(x, y)| x == y).count());
}
