// shape of quinn-proto's public hook: documented to reset the controller and RTT estimator, called by nobody
impl Connection {
    pub fn path_changed(&mut self, now: Instant) {
        self.path.reset(now, &self.config);
    }
}
