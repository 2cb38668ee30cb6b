//! The "Fine-tuning" section of a report whose experiments fine-tune a rerank stage: how the
//! tasks were split, what each fold trained on, its loss per epoch and time per epoch, and the
//! loss curves as `<experiment>.finetune.svg`.

use std::fmt::Write;
use std::path::PathBuf;

use crate::replay::tuned::Summary;
use crate::replay::Replay;
use crate::report::plots::svg::*;

/// Line colours, one per fold.
const PALETTE: [&str; 7] = [BLUE, RED, GREEN, "#8e44ad", "#d68910", "#17a589", "#5d6d7e"];

/// The section's Markdown and its chart file (nothing when no stage is fine-tuned).
pub fn section(replay: &Replay, stem: &str, tasks: usize) -> (String, Vec<(PathBuf, Vec<u8>)>) {
    if replay.finetuned.is_empty() {
        return (String::new(), Vec::new());
    }
    let file = format!("{stem}.finetune.svg");
    let mut md = String::from("## Fine-tuning\n\n");
    for s in &replay.finetuned {
        md.push_str(&stage_markdown(s, tasks));
    }
    let _ = writeln!(
        md,
        "![Training loss per step of each fold's model]({file})\n\nSeconds per epoch are wall-clock on the machine that trained the model (its threads in the table): they are the only figures here that another machine would change. The weights, and with them every score and rank above, are the same bytes on any run with the same pairs, settings and seed (`engine/tests/finetune_training.rs`).\n"
    );
    let svg = chart(&replay.finetuned, &format!("{stem}: fine-tuning loss"));
    (md, vec![(PathBuf::from(file), svg.into_bytes())])
}

fn stage_markdown(s: &Summary, tasks: usize) -> String {
    let mut md = String::new();
    let h = &s.hyper;
    let merges = match &s.merges_file {
        Some(p) => format!(
            " and the merges of `{}` (each fold's model trains on every merge whose query is not one of the tasks it reranks)",
            crate::report::shown(p)
        ),
        None => String::new(),
    };
    let _ = writeln!(
        md,
        "`{}` reranks with {} fine-tuned on this suite's own tasks, cross-validated by task. The {tasks} tasks are split into {} folds by a seeded shuffle (seed {}); the tasks of each fold are reranked by a model trained on the other folds' tasks only{merges}, so every rank in this report comes from a model that never saw that task. Training pairs: for each task, every relevant document's best BM25 section for the query as a positive, and, per positive, the {} first-stage documents ranked highest that the task does not judge relevant as hard negatives (never a relevant document, whatever its grade).\n",
        s.configuration,
        s.model_key.split(" fine-tuned").next().unwrap_or(&s.model_key),
        s.spec.folds,
        s.spec.seed,
        s.spec.negatives
    );
    let _ = writeln!(
        md,
        "Starting weights: the pinned int8 model (`{}`), dequantized to float (`engine/tests/dequant_oracle.rs` compares its logits with ONNX Runtime's). Training: binary cross-entropy on the logit, {} epochs, {} pairs per step, AdamW (weight decay {} on matrices and embeddings, none on biases and LayerNorm), peak learning rate {} after a linear warm-up over {}% of the steps, then linear decay to 0, gradients clipped to a global norm of {}, up to {} tokens per pair, no dropout. The fold models score in float (candle), one pair per forward pass.\n",
        s.base,
        h.epochs,
        h.batch,
        h.weight_decay,
        h.lr,
        (h.warmup * 100.0).round(),
        h.max_grad_norm,
        h.max_length
    );
    md.push_str("| fold | tasks reranked | training pairs | positives | merges | loss per epoch | seconds per epoch | pairs per second | threads | model |\n|---:|---|---:|---:|---:|---|---|---:|---:|---|\n");
    for (i, f) in s.folds.iter().enumerate() {
        let r = &f.record;
        let seconds: f64 = r.epoch_seconds.iter().sum();
        let rate = if seconds > 0.0 {
            format!("{:.2}", (r.pairs * r.epoch_losses.len()) as f64 / seconds)
        } else {
            "—".to_string()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {rate} | {} | `{}` |",
            i + 1,
            f.tasks.join(", "),
            r.pairs,
            f.positives,
            f.merges,
            r.epoch_losses
                .iter()
                .map(|l| format!("{l:.4}"))
                .collect::<Vec<_>>()
                .join(" → "),
            r.epoch_seconds
                .iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            r.threads,
            &f.key[..12.min(f.key.len())]
        );
    }
    md.push('\n');
    md
}

