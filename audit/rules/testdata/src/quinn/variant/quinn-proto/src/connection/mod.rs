// a variant of the 0.11 shape: migrate always carries the state over, PATH_RESPONSE seeds the RTT, the RTT sample is gated by the packet's path, on_ack and the congestion event are not
impl Connection {
    fn on_ack_received(&mut self, now: Instant, space: SpaceId, ack: frame::Ack) {
        if new_largest && ack_eliciting_acked && info.path_generation == self.path.generation {
            let rtt = instant_saturating_sub(now, self.spaces[space].largest_acked_packet_sent);
            self.path.rtt.update(ack_delay, rtt);
        }
    }

    fn on_packet_acked(&mut self, now: Instant, pn: u64, info: SentPacket) {
        self.remove_in_flight(pn, &info);
        self.path.congestion.on_ack(now, info.time_sent, info.size.into(), self.app_limited, &self.path.rtt);
    }

    fn detect_lost_packets(&mut self, now: Instant, pn_space: SpaceId, due_to_ack: bool) {
        for packet in &lost_packets {
            self.remove_in_flight(*packet, &info);
        }
        self.path.congestion.on_congestion_event(now, largest_lost_sent, in_persistent_congestion, size_of_lost_packets);
    }

    fn process_payload(&mut self, now: Instant, remote: SocketAddr, payload: Bytes) {
        for frame in frame::Iter::new(payload) {
            match frame {
                Frame::PathResponse(token) => {
                    if self.path.challenge == Some(token) {
                        self.path.rtt.update(Duration::ZERO, now - self.path.challenge_sent);
                        self.path.validated = true;
                    }
                }
                _ => {}
            }
        }
        if remote != self.path.remote && !is_probing_packet {
            self.migrate(now, remote);
        }
    }

    fn migrate(&mut self, now: Instant, remote: SocketAddr) {
        let new_path = PathData::from_previous(remote, &self.path, now);
        let prev = mem::replace(&mut self.path, new_path);
    }

    pub fn local_address_changed(&mut self) {
        self.update_rem_cid();
        self.ping();
    }

    fn remove_in_flight(&mut self, pn: u64, packet: &SentPacket) {
        self.path.remove_in_flight(pn, packet);
    }
}
