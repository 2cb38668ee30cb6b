//! Agreement between two judges of the same (task, document) pairs — a human, taken as the
//! truth, and an LLM — and between the decisions two sets of judgments lead to.
//!
//! On grades 0..=3 ([`GradePair`]):
//! - [`confusion`]: the 4×4 matrix, rows the human's grade, columns the LLM's;
//! - [`kappa`]: Cohen's κ, unweighted or quadratic-weighted ([`Weighting`]), over the four
//!   grades 0..=3 whether or not each occurs (scikit-learn's `cohen_kappa_score` with
//!   `labels=[0, 1, 2, 3]`); `None` when the expected disagreement is zero (both judges give one
//!   and the same grade throughout: κ is 0/0);
//! - [`kappa_interval`]: its bootstrap percentile interval, resampling the pairs;
//! - [`binary`]: precision and recall of "relevant" (grade ≥ 1), the human's grades the truth;
//! - [`summarize`]: all of them for one judge, and [`Summary::reading`], the sentence a report
//!   says them in.
//!
//! On configurations:
//! - [`kendall_tau_b`]: Kendall's τ-b between two orders of the same configurations (SciPy's
//!   `kendalltau` default: ties in either order counted as neither concordant nor discordant,
//!   the denominator corrected for them); [`tau_interval`] its bootstrap interval over tasks;
//! - [`flips`]: the pairwise verdicts ([`Verdict`]) that differ between two verdict tables.
//!
//! Guarantees: the same inputs and [`Options`] give bit-identical numbers (the resamples come
//! from the seed's own agreement stream, never shared with the paired statistics), and the
//! κ interval depends only on the multiset of pairs (they are sorted before resampling).
//! Resamples whose statistic is undefined (0/0) are left out of the quantiles; when every
//! resample is, there is no interval.

use std::collections::BTreeMap;

use super::bootstrap::quantile;
use super::rng::{Source, Stream};
use super::{Interval, Options};

/// Number of grades: 0 (not relevant) ..= 3 (perfectly relevant).
pub const GRADES: usize = 4;

/// One (task, document) graded by both judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GradePair {
    /// The human's grade, 0..=3 (the truth).
    pub human: u8,
    /// The LLM's grade, 0..=3.
    pub llm: u8,
}

/// Counts of pairs: `[human][llm]`.
pub type Confusion = [[u64; GRADES]; GRADES];

/// How disagreements weigh in κ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weighting {
    /// Every disagreement weighs 1 (Cohen 1960).
    Unweighted,
    /// A disagreement of d grades weighs d² (Cohen 1968; scikit-learn's `weights="quadratic"`).
    Quadratic,
}

impl Weighting {
    fn weight(self, i: usize, j: usize) -> f64 {
        let d = i.abs_diff(j) as f64;
        match self {
            Weighting::Unweighted => f64::from(u8::from(i != j)),
            Weighting::Quadratic => d * d,
        }
    }
}

/// The confusion matrix of `pairs`. Panics on a grade above 3 (grades are checked when read).
pub fn confusion(pairs: &[GradePair]) -> Confusion {
    let mut c = [[0u64; GRADES]; GRADES];
    for p in pairs {
        assert!(
            usize::from(p.human.max(p.llm)) < GRADES,
            "grade outside 0..=3: {p:?}"
        );
        c[usize::from(p.human)][usize::from(p.llm)] += 1;
    }
    c
}

/// Cohen's κ of a confusion matrix: 1 − Σ w·observed / Σ w·expected, the expected counts
/// being the product of the margins over n. `None` with no pairs or a zero denominator.
pub fn kappa(c: &Confusion, w: Weighting) -> Option<f64> {
    let rows: Vec<f64> = c.iter().map(|r| r.iter().sum::<u64>() as f64).collect();
    let cols: Vec<f64> = (0..GRADES)
        .map(|j| c.iter().map(|r| r[j]).sum::<u64>() as f64)
        .collect();
    let n: f64 = rows.iter().sum();
    if n == 0.0 {
        return None;
    }
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..GRADES {
        for j in 0..GRADES {
            let wij = w.weight(i, j);
            observed += wij * c[i][j] as f64;
            expected += wij * rows[i] * cols[j] / n;
        }
    }
    (expected != 0.0).then(|| 1.0 - observed / expected)
}

