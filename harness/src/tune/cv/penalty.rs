//! `split: time`: the penalty-weight tuning of `ranklab tune --suite` written as a tuning file.
//!
//! ```yaml
//! tune: penalty-weights     # reports/<suite>/tune-penalty-weights.{md,csv,json,heatmap.svg}
//! configuration: current    # the configuration whose first stage the weights re-sort
//! measure: MRR              # the penalty tuning's objective: MRR, then recall@k
//! split: time               # a time split and a rolling check over merges.yaml, not task folds
//! window_days: 90           # merges of the last 90 days up to as_of
//! as_of: 2026-12-01         # default: today
//! space:
//!   penalty.superseded: [0, 0.05, 0.1, ..., 1]
//!   penalty.deprecated: [0, 0.05, 0.1, ..., 1]
//!   penalty.amendment: [0, 0.05, 0.1, ..., 1]
//!   penalty.editorial_only: [0, 0.05, 0.1, ..., 1]
//! ```
//!
//! The four lists are one grid, `0, u, 2u, ..., m·u` with `u` a multiple of 0.01 (`--unit u
//! --max-units m` of `ranklab tune --suite`; the practice file's rules, deprecated ≥ superseded
//! and editorial_only ≥ amendment, still apply). This module only turns the file into the
//! request of [`crate::tune::session::tune`], the one implementation both forms run: the same
//! inputs give the same report, practice file and exit code (`harness/tests/tune_penalty_file.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use chrono::NaiveDate;

use super::file::{line_of, Plan, TuneFile, Value};
use crate::tune::grid::{hundredths, Grid};

/// The four paths, in the practice file's order (superseded, deprecated, amendment,
/// editorial_only).
pub(crate) const PATHS: [&str; 4] = [
    "penalty.superseded",
    "penalty.deprecated",
    "penalty.amendment",
    "penalty.editorial_only",
];

/// A time-split tuning's settings, checked.
#[derive(Debug, Clone)]
pub(crate) struct TimeSplit {
    /// The grid the four lists spell.
    pub grid: Grid,
    /// The window in days up to `as_of`.
    pub window_days: u32,
    /// The window's last day (None: today).
    pub as_of: Option<NaiveDate>,
    /// Folds of the rolling check.
    pub rolling: usize,
}

/// Checks a `split: time` file (`text` is its text, for lines) and returns its plan.
pub(crate) fn plan(file: TuneFile, path: &Path, text: &str) -> Result<Plan> {
    let at = |key: &str| format!("{}:{}", path.display(), line_of(text, key));
    for key in ["folds", "seed", "learn", "collection", "fusion", "shipped"] {
        if line_of(text, key) > 0 {
            bail!("{}: `{key}` does not apply to `split: time` (the penalty weights are chosen on the window's merges and checked by a time split and a rolling check); remove it", at(key));
        }
    }
    if file.measure != "MRR" {
        bail!("{}: measure {:?}: the penalty tuning maximises MRR, then recall@k (as `ranklab tune --suite`); write `measure: MRR`", at("measure"), file.measure);
    }
    if !(file.epsilon >= 0.0 && file.epsilon < 1.0) {
        bail!("{}: epsilon must be in [0, 1), e.g. 0.001", at("epsilon"));
    }
    let window_days = file.window_days.unwrap_or(90);
    if window_days == 0 {
        bail!("{}: window_days must be at least 1", at("window_days"));
    }
    let rolling = file.rolling.unwrap_or(crate::tune::rolling::DEFAULT_FOLDS);
    if rolling == 0 {
        bail!("{}: rolling must be at least 1 (8 is usual)", at("rolling"));
    }
    let as_of = match &file.as_of {
        Some(s) => Some(crate::suite::merges::parse_date(s).with_context(|| {
            format!(
                "{}: as_of {s:?}{}: write the date as YYYY-MM-DD",
                at("as_of"),
                ranklab_engine::yaml::impossible_date(s).unwrap_or_default()
            )
        })?),
        None => None,
    };
    let grid = grid_of(&file.space, &at)?;
    Ok(Plan {
        path: path.to_path_buf(),
        dims: Vec::new(),
        time: Some(TimeSplit {
            grid,
            window_days,
            as_of,
            rolling,
        }),
        file,
    })
}

/// The grid the four lists spell: each `0, u, ..., m·u` (`u` a multiple of 0.01), all four
/// the same.
fn grid_of(space: &BTreeMap<String, Vec<Value>>, at: &dyn Fn(&str) -> String) -> Result<Grid> {
    if let Some(p) = space.keys().find(|p| !PATHS.contains(&p.as_str())) {
        bail!(
            "{}: {p:?} cannot be tuned with `split: time`; its space names the four penalty weights {}",
            at(p),
            PATHS.join(", ")
        );
    }
    if let Some(p) = PATHS.iter().find(|p| !space.contains_key(**p)) {
        bail!("{}: `space` lacks {p}; a time-split tuning names all four penalty weights ({}), each with the same values", at("space"), PATHS.join(", "));
    }
    let first = steps(PATHS[0], &space[PATHS[0]], &at(PATHS[0]))?;
    for p in &PATHS[1..] {
        if steps(p, &space[*p], &at(p))? != first {
            bail!(
                "{}: {p} lists other values than {}; the four weights share one grid (`--unit` and `--max-units` of `ranklab tune --suite`): list the same values",
                at(p),
                PATHS[0]
            );
        }
    }
    let unit = first[1];
    let max_units = u16::try_from(first.len() - 1).unwrap_or(u16::MAX);
    Grid::new(&hundredths(unit), max_units).with_context(|| at(PATHS[0]))
}

