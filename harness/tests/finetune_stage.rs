//! A fine-tuned rerank stage end to end (issue 27): trained per fold with the real L-12 on the
//! bad-input fixture's tiny suite, cached and checked on load (a damaged model file is trained
//! again, to the same bytes), left out of found experiments, and bad input refused.

mod common;

use std::path::Path;

/// `tasks/p/experiments-ft.yaml` with BM25 and a fine-tuned L-12 stage (`finetune` the flow
/// mapping's fields).
fn experiments(dir: &Path, finetune: &str) {
    std::fs::write(
        dir.join("tasks/p/experiments-ft.yaml"),
        format!(
            "experiment: ft\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: bm25+ft\n    retriever: bm25\n    rerank: {{ model: ms-marco-MiniLM-L-12-v2, shortlist: 4, finetune: {{ {finetune} }} }}\n"
        ),
    )
    .unwrap();
}

/// `ranklab run tasks/p -x tasks/p/experiments-ft.yaml --reports out` with `cache`.
fn run_ft(dir: &Path, cache: &Path) -> std::process::Output {
    run_ft_with(dir, cache, &[])
}

/// [`run_ft`] with `extra` arguments.
fn run_ft_with(dir: &Path, cache: &Path, extra: &[&str]) -> std::process::Output {
    run_ft_env(dir, cache, "out", extra, &[])
}

/// [`run_ft_with`] writing its reports to `reports`, with `env` set.
fn run_ft_env(
    dir: &Path,
    cache: &Path,
    reports: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["run", "tasks/p", "-x", "tasks/p/experiments-ft.yaml"])
        .args(["--reports", reports])
        .args(extra)
        .current_dir(dir)
        .env("RANKLAB_CACHE", cache)
        .envs(env.iter().copied())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

/// A fold model file's weights: what follows its two header lines (the header also keeps the
/// seconds each epoch took, which another training changes).
fn weights_of(file: &[u8]) -> Vec<u8> {
    file.splitn(3, |&c| c == b'\n').nth(2).unwrap().to_vec()
}

