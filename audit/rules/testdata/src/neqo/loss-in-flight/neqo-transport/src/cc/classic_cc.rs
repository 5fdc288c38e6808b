impl<T: WindowAdjustment> CongestionControl for ClassicCongestionControl<T> {
    fn on_packets_acked(&mut self, acked_pkts: &[SentPacket], rtt_est: &RttEstimate, now: Instant) {
        for pkt in acked_pkts {
            if !pkt.cc_outstanding() {
                continue;
            }
            self.acked_bytes += pkt.len();
        }
    }

    fn on_packets_lost(&mut self, first_rtt_sample_time: Option<Instant>, prev_largest_acked_sent: Option<Instant>, pto: Duration, lost_packets: &[SentPacket], now: Instant) -> bool {
        for pkt in lost_packets {
            if pkt.cc_in_flight() {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(pkt.len());
            }
        }
        let lost_packets_no_pmtud = || lost_packets.iter().filter(|pkt| !pkt.is_pmtud_probe());
        let Some(last_lost_packet) = lost_packets_no_pmtud().rfind(|pkt| pkt.cc_in_flight()) else {
            return false;
        };
        let congestion = self.on_congestion_event(last_lost_packet, now);
        congestion
    }

    fn on_packet_sent(&mut self, pkt: &SentPacket, now: Instant) {
        if !pkt.cc_in_flight() {
            return;
        }
        self.bytes_in_flight += pkt.len();
    }
}
