/* A packet from an address no path has yet. */
int picoquic_find_incoming_path(picoquic_cnx_t* cnx, const struct sockaddr* addr_to, const struct sockaddr* addr_from, uint64_t current_time)
{
    int path_id = picoquic_find_path_by_address(cnx, addr_to, addr_from);
    if (path_id < 0 && picoquic_create_path(cnx, current_time, addr_to, addr_from) > 0) {
        path_id = cnx->nb_paths - 1;
    }
    return path_id;
}
