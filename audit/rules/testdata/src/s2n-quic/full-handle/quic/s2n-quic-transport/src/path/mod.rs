// shape of s2n-quic's Path in 1.19-1.25: once the local address is known the full handle must match
impl<Config: endpoint::Config> Path<Config> {
    pub fn on_path_response(&mut self, response: &[u8]) -> bool {
        if self.challenge.on_validated(response) {
            self.on_validated();
            return true;
        }
        false
    }

    fn eq_by_handle(&self, handle: &Config::PathHandle) -> bool {
        if self.handle.local_address().port() == 0 {
            s2n_quic_core::path::Handle::eq(&self.handle.remote_address(), &handle.remote_address())
        } else {
            self.handle.eq(handle)
        }
    }
}
