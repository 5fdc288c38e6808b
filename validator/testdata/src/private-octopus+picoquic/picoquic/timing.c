/* synthetic fixture: the RTT update's guard */
void picoquic_update_path_rtt(picoquic_cnx_t* cnx, picoquic_path_t* old_path, int epoch)
{
    if (old_path != NULL && (!old_path->rtt_is_initialized || epoch >= 0)) {
        old_path->rtt_is_initialized = 1;
    }
}
