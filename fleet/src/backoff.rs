//! Exponential backoff with jitter, for reconnecting.

use std::time::Duration;

/// Delays that double from `base` up to `max`, each with up to ±25 % jitter
/// so that a fleet reconnecting after an outage does not arrive at once.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    current: Duration,
    seed: u64,
}

impl Backoff {
    /// Starts at `base` (at least 1 ms), never above `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        let base = base.max(Duration::from_millis(1));
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32);
        Backoff {
            base,
            max: max.max(base),
            current: base,
            seed: seed | 1,
        }
    }

    fn random(&mut self) -> u64 {
        // xorshift64
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    /// A uniformly random delay below `max` (spreads wake-ups).
    pub(crate) fn spread(&mut self, max: Duration) -> Duration {
        let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX).max(1);
        Duration::from_nanos(self.random() % nanos)
    }

    /// The next delay; each call doubles the next one.
    pub fn next_delay(&mut self) -> Duration {
        let jitter = (self.random() % 501) as f64 / 1000.0 + 0.75; // 0.75..=1.25
        let d = self.current.mul_f64(jitter).min(self.max);
        self.current = (self.current * 2).min(self.max);
        d
    }

    /// Back to `base` after a success.
    pub fn reset(&mut self) {
        self.current = self.base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(75) && first <= Duration::from_millis(125));
        for _ in 0..10 {
            assert!(b.next_delay() <= Duration::from_secs(1));
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(125));
    }
}