fn finetuned_files(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(cache.join("finetuned"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The bad-input fixture's suite with a 3-fold fine-tuned stage, run once cold: the fixture's
/// copy, its cache and the run's output (which succeeded).
fn trained_cold() -> (tempfile::TempDir, std::path::PathBuf, std::process::Output) {
    let tmp = common::fixture_copy("bad_input");
    let cache = common::cache_with_shared_models(tmp.path());
    experiments(
        tmp.path(),
        "folds: 3, epochs: 1, negatives: 1, seed: 7, batch: 2",
    );
    let o = run_ft(tmp.path(), &cache);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    (tmp, cache, o)
}

#[test]
fn fold_models_are_trained_once_cached_and_a_damaged_one_is_trained_again_to_the_same_bytes() {
    let (tmp, cache, o) = trained_cold();
    let err = common::stderr(&o);
    assert!(err.contains("fine-tuning bm25+ft fold 3/3"), "{err}");
    let models = finetuned_files(&cache);
    assert_eq!(models.len(), 3, "{models:?}");
    let md_path = tmp.path().join("out/p/ft.md");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.contains("## Fine-tuning"), "{md}");
    assert!(md.contains("split into 3 folds"), "{md}");
    // Three tasks in three folds: each fold reranks one task and trains on the other two
    // (one positive and one negative each) and on the fixture's two merges less the one whose
    // query is the held-out task's.
    let svg = std::fs::read_to_string(tmp.path().join("out/p/ft.finetune.svg")).unwrap();
    assert!(svg.contains("loss"), "{svg}");
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    let run = tmp.path().join("out/p/runs/bm25+ft.trec");
    let (report, ranking, weights) = (bytes(&md_path), bytes(&run), weights_of(&bytes(&models[0])));

    // Warm: nothing trained, nothing scored, the same report.
    let o = run_ft(tmp.path(), &cache);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(!err.contains("fine-tuning bm25+ft fold"), "{err}");
    assert!(err.contains("0 pairs scored"), "{err}");
    assert_eq!(bytes(&md_path), report);

    // A flipped byte in a model's weights: said, trained again, the same weights and ranking.
    let mut damaged = bytes(&models[0]);
    let last = damaged.len() - 1;
    damaged[last] ^= 0x55;
    std::fs::write(&models[0], &damaged).unwrap();
    let o = run_ft(tmp.path(), &cache);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("do not hash to the recorded sha256")
            && err.contains("training the model again"),
        "{err}"
    );
    assert!(
        weights_of(&bytes(&models[0])) == weights,
        "retrained to other weights"
    );
    assert_eq!(bytes(&run), ranking);
}

/// `cache`'s fold models as heads (each model file's first two lines, what `head -n 2` keeps:
/// `bench/scifact-finetune/carry.sh keep`) in `to`'s `finetuned/`, and, with `scores`, its
/// score files in `to`'s `scores/`.
fn carry(cache: &Path, to: &Path, scores: bool) {
    std::fs::create_dir_all(to.join("finetuned")).unwrap();
    for model in finetuned_files(cache) {
        let b = std::fs::read(&model).unwrap();
        let second = b
            .iter()
            .enumerate()
            .filter(|(_, &c)| c == b'\n')
            .nth(1)
            .unwrap()
            .0;
        let key = model.file_stem().unwrap().to_str().unwrap();
        std::fs::write(to.join(format!("finetuned/{key}.head")), &b[..=second]).unwrap();
    }
    if scores {
        std::fs::create_dir_all(to.join("scores")).unwrap();
        for f in std::fs::read_dir(cache.join("scores")).unwrap().flatten() {
            std::fs::copy(f.path(), to.join("scores").join(f.file_name())).unwrap();
        }
    }
}

#[test]
fn heads_and_scores_carried_to_another_cache_give_the_same_report_and_a_missed_pair_trains_again() {
    let (tmp, cache, _) = trained_cold();
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    let (md_path, run) = (
        tmp.path().join("out/p/ft.md"),
        tmp.path().join("out/p/runs/bm25+ft.trec"),
    );
    let (report, ranking) = (bytes(&md_path), bytes(&run));
    let models: Vec<Vec<u8>> = finetuned_files(&cache).iter().map(|p| bytes(p)).collect();
    assert_eq!(models.len(), 3);

    // Heads and score files, no weights: nothing trained, nothing scored, the same report (the
    // heads' training records) and ranking.
    let other = common::cache_with_shared_models(&tmp.path().join("other"));
    carry(&cache, &other, true);
    let o = run_ft(tmp.path(), &other);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(!err.contains("fine-tuning bm25+ft fold"), "{err}");
    assert!(err.contains("0 pairs scored"), "{err}");
    assert_eq!(bytes(&md_path), report);
    assert_eq!(bytes(&run), ranking);
    assert!(finetuned_files(&other)
        .iter()
        .all(|p| p.extension().is_some_and(|e| e == "head")));

    // Heads alone: every fold's pairs miss, so each model is trained again as its first pair is
    // scored, to the same file (the same weights, and the record of this training), and the
    // report (which keeps the heads' records) and the ranking are the same bytes.
    let third = common::cache_with_shared_models(&tmp.path().join("third"));
    carry(&cache, &third, false);
    let o = run_ft(tmp.path(), &third);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.matches("(its weights are not in the cache)").count() >= 3,
        "{err}"
    );
    assert_eq!(bytes(&md_path), report);
    assert_eq!(bytes(&run), ranking);
    let again: Vec<Vec<u8>> = finetuned_files(&third)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .map(|p| weights_of(&bytes(p)))
        .collect();
    assert_eq!(
        again,
        models.iter().map(|m| weights_of(m)).collect::<Vec<_>>(),
        "trained again to other weights"
    );
}

