// a variant: PATH_RESPONSE seeds the RTT estimator
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
            self.rtt_estimator.update_rtt(Duration::ZERO, self.challenge.elapsed(), now, true, PacketNumberSpace::ApplicationData);
            return true;
        }
        false
    }
}
