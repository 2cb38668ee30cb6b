//! The seeded random streams of the statistics: ChaCha8 keyed by the seed, one stream number
//! per use, and our own unbiased bounded sampling (Lemire's multiply-and-reject) so that the
//! numbers do not change when `rand` changes its distribution algorithms.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which stream of a seed: the permutation test and the bootstrap never share draws.
#[derive(Debug, Clone, Copy)]
pub enum Stream {
    /// Random sign assignments.
    Permutation = 1,
    /// Bootstrap resample indices.
    Bootstrap = 2,
    /// `ranklab synth-run`'s synthetic run and qrels.
    Synth = 3,
    /// Resamples of the agreement statistics (κ over pairs, τ over tasks).
    Agreement = 4,
    /// The draw of distractors and of a collection's sampled documents (corpus-size curves).
    Distractors = 5,
}

/// A seeded stream.
pub struct Source(ChaCha8Rng);

impl Source {
    /// The stream `stream` of the ChaCha8 generator seeded with `seed`.
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream as u64);
        Source(rng)
    }

    /// 64 random bits.
    #[inline]
    pub fn bits(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform integer in `0..n` (`n >= 1`), without modulo bias.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n >= 1);
        let mut m = u128::from(self.bits()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.bits()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// A uniform float in `[0, 1)`: the top 53 bits of one draw, scaled by 2^-53.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.bits() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p` (one draw).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut s = Source::new(7, Stream::Permutation);
                move |_| s.bits()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut s = Source::new(7, Stream::Permutation);
                move |_| s.bits()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut s = Source::new(7, Stream::Bootstrap);
                move |_| s.bits()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_covers_the_range_uniformly() {
        let mut s = Source::new(1, Stream::Bootstrap);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[s.below(3) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(Source::new(1, Stream::Bootstrap).below(1), 0);
    }

    #[test]
    fn unit_is_in_the_half_open_interval_and_chance_follows_p() {
        let mut s = Source::new(3, Stream::Synth);
        let mut hits = 0;
        for _ in 0..30_000 {
            let u = s.unit();
            assert!((0.0..1.0).contains(&u), "{u}");
            hits += usize::from(s.chance(0.25));
        }
        assert!((7_000..8_000).contains(&hits), "{hits}");
    }
}
