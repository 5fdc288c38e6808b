/* Before tuples: the PATH_RESPONSE handler seeds the RTT of the path it validates. */
const uint8_t* picoquic_decode_path_response_frame(picoquic_cnx_t* cnx, const uint8_t* bytes, const uint8_t* bytes_max,
    picoquic_path_t* path_x, uint64_t current_time)
{
    uint64_t response;
    if ((bytes = picoquic_frames_uint64_decode(bytes + 1, bytes_max, &response)) != NULL) {
        if (response == path_x->challenge[0] && !path_x->challenge_verified) {
            path_x->challenge_verified = 1;
            picoquic_update_path_rtt(cnx, path_x, path_x, -1, path_x->challenge_time_first, current_time, 0, 0);
        }
    }
    return bytes;
}

/* ACK processing feeds the default path, whichever path the packet was sent on. */
void process_decoded_packet_data(picoquic_cnx_t* cnx, picoquic_path_t* path_x, int epoch, uint64_t current_time, picoquic_packet_data_t* packet_data)
{
    for (int i = 0; i < packet_data->nb_path_ack; i++) {
        picoquic_update_path_rtt(cnx, cnx->path[0], path_x, epoch,
            packet_data->path_ack[i].largest_sent_time, current_time, packet_data->last_ack_delay, 0);
        if (cnx->congestion_alg != NULL) {
            cnx->congestion_alg->alg_notify(cnx, cnx->path[0],
                picoquic_congestion_notification_acknowledgement, &ack_state, current_time);
        }
    }
}
