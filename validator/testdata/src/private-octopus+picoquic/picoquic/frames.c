/* synthetic fixture: path validation and the ACK RTT sample */
void process_decoded_packet_data(picoquic_cnx_t* cnx, picoquic_packet_data_t* packet_data, int epoch)
{
    for (int i = 0; i < packet_data->nb_path_ack; i++) {
        picoquic_update_path_rtt(cnx, packet_data->path_ack[i].acked_path, epoch,
            packet_data->path_ack[i].largest_sent_time, current_time, 0, 0);
    }
}

void picoquic_process_path_response(picoquic_cnx_t* cnx, picoquic_path_t* path_x, picoquic_tuple_t* tuple)
{
    picoquic_update_path_rtt(cnx, path_x, -1, tuple->challenge_time_first, current_time, 0, 0);
    path_x->first_tuple = tuple;
}