#[test]
fn found_experiments_leave_a_fine_tuning_file_out_and_say_so() {
    let tmp = common::fixture_copy("bad_input");
    experiments(tmp.path(), "folds: 2, epochs: 1, negatives: 1");
    let o = common::ranklab_in(tmp.path(), &["run", "tasks/p", "--reports", "out"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains(
            "experiments-ft.yaml: fine-tunes a model, so it is not replayed unless named (-x)"
        ),
        "{err}"
    );
    assert!(tmp.path().join("out/p/e.md").is_file());
    assert!(!tmp.path().join("out/p/ft.md").exists());
    assert!(!tmp.path().join("cache/finetuned").exists());
}

#[test]
fn bad_fine_tuning_settings_and_data_are_refused_with_one_line() {
    let cases: [(&str, Option<&str>, &[&str]); 4] = [
        (
            "folds: 4, epochs: 1, negatives: 1",
            None,
            &["folds 4 is more than the suite's 3 tasks"],
        ),
        (
            "folds: 1, epochs: 1, negatives: 1",
            None,
            &["at least 2 folds"],
        ),
        (
            "folds: 2, epochs: 1, negatives: 1, lr: -1",
            None,
            &["lr: -1", "positive"],
        ),
        // Every document relevant to every task: no negative to train on.
        (
            "folds: 2, epochs: 1, negatives: 1",
            Some("suite: p\ncorpus: ../../corpus\nk: 5\ntasks:\n  - id: T1\n    query: idempotency key for a replayed capture\n    expected: [alpha, beta, gamma, epsilon]\n  - id: T2\n    query: refund a capture\n    expected: [alpha, beta, gamma, epsilon]\n  - id: T3\n    query: retry the acquirer\n    expected: [alpha, beta, gamma, epsilon]\n"),
            &["no task's first stage ranks a document that is not relevant"],
        ),
    ];
    for (finetune, suite, needles) in cases {
        let tmp = common::fixture_copy("bad_input");
        experiments(tmp.path(), finetune);
        if let Some(s) = suite {
            std::fs::write(tmp.path().join("tasks/p/suite.yaml"), s).unwrap();
        }
        let cache = common::cache_with_shared_models(tmp.path());
        let o = run_ft(tmp.path(), &cache);
        common::assert_bad_input(&o, "tasks/p/experiments-ft.yaml", needles);
        assert_eq!(
            common::stderr(&o).lines().count(),
            1,
            "{}",
            common::stderr(&o)
        );
        assert!(!tmp.path().join("out").exists(), "{finetune}: written");
        assert!(finetuned_files(&cache).is_empty(), "{finetune}: trained");
    }
}

/// `ranklab run -x … --measure-costs` times a fine-tuned stage fold by fold: one cost entry for
/// the stage, its identity naming each fold model, its pairs every distinct pair of the folds'
/// shortlists (the oracle: the top 4 of each task's BM25 run, counted from `runs/bm25.trec`),
/// and the report's cost table shows its figures; a measurement already in the file, of a model
/// these experiments do not use, is kept (a run renders only the experiments named).
#[test]
fn a_fine_tuned_stage_is_timed_fold_by_fold_and_other_measurements_are_kept() {
    let tmp = common::fixture_copy("bad_input");
    let cache = common::cache_with_shared_models(tmp.path());
    experiments(
        tmp.path(),
        "folds: 3, epochs: 1, negatives: 1, seed: 7, batch: 2",
    );
    let other = serde_json::json!({
        "model": "another-model", "identity": "another-model onnx-sha256=00",
        "pairs": 10, "cold_ms_per_pair": 1.0, "warm_ms_per_pair": 0.01, "model_load_s": 0.5,
        "measured_at": "2026-12-01 00:00 UTC", "machine": "a machine", "command": "ranklab bench"
    });
    std::fs::create_dir_all(tmp.path().join("out/p")).unwrap();
    std::fs::write(
        tmp.path().join("out/p/costs.json"),
        serde_json::to_string_pretty(&serde_json::json!({"about": "x", "models": [other]}))
            .unwrap(),
    )
    .unwrap();
    let o = run_ft_with(tmp.path(), &cache, &["--measure-costs"]);
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 0, "{err}");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/p/costs.json")).unwrap(),
    )
    .unwrap();
    let models = file["models"].as_array().unwrap();
    assert!(models.contains(&other), "{file}");
    let ft: Vec<&serde_json::Value> = models
        .iter()
        .filter(|m| m["model"].as_str().unwrap().contains("fine-tuned"))
        .collect();
    assert_eq!(ft.len(), 1, "{file}");
    let identity = ft[0]["identity"].as_str().unwrap();
    assert_eq!(identity.matches("finetuned:").count(), 3, "{identity}");
    let bm25 = std::fs::read_to_string(tmp.path().join("out/p/runs/bm25.trec")).unwrap();
    let mut per_task = std::collections::BTreeMap::<&str, usize>::new();
    for l in bm25.lines() {
        *per_task
            .entry(l.split_whitespace().next().unwrap())
            .or_default() += 1;
    }
    let expected: usize = per_task.values().map(|&n| n.min(4)).sum();
    assert_eq!(
        ft[0]["pairs"].as_u64().unwrap() as usize,
        expected,
        "{file}"
    );
    assert!(ft[0]["cold_ms_per_pair"].as_f64().unwrap() > 0.0);
    let md = std::fs::read_to_string(tmp.path().join("out/p/ft.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| bm25+ft | ") && l.contains("fine-tuned"))
        .unwrap_or_else(|| panic!("no cost row:\n{md}"));
    assert!(!row.contains("not measured"), "{row}");
    assert!(
        md.contains("each timed on its own fold's pairs"),
        "the note says how a fine-tuned stage was timed:\n{md}"
    );
}