/// The bootstrap percentile interval of κ: [`Options::resamples`] resamples of the pairs with
/// replacement, κ of each, the (1 ∓ c)/2 quantiles (type 7) of the defined ones.
pub fn kappa_interval(pairs: &[GradePair], w: Weighting, opts: &Options) -> Option<Interval> {
    let n = pairs.len();
    if n == 0 {
        return None;
    }
    let mut sorted = pairs.to_vec();
    sorted.sort();
    let head = [
        opts.seed,
        opts.resamples as u64,
        opts.confidence.to_bits(),
        u64::from(w == Weighting::Quadratic),
    ];
    let grades: Vec<f64> = sorted
        .iter()
        .map(|p| f64::from(p.human) * 16.0 + f64::from(p.llm))
        .collect();
    let bits = super::memo::remembered_some("kappa-interval/1", &head, &grades, || {
        kappa_resampled(&sorted, w, opts).map(|i| [i.lo.to_bits(), i.hi.to_bits()])
    })?;
    Some(Interval {
        lo: f64::from_bits(bits[0]),
        hi: f64::from_bits(bits[1]),
    })
}

/// [`kappa_interval`] of the sorted, non-empty `sorted`, resampled.
fn kappa_resampled(sorted: &[GradePair], w: Weighting, opts: &Options) -> Option<Interval> {
    let n = sorted.len();
    let mut src = Source::new(opts.seed, Stream::Agreement);
    let mut values = Vec::with_capacity(opts.resamples);
    for _ in 0..opts.resamples {
        let mut c = [[0u64; GRADES]; GRADES];
        for _ in 0..n {
            let p = sorted[src.below(n as u64) as usize];
            c[usize::from(p.human)][usize::from(p.llm)] += 1;
        }
        values.extend(kappa(&c, w));
    }
    interval_of(values, opts)
}

fn interval_of(mut values: Vec<f64>, opts: &Options) -> Option<Interval> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence) / 2.0;
    Some(Interval {
        lo: quantile(&values, tail),
        hi: quantile(&values, 1.0 - tail),
    })
}

/// Precision and recall of "relevant" (grade ≥ 1), the human's grades the truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binary {
    /// Pairs both call relevant.
    pub true_positives: u64,
    /// Pairs only the LLM calls relevant.
    pub false_positives: u64,
    /// Pairs only the human calls relevant.
    pub false_negatives: u64,
    /// Pairs neither calls relevant.
    pub true_negatives: u64,
    /// TP / (TP + FP); `None` when the LLM calls nothing relevant.
    pub precision: Option<f64>,
    /// TP / (TP + FN); `None` when the human calls nothing relevant.
    pub recall: Option<f64>,
}

/// [`Binary`] from a confusion matrix.
pub fn binary(c: &Confusion) -> Binary {
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    for (i, row) in c.iter().enumerate() {
        for (j, &k) in row.iter().enumerate() {
            match (i >= 1, j >= 1) {
                (true, true) => tp += k,
                (false, true) => fp += k,
                (true, false) => fn_ += k,
                (false, false) => tn += k,
            }
        }
    }
    let ratio = |a: u64, b: u64| (a + b > 0).then(|| a as f64 / (a + b) as f64);
    Binary {
        true_positives: tp,
        false_positives: fp,
        false_negatives: fn_,
        true_negatives: tn,
        precision: ratio(tp, fp),
        recall: ratio(tp, fn_),
    }
}

/// Every agreement figure of one LLM judge against people, on the pairs both graded.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Pairs graded by both.
    pub n: usize,
    /// Unweighted κ and its bootstrap interval.
    pub kappa: Option<f64>,
    /// Its interval.
    pub kappa_interval: Option<Interval>,
    /// Quadratic-weighted κ.
    pub quadratic: Option<f64>,
    /// Its interval.
    pub quadratic_interval: Option<Interval>,
    /// The confusion matrix.
    pub confusion: Confusion,
    /// Precision and recall of "relevant".
    pub binary: Binary,
}

