//! The cost sections of a report: each rerank configuration's cost per scored pair and each
//! configuration's cost per query, read from `reports/<suite>/costs.json` (the file and its
//! measurement are `replay::costs`; a report only renders them), and the Decision's cost
//! figure ([`cold_p50`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::replay::costs::MEASURE_FINETUNE_COMMAND;
pub use crate::replay::costs::{
    check_names, load, measure_suite, merge_query_costs, path_in, sig3, Cost, CostFile, CostPlan,
    Costs, NewCosts, COSTS_FILE, MEASURE_COMMAND,
};
use crate::suite::Configuration;
/// The `## Cost per scored pair` section of a report whose configurations are `configs`
/// (`models`: model key → identity, as the replay used them); empty when no configuration
/// reranks.
pub fn section(
    configs: &[&Configuration],
    models: &BTreeMap<String, String>,
    costs: &Costs,
    experiment: &str,
) -> String {
    let per_query = query_section(configs, costs, experiment);
    if configs.iter().all(|c| c.rerank.is_none()) {
        return per_query;
    }
    let mut md = String::from("## Cost per scored pair\n\n");
    let _ = writeln!(
        md,
        "Milliseconds per scored (query, section) pair of each rerank configuration's model, from `{COSTS_FILE}` beside this report: `{MEASURE_COMMAND}` (`just costs` in a checkout of ranklab) measures them and `ranklab bench` only reads them, so this report is the same bytes run after run. **Cold**: the model computes every pair of the suite's shortlists from empty caches (scores, and token vectors where the model keeps them), the wall-clock time over all pairs divided by their number; **model load**: from opening the model to its first score, apart. **Warm**: every pair served from the score cache (its file opened and verified included). Cold per query: the shortlist × the cold cost per pair. First-stage-only configurations score no pair (—).\n"
    );
    md.push_str("| configuration | rerank model | shortlist | cold ms per pair | warm ms per pair | cold ms per query | model load s |\n|---|---|---:|---:|---:|---:|---:|\n");
    let mut notes: BTreeMap<String, String> = BTreeMap::new();
    for c in configs {
        let Some(r) = &c.rerank else {
            let _ = writeln!(
                md,
                "| {} | — | — | — | — | — | — |",
                crate::report::table::md_cell(&c.name)
            );
            continue;
        };
        let key = r.model_key();
        let identity = models.get(&key).map(String::as_str).unwrap_or("");
        match costs.file.of(identity) {
            Some(m) => {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    crate::report::table::md_cell(&c.name),
                    crate::report::table::md_cell(&key),
                    r.shortlist,
                    sig3(m.cold_ms_per_pair),
                    sig3(m.warm_ms_per_pair),
                    sig3(m.cold_ms_per_pair * r.shortlist as f64),
                    sig3(m.model_load_s),
                );
                let mut note = measured_note(m);
                if r.finetune.is_some() {
                    note.push_str(
                        "; one float model per fold, each timed on its own fold's pairs (the load is every fold model's together)",
                    );
                }
                notes.insert(key, note);
            }
            None => {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | not measured | not measured | — | — |",
                    crate::report::table::md_cell(&c.name),
                    crate::report::table::md_cell(&key),
                    r.shortlist
                );
                let how = match r.scorer {
                    crate::suite::Scorer::Endpoint(_) => {
                        format!("start its server and run `{MEASURE_COMMAND} '{key}'`")
                    }
                    _ => format!("run `{MEASURE_COMMAND}`"),
                };
                let note = if r.finetune.is_some() {
                    format!("one float model per fold, trained on this suite: not measured; `{MEASURE_FINETUNE_COMMAND}` times the fold models without `--measure-costs` first to train them (`just finetune` and `just costs-finetune` in a checkout); the time to train them (seconds per epoch, pairs per second) is in the section Fine-tuning")
                } else {
                    format!("not measured for its identity `{identity}`; {how}")
                };
                notes.insert(key, note);
            }
        }
    }
    md.push('\n');
    for (key, note) in notes {
        let _ = writeln!(md, "- `{key}`: {note}.");
    }
    md.push('\n');
    md.push_str(&per_query);
    md
}

