// Shape of quinn-proto 0.9: the minimum window is a CubicConfig field.
const BETA_CUBIC: f64 = 0.7;

pub struct Cubic {
    config: Arc<CubicConfig>,
    window: u64,
    ssthresh: u64,
}

impl Controller for Cubic {
    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        self.ssthresh = (self.window as f64 * BETA_CUBIC) as u64;
        self.window = cmp::max(self.ssthresh, self.config.minimum_window);
    }
}

pub struct CubicConfig {
    initial_window: u64,
    minimum_window: u64,
}

impl Default for CubicConfig {
    fn default() -> Self {
        const MAX_DATAGRAM_SIZE: u64 = 1232;
        Self {
            initial_window: 14720.max(2 * MAX_DATAGRAM_SIZE).min(10 * MAX_DATAGRAM_SIZE),
            minimum_window: 2 * MAX_DATAGRAM_SIZE,
        }
    }
}
