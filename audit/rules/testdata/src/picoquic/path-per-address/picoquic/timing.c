/* An RTT update with epoch -1 (a hint) applies only while the path has no sample. */
void picoquic_update_path_rtt(picoquic_cnx_t* cnx, picoquic_path_t* old_path, picoquic_path_t* path_x, int epoch,
    uint64_t send_time, uint64_t current_time, uint64_t ack_delay, uint64_t time_stamp)
{
    if (old_path != NULL && (!old_path->rtt_is_initialized || epoch >= 0)) {
        old_path->smoothed_rtt = current_time - send_time;
        old_path->rtt_is_initialized = 1;
    }
}
