// shape of s2n-quic's Path before 1.5x: a client's path is found by the remote address alone
impl<Config: endpoint::Config> Path<Config> {
    pub fn on_path_response(&mut self, response: &[u8]) -> bool {
        if self.challenge.on_validated(response) {
            self.on_validated();
            return true;
        }
        false
    }

    fn eq_by_handle(&self, handle: &Config::PathHandle) -> bool {
        if Config::ENDPOINT_TYPE.is_client() {
            s2n_quic_core::path::Handle::eq(&self.handle.remote_address(), &handle.remote_address())
        } else {
            self.handle.eq(handle)
        }
    }
}
