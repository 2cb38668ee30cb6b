//! Progress bars on stderr (indicatif), hidden when stderr is not a terminal so logs and CI
//! output stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps labelled `what`; hidden when stderr is not a terminal.
pub(crate) fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} {elapsed}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// A bar that also shows the rate (queries/s), for engines asked over a protocol.
pub(crate) fn rate_bar(len: u64, what: &str) -> ProgressBar {
    let pb = bar(len, what);
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} {per_sec} {elapsed}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb
}
