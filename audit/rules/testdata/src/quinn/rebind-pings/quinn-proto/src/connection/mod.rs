// shape of quinn-proto before 0.11: no local_address_changed; bytes in flight are the connection's
impl Connection {
    fn on_ack_received(&mut self, now: Instant, space: SpaceId, ack: frame::Ack) {
        if new_largest && ack_eliciting_acked {
            let rtt = instant_saturating_sub(now, self.spaces[space].largest_acked_packet_sent);
            self.path.rtt.update(ack_delay, rtt);
        }
    }

    fn on_packet_acked(&mut self, now: Instant, space: SpaceId, info: SentPacket) {
        self.remove_in_flight(space, &info);
        if info.ack_eliciting && self.path.challenge.is_none() {
            self.path.congestion.on_ack(now, info.time_sent, info.size.into(), self.app_limited, &self.path.rtt);
        }
    }

    fn detect_lost_packets(&mut self, now: Instant, pn_space: SpaceId, due_to_ack: bool) {
        let old_bytes_in_flight = self.in_flight.bytes;
        for packet in &lost_packets {
            self.remove_in_flight(pn_space, &info);
        }
        let lost_ack_eliciting = old_bytes_in_flight != self.in_flight.bytes;
        if lost_ack_eliciting {
            self.path.congestion.on_congestion_event(now, largest_lost_sent, in_persistent_congestion, size_of_lost_packets);
        }
    }

    fn process_payload(&mut self, now: Instant, remote: SocketAddr, payload: Bytes) {
        for frame in frame::Iter::new(payload) {
            match frame {
                Frame::PathResponse(token) => {
                    if self.path.challenge == Some(token) && remote == self.path.remote {
                        self.timers.stop(Timer::PathValidation);
                        self.path.challenge = None;
                        self.path.validated = true;
                    }
                }
                _ => {}
            }
        }
        if remote != self.path.remote && !is_probing_packet {
            debug_assert!(self.side.is_server(), "packets from unknown remote should be dropped by clients");
            self.migrate(now, remote);
        }
    }

    fn migrate(&mut self, now: Instant, remote: SocketAddr) {
        let mut new_path = if remote.is_ipv4() && remote.ip() == self.path.remote.ip() {
            PathData::from_previous(remote, &self.path, now)
        } else {
            PathData::new(
                remote,
                self.config.initial_rtt,
                self.config.congestion_controller_factory.build(now, self.config.get_initial_mtu()),
                now,
                false,
            )
        };
        let prev = mem::replace(&mut self.path, new_path);
    }

    fn remove_in_flight(&mut self, space: SpaceId, packet: &SentPacket) {
        self.in_flight.bytes -= u64::from(packet.size);
        self.spaces[space].in_flight -= u64::from(packet.size);
    }
}
