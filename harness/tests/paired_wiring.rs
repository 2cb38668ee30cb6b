//! The paired test of story 2: the GCP exodus query on the brain fixture, through the legacy and
//! the current wiring over the real fusion first stage (BM25 + bge-small, models fetched on
//! first use). Both halves are asserted: the legacy wiring ranks the stale, well-cited how-to
//! above the after-action report that deprecated it; the current wiring flips them.
//!
//! Breaking either wiring fails this test: zeroing the penalties keeps the how-to on top under
//! the current wiring too (checked below with explicit zero weights), and reading the current
//! lifecycle in the legacy path would remove the inversion.

use std::path::Path;

use ranklab::paired::{Outcome, Paired, Verdict};
use ranklab::replay::Engine;
use ranklab_engine::policy::Weights;

fn verdicts(weights: Option<Weights>) -> Vec<Verdict> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks/brain/paired.yaml");
    let (paired, corpus) = Paired::load(&path).expect("paired.yaml loads");
    let engine = Engine::build(&corpus, &[&paired.experiments]).expect("engine builds");
    let v = paired.check(&engine, weights).expect("paired check runs");
    engine.finish().expect("caches written");
    v
}

fn gcp(v: &[Verdict], wiring: &str) -> Verdict {
    v.iter()
        .find(|x| x.id == "gcp-exodus" && x.wiring == wiring)
        .expect("gcp-exodus assertion")
        .clone()
}

#[test]
fn legacy_wiring_ranks_stale_howto_above_aar_and_current_wiring_flips_it() {
    let v = verdicts(None);
    let legacy = gcp(&v, "legacy");
    assert_eq!(
        legacy.actual,
        Outcome::Inverted,
        "legacy must show the bug: {legacy:?}"
    );
    assert!(legacy.below_rank < legacy.above_rank, "{legacy:?}");
    let current = gcp(&v, "current");
    assert_eq!(
        current.actual,
        Outcome::Holds,
        "current must rank the AAR first: {current:?}"
    );
    assert_eq!(current.above_rank, Some(1), "{current:?}");
    // Every assertion of the file meets its expectation under both wirings.
    let failed: Vec<_> = v.iter().filter(|x| !x.pass()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn zeroed_penalties_break_the_current_half() {
    // The same pair with the penalties zeroed: the current wiring loses the lifecycle signal, so
    // the check must report failures (the stale records win again).
    let v = verdicts(Some(Weights::ZERO));
    assert!(
        v.iter().any(|x| x.wiring == "current" && !x.pass()),
        "{v:?}"
    );
}
