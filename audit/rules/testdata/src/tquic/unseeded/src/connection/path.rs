impl Path {
    pub fn new(local: SocketAddr, remote: SocketAddr, is_initial: bool, conf: &RecoveryConfig, trace_id: &str) -> Self {
        Self {
            local_addr: local,
            remote_addr: remote,
            recovery: Recovery::new(conf),
            active: false,
        }
    }

    /// Handle incoming PATH_RESPONSE data.
    pub(super) fn on_path_resp_received(&mut self, data: [u8; 8], multipath: bool) -> bool {
        // before v1.0.0: the response is matched, no RTT taken
        self.sent_chals.retain(|(d, s, _)| *d != data);
        self.promote_to(PathState::Validated);
        self.set_active(multipath);
        true
    }

    pub(crate) fn set_active(&mut self, v: bool) {
        self.active = v;
    }
}

impl PathMap {
    pub fn new(mut initial_path: Path, max_paths: usize) -> Self {
        initial_path.active = true;
        Self {
            paths: Slab::with_capacity(2),
            max_paths,
            is_multipath: false,
        }
    }
}