/// The values of one list in hundredths, checked to be `0, u, 2u, ...` with `u ≥ 0.01`.
fn steps(path: &str, values: &[Value], at: &str) -> Result<Vec<u32>> {
    let bad = || {
        anyhow::anyhow!(
            "{at}: {path}: write the grid as 0, u, 2u, ... (u a multiple of 0.01, at least two values), e.g. [0, 0.05, 0.1, ..., 1]"
        )
    };
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        let Value::Number(x) = v else {
            return Err(bad());
        };
        let h = (x * 100.0).round();
        if !(x.is_finite() && (x * 100.0 - h).abs() < 1e-6 && (0.0..=10_000.0).contains(&h)) {
            return Err(bad());
        }
        out.push(h as u32);
    }
    let arithmetic = out.len() >= 2
        && out[1] > 0
        && out
            .iter()
            .enumerate()
            .all(|(i, &h)| u64::from(h) == i as u64 * u64::from(out[1]));
    if !arithmetic {
        return Err(bad());
    }
    Ok(out)
}

/// Runs a time-split tuning through [`crate::tune::session::tune`] with the report named
/// after the file (`reports/<suite>/tune-<name>.*`); `--json OUT` gets a copy of its JSON.
pub(crate) fn tune(req: &super::session::Request, plan: &Plan, t: &TimeSplit) -> Result<String> {
    let suite = crate::root::dir_of(&req.file).to_path_buf();
    let stem = format!("tune-{}", plan.file.tune);
    let reports = crate::root::default("reports");
    let inner = crate::tune::session::Request {
        suite: suite.clone(),
        merges: None,
        configuration: Some(plan.file.configuration.clone()),
        window_days: t.window_days,
        as_of: t.as_of.unwrap_or_else(|| chrono::Local::now().date_naive()),
        grid: t.grid,
        top: 10,
        write: req.write,
        force: req.force,
        keep: req.keep,
        epsilon: plan.file.epsilon,
        folds: t.rolling,
        reports: Some(reports.clone()),
        stem: stem.clone(),
    };
    let md = crate::tune::session::tune(&inner)?;
    if let Some(out) = &req.json {
        let name = crate::suite::Suite::load(&suite)?.name;
        let written = reports.join(name).join(format!("{stem}.json"));
        let json =
            std::fs::read(&written).with_context(|| format!("reading {}", written.display()))?;
        crate::report::atomic::write(out, &json)?;
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = "[0, 0.05, 0.1, 0.15, 0.2]";

    fn load_text(text: &str) -> Result<Plan> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tune-x.yaml");
        std::fs::write(&p, text).unwrap();
        super::super::file::load(&p).map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    fn file(extra: &str, superseded: &str) -> String {
        format!("tune: x\nconfiguration: current\nmeasure: MRR\nsplit: time\n{extra}space:\n  penalty.superseded: {superseded}\n  penalty.deprecated: {GRID}\n  penalty.amendment: {GRID}\n  penalty.editorial_only: {GRID}\n")
    }

    /// By hand: [0, 0.05, ..., 0.2] is 4 steps of 5 hundredths (`--unit 0.05 --max-units 4`).
    #[test]
    fn four_equal_lists_are_the_suite_forms_grid() {
        let p = load_text(&file("as_of: 2026-12-01\nrolling: 3\n", GRID)).unwrap();
        let t = p.time.unwrap();
        assert_eq!(t.grid, Grid::new("0.05", 4).unwrap());
        assert_eq!(t.window_days, 90);
        assert_eq!(t.rolling, 3);
        assert_eq!(t.as_of, NaiveDate::from_ymd_opt(2026, 12, 1));
    }

    #[test]
    fn lists_that_are_not_one_grid_are_refused_at_their_line() {
        let e = load_text(&file("", "[0, 0.05, 0.15]"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:6: penalty.superseded: write the grid as 0, u, 2u"),
            "{e}"
        );
        let e = load_text(&file("", "[0, 0.1, 0.2]"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:7: penalty.deprecated lists other values"),
            "{e}"
        );
        let e = load_text(&file("", "[0, 0.005]")).unwrap_err().to_string();
        assert!(e.contains("tune-x.yaml:6:"), "{e}");
    }

    #[test]
    fn task_fold_keys_and_other_measures_are_refused_with_split_time() {
        let e = load_text(&file("folds: 5\n", GRID))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:5: `folds` does not apply to `split: time`"),
            "{e}"
        );
        let e = load_text(&file("", GRID).replace("measure: MRR", "measure: nDCG@5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune-x.yaml:3: measure \"nDCG@5\""), "{e}");
        let e = load_text(&file("as_of: 2026-13-01\n", GRID))
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune-x.yaml:5: as_of \"2026-13-01\""), "{e}");
    }

    #[test]
    fn a_penalty_path_without_split_time_and_time_keys_without_it_are_refused() {
        let e = load_text(
            "tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  penalty.superseded: [0, 0.5]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tune-x.yaml:5: penalty.superseded: the penalty weights are tuned on the suite's dated merges; add `split: time`"), "{e}");
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nas_of: 2026-12-01\nspace:\n  fusion.normalize: [rank]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:4: `as_of` belongs to `split: time`"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_split_is_refused_at_its_line() {
        let e = load_text(&file("", GRID).replace("split: time", "split: random"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:4: split: \"random\" is not a split; write `split: tasks`"),
            "{e}"
        );
    }
}
