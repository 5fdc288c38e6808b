// shape of quinn-proto at the pin: packets carry their path generation; PathData::reset behind Connection::path_changed
impl PathData {
    pub(super) fn new(remote: SocketAddr, allow_mtud: bool, peer_max_udp_payload_size: Option<u16>, now: Instant, validated: bool, config: &TransportConfig) -> Self {
        let congestion = config.congestion_controller_factory.clone().build(now, config.get_initial_mtu());
        Self {
            remote,
            rtt: RttEstimator::new(config.initial_rtt),
            congestion,
            generation: 0,
        }
    }

    pub(super) fn from_previous(remote: SocketAddr, prev: &Self, now: Instant) -> Self {
        Self {
            remote,
            rtt: prev.rtt,
            congestion: prev.congestion.clone_box(),
            generation: prev.generation + 1,
        }
    }

    pub(super) fn reset(&mut self, now: Instant, config: &TransportConfig) {
        self.rtt = RttEstimator::new(config.initial_rtt);
        self.congestion = config.congestion_controller_factory.clone().build(now, config.get_initial_mtu());
    }

    pub(super) fn remove_in_flight(&mut self, packet: &SentPacket) -> bool {
        if packet.path_generation != self.generation {
            return false;
        }
        self.in_flight.remove(packet);
        true
    }
}
