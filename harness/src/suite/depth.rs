//! A cutoff deeper than the run: a task's `k` (or the suite's) larger than a configuration's
//! `depth` would measure lists that stop before k, counting the missing ranks as misses without
//! a word. It is refused at load, naming both places.

use anyhow::{bail, Result};
use ranklab_engine::yaml::Lines;

use super::{Experiments, Suite};

/// Every task's cutoff must be at most every configuration's depth: an error naming the `k`
/// (file:line, the task's own `k:` or the suite's) and the configuration (file:line of its
/// `depth:`, or of its name when the depth is the default).
pub fn check_depth(suite: &Suite, ex: &Experiments) -> Result<()> {
    let Some(deepest) = suite.tasks.iter().max_by_key(|t| t.k) else {
        return Ok(());
    };
    let Some(c) = ex.configurations.iter().find(|c| c.depth() < deepest.k) else {
        return Ok(());
    };
    // The first task (in file order) whose k the configuration cannot reach.
    let task = suite
        .tasks
        .iter()
        .find(|t| t.k > c.depth())
        .unwrap_or(deepest);
    let suite_text = ranklab_engine::input::read_text(&suite.path).unwrap_or_default();
    let (k_line, whose) = if task.k == suite.k {
        (
            Lines::new(&suite_text).of("k", &suite.k.to_string()),
            "the suite's k".to_string(),
        )
    } else {
        (
            line_from(&suite_text, task.line, "k:").unwrap_or(task.line),
            format!("task {:?} has k", task.id),
        )
    };
    let ex_text = ranklab_engine::input::read_text(&ex.path).unwrap_or_default();
    let name_line = Lines::new(&ex_text).of("name", &c.name);
    let (c_line, depth) = match c.depth {
        Some(d) => (
            line_from(&ex_text, name_line, "depth:").unwrap_or(name_line),
            format!("depth: {d}"),
        ),
        None => (name_line, format!("the default depth {}", c.depth())),
    };
    bail!(
        "{}:{k_line}: {whose} = {}, deeper than configuration {:?} ({}:{c_line}, {depth}), whose run lists stop at {} documents: the ranks below would count as misses; lower k to at most {} or raise the configuration's `depth` to at least {}",
        suite.path.display(),
        task.k,
        c.name,
        ex.path.display(),
        c.depth(),
        c.depth(),
        task.k,
    );
}

/// The 1-based line of the first line at or after `from` (1-based; 0 = the top) whose text,
/// trimmed (and without a leading `- `), starts with `key`.
fn line_from(text: &str, from: usize, key: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| {
            l.trim_start()
                .trim_start_matches("- ")
                .trim_start()
                .starts_with(key)
        })
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(suite: &str, ex: &str) -> (tempfile::TempDir, Result<()>) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = dir.path().join("corpus");
        std::fs::create_dir(&corpus).unwrap();
        std::fs::write(corpus.join("a.md"), "# A\nx\n").unwrap();
        std::fs::write(dir.path().join("suite.yaml"), suite).unwrap();
        std::fs::write(dir.path().join("experiments.yaml"), ex).unwrap();
        let s = Suite::load(&dir.path().join("suite.yaml")).unwrap();
        let e = Experiments::load(&dir.path().join("experiments.yaml")).unwrap();
        let r = check_depth(&s, &e);
        (dir, r)
    }

    const SUITE: &str = "suite: s\ncorpus: corpus\nk: 5\ntasks:\n  - id: t1\n    query: q\n    expected: a\n  - id: t2\n    query: q\n    expected: a\n    k: 20\n";
    const EX: &str = "experiment: e\nconfigurations:\n  - name: deep\n    retriever: bm25\n  - name: shallow\n    retriever: bm25\n    depth: 10\n";

    #[test]
    fn a_task_k_deeper_than_a_depth_names_both_places() {
        // Lines counted by hand: t2's `k: 20` is line 11 of SUITE; `depth: 10` is line 7 of EX.
        let (_d, r) = setup(SUITE, EX);
        let e = format!("{:#}", r.unwrap_err());
        assert!(e.contains("suite.yaml:11: task \"t2\" has k = 20"), "{e}");
        assert!(
            e.contains("configuration \"shallow\" (")
                && e.contains("experiments.yaml:7, depth: 10)"),
            "{e}"
        );
        assert!(
            e.contains("raise the configuration's `depth` to at least 20"),
            "{e}"
        );
    }

    #[test]
    fn the_suite_k_deeper_than_the_default_depth_names_the_suite_line_and_the_name() {
        let suite = SUITE
            .replace("k: 5\n", "k: 200\n")
            .replace("    k: 20\n", "");
        let (_d, r) = setup(&suite, EX);
        let e = format!("{:#}", r.unwrap_err());
        // `k: 200` is line 3; "deep" (default depth 100) is named on line 3 of EX.
        assert!(e.contains("suite.yaml:3: the suite's k = 200"), "{e}");
        assert!(
            e.contains("configuration \"deep\" (")
                && e.contains("experiments.yaml:3, the default depth 100)"),
            "{e}"
        );
    }

    #[test]
    fn k_at_most_every_depth_is_accepted() {
        // The same files with the shallow configuration reaching k = 20 exactly.
        let (_d, r) = setup(SUITE, &EX.replace("depth: 10", "depth: 20"));
        r.unwrap();
    }
}