/// `RAYON_NUM_THREADS=1`, which `just beir-finetune` sets so that a fold model scores its pairs
/// one forward pass per core, still trains every fold on every core (before, it trained on one:
/// 152 s a SciFact fold where two cores take about 80), and to the same weights as a training
/// on rayon's default pool. The oracle of the threads is the model file's training record
/// (`threads`, rayon's pool size inside the training) against the machine's core count; on a
/// one-core machine both are 1 and only the weights are compared.
#[test]
fn one_rayon_thread_set_for_scoring_still_trains_on_every_core_to_the_same_weights() {
    let (tmp, cache, _) = trained_cold();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = |b: &[u8]| -> u64 {
        let header = b.split(|&c| c == b'\n').nth(1).unwrap();
        let v: serde_json::Value = serde_json::from_slice(header).unwrap();
        v["record"]["threads"]
            .as_u64()
            .unwrap_or_else(|| panic!("no record.threads in the header"))
    };
    let before: Vec<Vec<u8>> = finetuned_files(&cache)
        .iter()
        .map(|p| weights_of(&std::fs::read(p).unwrap()))
        .collect();
    assert_eq!(before.len(), 3);

    let one = common::cache_with_shared_models(&tmp.path().join("one"));
    let o = run_ft_env(
        tmp.path(),
        &one,
        "out-one",
        &[],
        &[("RAYON_NUM_THREADS", "1")],
    );
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("fine-tuning bm25+ft fold 3/3"));
    let files = finetuned_files(&one);
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        let b = std::fs::read(f).unwrap();
        assert_eq!(threads(&b), cores as u64, "{}", f.display());
    }
    let after: Vec<Vec<u8>> = files
        .iter()
        .map(|p| weights_of(&std::fs::read(p).unwrap()))
        .collect();
    assert!(after == before, "one rayon thread trained other weights");
}

/// A float and an int8 stage of the same fold models in one experiment are two scorers: the
/// int8 stage's run (`runs/<configuration>.trec`, its scores and order) is the one the int8
/// stage gives alone in its own experiment, and the float stage's is the float run alone
/// (`trained_cold`'s). Oracle: each precision replayed by itself. They shared one model key,
/// so one experiment holding both scored both with whichever scorer came first, and reported
/// the same figures for both (this session's attack pass).
#[test]
fn a_float_and_an_int8_stage_of_one_experiment_score_as_each_does_alone() {
    let (tmp, cache, _) = trained_cold();
    let dir = tmp.path();
    let settings = "folds: 3, epochs: 1, negatives: 1, seed: 7, batch: 2";
    let stage = |name: &str, extra: &str| {
        format!("  - name: {name}\n    retriever: bm25\n    rerank: {{ model: ms-marco-MiniLM-L-12-v2, shortlist: 4, finetune: {{ {settings}{extra} }} }}\n")
    };
    let write = |stages: &str| {
        std::fs::write(
            dir.join("tasks/p/experiments-ft.yaml"),
            format!("experiment: ft\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n{stages}"),
        )
        .unwrap();
    };
    let run_file = |reports: &str, config: &str| {
        std::fs::read_to_string(
            dir.join(reports)
                .join("p/runs")
                .join(format!("{config}.trec")),
        )
        .unwrap()
    };
    write(&stage("ft8", ", precision: int8"));
    let o = run_ft_env(dir, &cache, "int8-alone", &[], &[]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    write(&(stage("bm25+ft", "") + &stage("ft8", ", precision: int8")));
    let o = run_ft_env(dir, &cache, "both", &[], &[]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    assert_eq!(run_file("both", "ft8"), run_file("int8-alone", "ft8"));
    assert_eq!(run_file("both", "bm25+ft"), run_file("out", "bm25+ft"));
    // The two precisions score differently (the int8 graph's rounding), so the check above
    // could not pass by both runs holding the same scores.
    let scores = |text: String| -> Vec<String> {
        text.lines()
            .map(|l| l.split_whitespace().nth(4).unwrap().to_string())
            .collect()
    };
    assert_ne!(
        scores(run_file("both", "ft8")),
        scores(run_file("both", "bm25+ft"))
    );
}

/// The loads line counts the fold models that scored pairs: cold, each of the 3 folds is named
/// ("0 model loads: every vector and score came from the cache" was printed after training and
/// scoring every fold, this session's attack pass); warm, none is loaded and it says 0.
#[test]
fn the_loads_line_names_each_fold_model_that_scored_and_none_when_warm() {
    let (tmp, cache, cold) = trained_cold();
    let err = common::stderr(&cold);
    let line = common::loads_line(&err);
    for fold in ["fold 1/3", "fold 2/3", "fold 3/3"] {
        assert!(line.contains(fold), "{fold}: {err}");
    }
    let warm = run_ft_env(tmp.path(), &cache, "warm", &[], &[]);
    assert_eq!(common::code(&warm), 0, "{}", common::stderr(&warm));
    let err = common::stderr(&warm);
    assert!(
        common::loads_line(&err).starts_with("0 model loads"),
        "{err}"
    );
}
