// a variant: recovery ignores the packet's path: every ACK and loss goes to the active path
impl<Config: endpoint::Config> Manager<Config> {
    fn update_congestion_control<Ctx: Context<Config>>(&mut self, largest_newly_acked_info: &SentPacketInfo, context: &mut Ctx) {
        let path = context.path_mut();
        path.rtt_estimator.update_rtt(ack_delay, latest_rtt, now, true, space);
    }

    fn process_new_acked_packets<Ctx: Context<Config>>(&mut self, newly_acked_packets: &[SentPacketInfo], context: &mut Ctx) {
        for acked_packet_info in newly_acked_packets {
            new_path_acked_bytes += acked_packet_info.sent_bytes as usize;
        }
        context.path_mut().congestion_controller.on_ack(now, new_path_acked_bytes, &rtt_estimator, now);
    }

    fn remove_lost_packets<Ctx: Context<Config>>(&mut self, lost_packets: PacketNumberRange, context: &mut Ctx) {
        for (packet_number, sent_info) in self.sent_packets.remove_range(lost_packets) {
            context.path_mut().congestion_controller.on_packet_lost(sent_info.sent_bytes as u32, sent_info.cc_packet_info, persistent_congestion, new_loss_burst, now);
        }
    }
}
