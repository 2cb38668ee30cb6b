//! What an ADR quotes from a report: win/tie/loss of every configuration against the baseline
//! on the Δ measures, and a one-paragraph decision written from the figures.
//!
//! The decision recommends switching to a configuration only when it is detectably better
//! (Holm-adjusted p below α, positive Δ) on a Δ measure and detectably worse on none; otherwise
//! it recommends keeping the baseline. It then states, for every Δ measure and per
//! configuration, its wins, ties and lost tasks, each lost task with the rank of the first
//! expected document (baseline -> it), so the ADR can name what would get worse; where that
//! rank did not change (a later expected document moved down), the measure's values follow in
//! brackets.

use crate::report::stats_section::Computed;
use crate::report::table::Column;
use crate::stats::{format_p, format_signed, Paired, TIE_EPSILON};

/// Lost tasks listed by name in the decision, per configuration; the rest are counted.
const LISTED: usize = 3;

/// `W/T/L <measure>` columns, one per Δ measure: `wins/ties/losses` per configuration, `—` on
/// the baseline's row.
pub fn wtl_columns(c: &Computed) -> Vec<Column> {
    c.delta_measures
        .iter()
        .map(|&m| {
            let cells: Vec<String> = c.paired[m]
                .iter()
                .map(|p| match p {
                    None => "—".to_string(),
                    Some(p) => format!("{}/{}/{}", p.wins, p.ties, p.losses),
                })
                .collect();
            Column::new(format!("W/T/L {}", c.measures[m]), cells)
        })
        .collect()
}

/// Per configuration other than the baseline, per measure of the set: wins, ties, losses (JSON).
pub fn wtl_json(c: &Computed) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for (i, name) in c.names.iter().enumerate() {
        if i == c.baseline {
            continue;
        }
        let mut by = serde_json::Map::new();
        for (m, measure) in c.measures.iter().enumerate() {
            if let Some(p) = &c.paired[m][i] {
                by.insert(
                    measure.clone(),
                    serde_json::json!({"wins": p.wins, "ties": p.ties, "losses": p.losses}),
                );
            }
        }
        out.insert(name.clone(), serde_json::Value::Object(by));
    }
    serde_json::Value::Object(out)
}

/// Indices of the tasks where configuration `config` is below the baseline on `measure`.
pub fn lost_tasks(c: &Computed, config: usize, measure: usize) -> Vec<usize> {
    let (base, other) = (c.column(c.baseline, measure), c.column(config, measure));
    (0..base.len())
        .filter(|&t| other[t] - base[t] < -TIE_EPSILON)
        .collect()
}

fn detectable(p: &Paired, alpha: f64) -> bool {
    p.p_holm < alpha && p.delta.abs() > TIE_EPSILON
}

/// The decision paragraph (one line of Markdown, no trailing newline).
///
/// `tasks`: task ids in suite order; `ranks[config][task]`: rank of the first expected document
/// (None: not retrieved).
pub fn decision(
    c: &Computed,
    tasks: &[String],
    ranks: &[Vec<Option<usize>>],
    alpha: f64,
) -> String {
    let base = c.baseline_name();
    let measures: Vec<&str> = c
        .delta_measures
        .iter()
        .map(|&m| c.measures[m].as_str())
        .collect();
    let on = join_or(&measures);
    let n = tasks.len();
    let compared = match c.names.len() - 1 {
        1 => "the 1 configuration".to_string(),
        k => format!("the {k} configurations"),
    };
    let test = format!(
        "two-sided paired randomization test, Holm-adjusted over {compared} compared, α = {alpha}, {n} tasks"
    );
    let better_or_worse = |i: usize, up: bool| -> Vec<(usize, &Paired)> {
        c.delta_measures
            .iter()
            .filter_map(|&m| {
                c.paired[m][i]
                    .as_ref()
                    .filter(|p| detectable(p, alpha) && (p.delta > 0.0) == up)
                    .map(|p| (m, p))
            })
            .collect()
    };
    let figures = |m: usize, p: &Paired| {
        format!(
            "{} Δ {}, p (Holm) {}",
            c.measures[m],
            format_signed(p.delta),
            format_p(p.p_holm)
        )
    };
    // Candidates: detectably better somewhere, detectably worse nowhere; the best has the
    // largest Δ on the first Δ measure it is better on (then replay order).
    let mut candidates: Vec<(usize, f64)> = (0..c.names.len())
        .filter(|&i| i != c.baseline)
        .filter(|&i| !better_or_worse(i, true).is_empty() && better_or_worse(i, false).is_empty())
        .map(|i| (i, better_or_worse(i, true)[0].1.delta))
        .collect();
    candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));

    let mut out = match candidates.first() {
        Some(&(best, _)) => {
            let why: Vec<String> = better_or_worse(best, true)
                .into_iter()
                .map(|(m, p)| figures(m, p))
                .collect();
            let mut s = format!(
                "Recommend `{}` over the baseline `{base}`: it is detectably better ({}) and detectably worse on none of {on} ({test}).",
                c.names[best],
                why.join("; ")
            );
            let others: Vec<String> = candidates[1..]
                .iter()
                .map(|&(i, _)| format!("`{}`", c.names[i]))
                .collect();
            if !others.is_empty() {
                s.push_str(&format!(
                    " Also detectably better and never worse: {}.",
                    others.join(", ")
                ));
            }
            s
        }
        None => format!(
            "Recommend keeping `{base}`: no configuration is detectably better on {on} ({test})."
        ),
    };
    // Detectably worse configurations.
    let worse: Vec<String> = (0..c.names.len())
        .filter(|&i| i != c.baseline)
        .filter_map(|i| {
            let w = better_or_worse(i, false);
            (!w.is_empty()).then(|| {
                let f: Vec<String> = w.into_iter().map(|(m, p)| figures(m, p)).collect();
                format!("`{}` ({})", c.names[i], f.join("; "))
            })
        })
        .collect();
    if !worse.is_empty() {
        out.push_str(&format!(" Detectably worse: {}.", worse.join(", ")));
    }
    // Wins, ties and lost tasks on every Δ measure.
    for (i, &m) in c.delta_measures.iter().enumerate() {
        if let Some(sentence) = wtl_sentence(c, tasks, ranks, m, i == 0) {
            out.push(' ');
            out.push_str(&sentence);
        }
    }
    out
}

