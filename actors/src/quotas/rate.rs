//! A byte rate measured as Kafka's `Rate` sensor measures it for client quotas
//! (`quota.window.num` = 11 samples of `quota.window.size.seconds` = 1 s), and the
//! throttle time Kafka's `ClientQuotaManager` derives from it.

/// Samples kept (Kafka's `quota.window.num`).
pub const SAMPLES: u64 = 11;
/// Length of one sample in ms (Kafka's `quota.window.size.seconds`).
pub const SAMPLE_MS: u64 = 1_000;

#[derive(Clone, Copy, Debug)]
struct Sample {
    start_ms: u64,
    value: f64,
}

/// Bytes recorded over the last samples.
#[derive(Debug, Default)]
pub struct Rate {
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    /// Adds `value` at `now_ms` (a later sample starts once the current one is a sample
    /// long, as Kafka's `SampledStat.record` does). A negative value takes bytes back.
    pub fn record(&mut self, value: f64, now_ms: u64) {
        let fresh = Sample {
            start_ms: now_ms,
            value: 0.0,
        };
        match self.samples.get(self.current) {
            None => self.samples.push(fresh),
            Some(s) if now_ms.saturating_sub(s.start_ms) >= SAMPLE_MS => {
                self.current = (self.current + 1) % SAMPLES as usize;
                match self.samples.get_mut(self.current) {
                    Some(old) => *old = fresh,
                    None => self.samples.push(fresh),
                }
            }
            Some(_) => {}
        }
        self.samples[self.current].value += value;
    }

    /// Samples older than the whole window count for nothing (`purgeObsoleteSamples`).
    fn purge(&mut self, now_ms: u64) {
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.start_ms) >= SAMPLES * SAMPLE_MS {
                *s = Sample {
                    start_ms: now_ms,
                    value: 0.0,
                };
            }
        }
    }

    /// The window the rate is taken over, in ms: from the oldest sample to now, at
    /// least `SAMPLES - 1` samples long (Kafka's `Rate.windowSize`).
    fn window_ms(&self, now_ms: u64) -> u64 {
        let oldest = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let elapsed = now_ms.saturating_sub(oldest);
        let full = elapsed / SAMPLE_MS;
        elapsed + (SAMPLES - 1).saturating_sub(full) * SAMPLE_MS
    }

    /// Bytes per second now, and the window it is taken over.
    pub fn measure(&mut self, now_ms: u64) -> (f64, u64) {
        self.purge(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        let window = self.window_ms(now_ms);
        (total * 1_000.0 / window as f64, window)
    }

    /// Records `bytes` and says how long the client must wait to be back within
    /// `quota` bytes/s: `(rate - quota) / quota × window`, as Kafka's
    /// `QuotaUtils.throttleTime` (not bounded, as for Kafka's byte-rate quotas).
    pub fn record_and_throttle(&mut self, bytes: f64, quota: f64, now_ms: u64) -> u64 {
        self.record(bytes, now_ms);
        let (rate, window) = self.measure(now_ms);
        if rate <= quota {
            return 0;
        }
        ((rate - quota) / quota * window as f64).round() as u64
    }

    /// When the last bytes were recorded.
    pub fn last_ms(&self) -> u64 {
        self.samples.get(self.current).map_or(0, |s| s.start_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_at_least_ten_samples_long() {
        let mut r = Rate::default();
        r.record(20_000.0, 0);
        // 20 kB over the minimum 10 s window: 2 kB/s, twice a 1 kB/s quota: one more
        // window's worth of waiting.
        assert_eq!(r.measure(0), (2_000.0, 10_000));
        assert_eq!(
            Rate::default().record_and_throttle(20_000.0, 1_000.0, 0),
            10_000
        );
        assert_eq!(Rate::default().record_and_throttle(5_000.0, 1_000.0, 0), 0);
    }

    #[test]
    fn samples_roll_and_old_ones_are_forgotten() {
        let mut r = Rate::default();
        for second in 0..30 {
            r.record(1_000.0, second * SAMPLE_MS);
        }
        // 11 samples of 1 kB each over 10 s since the oldest started.
        let (rate, window) = r.measure(29 * SAMPLE_MS);
        assert_eq!(window, 10 * SAMPLE_MS);
        assert!((rate - 1_100.0).abs() < 1e-9, "{rate}");
        // Long idle: everything is forgotten.
        assert_eq!(r.measure(100 * SAMPLE_MS).0, 0.0);
    }

    #[test]
    fn unrecorded_bytes_do_not_count() {
        let mut r = Rate::default();
        r.record(50_000.0, 0);
        r.record(-50_000.0, 0);
        assert_eq!(r.record_and_throttle(1_000.0, 1_000.0, 0), 0);
    }
}
