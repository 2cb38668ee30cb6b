//! Progress on stderr. On a terminal: an indicatif bar with the count, the elapsed time and the
//! ETA. When stderr is not a terminal (a pipe, `| tee`, a CI log): one plain line at most every
//! 15 seconds, `first stage: 120/300 (40%), 8.1/s, ETA 15s`, and a last line when a step that
//! printed one finishes; a step shorter than the interval prints nothing.
//!
//! The interval of the plain lines is read from the environment variable
//! `RANKLAB_PROGRESS_SECS` (seconds, default 15; `0` prints a line on every update, which the
//! tests use instead of waiting).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Environment variable overriding the interval between plain progress lines, in seconds.
pub(crate) const INTERVAL_ENV: &str = "RANKLAB_PROGRESS_SECS";
/// Default interval between plain progress lines.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);

/// Progress of one step: a bar on a terminal, plain timed lines otherwise.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    lines: Option<Mutex<Lines>>,
}

#[derive(Debug)]
struct Lines {
    what: String,
    len: u64,
    pos: u64,
    start: Instant,
    last: Option<Instant>,
    interval: Duration,
    printed: bool,
}

/// The interval between plain lines: `$RANKLAB_PROGRESS_SECS` or 15 s.
fn interval() -> Duration {
    std::env::var(INTERVAL_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(DEFAULT_INTERVAL, Duration::from_secs_f64)
}

/// A progress of `len` steps labelled `what`.
pub(crate) fn bar(len: u64, what: &str) -> Progress {
    styled(
        len,
        what,
        "{msg:>12} [{bar:40}] {pos}/{len} {elapsed} ETA {eta}",
    )
}

/// A progress that also shows the rate on a terminal (queries/s), for engines asked over a
/// protocol (the plain lines always show it).
pub(crate) fn rate_bar(len: u64, what: &str) -> Progress {
    styled(
        len,
        what,
        "{msg:>12} [{bar:40}] {pos}/{len} {per_sec} {elapsed} ETA {eta}",
    )
}

fn styled(len: u64, what: &str, template: &str) -> Progress {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template(template)
                .expect("static template")
                .progress_chars("=> "),
        );
        pb.set_message(what.to_string());
        return Progress {
            bar: Some(pb),
            lines: None,
        };
    }
    Progress {
        bar: None,
        lines: Some(Mutex::new(Lines {
            what: what.to_string(),
            len,
            pos: 0,
            start: Instant::now(),
            last: None,
            interval: interval(),
            printed: false,
        })),
    }
}

impl Progress {
    /// Advances by `n` steps.
    pub(crate) fn inc(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
        self.update(|l| l.pos += n);
    }

    /// Sets the steps done.
    pub(crate) fn set_position(&self, pos: u64) {
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
        self.update(|l| l.pos = pos);
    }

    /// Sets the number of steps.
    pub(crate) fn set_length(&self, len: u64) {
        if let Some(b) = &self.bar {
            b.set_length(len);
        }
        if let Some(l) = &self.lines {
            l.lock().unwrap_or_else(|e| e.into_inner()).len = len;
        }
    }

    /// Ends the step: clears the bar; prints a last plain line if the step printed any.
    pub(crate) fn finish_and_clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        if let Some(l) = &self.lines {
            let l = l.lock().unwrap_or_else(|e| e.into_inner());
            if l.printed {
                eprintln!(
                    "{}: {}/{} done in {}",
                    l.what,
                    l.pos,
                    l.len,
                    duration(l.start.elapsed())
                );
            }
        }
    }

    fn update(&self, f: impl FnOnce(&mut Lines)) {
        let Some(l) = &self.lines else { return };
        let mut l = l.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut l);
        let now = Instant::now();
        let since = now.duration_since(l.last.unwrap_or(l.start));
        if since < l.interval || (l.interval.is_zero() && l.pos == 0) {
            return;
        }
        l.last = Some(now);
        l.printed = true;
        eprintln!(
            "{}",
            line(&l.what, l.pos, l.len, now.duration_since(l.start))
        );
    }
}

/// `what: done/total (pct%), rate/s, ETA 1m 05s`.
fn line(what: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let pct = if total > 0 {
        format!(" ({:.0}%)", 100.0 * done as f64 / total as f64)
    } else {
        String::new()
    };
    let eta = if rate > 0.0 && total >= done {
        duration(Duration::from_secs_f64((total - done) as f64 / rate))
    } else {
        "unknown".to_string()
    };
    format!("{what}: {done}/{total}{pct}, {rate:.1}/s, ETA {eta}")
}

/// `42s`, `3m 05s`, `1h 02m`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_count_percentage_rate_and_eta() {
        // 30 of 120 in 10 s: 3.0/s, 90 left -> 30 s.
        assert_eq!(
            line("first stage", 30, 120, Duration::from_secs(10)),
            "first stage: 30/120 (25%), 3.0/s, ETA 30s"
        );
        // 10 of 1000 in 20 s: 0.5/s, 990 left -> 1980 s = 33 min.
        assert_eq!(
            line("ce", 10, 1000, Duration::from_secs(20)),
            "ce: 10/1000 (1%), 0.5/s, ETA 33m 00s"
        );
        assert_eq!(
            line("x", 0, 0, Duration::ZERO),
            "x: 0/0, 0.0/s, ETA unknown"
        );
        assert_eq!(duration(Duration::from_secs(3725)), "1h 02m");
    }
}
