// Loss recovery: the RTT sample only from a packet sent on the primary path.
impl Loss {
    pub fn on_ack_received(&mut self, primary_path: &PathRef, pn_space: PacketNumberSpace, now: Instant) {
        let (acked_packets, any_ack_eliciting) = self.spaces.get_mut(pn_space).remove_acked(acked_ranges);
        let largest_acked_pkt = acked_packets.first().expect("must be there");
        if any_ack_eliciting && largest_acked_pkt.on_primary_path() {
            self.rtt_sample(primary_path.borrow_mut().rtt_mut(), largest_acked_pkt.time_sent(), now, ack_delay);
        }
    }

    /// Forget the primary-path flag of every tracked packet.
    pub fn migrate(&mut self) {
        for space in self.spaces.iter_mut() {
            space.migrate();
        }
    }
}