/// κ below which (at the interval's top) a judge's grades should not decide a verdict: 0.40,
/// the top of Landis and Koch's (1977) "fair" band.
pub const KAPPA_FAIR: f64 = 0.40;

/// κ from which (at the interval's bottom) agreement is "substantial" (Landis and Koch 1977).
pub const KAPPA_SUBSTANTIAL: f64 = 0.60;

/// The figures of [`Summary`] for `pairs`.
pub fn summarize(pairs: &[GradePair], opts: &Options) -> Summary {
    let c = confusion(pairs);
    Summary {
        n: pairs.len(),
        kappa: kappa(&c, Weighting::Unweighted),
        kappa_interval: kappa_interval(pairs, Weighting::Unweighted, opts),
        quadratic: kappa(&c, Weighting::Quadratic),
        quadratic_interval: kappa_interval(pairs, Weighting::Quadratic, opts),
        confusion: c,
        binary: binary(&c),
    }
}

impl Summary {
    /// One sentence for a report: how far `who`'s grades agree with people's, and whether to
    /// decide on them (on the unweighted κ's interval: its top below [`KAPPA_FAIR`], do not;
    /// its bottom at or above [`KAPPA_SUBSTANTIAL`], substantial; otherwise not established).
    pub fn reading(&self, who: &str) -> String {
        let (Some(k), Some(i)) = (self.kappa, self.kappa_interval) else {
            if self.n > 0 {
                return format!(
                    "{who}'s grades cannot be compared with people's: {} pair{} graded by both, all of one grade, so κ is undefined; do not decide on its grades until people have judged pairs of other grades too.",
                    self.n,
                    if self.n == 1 { "" } else { "s" },
                );
            }
            return format!(
                "{who}'s grades cannot be compared with people's: 0 pairs graded by both; grade judged pairs too (`ranklab judge --llm … --also-judged`) before deciding on its grades."
            );
        };
        let advice = if i.hi < KAPPA_FAIR {
            "do not decide on them"
        } else if i.lo >= KAPPA_SUBSTANTIAL {
            "substantial agreement (Landis and Koch); still check the verdicts they flip"
        } else {
            "agreement not established; do not decide on them alone"
        };
        let q = self
            .quadratic
            .map_or(String::new(), |q| format!(", quadratic-weighted {q:.2}"));
        format!(
            "{who}'s grades agree with the {} human ones at κ {k:.2} [{:.2}, {:.2}]{q}: {advice}.",
            self.n, i.lo, i.hi
        )
    }
}

/// Kendall's τ-b between `x` and `y`, the same items' values in two orders (equal lengths):
/// (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)), n₀ = n(n−1)/2 and n₁, n₂ the pairs tied
/// in x and in y. `None` with fewer than two items or when either side is all ties.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "τ of orders of different lengths");
    let n = x.len();
    let (mut s, mut tied_x, mut tied_y) = (0i64, 0u64, 0u64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = sign(x[i], x[j]);
            let dy = sign(y[i], y[j]);
            tied_x += u64::from(dx == 0);
            tied_y += u64::from(dy == 0);
            s += dx * dy;
        }
    }
    let n0 = (n * n.saturating_sub(1) / 2) as u64;
    let den = ((n0 - tied_x) as f64 * (n0 - tied_y) as f64).sqrt();
    (den > 0.0).then(|| s as f64 / den)
}

/// -1, 0 or 1 as a is below, equal to (0.0 and -0.0 are equal) or above b. Panics on NaN.
fn sign(a: f64, b: f64) -> i64 {
    assert!(!a.is_nan() && !b.is_nan(), "τ of NaN values");
    i64::from(a > b) - i64::from(a < b)
}

