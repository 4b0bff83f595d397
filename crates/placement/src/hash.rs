//! Fixed, process-independent hashing.
//!
//! Operator and router must compute the same placement in different processes
//! (and builds), so nothing here may depend on a per-process random seed: keys
//! come from xxh3 with fixed seeds, and the floating-point steps use only
//! IEEE-754 basic operations (which are correctly rounded everywhere) rather
//! than the platform's `libm`, whose `ln` may differ in the last bit.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Seed for the key of a worker when choosing nodes.
const WORKER_SEED: u64 = 0x6973_6f6c_616e_6501;
/// Seed for the key of a node (its name).
const NODE_SEED: u64 = 0x6973_6f6c_616e_6502;
/// Seed for the key of a worker when choosing a thread. Distinct from
/// [`WORKER_SEED`] so the thread index is independent of the node choice.
const THREAD_SEED: u64 = 0x6973_6f6c_616e_6503;

/// The key of `worker_id` for node choice.
pub(crate) fn worker_key(worker_id: &str) -> u64 {
    xxh3_64_with_seed(worker_id.as_bytes(), WORKER_SEED)
}

/// The key of a node, from its name.
pub(crate) fn node_key(name: &str) -> u64 {
    xxh3_64_with_seed(name.as_bytes(), NODE_SEED)
}

/// The key of `worker_id` for thread choice.
pub(crate) fn thread_key(worker_id: &str) -> u64 {
    xxh3_64_with_seed(worker_id.as_bytes(), THREAD_SEED)
}

/// The point of virtual node `replica` of a node on a hash ring.
pub(crate) fn ring_point(node_key: u64, replica: u32) -> u64 {
    mix(node_key ^ mix(u64::from(replica).wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

/// A strong 64-bit finaliser (the splitmix64 / murmur3 `fmix64` family): every
/// input bit affects every output bit, so `mix(worker ^ node)` behaves like an
/// independent hash per (worker, node) pair.
pub(crate) fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Maps a hash to a uniform value in the open interval (0, 1), using its top
/// 52 bits: `(k + ½) / 2⁵²` is exact in an f64, so never 0 (its logarithm is
/// finite) and never 1 (no node scores a free win).
pub(crate) fn unit(h: u64) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 52) as f64;
    ((h >> 12) as f64 + 0.5) * SCALE
}

/// The natural logarithm of a positive, normal `x`, from basic operations only.
///
/// `x = m·2^e` with `m` in [√½, √2); `ln m = 2·atanh(s)` with `s = (m-1)/(m+1)`,
/// `|s| < 0.172`, whose odd series is summed to seven terms (relative error
/// below 1e-12: placement needs a deterministic, monotone-enough score, not
/// the last bit of accuracy). Branch-free, as this runs once per node per
/// lookup and `m > √2` is a coin flip no predictor learns.
pub(crate) fn ln(x: f64) -> f64 {
    const MANTISSA: u64 = (1 << 52) - 1;
    const ONE_EXPONENT: u64 = 1023 << 52;
    let bits = x.to_bits();
    let m = f64::from_bits((bits & MANTISSA) | ONE_EXPONENT);
    // Halve m (subtract one from its exponent) when it is above √2.
    let high = u64::from(m > std::f64::consts::SQRT_2);
    let m = f64::from_bits(m.to_bits() - (high << 52));
    let e = ((bits >> 52) & 0x7ff) as i64 - 1023 + high as i64;
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let series = ATANH_SERIES.iter().rev().fold(0.0, |acc, &c| acc * s2 + c);
    e as f64 * std::f64::consts::LN_2 + 2.0 * s * series
}

/// `1/(2k+1)` for k in 0..7: the coefficients of `atanh(s)/s` in `s²`.
const ATANH_SERIES: [f64; 7] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_matches_libm_closely() {
        for i in 1..10_000u64 {
            let x = unit(mix(i));
            let ours = ln(x);
            let libm = x.ln();
            assert!(
                (ours - libm).abs() <= 1e-12 * libm.abs().max(1.0),
                "ln({x}) = {ours}, libm says {libm}"
            );
        }
        assert_eq!(ln(1.0), 0.0);
        assert!((ln(0.5) + std::f64::consts::LN_2).abs() < 1e-15);
        assert!((ln(1.5) - 1.5f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn unit_is_open() {
        assert!(unit(0) > 0.0);
        assert!(unit(u64::MAX) < 1.0);
    }
}
