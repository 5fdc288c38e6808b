// a variant: the PATH_RESPONSE handler samples RTT; Path::new never called
pub struct Path {
    pub recovery: recovery::Recovery,
}

impl Path {
    pub fn new(recovery_config: &recovery::RecoveryConfig) -> Self {
        Self {
            recovery: recovery::Recovery::new_with_config(recovery_config),
        }
    }

    pub fn on_response_received(&mut self, data: [u8; 8], now: Instant) -> bool {
        self.update_rtt(now - self.challenge_sent);
        true
    }
}
