//! Dated merges (`tasks/<suite>/merges.yaml`): what the team merged, the query someone runs
//! after it, and the record it made current. Tuning reads the merges of a window of days up to
//! an as-of date and splits them by date into an older training part and a newer held-out part.
//!
//! Checked on load, each error naming the file and line: a date written `YYYY-MM-DD` that exists,
//! unique ids, a non-empty query, an expected record of the corpus, and (against the as-of date)
//! no merge dated after it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use chrono::NaiveDate;
use ranklab_engine::corpus::Corpus;
use serde::Deserialize;

use crate::suite::read_yaml;
use ranklab_engine::yaml::Lines;

/// One merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Merge {
    /// Id (unique in the file).
    pub id: String,
    /// The day it was merged.
    pub merged: NaiveDate,
    /// The query someone runs after it.
    pub query: String,
    /// The record it made current: the expected answer.
    pub expected: String,
    /// Line of the merge in the file.
    pub line: usize,
}

/// A loaded merges file, in file order.
#[derive(Debug, Clone)]
pub(crate) struct Merges {
    /// The file.
    pub path: PathBuf,
    /// The merges.
    pub merges: Vec<Merge>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    merges: Vec<RawMerge>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMerge {
    id: String,
    merged: String,
    query: String,
    expected: String,
}

/// Parses `YYYY-MM-DD` strictly (four-digit year, two-digit month and day, a real date).
pub(crate) fn parse_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape {
        return None;
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

impl Merges {
    /// Loads `path` and checks every merge against `corpus`.
    pub(crate) fn load(path: &Path, corpus: &Corpus) -> Result<Merges> {
        let (raw, text): (RawFile, String) = read_yaml(path)?;
        let lines = Lines::new(&text);
        if raw.merges.is_empty() {
            bail!(
                "{}: no merges; add at least one under `merges:` (see `ranklab help formats`)",
                path.display()
            );
        }
        let mut seen = HashSet::new();
        let mut merges = Vec::with_capacity(raw.merges.len());
        for m in raw.merges {
            let line = lines.of("id", &m.id);
            let at = format!("{}:{line}", path.display());
            if !seen.insert(m.id.clone()) {
                bail!(
                    "{at}: duplicate merge id {:?}; merge ids must be unique",
                    m.id
                );
            }
            let Some(merged) = parse_date(m.merged.trim()) else {
                let dl = text
                    .lines()
                    .enumerate()
                    .skip(line.saturating_sub(1))
                    .find(|(_, l)| l.contains("merged:"))
                    .map_or(line, |(i, _)| i + 1);
                let why =
                    ranklab_engine::yaml::impossible_date(m.merged.trim()).unwrap_or_default();
                bail!("{}:{dl}: merge {:?}: `merged: {}` is not a date{why}; write it as YYYY-MM-DD (e.g. 2026-06-02)", path.display(), m.id, m.merged);
            };
            if m.query.trim().is_empty() {
                bail!("{at}: merge {:?} has an empty query", m.id);
            }
            if corpus.index_of(&m.expected).is_none() {
                let el = text
                    .lines()
                    .enumerate()
                    .skip(line.saturating_sub(1))
                    .find(|(_, l)| l.contains("expected:"))
                    .map_or(line, |(i, _)| i + 1);
                bail!(
                    "{}:{el}: merge {:?} expects unknown record {:?}; it is not in the corpus {} (check the spelling{})",
                    path.display(),
                    m.id,
                    m.expected,
                    corpus.root.display(),
                    ranklab_engine::suggest::did_you_mean(&m.expected, crate::suite::corpus_ids(corpus))
                );
            }
            merges.push(Merge {
                id: m.id,
                merged,
                query: m.query,
                expected: m.expected,
                line,
            });
        }
        Ok(Merges {
            path: path.to_path_buf(),
            merges,
        })
    }

    /// The merges with `merged` in `[as_of - window_days, as_of]`, oldest first (file order
    /// among merges of the same day). Merges dated after `as_of` are left out and counted
    /// ([`Window::ignored`]): tuning as of a past date sees only what had merged by then.
    pub(crate) fn window(&self, as_of: NaiveDate, window_days: u32) -> Result<Window> {
        let ignored = self.merges.iter().filter(|m| m.merged > as_of).count();
        if ignored == self.merges.len() {
            let oldest = self
                .merges
                .iter()
                .map(|m| m.merged)
                .min()
                .expect("non-empty");
            bail!(
                "{}: every merge ({ignored}) is dated after the as-of date {as_of} (the oldest is of {oldest}); pass a later --as-of",
                self.path.display()
            );
        }
        // A window reaching before the first representable date covers every merge.
        let from = as_of
            .checked_sub_days(chrono::Days::new(u64::from(window_days)))
            .unwrap_or(NaiveDate::MIN);
        let mut picked: Vec<Merge> = self
            .merges
            .iter()
            .filter(|m| m.merged >= from && m.merged <= as_of)
            .cloned()
            .collect();
        if picked.is_empty() {
            let newest = self
                .merges
                .iter()
                .map(|m| m.merged)
                .filter(|d| *d <= as_of)
                .max()
                .expect("non-empty");
            bail!(
                "{}: no merge in the window {from}..={as_of} ({window_days} days up to {as_of}); the newest merge is of {newest}. Widen --window-days or check --as-of; nothing was written",
                self.path.display()
            );
        }
        picked.sort_by_key(|m| m.merged);
        let held = picked.len() / 3;
        let train = picked.len() - held;
        Ok(Window {
            from,
            to: as_of,
            days: window_days,
            merges: picked,
            train,
            ignored,
        })
    }
}

/// The merges of a window, split by date.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    /// First day of the window.
    pub from: NaiveDate,
    /// Last day (the as-of date).
    pub to: NaiveDate,
    /// Its length in days.
    pub days: u32,
    /// The merges, oldest first.
    pub merges: Vec<Merge>,
    /// How many of them (the oldest) form the training part; the rest, the newest third
    /// (rounded down), are held out.
    pub train: usize,
    /// Merges of the file dated after the as-of date, left out.
    pub ignored: usize,
}

impl Window {
    /// The training part: the older two thirds.
    pub(crate) fn train(&self) -> &[Merge] {
        &self.merges[..self.train]
    }
    /// The held-out part: the newest third (empty with fewer than three merges).
    pub(crate) fn held_out(&self) -> &[Merge] {
        &self.merges[self.train..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        parse_date(s).unwrap()
    }

    fn merges(dates: &[&str]) -> Merges {
        Merges {
            path: "m.yaml".into(),
            merges: dates
                .iter()
                .enumerate()
                .map(|(i, s)| Merge {
                    id: format!("M{i}"),
                    merged: d(s),
                    query: "q".into(),
                    expected: "x".into(),
                    line: i + 2,
                })
                .collect(),
        }
    }

    #[test]
    fn dates_are_strict() {
        assert_eq!(
            parse_date("2026-06-02"),
            NaiveDate::from_ymd_opt(2026, 6, 2)
        );
        for bad in [
            "2026-6-2",
            "2026-02-30",
            "02-06-2026",
            "2026/06/02",
            "2026-06-02T00:00",
            "tomorrow",
            "",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn window_is_inclusive_and_split_by_date() {
        let m = merges(&[
            "2026-01-01",
            "2026-09-01",
            "2026-11-30",
            "2026-10-01",
            "2026-09-15",
            "2026-10-20",
            "2026-11-01",
        ]);
        let w = m.window(d("2026-11-30"), 90).unwrap();
        assert_eq!(w.from, d("2026-09-01"));
        let ids: Vec<&str> = w.merges.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["M1", "M4", "M3", "M5", "M6", "M2"]);
        assert_eq!(w.train().len(), 4);
        assert_eq!(
            w.held_out()
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>(),
            ["M6", "M2"]
        );
    }

    #[test]
    fn merges_after_as_of_are_left_out_and_counted() {
        let w = merges(&["2026-11-01", "2026-12-01", "2026-11-30", "2027-01-01"])
            .window(d("2026-11-30"), 90)
            .unwrap();
        let dates: Vec<String> = w.merges.iter().map(|m| m.merged.to_string()).collect();
        assert_eq!(dates, ["2026-11-01", "2026-11-30"]);
        assert_eq!(w.ignored, 2);
        let e = merges(&["2026-12-01"])
            .window(d("2026-11-30"), 90)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("every merge (1) is dated after the as-of date 2026-11-30"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_window_is_an_error() {
        let e = merges(&["2026-01-01"])
            .window(d("2026-11-30"), 90)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no merge in the window 2026-09-01..=2026-11-30"),
            "{e}"
        );
    }

    #[test]
    fn too_few_merges_hold_nothing_out() {
        let w = merges(&["2026-11-01", "2026-11-02"])
            .window(d("2026-11-30"), 90)
            .unwrap();
        assert_eq!((w.train().len(), w.held_out().len()), (2, 0));
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the merges file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::RawFile>(reference, "Merges", &[])
            .unwrap();
    }
}