/// A cold query that costs more than this many times the baseline's "costs more" (below it, the
/// difference is within what two measurements of one configuration differ by on a loaded machine).
pub const COSTS_MORE: f64 = 1.2;

/// The Decision's cost sentence: every configuration that is not detectably better than the
/// baseline on any Δ measure and whose cold p50 per query (`cold_p50`, from `costs.json`) is
/// more than [`COSTS_MORE`] times the baseline's. None when the baseline's cost is not measured
/// or no configuration is such.
pub fn cost_sentence(
    c: &Computed,
    alpha: f64,
    cold_p50: &dyn Fn(&str) -> Option<f64>,
) -> Option<String> {
    let base = cold_p50(c.baseline_name()).filter(|b| *b > 0.0)?;
    let dearer: Vec<String> = (0..c.names.len())
        .filter(|&i| i != c.baseline)
        .filter(|&i| {
            !c.delta_measures.iter().any(|&m| {
                c.paired[m][i]
                    .as_ref()
                    .is_some_and(|p| detectable(p, alpha) && p.delta > 0.0)
            })
        })
        .filter_map(|i| {
            let ms = cold_p50(&c.names[i])?;
            (ms > base * COSTS_MORE).then(|| {
                format!(
                    "`{}` ({} ms, {}×)",
                    c.names[i],
                    super::costs::sig3(ms),
                    super::costs::sig3(ms / base)
                )
            })
        })
        .collect();
    if dearer.is_empty() {
        return None;
    }
    Some(format!(
        "Not detectably better and dearer per query (cold p50, against the baseline's {} ms; section Cost per query): {}.",
        super::costs::sig3(base),
        dearer.join(", ")
    ))
}

