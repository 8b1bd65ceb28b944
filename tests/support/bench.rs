//! Timing for the bench binaries (`tests/benches/`): medians of repeated
//! runs and how much the runs spread, never single timings.

use std::time::{Duration, Instant};

/// A measured figure: the median over runs, and (max - min) / median.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub median: Duration,
    pub spread_percent: f64,
}

impl Sample {
    pub fn secs(&self) -> f64 {
        self.median.as_secs_f64()
    }

    pub fn nanos(&self) -> f64 {
        self.median.as_secs_f64() * 1e9
    }
}

/// Times `runs` runs of `iters` calls of `f` each (after one warm-up run)
/// and returns the median time of one call.
pub fn measure(runs: usize, iters: usize, mut f: impl FnMut()) -> Sample {
    for _ in 0..iters.min(1000) {
        f();
    }
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed() / iters as u32
        })
        .collect();
    times.sort_unstable();
    let median = times[times.len() / 2];
    let spread = (times[times.len() - 1] - times[0]).as_secs_f64() / median.as_secs_f64();
    Sample {
        median,
        spread_percent: spread * 100.0,
    }
}

/// Runs `measure` for each closure in turn, `rounds` times interleaved, and
/// keeps each closure's best median: alternating keeps slow drifts of the
/// machine (frequency, other load) from favouring whichever ran first.
pub fn compare<const N: usize>(
    rounds: usize,
    runs: usize,
    iters: usize,
    fs: &mut [&mut dyn FnMut(); N],
) -> [Sample; N] {
    let mut best: [Option<Sample>; N] = [None; N];
    for _ in 0..rounds {
        for (i, f) in fs.iter_mut().enumerate() {
            let s = measure(runs, iters, &mut **f);
            match best[i] {
                Some(b) if b.median <= s.median => {}
                _ => best[i] = Some(s),
            }
        }
    }
    best.map(|s| s.expect("at least one round"))
}
