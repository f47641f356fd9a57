//! Small timing helpers: percentiles over samples, durations in handy units.

use std::time::{Duration, Instant};

/// Sorted samples with nearest-rank percentiles.
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn new(mut v: Vec<Duration>) -> Self {
        assert!(!v.is_empty(), "no samples");
        v.sort();
        Samples(v)
    }

    /// The `p`-th percentile (0..=100), nearest rank.
    pub fn pct(&self, p: f64) -> Duration {
        let n = self.0.len();
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.0[rank.clamp(1, n) - 1]
    }

    pub fn median(&self) -> Duration {
        self.pct(50.0)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Runs `f` and returns its result with the wall time it took.
pub async fn timed<T>(f: impl Future<Output = T>) -> (T, Duration) {
    let t = Instant::now();
    let out = f.await;
    (out, t.elapsed())
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
