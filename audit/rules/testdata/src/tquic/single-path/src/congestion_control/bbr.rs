impl BbrConfig {
    pub fn from(conf: &RecoveryConfig) -> Self {
        let max_datagram_size = conf.max_datagram_size as u64;
        let min_cwnd = conf.min_congestion_window.saturating_mul(max_datagram_size);
        let initial_cwnd = conf
            .initial_congestion_window
            .saturating_mul(max_datagram_size);
        Self { min_cwnd, initial_cwnd }
    }
}

impl CongestionController for Bbr {
    fn on_congestion_event(&mut self, now: Instant, lost_bytes: u64, persistent: bool) {
        if persistent {
            self.cwnd = self.config.min_cwnd;
        } else {
            self.enter_recovery(now);
        }
    }
}
