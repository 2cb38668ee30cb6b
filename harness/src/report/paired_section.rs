//! The paired assertions in a report: the Markdown section and the JSON rows.

use std::fmt::Write as _;

use super::{shown, PairedResult};

/// The `## Paired assertions` section (empty when the suite has none).
pub(super) fn paired_markdown(paired: &[PairedResult]) -> String {
    if paired.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Paired assertions\n\n");
    md.push_str("The suite's paired assertions (`ranklab check`): the same query through the legacy and the current wiring on the same first stage; an assertion holds when `above` ranks above `below`.\n\n");
    for p in paired {
        let failed = p.verdicts.iter().filter(|v| !v.pass()).count();
        let _ = writeln!(
            md,
            "`{}`: {} of {} expectations met{}.\n",
            shown(&p.path),
            p.verdicts.len() - failed,
            p.verdicts.len(),
            if failed > 0 {
                format!(", {failed} FAILED")
            } else {
                String::new()
            }
        );
        md.push_str(&crate::paired::table(&p.verdicts));
        md.push('\n');
    }
    md
}

pub(super) fn paired_json(paired: &[PairedResult]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = paired
        .iter()
        .flat_map(|p| {
            p.verdicts.iter().map(|v| {
                serde_json::json!({
                    "file": shown(&p.path),
                    "assertion": v.id,
                    "wiring": v.wiring.name(),
                    "above_rank": v.above_rank,
                    "below_rank": v.below_rank,
                    "expected": v.expected.as_str(),
                    "actual": v.actual.as_str(),
                    "pass": v.pass(),
                })
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}
