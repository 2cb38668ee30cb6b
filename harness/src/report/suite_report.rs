//! One experiment's report, rendered (nothing written yet), and how it is printed on stdout.

use std::path::{Path, PathBuf};

/// Everything one experiment writes, rendered.
pub struct SuiteReport {
    /// The Markdown report (`--print` prints it).
    pub markdown: String,
    /// What a person reads on stdout: the title, the headline table (means and win/tie/loss)
    /// and the decision.
    pub summary: String,
    /// The experiment's name (the stem of its files).
    pub stem: String,
    /// Files to write, relative to the report directory.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The checks of the run that failed, one phrase each (a paired file with expectations not
    /// met, an external configuration whose errors were counted as empty rankings); empty when
    /// every check held. Any makes `run` and `bench` exit 1.
    pub failures: Vec<String>,
}

impl SuiteReport {
    /// `wrote reports/docir/retrieval.md (+ 4 csv, json, 3 svg, html, 8 runs, qrels)`, `dir` being
    /// the report directory as the user should read it.
    pub fn wrote_line(&self, dir: &Path) -> String {
        let count =
            |pred: &dyn Fn(&Path) -> bool| self.files.iter().filter(|(p, _)| pred(p)).count();
        let ext = |p: &Path, e: &str| p.extension().is_some_and(|x| x == e);
        let runs = count(&|p| p.starts_with("runs") && ext(p, "trec"));
        let recordings = count(&|p| p.starts_with("runs") && !ext(p, "trec"));
        let mut parts = Vec::new();
        // A kind a report holds once is named without a count (json, qrels).
        let mut add = |n: usize, what: &str, counted: bool| match n {
            0 => {}
            1 if !counted => parts.push(what.to_string()),
            n => parts.push(format!("{n} {what}")),
        };
        add(count(&|p| ext(p, "csv")), "csv", true);
        add(
            count(&|p| ext(p, "json") && !p.starts_with("runs")),
            "json",
            false,
        );
        add(count(&|p| ext(p, "svg")), "svg", true);
        add(count(&|p| ext(p, "html")), "html", false);
        add(runs, if runs == 1 { "run" } else { "runs" }, true);
        add(
            recordings,
            if recordings == 1 {
                "recording"
            } else {
                "recordings"
            },
            true,
        );
        add(count(&|p| p == Path::new("qrels.txt")), "qrels", false);
        format!(
            "wrote {} (+ {})",
            dir.join(format!("{}.md", self.stem)).display(),
            parts.join(", ")
        )
    }
}

/// Prints one report on stdout: its summary and the files written (`written`), or, with
/// `full`, the whole Markdown report before them.
pub fn print_report(r: &SuiteReport, dir: &Path, full: bool, written: bool) {
    print_report_as(r, dir, full, written, true);
}

/// [`print_report`], with the headline table and the blank line after it left out when `table`
/// is false (its title, decision and notes stay): `ranklab bench`'s summary of many reports fits a
/// screen.
pub fn print_report_as(r: &SuiteReport, dir: &Path, full: bool, written: bool, table: bool) {
    if full {
        println!("{}", r.markdown);
    }
    if table {
        print!("{}", r.summary);
    } else {
        for line in r.summary.lines().filter(|l| !l.starts_with('|')) {
            println!("{line}");
        }
    }
    if written {
        println!("{}", r.wrote_line(&for_person(dir)));
    } else {
        println!("dry run: nothing written");
    }
    // A blank line between full summaries; `bench`'s compact ones run on, one report per three
    // lines (title, decision, files), so that eleven reports fit a screen.
    if table {
        println!();
    }
}

/// `path` relative to the current directory when it is below it (as a person would type it).
pub fn for_person(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) if path.is_absolute() => path
            .strip_prefix(&cwd)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf),
        _ => path.to_path_buf(),
    }
}
