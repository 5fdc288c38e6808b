// shape of s2n-quic's Path at the pin: a client updates its one path's handle in place
impl<Config: endpoint::Config> Path<Config> {
    pub fn on_datagram_received(&mut self, path_handle: &Config::PathHandle, datagram: &DatagramInfo, valid_initial_received: bool) -> Result<AmplificationOutcome, DatagramDropReason> {
        if Config::ENDPOINT_TYPE.is_client() {
            self.handle.maybe_update(path_handle);
        }
        let amplification_outcome = self.on_bytes_received(datagram.payload_len);
        Ok(amplification_outcome)
    }

    pub fn on_path_response(&mut self, response: &[u8]) -> bool {
        if self.challenge.on_validated(response) {
            self.on_validated();
            return true;
        }
        false
    }
}
