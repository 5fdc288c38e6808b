// shape of quinn-proto 0.11's PathData: own RttEstimator and controller, first_packet watermark
impl PathData {
    pub(super) fn new(remote: SocketAddr, allow_mtud: bool, peer_max_udp_payload_size: Option<u16>, now: Instant, validated: bool, config: &TransportConfig) -> Self {
        let congestion = config.congestion_controller_factory.clone().build(now, config.get_initial_mtu());
        Self {
            remote,
            rtt: RttEstimator::new(config.initial_rtt),
            congestion,
            first_packet: None,
        }
    }

    pub(super) fn from_previous(remote: SocketAddr, prev: &Self, now: Instant) -> Self {
        Self {
            remote,
            rtt: prev.rtt,
            congestion: prev.congestion.clone_box(),
            first_packet: None,
        }
    }

    pub(super) fn remove_in_flight(&mut self, pn: u64, packet: &SentPacket) -> bool {
        if self.first_packet.map_or(true, |first| first > pn) {
            return false;
        }
        self.in_flight.remove(packet);
        true
    }
}
