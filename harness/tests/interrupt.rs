//! Interruption safety of `ranklab run` (a report directory is written into a sibling temporary
//! directory and swapped in whole, `ranklab_engine::atomic::write_dir`):
//! - a run killed by SIGINT or SIGKILL at any point, before or while it writes, leaves the report
//!   directory exactly as the previous complete run wrote it or exactly as the new complete run
//!   writes it, byte for byte: never a file truncated or missing, never files of two runs mixed;
//! - the only other thing a SIGKILL can leave is its temporary directory (`.ranklab-*.tmp`
//!   beside the report directory), which the next run sweeps (its process is gone); a SIGINT
//!   leaves none (issue 42 case 12);
//! - a run killed deterministically in its write phase (SIGXFSZ: `prlimit --fsize` below the
//!   largest report file, so the kill comes after the smaller files were written) leaves the
//!   previous directory whole; written file by file, as before, it left the files written
//!   before the kill new and the rest old;
//! - the next run succeeds and writes exactly a complete run's output.
//!
//! Two variants of the experiments (same configuration names, different BM25 parameters) give
//! two complete outputs A and B with the same file names and different bytes; each run writes
//! the variant the live report directory does not hold, so a file caught half-way would match
//! neither. Kill times are seeded: half uniform over a complete run's duration, half within the
//! write phase (timed on a complete run, counted from the temporary directory's appearance). A
//! synthetic corpus makes a run last
//! long enough and its run files large enough to be caught while written.
//! BM25 only: no model is needed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small seeded generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const DOCS: usize = 1500;
const TASKS: usize = 250;

/// Writes `corpus/` (DOCS records) and `suite/suite.yaml` (TASKS tasks) under `dir`.
fn synthetic_suite(dir: &Path) -> PathBuf {
    let mut r = Lcg(20261130);
    let vocab: Vec<String> = (0..2500)
        .map(|_| {
            let len = 3 + r.below(7);
            (0..len)
                .map(|_| (b'a' + r.below(26) as u8) as char)
                .collect()
        })
        .collect();
    let word = |r: &mut Lcg| vocab[r.below(vocab.len() as u64) as usize].clone();
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    // Sections of varied length, so that BM25's parameters change the rankings.
    let mut doc_words: Vec<Vec<String>> = Vec::with_capacity(DOCS);
    for i in 0..DOCS {
        let mut text = format!("---\nid: d{i:05}\ntitle: Record {i}\n---\n# Record {i}\n");
        let mut all = Vec::new();
        for s in 0..4 {
            let n = 10 + r.below(110) as usize;
            let ws: Vec<String> = (0..n).map(|_| word(&mut r)).collect();
            text += &format!("## Part {s}\n{}\n\n", ws.join(" "));
            all.extend(ws);
        }
        std::fs::write(corpus.join(format!("d{i:05}.md")), text).unwrap();
        doc_words.push(all);
    }
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let mut yaml = String::from("suite: synth\ncorpus: ../corpus\nk: 10\ntasks:\n");
    for t in 0..TASKS {
        // Two words of the expected record and two of anywhere.
        let d = r.below(DOCS as u64) as usize;
        let own = &doc_words[d];
        let query = [
            own[r.below(own.len() as u64) as usize].clone(),
            word(&mut r),
            own[r.below(own.len() as u64) as usize].clone(),
            word(&mut r),
        ];
        yaml += &format!(
            "  - id: T{t:04}\n    query: {}\n    expected: d{d:05}\n",
            query.join(" ")
        );
    }
    std::fs::write(suite.join("suite.yaml"), yaml).unwrap();
    suite
}

/// The experiments file of variant `v` (0 or 1): six BM25 configurations, same names.
fn write_experiments(suite: &Path, v: usize) {
    let params = [
        [
            (0.9, 0.4),
            (1.2, 0.75),
            (0.6, 0.3),
            (1.5, 0.9),
            (0.8, 0.5),
            (1.0, 0.6),
        ],
        [
            (0.7, 0.35),
            (1.3, 0.7),
            (0.5, 0.2),
            (1.6, 0.8),
            (0.85, 0.45),
            (1.1, 0.65),
        ],
    ];
    let mut yaml = String::from("experiment: e\nconfigurations:\n");
    for (j, (k1, b)) in params[v].iter().enumerate() {
        yaml += &format!("  - name: c{j}\n    retriever: bm25\n    depth: 400\n    bm25: {{ k1: {k1}, b: {b} }}\n");
    }
    std::fs::write(suite.join("experiments.yaml"), yaml).unwrap();
}

