//! Percentiles of latency samples.

use std::fmt;
use std::time::Duration;

/// Percentiles of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latencies {
    /// How many samples.
    pub count: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Largest.
    pub max: Duration,
}

impl Latencies {
    /// The percentiles of `samples` (nearest rank), or `None` for no samples.
    pub fn of(mut samples: Vec<Duration>) -> Option<Self> {
        samples.sort_unstable();
        Some(Self {
            count: samples.len(),
            p50: percentile(&samples, 0.50)?,
            p99: percentile(&samples, 0.99)?,
            max: *samples.last()?,
        })
    }
}

impl fmt::Display for Latencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p50 {} p99 {} max {} ({} samples)",
            Millis(self.p50),
            Millis(self.p99),
            Millis(self.max),
            self.count
        )
    }
}

/// The nearest-rank `fraction` percentile (0.99 for p99) of ascending `sorted` samples.
pub fn percentile(sorted: &[Duration], fraction: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    // Nearest rank: the smallest sample with at least `fraction` of all samples at or below.
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// The median of `values` (the mean of the middle two for an even count), NaN for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// A duration shown in milliseconds with two decimals: `1.25 ms`.
#[derive(Debug, Clone, Copy)]
pub struct Millis(pub Duration);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2} ms", self.0.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(samples_ms: &[u64], fraction: f64, expected_ms: Option<u64>) {
        let sorted: Vec<_> = samples_ms
            .iter()
            .map(|&ms| Duration::from_millis(ms))
            .collect();
        assert_eq!(
            percentile(&sorted, fraction),
            expected_ms.map(Duration::from_millis),
            "{fraction} of {samples_ms:?}"
        );
    }

    #[test]
    fn nearest_rank() {
        check(&[], 0.5, None);
        check(&[7], 0.5, Some(7));
        check(&[7], 0.99, Some(7));
        check(&[1, 2, 3, 4], 0.5, Some(2));
        check(&[1, 2, 3, 4], 0.99, Some(4));
        let hundred: Vec<u64> = (1..=100).collect();
        check(&hundred, 0.5, Some(50));
        check(&hundred, 0.99, Some(99));
        check(&hundred, 1.0, Some(100));
    }
}
