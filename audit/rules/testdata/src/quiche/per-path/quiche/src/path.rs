// shape of quiche's paths: every Path owns its Recovery
pub struct Path {
    local_addr: SocketAddr,
    peer_addr: SocketAddr,
    pub recovery: recovery::Recovery,
    validated: bool,
}

impl Path {
    pub fn new(
        local_addr: SocketAddr, peer_addr: SocketAddr,
        recovery_config: &recovery::RecoveryConfig, is_initial: bool,
    ) -> Self {
        Self {
            local_addr,
            peer_addr,
            recovery: recovery::Recovery::new_with_config(recovery_config),
            validated: is_initial,
        }
    }

    pub fn on_response_received(&mut self, data: [u8; 8]) -> bool {
        self.validated = self.challenge == data;
        self.validated
    }
}
