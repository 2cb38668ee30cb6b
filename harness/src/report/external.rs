//! The report's section on external engines (Markdown and JSON): per external configuration, the
//! hits outside the corpus, the tasks counted empty and the engine's version.

use crate::replay::Replay;

/// The report's lines on external engines (empty when the experiment has none).
pub fn section(replay: &Replay) -> String {
    if replay.external.is_empty() {
        return String::new();
    }
    let mut s = String::from("## External engines\n\n");
    for e in &replay.external {
        let version = e
            .version
            .as_ref()
            .map_or(String::new(), |v| format!(" (version {v})"));
        s.push_str(&format!(
            "- `{}`{version}: {} hits name documents outside the corpus (kept, unjudged: they count as misses)",
            e.configuration, e.unjudged_hits
        ));
        if e.empty_tasks > 0 {
            s.push_str(&format!(
                "; {} tasks the engine answered with an error counted as empty rankings (`on_error: empty`)",
                e.empty_tasks
            ));
        }
        s.push_str(".\n");
    }
    s.push('\n');
    s
}

/// What each external engine did, as in the Markdown's section, for the report's JSON (None when
/// the experiment has none, so other reports keep their bytes).
pub fn json(replay: &Replay) -> Option<serde_json::Value> {
    if replay.external.is_empty() {
        return None;
    }
    Some(
        replay
            .external
            .iter()
            .map(|e| {
                serde_json::json!({
                    "configuration": e.configuration,
                    "version": e.version,
                    "hits_outside_corpus": e.unjudged_hits,
                    "tasks_counted_empty": e.empty_tasks,
                })
            })
            .collect(),
    )
}