fn start(suite: &Path, reports: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args([
            "run",
            suite.to_str().unwrap(),
            "--reports",
            reports.to_str().unwrap(),
        ])
        .env("RANKLAB_CACHE", reports.with_extension("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ranklab")
}

fn complete_run(suite: &Path, reports: &Path) {
    let out = start(suite, reports).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "a complete run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn is_temporary(name: &str) -> bool {
    name.starts_with(".ranklab-") && name.ends_with(".tmp")
}

/// Every file under `dir`: (outputs by relative path, temporaries: files and directories, not
/// looked into).
fn snapshot(dir: &Path) -> (BTreeMap<PathBuf, Vec<u8>>, Vec<PathBuf>) {
    let (mut outputs, mut temps) = (BTreeMap::new(), Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if is_temporary(&p.file_name().unwrap().to_string_lossy()) {
                temps.push(p);
            } else if p.is_dir() {
                stack.push(p);
            } else {
                outputs.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    (outputs, temps)
}

/// The temporaries beside and in the suite's report directory.
fn temporaries(reports: &Path) -> Vec<PathBuf> {
    [
        reports.to_path_buf(),
        reports.join("synth"),
        reports.join("synth/runs"),
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flat_map(|es| es.flatten().map(|e| e.path()))
    .filter(|p| is_temporary(&p.file_name().unwrap().to_string_lossy()))
    .collect()
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Int,
    Kill,
}

/// Starts a run and interrupts it after `delay`, or as soon as it writes (plus `delay`) when
/// `at_write`. Returns whether the signal was sent before the run ended by itself.
fn interrupt(
    suite: &Path,
    reports: &Path,
    signal: Signal,
    delay: Duration,
    at_write: bool,
) -> bool {
    let before = temporaries(reports);
    let mut child = start(suite, reports);
    let t0 = Instant::now();
    let give_up = t0 + Duration::from_secs(120);
    let mut fire_at = if at_write { None } else { Some(t0 + delay) };
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let now = Instant::now();
        assert!(now < give_up, "ranklab run did not end");
        if fire_at.is_none() && temporaries(reports).iter().any(|t| !before.contains(t)) {
            fire_at = Some(now + delay);
        }
        if fire_at.is_some_and(|t| now >= t) {
            break;
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    match signal {
        Signal::Int => {
            let ok = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "kill -INT failed");
        }
        Signal::Kill => child.kill().unwrap(),
    }
    let status = child.wait().unwrap();
    // Ended by the signal, or it finished in the meantime (then with success).
    !status.success()
}

/// A complete run into `reports`; returns how long it wrote: from its first temporary file to
/// the replacement of the last file it writes (`e.json`).
fn timed_write_phase(suite: &Path, reports: &Path) -> Duration {
    use std::os::unix::fs::MetadataExt;
    let last = reports.join("synth/e.json");
    let inode = || std::fs::metadata(&last).ok().map(|m| m.ino());
    let (before, last_before) = (temporaries(reports), inode());
    let mut child = start(suite, reports);
    let (mut first, mut end) = (None, None);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if first.is_none() && temporaries(reports).iter().any(|t| !before.contains(t)) {
            first = Some(Instant::now());
        }
        if first.is_some() && end.is_none() && inode() != last_before {
            end = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    assert!(status.success(), "a complete run failed");
    match (first, end) {
        (Some(a), Some(b)) => b - a,
        _ => Duration::from_millis(5),
    }
}

/// Checks that `live` holds one complete output whole after a run of `variant` was interrupted
/// (or ended): the same files as a complete run, each file one of the two complete versions, never
/// files of the new run beside files of the previous one, and temporaries only beside the report.
/// Returns the variant the directory holds and how many temporaries were left.
fn check_whole(
    live: &Path,
    golden: &[BTreeMap<PathBuf, Vec<u8>>],
    variant: usize,
    label: &str,
) -> (usize, usize) {
    let (outputs, temps) = snapshot(live);
    assert_eq!(
        outputs.keys().collect::<Vec<_>>(),
        golden[0].keys().collect::<Vec<_>>(),
        "{label}: files missing or extra"
    );
    for (f, bytes) in &outputs {
        assert!(
            *bytes == golden[0][f] || *bytes == golden[1][f],
            "{label}: {} is neither complete output ({} bytes; complete: {} or {})",
            f.display(),
            bytes.len(),
            golden[0][f].len(),
            golden[1][f].len()
        );
    }
    // Caught between two files: some already replaced, some not yet.
    let new = outputs
        .iter()
        .filter(|(f, b)| **b == golden[variant][*f] && **b != golden[1 - variant][*f])
        .count();
    let old = outputs
        .iter()
        .filter(|(f, b)| **b == golden[1 - variant][*f] && **b != golden[variant][*f])
        .count();
    assert!(
        new == 0 || old == 0,
        "{label}: {new} files of the new run beside {old} of the previous one"
    );
    let whole = [0, 1].into_iter().find(|&v| outputs == golden[v]);
    let Some(whole) = whole else {
        panic!("{label}: the directory is neither complete output");
    };
    for t in &temps {
        assert_eq!(
            t.parent(),
            Some(live),
            "a temporary inside the report: {t:?}"
        );
    }
    (whole, temps.len())
}

#[test]
fn killed_runs_leave_every_report_whole_and_the_next_run_succeeds() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = synthetic_suite(tmp.path());

    // The two complete outputs.
    let mut golden = Vec::new();
    let mut duration = Duration::ZERO;
    for v in 0..2 {
        write_experiments(&suite, v);
        let dir = tmp.path().join(format!("golden{v}"));
        let t0 = Instant::now();
        complete_run(&suite, &dir);
        duration = duration.max(t0.elapsed());
        let (outputs, temps) = snapshot(&dir);
        assert!(temps.is_empty(), "a complete run left {temps:?}");
        golden.push(outputs);
    }
    assert_eq!(
        golden[0].keys().collect::<Vec<_>>(),
        golden[1].keys().collect::<Vec<_>>()
    );
    let differing = golden[0]
        .iter()
        .filter(|(k, v)| golden[1][*k] != **v)
        .count();
    assert!(
        golden[0].len() >= 10 && differing >= 6,
        "{} files, {differing} differ",
        golden[0].len()
    );

    let live = tmp.path().join("live");
    write_experiments(&suite, 0);
    let write_phase = timed_write_phase(&suite, &live);
    assert_eq!(snapshot(&live).0, golden[0]);

    let mut r = Lcg(8);
    let (mut interrupted, mut during_write, mut leftover) = (0, 0, 0);
    // The variant the live directory holds whole; each run writes the other one, so that every
    // file it replaces changes.
    let mut state = 0;
    let mut attempts = 0;
    for i in 0..12 {
        let signal = if r.below(2) == 0 {
            Signal::Int
        } else {
            Signal::Kill
        };
        let at_write = i % 2 == 1;
        let mut delay = if at_write {
            write_phase.mul_f64(r.below(1000) as f64 / 1000.0)
        } else {
            duration.mul_f64(0.05 + r.below(1000) as f64 / 1000.0)
        };
        // A run that ended by itself before its signal (a machine faster than the golden runs
        // measured) is checked like any other and then tried again with half the delay, so
        // that the count of real interruptions below does not depend on the machine's speed.
        let mut variant;
        let mut killed;
        let mut tries = 0;
        loop {
            tries += 1;
            attempts += 1;
            variant = 1 - state;
            write_experiments(&suite, variant);
            killed = interrupt(&suite, &live, signal, delay, at_write);
            let label = format!("kill {i} ({signal:?} after {delay:?}, at write: {at_write})");
            let (whole, temps) = check_whole(&live, &golden, variant, &label);
            state = whole;
            leftover += temps;
            if killed || tries == 5 {
                break;
            }
            delay /= 2;
        }
        interrupted += killed as usize;
        during_write += (killed && at_write) as usize;

        // Every other interruption, the next run is a complete one: it succeeds and writes
        // exactly the complete output of its variant.
        if i % 2 == 1 {
            complete_run(&suite, &live);
            assert_eq!(
                snapshot(&live).0,
                golden[variant],
                "the run after kill {i} differs from a complete run"
            );
            state = variant;
        }
    }
    assert!(
        interrupted >= 10,
        "only {interrupted} of 12 runs were interrupted before they ended"
    );
    assert!(
        during_write >= 3,
        "only {during_write} interruptions fell in the write phase"
    );
    eprintln!("write phase {write_phase:?}; {attempts} runs for 12 interruptions; {interrupted} runs interrupted ({during_write} while writing); {leftover} temporary directories left behind in all");
}

#[test]
fn a_run_killed_while_it_writes_leaves_the_previous_directory_whole() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let suite = synthetic_suite(tmp.path());
    // The new output, for its file sizes and to compare the next run with.
    write_experiments(&suite, 1);
    let fresh = tmp.path().join("fresh");
    complete_run(&suite, &fresh);
    let new = snapshot(&fresh).0;
    let largest = new.values().map(Vec::len).max().unwrap();
    let smaller = new.values().filter(|b| b.len() < largest).count();
    assert!(smaller >= 5, "{smaller} files below the largest");

    let live = tmp.path().join("live");
    write_experiments(&suite, 0);
    complete_run(&suite, &live);
    let previous = snapshot(&live).0;
    assert_ne!(previous, new);

    // No file may grow beyond `largest - 1` bytes: the kernel kills the run (SIGXFSZ) when it
    // writes the largest report file, after it wrote the smaller ones it writes first.
    write_experiments(&suite, 1);
    let out = Command::new("prlimit")
        .arg(format!("--fsize={}", largest - 1))
        .arg(env!("CARGO_BIN_EXE_ranklab"))
        .args([
            "run",
            suite.to_str().unwrap(),
            "--reports",
            live.to_str().unwrap(),
        ])
        .env("RANKLAB_CACHE", live.with_extension("cache"))
        .output()
        .expect("prlimit (util-linux) runs ranklab");
    assert_eq!(
        out.status.signal(),
        Some(25),
        "not killed by SIGXFSZ while writing: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (outputs, temps) = snapshot(&live);
    assert!(
        outputs == previous,
        "the killed run changed the report directory"
    );
    assert_eq!(temps.len(), 1, "{temps:?}");
    assert!(temps[0].is_dir() && temps[0].parent() == Some(live.as_path()));

    // The next run writes the whole new output and, the temporary being two hours old, sweeps it.
    std::fs::File::open(&temps[0])
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    complete_run(&suite, &live);
    let (outputs, temps) = snapshot(&live);
    assert!(
        outputs == new,
        "the run after the kill differs from a complete run"
    );
    assert!(temps.is_empty(), "{temps:?}");
}

/// Issue 42 case 12: a SIGINT while the run writes leaves no `.ranklab-*.tmp` (the signal
/// watcher lets the writes under way finish and starts no other before the process ends), and the temporary a
/// SIGKILL left is removed by the next run at once, its process being gone (not an hour later).
#[test]
fn a_sigint_while_writing_leaves_no_temporary_and_a_killed_runs_goes_with_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = synthetic_suite(tmp.path());
    let live = tmp.path().join("live");
    write_experiments(&suite, 0);
    complete_run(&suite, &live);
    let mut caught = 0;
    for (i, delay_us) in [0u64, 300, 1000, 3000, 0, 500].into_iter().enumerate() {
        write_experiments(&suite, 1 - i % 2);
        if interrupt(
            &suite,
            &live,
            Signal::Int,
            Duration::from_micros(delay_us),
            true,
        ) {
            caught += 1;
            let left = temporaries(&live);
            assert!(left.is_empty(), "a SIGINT while writing left {left:?}");
        }
    }
    assert!(caught > 0, "no run was caught by SIGINT while it wrote");

    // A SIGKILL while writing leaves its temporary; the next run removes it, fresh as it is.
    let mut left = Vec::new();
    for delay_us in [0u64, 300, 1000, 3000] {
        write_experiments(&suite, 0);
        if interrupt(
            &suite,
            &live,
            Signal::Kill,
            Duration::from_micros(delay_us),
            true,
        ) {
            left = temporaries(&live);
            if !left.is_empty() {
                break;
            }
        }
    }
    assert!(!left.is_empty(), "no SIGKILL left a temporary to sweep");
    write_experiments(&suite, 1);
    complete_run(&suite, &live);
    let after = temporaries(&live);
    assert!(after.is_empty(), "the next run kept {after:?}");
}
