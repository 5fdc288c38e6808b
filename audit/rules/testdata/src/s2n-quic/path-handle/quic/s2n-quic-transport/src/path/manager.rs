// shape of s2n-quic's path::Manager at the pin: the server builds a new Path per peer address
impl<Config: endpoint::Config> Manager<Config> {
    pub fn on_datagram_received<Pub: event::ConnectionPublisher>(&mut self, path_handle: &Config::PathHandle, datagram: &DatagramInfo, limits: &Limits, publisher: &mut Pub) -> Result<(Id, AmplificationOutcome), DatagramDropReason> {
        if let Some((id, path)) = self.path_mut(path_handle) {
            let outcome = path.on_datagram_received(path_handle, datagram, valid_initial_received)?;
            return Ok((id, outcome));
        }
        if Config::ENDPOINT_TYPE.is_client() {
            return Err(DatagramDropReason::UnknownServerAddress);
        }
        self.handle_connection_migration(path_handle, datagram, limits, publisher)
    }

    fn handle_connection_migration<Pub: event::ConnectionPublisher>(&mut self, path_handle: &Config::PathHandle, datagram: &DatagramInfo, limits: &Limits, publisher: &mut Pub) -> Result<(Id, AmplificationOutcome), DatagramDropReason> {
        debug_assert!(Config::ENDPOINT_TYPE.is_server());
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.4
        //= type=TODO
        //# Because port-only changes are commonly the
        //# result of NAT rebinding or other middlebox activity, the endpoint MAY
        //# instead retain its congestion control state and round-trip estimate
        // Since we maintain a separate congestion controller and round-trip time
        // estimator for the new path, we do not need to reset them.
        let rtt = self
            .active_path()
            .rtt_estimator
            .for_new_path(limits.initial_round_trip_time());
        let path_info = congestion_controller::PathInfo::new(&remote_address);
        let cc = congestion_controller_endpoint.new_congestion_controller(path_info);
        let mut path = Path::new(*path_handle, peer_connection_id, local_connection_id, rtt, cc, true, max_mtu);
        self.paths.push(path);
        Ok((id, outcome))
    }

    pub fn on_path_response<Pub: event::ConnectionPublisher>(&mut self, response: &frame::PathResponse, publisher: &mut Pub) {
        for (id, path) in self.paths.iter_mut().enumerate() {
            if path.on_path_response(response.data) {
                publisher.on_path_challenge_updated(id);
            }
        }
    }
}