/// The bootstrap interval of τ-b between the configurations' mean values under two sets of
/// judgments: `a[c][t]` and `b[c][t]` are configuration c's value on task t under each.
/// Each resample draws the tasks with replacement (the same tasks for both sides).
pub fn tau_interval(a: &[Vec<f64>], b: &[Vec<f64>], opts: &Options) -> Option<Interval> {
    assert_eq!(a.len(), b.len(), "the same configurations on both sides");
    let tasks = a.first().map_or(0, Vec::len);
    assert!(
        a.iter().chain(b).all(|r| r.len() == tasks),
        "every configuration has a value per task"
    );
    if tasks == 0 {
        return None;
    }
    let head = [
        opts.seed,
        opts.resamples as u64,
        opts.confidence.to_bits(),
        a.len() as u64,
        tasks as u64,
    ];
    let values: Vec<f64> = a.iter().chain(b).flatten().copied().collect();
    let bits = super::memo::remembered_some("tau-interval/1", &head, &values, || {
        tau_resampled(a, b, tasks, opts).map(|i| [i.lo.to_bits(), i.hi.to_bits()])
    })?;
    Some(Interval {
        lo: f64::from_bits(bits[0]),
        hi: f64::from_bits(bits[1]),
    })
}

/// [`tau_interval`] of `tasks` > 0 tasks, resampled.
fn tau_resampled(a: &[Vec<f64>], b: &[Vec<f64>], tasks: usize, opts: &Options) -> Option<Interval> {
    let mut src = Source::new(opts.seed, Stream::Agreement);
    let mut values = Vec::with_capacity(opts.resamples);
    let mut idx = vec![0usize; tasks];
    for _ in 0..opts.resamples {
        for i in idx.iter_mut() {
            *i = src.below(tasks as u64) as usize;
        }
        let mean = |row: &Vec<f64>| idx.iter().map(|&t| row[t]).sum::<f64>() / tasks as f64;
        let ma: Vec<f64> = a.iter().map(mean).collect();
        let mb: Vec<f64> = b.iter().map(mean).collect();
        values.extend(kendall_tau_b(&ma, &mb));
    }
    interval_of(values, opts)
}

/// The verdict of a pairwise comparison `(a, b)`: a is detectably better than b, detectably
/// worse, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// a detectably better than b.
    Better,
    /// a detectably worse than b.
    Worse,
    /// No detectable difference.
    NotDetectable,
}

impl Verdict {
    /// The verdict of (b, a).
    pub fn reversed(self) -> Verdict {
        match self {
            Verdict::Better => Verdict::Worse,
            Verdict::Worse => Verdict::Better,
            Verdict::NotDetectable => Verdict::NotDetectable,
        }
    }

    /// "better", "worse", "not detectable".
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NotDetectable => "not detectable",
        }
    }
}

/// A table of verdicts: (a, b) → how a compares with b.
pub type Verdicts = BTreeMap<(String, String), Verdict>;

/// A pairwise verdict that differs between two tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flip {
    /// The first configuration.
    pub a: String,
    /// The second.
    pub b: String,
    /// How a compared with b in the first table.
    pub before: Verdict,
    /// And in the second.
    pub after: Verdict,
}

