//! The one-line reading of a family of comparisons, the sentence an ADR quotes: "no configuration
//! differs significantly from the baseline at 0.05", or which ones do, on which measure, in which
//! direction, with Δ and the Holm-adjusted p.

use super::{format_p, format_signed, Paired};

/// One configuration against the baseline on one measure.
#[derive(Debug, Clone, Copy)]
pub struct Finding<'a> {
    /// The configuration (or run).
    pub name: &'a str,
    /// The measure's display name.
    pub measure: &'a str,
    /// Its statistics.
    pub paired: &'a Paired,
}

/// The reading at level `alpha` of `findings` (every compared configuration × measure, in display
/// order); `noun` names what is compared ("configuration", "run"), `compared` how many of them
/// there are besides the baseline, `measures` the measures' display names.
pub fn reading(
    baseline: &str,
    noun: &str,
    compared: usize,
    measures: &[&str],
    findings: &[Finding<'_>],
    alpha: f64,
) -> String {
    if compared == 0 {
        return format!(
            "Only the baseline `{baseline}` was run: there is nothing to compare it with."
        );
    }
    let family = if compared == 1 {
        format!("two-sided paired randomization test, one {noun} compared with the baseline")
    } else {
        format!("two-sided paired randomization test, Holm-adjusted over the {compared} {noun}s compared with the baseline")
    };
    let mut names: Vec<&str> = Vec::new();
    for f in findings.iter().filter(|f| f.paired.significant(alpha)) {
        if !names.contains(&f.name) {
            names.push(f.name);
        }
    }
    if names.is_empty() {
        return format!(
            "No {noun} differs significantly from the baseline `{baseline}` at {alpha} on {} ({family}).",
            join_and(&measures.iter().map(|m| m.to_string()).collect::<Vec<_>>())
        );
    }
    let mut parts = Vec::new();
    for name in &names {
        let found: Vec<String> = findings
            .iter()
            .filter(|f| f.name == *name && f.paired.significant(alpha))
            .map(|f| {
                let dir = if f.paired.delta > 0.0 {
                    "higher"
                } else {
                    "lower"
                };
                format!(
                    "{dir} on {} (Δ {}, p {})",
                    f.measure,
                    format_signed(f.paired.delta),
                    format_p(f.paired.p_holm)
                )
            })
            .collect();
        parts.push(format!("`{name}` is {}", join_and(&found)));
    }
    let rest = compared - names.len();
    let tail = match rest {
        0 => String::new(),
        1 => format!("; the other {noun} does not differ significantly"),
        _ => format!("; the other {rest} {noun}s do not differ significantly"),
    };
    format!(
        "Against the baseline `{baseline}` at {alpha} ({family}): {}{tail}.",
        parts.join("; ")
    )
}

/// `a`, `a and b`, `a, b and c`.
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{paired, Options};

    #[test]
    fn none_significant() {
        let p = paired(&[0.5, 1.0, 0.0], &[1.0, 0.5, 0.0], &Options::default()).unwrap();
        let f = [Finding {
            name: "ce",
            measure: "MRR",
            paired: &p,
        }];
        assert_eq!(
            reading("fusion", "configuration", 1, &["recall@5", "MRR"], &f, 0.05),
            "No configuration differs significantly from the baseline `fusion` at 0.05 on recall@5 and MRR \
             (two-sided paired randomization test, one configuration compared with the baseline)."
        );
    }

    #[test]
    fn names_the_significant_ones() {
        let base = [0.0; 8];
        let worse = [-1.0; 8];
        let same = [0.0; 8];
        let a = paired(&base, &worse, &Options::default()).unwrap();
        let b = paired(&base, &same, &Options::default()).unwrap();
        let f = [
            Finding {
                name: "a",
                measure: "MRR",
                paired: &a,
            },
            Finding {
                name: "a",
                measure: "recall@5",
                paired: &a,
            },
            Finding {
                name: "b",
                measure: "MRR",
                paired: &b,
            },
        ];
        assert_eq!(
            reading("base", "run", 2, &["MRR", "recall@5"], &f, 0.05),
            "Against the baseline `base` at 0.05 (two-sided paired randomization test, Holm-adjusted over the 2 runs \
             compared with the baseline): `a` is lower on MRR (Δ -1.0000, p 0.0078) and lower on recall@5 \
             (Δ -1.0000, p 0.0078); the other run does not differ significantly."
        );
    }

    #[test]
    fn baseline_alone() {
        assert!(reading("b", "configuration", 0, &["MRR"], &[], 0.05)
            .starts_with("Only the baseline `b`"));
    }
}
