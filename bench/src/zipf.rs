//! Zipf-distributed traffic: the one sampler behind the density runs
//! (`drive.rs`) and the fleet simulation (`fleet.rs`), so the simulation
//! draws the mix the measured runs send.

/// A uniform draw in [0, 1) from a xorshift state (never 0).
pub fn unit(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// How many buckets of [0, 1) the guide table splits the search into.
const GUIDE: usize = 1 << 16;

/// Zipf(s) over n ranks (rank 0 the most popular, with probability
/// ∝ 1 / (rank + 1)^s) by inverting the cumulative distribution; a guide
/// table narrows each binary search to the ranks one bucket of `u` spans.
pub struct Zipf {
    cumulative: Vec<f64>,
    /// `guide[b]`: the first rank whose cumulative share reaches `b / GUIDE`.
    guide: Vec<u32>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Self {
        let n = n.max(1);
        let mut cumulative = Vec::with_capacity(n);
        let mut total = 0.0;
        for rank in 1..=n {
            total += 1.0 / (rank as f64).powf(s);
            cumulative.push(total);
        }
        for c in &mut cumulative {
            *c /= total;
        }
        let guide = (0..=GUIDE)
            .map(|b| {
                let u = b as f64 / GUIDE as f64;
                cumulative.partition_point(|&c| c < u) as u32
            })
            .collect();
        Self { cumulative, guide }
    }

    /// The rank for a uniform draw `u` in [0, 1).
    pub fn sample(&self, u: f64) -> usize {
        let bucket = ((u * GUIDE as f64) as usize).min(GUIDE - 1);
        let lo = self.guide[bucket] as usize;
        let hi = (self.guide[bucket + 1] as usize + 1).min(self.cumulative.len());
        let within = self.cumulative[lo..hi].partition_point(|&c| c < u);
        (lo + within).min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide table changes nothing: every draw lands where a plain
    /// binary search over the whole distribution does.
    #[test]
    fn the_guide_finds_what_a_full_search_finds() {
        let zipf = Zipf::new(100_000, 1.1);
        let mut state = 99;
        for _ in 0..200_000 {
            let u = unit(&mut state);
            let full = zipf
                .cumulative
                .partition_point(|&c| c < u)
                .min(zipf.cumulative.len() - 1);
            assert_eq!(zipf.sample(u), full, "u = {u}");
        }
        assert_eq!(zipf.sample(0.0), 0);
        assert_eq!(zipf.sample(0.999_999_999_999), 99_999);
    }

    /// Draw frequencies follow 1 / rank^s: rank 0's share is 1 / H(n, s),
    /// and each of the first ranks is drawn 2^s times as often as the rank
    /// of twice its number.
    #[test]
    fn frequencies_follow_the_power_law() {
        let (n, s, draws) = (1000, 1.1, 2_000_000);
        let zipf = Zipf::new(n, s);
        let mut counts = vec![0u64; n];
        let mut state = 7;
        for _ in 0..draws {
            counts[zipf.sample(unit(&mut state))] += 1;
        }
        let harmonic: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        let first = counts[0] as f64 / draws as f64;
        assert!((first - 1.0 / harmonic).abs() < 0.005, "rank 0: {first}");
        for rank in [1usize, 2, 4] {
            let ratio = counts[rank - 1] as f64 / counts[2 * rank - 1] as f64;
            assert!((ratio - 2f64.powf(s)).abs() < 0.1, "rank {rank}: {ratio}");
        }
        assert!(counts[n - 1] > 0 && counts[n - 1] < counts[n / 2]);
    }
}