/// Step losses of every fold of every stage against the step, one line per fold.
fn chart(stages: &[Summary], title: &str) -> String {
    let lines: Vec<(String, &[f64])> = stages
        .iter()
        .flat_map(|s| {
            s.folds.iter().enumerate().map(move |(i, f)| {
                let name = if stages.len() > 1 {
                    format!("{} fold {}", s.configuration, i + 1)
                } else {
                    format!("fold {}", i + 1)
                };
                (name, f.record.step_losses.as_slice())
            })
        })
        .collect();
    let (plot_w, plot_h) = (520.0, 260.0);
    let (left, top) = (MARGIN + 52.0, 70.0);
    let steps = lines.iter().map(|(_, l)| l.len()).max().unwrap_or(1).max(2);
    let y_hi = lines
        .iter()
        .flat_map(|(_, l)| l.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let y_hi = ((y_hi * 10.0).ceil() / 10.0).max(0.1);
    let px = |step: usize| left + (step as f64 - 1.0) / (steps as f64 - 1.0) * plot_w;
    let py = |v: f64| top + plot_h - v / y_hi * plot_h;
    let subtitle =
        "binary cross-entropy loss of each optimizer step (mean over its pairs), per fold";
    let legend_w = lines
        .iter()
        .map(|(n, _)| text_width(n, 12.0) + 40.0)
        .fold(0.0, f64::max);
    let note =
        "Each fold's model starts from the same weights and trains on the other folds' pairs.";
    let width = chart_width(52.0 + plot_w + 24.0 + legend_w, title, subtitle, note);
    let height = top + plot_h + 64.0;
    let mut svg = Svg::new();
    svg.heading(title, subtitle);
    for i in 0..=4 {
        let v = y_hi * f64::from(i) / 4.0;
        svg.line((left, py(v)), (left + plot_w, py(v)), GRID, 1.0, None);
        svg.text(
            (left - 6.0, py(v) + 4.0),
            11.0,
            Anchor::End,
            MUTED,
            false,
            &format!("{v:.2}"),
        );
    }
    svg.line(
        (left, top + plot_h),
        (left + plot_w, top + plot_h),
        MUTED,
        1.0,
        None,
    );
    for (x, label) in [(1, "1".to_string()), (steps, steps.to_string())] {
        svg.text(
            (px(x), top + plot_h + 15.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            &label,
        );
    }
    svg.text(
        (left + plot_w / 2.0, top + plot_h + 34.0),
        12.0,
        Anchor::Middle,
        INK,
        false,
        "optimizer step",
    );
    for (c, (name, losses)) in lines.iter().enumerate() {
        let colour = PALETTE[c % PALETTE.len()];
        let points: Vec<(f64, f64)> = losses
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, &v)| (px(i + 1), py(v.min(y_hi))))
            .collect();
        svg.polyline(&points, colour, 1.5, None);
        let ly = top + 10.0 + c as f64 * 20.0;
        let lx = left + plot_w + 24.0;
        svg.line((lx, ly), (lx + 24.0, ly), colour, 2.0, None);
        svg.text((lx + 30.0, ly + 4.0), 12.0, Anchor::Start, INK, false, name);
    }
    svg.note(height - 12.0, note);
    svg.finish(width, height, title)
}