/// The measured cost per query of `experiment`'s configurations, in `configs` order (the
/// rows `costs.json` holds for it; none: "").
fn query_costs_of<'a>(
    configs: &[&Configuration],
    costs: &'a Costs,
    experiment: &str,
) -> Vec<(String, Option<&'a crate::replay::query_costs::QueryCost>)> {
    configs
        .iter()
        .map(|c| {
            let row = costs
                .file
                .configurations
                .iter()
                .find(|r| r.experiment == experiment && r.configuration == c.name);
            (c.name.clone(), row)
        })
        .collect()
}

/// The `## Cost per query` section: each configuration's whole ranking of one query, cold and
/// warm, from `costs.json`; empty when none of the experiment's configurations was measured.
fn query_section(configs: &[&Configuration], costs: &Costs, experiment: &str) -> String {
    let rows = query_costs_of(configs, costs, experiment);
    let Some(first) = rows.iter().find_map(|(_, r)| *r) else {
        return String::new();
    };
    let mut md = String::from(
        "## Cost per query

",
    );
    let _ = writeln!(
        md,
        "Milliseconds for the whole ranking of one task (first stage, fusion, rerank, penalties), each task alone through the replay's own code, from `{COSTS_FILE}` beside this report (measured by `{}` on {}, {}; `ranklab bench` only reads them). **Cold**: every query vector and pair the task needs computed by the model, as for a query never seen; **warm**: the same task again, every model output served from the caches. Percentiles are nearest-rank over the tasks. **qps cold**: one query at a time, the tasks over the sum of their cold times; **qps warm**: one replay of every task at once from the filled caches (BM25 and fusion in parallel, the models' pairs pooled). **Peak MiB**: the process's resident high-water mark over the per-query passes (corpus, indexes and loaded models included).\n",
        first.command, first.machine, first.measured_at
    );
    md.push_str("| configuration | cold p50 ms | cold p95 ms | cold p99 ms | warm p50 ms | warm p99 ms | qps cold | qps warm | peak MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (name, row) in &rows {
        let name = crate::report::table::md_cell(name);
        match row {
            Some(r) => {
                let _ = writeln!(
                    md,
                    "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    sig3(r.per_query_ms.p50),
                    sig3(r.per_query_ms.p95),
                    sig3(r.per_query_ms.p99),
                    sig3(r.per_query_ms_warm.p50),
                    sig3(r.per_query_ms_warm.p99),
                    sig3(r.qps),
                    sig3(r.qps_warm),
                    r.peak_rss_mib.map_or("—".to_string(), sig3),
                );
            }
            None => {
                let _ = writeln!(md, "| {name} | not measured | | | | | | | |");
            }
        }
    }
    md.push('\n');
    md
}

/// The cold p50 milliseconds per query of `name` in `experiment`, if measured (for the
/// Decision's cost sentence).
pub fn cold_p50(costs: &Costs, experiment: &str, name: &str) -> Option<f64> {
    costs
        .file
        .configurations
        .iter()
        .find(|r| r.experiment == experiment && r.configuration == name)
        .map(|r| r.per_query_ms.p50)
}

/// "1,043 pairs, measured 2026-12-02 13:40 UTC by `ranklab bench …` on 2 cores (…)".
fn measured_note(m: &Cost) -> String {
    format!(
        "{} pairs, measured {} by `{}` on {}",
        thousands(m.pairs),
        m.measured_at,
        m.command,
        m.machine
    )
}

/// `1043` as `1,043`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    /// By hand: thousands separated by commas.
    #[test]
    fn thousands_by_hand() {
        assert_eq!(thousands(1043), "1,043");
        assert_eq!(thousands(700), "700");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