/// Every pair of `before` whose verdict in `after` differs, in `before`'s key order. A pair
/// may be keyed (b, a) in `after`; its verdict is then reversed. Pairs absent from `after`
/// are not compared.
pub fn flips(before: &Verdicts, after: &Verdicts) -> Vec<Flip> {
    let mut out = Vec::new();
    for ((a, b), &v) in before {
        let other = after
            .get(&(a.clone(), b.clone()))
            .copied()
            .or_else(|| after.get(&(b.clone(), a.clone())).map(|v| v.reversed()));
        if let Some(w) = other.filter(|&w| w != v) {
            out.push(Flip {
                a: a.clone(),
                b: b.clone(),
                before: v,
                after: w,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(h: &[u8], l: &[u8]) -> Vec<GradePair> {
        h.iter()
            .zip(l)
            .map(|(&human, &llm)| GradePair { human, llm })
            .collect()
    }

    /// By hand: human [0,0,1,1,2,3], LLM [0,1,1,1,3,3]. Observed agreement 4/6. Margins:
    /// human (2,2,1,1), LLM (1,3,0,2); chance agreement (2·1 + 2·3 + 0 + 1·2)/36 = 10/36.
    /// κ = (4/6 − 10/36)/(1 − 10/36) = (14/36)/(26/36) = 7/13.
    /// Quadratic: observed Σ w·c = 1 (0→1) + 1 (2→3) = 2; expected Σ w·r·c/n over the
    /// products r_i c_j (i−j)²: row 0 (r 2): 3·1 + 2·9 = 21 → 42; row 1 (r 2): 1·1 + 2·4 = 9
    /// → 18; row 2 (r 1): 1·4 + 3·1 + 2·1 = 9; row 3 (r 1): 1·9 + 3·4 = 21; sum 90, over 6 =
    /// 15. κ_w = 1 − 2/15 = 13/15.
    #[test]
    fn kappa_by_hand() {
        let c = confusion(&pairs(&[0, 0, 1, 1, 2, 3], &[0, 1, 1, 1, 3, 3]));
        assert_eq!(c[0], [1, 1, 0, 0]);
        assert_eq!(c[2], [0, 0, 0, 1]);
        let k = kappa(&c, Weighting::Unweighted).unwrap();
        assert!((k - 7.0 / 13.0).abs() < 1e-15, "{k}");
        let kw = kappa(&c, Weighting::Quadratic).unwrap();
        assert!((kw - 13.0 / 15.0).abs() < 1e-15, "{kw}");
    }

    /// By hand: human [1, 1, 1], LLM [0, 1, 2]: pₒ = 1/3, pₑ = (3 · 1)/9 = 1/3, κ = 0. Both
    /// judges all 1: pₑ = 1, κ = 0/0.
    #[test]
    fn kappa_is_zero_at_chance_and_undefined_when_both_give_one_grade() {
        let c = confusion(&pairs(&[1, 1, 1], &[0, 1, 2]));
        assert_eq!(kappa(&c, Weighting::Unweighted), Some(0.0));
        let c = confusion(&pairs(&[1, 1, 1], &[1, 1, 1]));
        assert_eq!(kappa(&c, Weighting::Unweighted), None);
        assert_eq!(kappa(&c, Weighting::Quadratic), None);
        assert_eq!(kappa(&confusion(&[]), Weighting::Quadratic), None);
    }

    /// By hand: human [0,1,2,3,0], LLM [1,1,0,2,0]: relevant (≥ 1) human F T T T F, LLM
    /// T T F T F → TP 2 (docs 2, 4), FP 1 (doc 1), FN 1 (doc 3), TN 1: precision 2/3, recall 2/3.
    #[test]
    fn precision_and_recall_by_hand() {
        let b = binary(&confusion(&pairs(&[0, 1, 2, 3, 0], &[1, 1, 0, 2, 0])));
        assert_eq!(
            (
                b.true_positives,
                b.false_positives,
                b.false_negatives,
                b.true_negatives
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(b.precision, Some(2.0 / 3.0));
        assert_eq!(b.recall, Some(2.0 / 3.0));
        let none = binary(&confusion(&pairs(&[0, 0], &[0, 0])));
        assert_eq!((none.precision, none.recall), (None, None));
    }

    /// By hand: x = [1, 2, 3, 4], y = [1, 3, 2, 4]: of the 6 pairs only (2, 3) is discordant,
    /// τ = (5 − 1)/6 = 2/3. With ties x = [1, 1, 2, 3], y = [1, 2, 2, 3]: pairs (0,1) tied in
    /// x, (1,2) tied in y, the other 4 concordant: τ_b = 4 / √((6−1)(6−1)) = 0.8.
    #[test]
    fn tau_b_by_hand() {
        let t = kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((t - 2.0 / 3.0).abs() < 1e-15);
        let t = kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 2.0, 3.0]).unwrap();
        assert!((t - 0.8).abs() < 1e-15);
        assert_eq!(kendall_tau_b(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(kendall_tau_b(&[1.0], &[1.0]), None);
        // 0.0 and -0.0 are one value: a tie, as SciPy counts it.
        let t = kendall_tau_b(&[0.0, -0.0, 1.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((t - 2.0 / 6f64.sqrt()).abs() < 1e-15, "{t}");
    }

    #[test]
    fn flips_match_reversed_keys_and_skip_missing_pairs() {
        let k = |a: &str, b: &str| (a.to_string(), b.to_string());
        let before: Verdicts = [
            (k("ce", "fusion"), Verdict::NotDetectable),
            (k("dense", "fusion"), Verdict::Worse),
            (k("bm25", "fusion"), Verdict::Worse),
            (k("x", "fusion"), Verdict::Better),
        ]
        .into();
        let after: Verdicts = [
            (k("ce", "fusion"), Verdict::Better),
            (k("fusion", "dense"), Verdict::Better), // dense worse than fusion: no flip
            (k("fusion", "bm25"), Verdict::NotDetectable),
        ]
        .into();
        let got = flips(&before, &after);
        assert_eq!(
            got,
            [
                Flip {
                    a: "bm25".into(),
                    b: "fusion".into(),
                    before: Verdict::Worse,
                    after: Verdict::NotDetectable
                },
                Flip {
                    a: "ce".into(),
                    b: "fusion".into(),
                    before: Verdict::NotDetectable,
                    after: Verdict::Better
                },
            ]
        );
    }

    /// The hand case of `kappa_by_hand` (κ 7/13 ≈ 0.54, quadratic 13/15 ≈ 0.87): six pairs give
    /// a wide interval that straddles 0.4 and 0.6, so agreement is not established. Pairs all
    /// of one grade on both sides: κ undefined, said so.
    #[test]
    fn the_reading_says_whether_to_decide_on_the_grades() {
        let s = summarize(
            &pairs(&[0, 0, 1, 1, 2, 3], &[0, 1, 1, 1, 3, 3]),
            &Options::default(),
        );
        assert_eq!(s.n, 6);
        let i = s.kappa_interval.unwrap();
        assert!(i.lo < KAPPA_FAIR && i.hi > KAPPA_SUBSTANTIAL, "{i:?}");
        assert_eq!(
            s.reading("SmolLM2"),
            format!(
                "SmolLM2's grades agree with the 6 human ones at κ 0.54 [{:.2}, {:.2}], \
                 quadratic-weighted 0.87: agreement not established; do not decide on them alone.",
                i.lo, i.hi
            )
        );
        // 200 pairs, the LLM right on 1 in 4 of each grade only by rotating: κ near 0.
        let h: Vec<u8> = (0..200).map(|i| (i % 4) as u8).collect();
        let l: Vec<u8> = (0..200).map(|i| ((i / 4 + i) % 4) as u8).collect();
        let s = summarize(&pairs(&h, &l), &Options::default());
        assert!(
            s.reading("m").ends_with("do not decide on them."),
            "{}",
            s.reading("m")
        );
        let s = summarize(&pairs(&[2, 2], &[2, 2]), &Options::default());
        assert!(s
            .reading("m")
            .contains("2 pairs graded by both, all of one grade"));
        let s = summarize(&[], &Options::default());
        assert!(s
            .reading("m")
            .starts_with("m's grades cannot be compared with people's: 0 pairs graded by both;"));
    }

    #[test]
    fn kappa_interval_is_reproducible_and_independent_of_pair_order() {
        let p = pairs(
            &[0, 0, 1, 1, 2, 3, 0, 2, 1, 0, 3, 2],
            &[0, 1, 1, 1, 3, 3, 0, 1, 0, 0, 2, 2],
        );
        let mut rev = p.clone();
        rev.reverse();
        let o = Options::default();
        let a = kappa_interval(&p, Weighting::Quadratic, &o).unwrap();
        let b = kappa_interval(&rev, Weighting::Quadratic, &o).unwrap();
        assert_eq!(
            (a.lo.to_bits(), a.hi.to_bits()),
            (b.lo.to_bits(), b.hi.to_bits())
        );
        let k = kappa(&confusion(&p), Weighting::Quadratic).unwrap();
        assert!(a.contains(k), "{a:?} {k}");
    }
}