/// "On MRR against `base`: `x` wins 6, ties 18, loses no task; ..." for Δ measure `m`, every
/// configuration but the baseline, with up to [`LISTED`] lost tasks and their first expected
/// document's rank (baseline -> configuration); `explain` says what those ranks are (the first
/// sentence). None when there is no configuration to compare.
fn wtl_sentence(
    c: &Computed,
    tasks: &[String],
    ranks: &[Vec<Option<usize>>],
    m: usize,
    explain: bool,
) -> Option<String> {
    let parts: Vec<String> = (0..c.names.len())
        .filter(|&i| i != c.baseline)
        .map(|i| {
            let lost = lost_tasks(c, i, m);
            let p = c.paired[m][i].as_ref();
            let (w, t) = p.map_or((0, 0), |p| (p.wins, p.ties));
            let show = |r: Option<usize>| r.map_or("-".to_string(), |x| x.to_string());
            let listed: Vec<String> = lost
                .iter()
                .take(LISTED)
                .map(|&t| {
                    let (rb, rn) = (ranks[c.baseline][t], ranks[i][t]);
                    // The first expected document kept its rank: a later one moved down, so
                    // the rank alone would read as no change; name the measure's values.
                    let values = if rb == rn {
                        format!(
                            " ({} {:.4} -> {:.4})",
                            c.measures[m],
                            c.column(c.baseline, m)[t],
                            c.column(i, m)[t]
                        )
                    } else {
                        String::new()
                    };
                    format!("{}: {} -> {}{values}", tasks[t], show(rb), show(rn))
                })
                .collect();
            let more = match lost.len().saturating_sub(LISTED) {
                0 => String::new(),
                k => format!(", and {k} more"),
            };
            let lost_text = match lost.len() {
                0 => "loses no task".to_string(),
                1 => format!("loses 1 task ({})", listed.join(", ")),
                k => format!("loses {k} tasks ({}{more})", listed.join(", ")),
            };
            format!("`{}` wins {w}, ties {t}, {lost_text}", c.names[i])
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let explain = if explain {
        " (rank of the first expected document, baseline -> configuration)"
    } else {
        ""
    };
    Some(format!(
        "On {} against `{}`{explain}: {}.",
        c.measures[m],
        c.baseline_name(),
        parts.join("; ")
    ))
}

fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => a.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The sentence that opens the Decision when a check of the run failed (`failures`: one phrase
/// each, see `report::failures`); None when every check held.
pub fn failed_checks(failures: &[String]) -> Option<String> {
    (!failures.is_empty()).then(|| {
        format!(
            "FAIL — {}; the run exits 1 whatever the comparison shows.",
            failures.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{against_baseline, Options};

    /// Two configurations, `[task][measure]` values of recall@5 and MRR.
    fn computed(base: &[[f64; 2]], other: &[[f64; 2]]) -> Computed {
        let values: Vec<Vec<Vec<f64>>> = [base, other]
            .iter()
            .map(|v| v.iter().map(|t| t.to_vec()).collect())
            .collect();
        let paired = (0..2)
            .map(|m| {
                let col = |c: usize| values[c].iter().map(|t| t[m]).collect::<Vec<_>>();
                let mut p = against_baseline(&col(0), &[&col(1)], &Options::default()).unwrap();
                vec![None, Some(p.remove(0))]
            })
            .collect();
        Computed {
            names: vec!["fusion".into(), "fusion+ce".into()],
            baseline: 0,
            measures: vec!["recall@5".into(), "MRR".into()],
            delta_measures: vec![0, 1],
            values,
            paired,
            options: Options::default(),
        }
    }

    /// The cost sentence, by hand: `fusion+ce` is not detectably better (4 tasks), 1000 ms
    /// against fusion's 10 ms is 100× (> 1.2×): named; at 11 ms (1.1×) it is not; with no
    /// baseline measurement there is no sentence.
    #[test]
    fn a_dearer_configuration_that_is_not_better_is_named_with_its_ratio() {
        let c = computed(
            &[[1.0, 1.0], [1.0, 1.0], [0.0, 0.1], [1.0, 0.5]],
            &[[1.0, 1.0], [0.0, 1.0 / 9.0], [1.0, 1.0 / 3.0], [1.0, 0.5]],
        );
        let ms = |base: Option<f64>, other: f64| {
            move |n: &str| if n == "fusion" { base } else { Some(other) }
        };
        assert_eq!(
            cost_sentence(&c, 0.05, &ms(Some(10.0), 1000.0)).as_deref(),
            Some("Not detectably better and dearer per query (cold p50, against the baseline's 10.0 ms; section Cost per query): `fusion+ce` (1000 ms, 100×).")
        );
        assert_eq!(cost_sentence(&c, 0.05, &ms(Some(10.0), 11.0)), None);
        assert_eq!(cost_sentence(&c, 0.05, &ms(None, 1000.0)), None);
    }

    #[test]
    fn a_small_loss_keeps_the_baseline_and_names_the_lost_task() {
        // By hand: first expected ranks fusion 1, 1, 10, 2 and fusion+ce 1, 9, 3, 2, so
        // recall@5 1, 1, 0, 1 against 1, 0, 1, 1 (T2 lost, T3 won) and MRR 1, 1, 0.1, 0.5
        // against 1, 1/9, 1/3, 0.5 (T2 lost, T3 won): 1/2/1 on both; 4 tasks cannot be
        // significant (the smallest two-sided sign-flip p with 2 differing tasks is 0.5).
        let c = computed(
            &[[1.0, 1.0], [1.0, 1.0], [0.0, 0.1], [1.0, 0.5]],
            &[[1.0, 1.0], [0.0, 1.0 / 9.0], [1.0, 1.0 / 3.0], [1.0, 0.5]],
        );
        let tasks: Vec<String> = ["T1", "T2", "T3", "T4"].map(String::from).to_vec();
        let ranks = vec![
            vec![Some(1), Some(1), Some(10), Some(2)],
            vec![Some(1), Some(9), Some(3), Some(2)],
        ];
        let d = decision(&c, &tasks, &ranks, 0.05);
        assert!(
            d.starts_with("Recommend keeping `fusion`: no configuration is detectably better on recall@5 or MRR"),
            "{d}"
        );
        assert!(
            d.contains("`fusion+ce` wins 1, ties 2, loses 1 task (T2: 1 -> 9)."),
            "{d}"
        );
        assert!(!d.contains("Detectably worse"), "{d}");
        let cols = wtl_columns(&c);
        assert_eq!(cols[0].name(), "W/T/L recall@5");
        assert_eq!(cols[0].get(0).unwrap().to_string(), "—");
        assert_eq!(cols[0].get(1).unwrap().to_string(), "1/2/1");
        assert_eq!(cols[1].get(1).unwrap().to_string(), "1/2/1");
    }

    #[test]
    fn every_delta_measure_gets_its_own_wins_ties_and_losses() {
        // By hand, one expected document per task, recall@5 = 1 when its rank is <= 5, MRR =
        // 1 / rank. fusion ranks it 1, 2, 10, 2 (recall@5 1, 1, 0, 1; MRR 1, 0.5, 0.1, 0.5);
        // fusion+ce 1, 1, 4, 8 (recall@5 1, 1, 1, 0; MRR 1, 1, 0.25, 0.125).
        // recall@5: T3 won, T4 lost, T1 and T2 tied: 1/2/1.
        // MRR: T2 and T3 won, T4 lost, T1 tied: 2/1/1.
        let c = computed(
            &[[1.0, 1.0], [1.0, 0.5], [0.0, 0.1], [1.0, 0.5]],
            &[[1.0, 1.0], [1.0, 1.0], [1.0, 0.25], [0.0, 0.125]],
        );
        let tasks: Vec<String> = ["T1", "T2", "T3", "T4"].map(String::from).to_vec();
        let ranks = vec![
            vec![Some(1), Some(2), Some(10), Some(2)],
            vec![Some(1), Some(1), Some(4), Some(8)],
        ];
        let d = decision(&c, &tasks, &ranks, 0.05);
        assert!(
            d.contains(
                "On recall@5 against `fusion` (rank of the first expected document, baseline -> configuration): `fusion+ce` wins 1, ties 2, loses 1 task (T4: 2 -> 8)."
            ),
            "{d}"
        );
        assert!(
            d.ends_with(
                " On MRR against `fusion`: `fusion+ce` wins 2, ties 1, loses 1 task (T4: 2 -> 8)."
            ),
            "{d}"
        );
        assert_eq!(
            d.matches("rank of the first expected document").count(),
            1,
            "{d}"
        );
    }

    #[test]
    fn a_loss_behind_an_unchanged_first_rank_names_the_values() {
        // By hand: T1 has two expected documents; both configurations rank the first at 1, the
        // second falls from rank 2 (recall@5 1) to rank 7 (recall@5 0.5). MRR stays 1.
        let c = computed(&[[1.0, 1.0], [1.0, 1.0]], &[[0.5, 1.0], [1.0, 1.0]]);
        let tasks: Vec<String> = ["T1", "T2"].map(String::from).to_vec();
        let ranks = vec![vec![Some(1), Some(3)], vec![Some(1), Some(3)]];
        let d = decision(&c, &tasks, &ranks, 0.05);
        assert!(
            d.contains("loses 1 task (T1: 1 -> 1 (recall@5 1.0000 -> 0.5000))."),
            "{d}"
        );
    }

    #[test]
    fn a_configuration_better_on_every_task_is_recommended() {
        // 10 tasks, MRR 0.5 -> 1 on each, recall@5 tied: exact sign-flip p = 2 / 2^10 < 0.05.
        let c = computed(&[[1.0, 0.5]; 10], &[[1.0, 1.0]; 10]);
        let tasks: Vec<String> = (1..=10).map(|i| format!("T{i}")).collect();
        let ranks = vec![vec![Some(2); 10], vec![Some(1); 10]];
        let d = decision(&c, &tasks, &ranks, 0.05);
        assert!(
            d.starts_with("Recommend `fusion+ce` over the baseline `fusion`: it is detectably better (MRR Δ +0.5000, p (Holm) 0.0020)"),
            "{d}"
        );
        assert!(
            d.contains("`fusion+ce` wins 0, ties 10, loses no task"),
            "{d}"
        );
    }
}
