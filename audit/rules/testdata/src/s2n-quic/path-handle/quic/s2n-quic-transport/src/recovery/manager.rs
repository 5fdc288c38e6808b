// shape of s2n-quic's recovery::Manager: every sent packet records its path_id
impl<Config: endpoint::Config> Manager<Config> {
    fn update_congestion_control<Ctx: Context<Config>>(&mut self, largest_newly_acked_info: &SentPacketInfo, context: &mut Ctx) {
        let mut should_update_rtt = true;
        should_update_rtt &= context.path_id() == largest_newly_acked_info.path_id;
        if should_update_rtt {
            let path = context.path_mut_by_id(largest_newly_acked_info.path_id);
            path.rtt_estimator.update_rtt(ack_delay, latest_rtt, now, true, space);
        }
    }

    fn process_new_acked_packets<Ctx: Context<Config>>(&mut self, newly_acked_packets: &[SentPacketInfo], context: &mut Ctx) {
        let current_path_id = context.path_id();
        for acked_packet_info in newly_acked_packets {
            let path = context.path_mut_by_id(acked_packet_info.path_id);
            if acked_packet_info.path_id == current_path_id {
                new_path_acked_bytes += acked_packet_info.sent_bytes as usize;
            } else {
                path.congestion_controller.on_ack(acked_packet_info.time_sent, acked_packet_info.sent_bytes as usize, &path.rtt_estimator, now);
            }
        }
    }

    fn remove_lost_packets<Ctx: Context<Config>>(&mut self, lost_packets: PacketNumberRange, context: &mut Ctx) {
        for (packet_number, sent_info) in self.sent_packets.remove_range(lost_packets) {
            let path = context.path_mut_by_id(sent_info.path_id);
            path.congestion_controller.on_packet_lost(sent_info.sent_bytes as u32, sent_info.cc_packet_info, persistent_congestion, new_loss_burst, now);
        }
    }
}
