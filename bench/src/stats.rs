//! Medians, percentiles and ratios: every number in the report is one of these.

use std::time::Duration;

/// The `p`-quantile (0..=1) of `samples` by nearest rank; zero when empty.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// The median of `values`; `NaN` when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// `a / b`, `NaN` when `b` is zero.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { f64::NAN } else { a / b }
}

/// Microseconds of a duration, as a float.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `bytes` moved in `took`, in MiB per second; `NaN` for no time.
pub fn mib_per_s(bytes: usize, took: Duration) -> f64 {
    ratio(bytes as f64 / f64::from(1 << 20), took.as_secs_f64())
}

/// A latency in µs, shown in µs below 10 ms and in ms above.
pub fn fmt_us(value: f64) -> String {
    if value.is_nan() {
        "–".to_owned()
    } else if value >= 10_000.0 {
        format!("{:.1} ms", value / 1000.0)
    } else if value >= 100.0 {
        format!("{value:.0} µs")
    } else {
        format!("{value:.1} µs")
    }
}

/// A rate (requests per second).
pub fn fmt_rate(value: f64) -> String {
    if value.is_nan() {
        "–".to_owned()
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// A ratio such as `1.73×`.
pub fn fmt_ratio(value: f64) -> String {
    if value.is_nan() || value.is_infinite() {
        "–".to_owned()
    } else {
        format!("{value:.2}×")
    }
}

/// Bytes as MiB.
pub fn fmt_mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn mib_per_s_of_a_transfer() {
        assert_eq!(mib_per_s(64 << 20, Duration::from_millis(500)), 128.0);
        assert!(mib_per_s(1, Duration::ZERO).is_nan());
    }

    #[test]
    fn percentile_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&samples, 0.5), Duration::from_micros(51));
        assert_eq!(percentile(&samples, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }
}
