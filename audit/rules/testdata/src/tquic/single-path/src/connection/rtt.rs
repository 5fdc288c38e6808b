impl RttEstimator {
    /// Only before the first RTT sample.
    pub fn try_set_init_rtt(&mut self, init_rtt: Duration) {
        if self.smoothed_rtt.is_some() {
            return;
        }
        self.latest_rtt = init_rtt;
    }
}
